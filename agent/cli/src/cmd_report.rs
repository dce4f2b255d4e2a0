//! `hpm report`.

pub fn main(_args: &[String]) -> Result<(), String> {
    Err("`hpm report` is not implemented yet".into())
}
