//! `hpm compare`.

pub fn main(_args: &[String]) -> Result<(), String> {
    Err("`hpm compare` is not implemented yet".into())
}
