//! `hpm callerchain`.

pub fn main(_args: &[String]) -> Result<(), String> {
    Err("`hpm callerchain` is not implemented yet".into())
}
