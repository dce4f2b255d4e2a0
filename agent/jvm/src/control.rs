//! Run-time control of profiling: the commands shared by `hpm attach PID ...` (through
//! Agent_OnAttach) and the Java bridge (`execute(command)` and friends).
//!
//! Contract (stable, other modules code against it): `execute(command)` takes one command
//! text such as `start,interval=1ms,file=x.jfr`, `stop`, `dump,file=y.jfr` or `status`, and
//! returns the text to show the user, or an error line that says what to do. It never
//! panics across its callers' `extern "C"` boundaries (callers still catch unwinding).

/// Runs one control command against the loaded agent.
#[allow(dead_code)] // callers arrive with the attach and bridge work
pub fn execute(command: &str) -> Result<String, String> {
    Err(format!("'{command}': run-time control is not implemented yet"))
}
