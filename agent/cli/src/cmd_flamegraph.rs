//! `hpm flamegraph`.

pub fn main(_args: &[String]) -> Result<(), String> {
    Err("`hpm flamegraph` is not implemented yet".into())
}
