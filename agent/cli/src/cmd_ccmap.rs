//! `hpm ccmap`.

pub fn main(_args: &[String]) -> Result<(), String> {
    Err("`hpm ccmap` is not implemented yet".into())
}
