//! `hpm run`.

pub fn main(_args: &[String]) -> Result<(), String> {
    Err("`hpm run` is not implemented yet".into())
}
