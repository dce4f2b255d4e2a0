//! `hpm phases`.

pub fn main(_args: &[String]) -> Result<(), String> {
    Err("`hpm phases` is not implemented yet".into())
}
