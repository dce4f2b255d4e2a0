//! `peak ADDRESS_SPACE_BYTES DEADLINE_SECS RESULT_FILE COMMAND [ARGS...]`: runs COMMAND (its
//! output and errors are this process's) under [`hpm_tests::measure::run_measured`] and writes
//! `CODE HUNG PEAK_KIB` to RESULT_FILE (CODE `-` when a signal ended it). A small process, so
//! that the peak counted is the command's own (see `measure`).

use std::process::Command;
use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 4 {
        eprintln!("usage: peak ADDRESS_SPACE_BYTES DEADLINE_SECS RESULT_FILE COMMAND [ARGS...]");
        std::process::exit(2);
    }
    let number = |s: &str| s.parse::<u64>().unwrap_or_else(|_| panic!("`{s}` is not a whole number"));
    let mut cmd = Command::new(&args[3]);
    cmd.args(&args[4..]);
    let m = hpm_tests::measure::run_measured(cmd, number(&args[0]), Duration::from_secs(number(&args[1])));
    let code = m.code.map_or("-".to_string(), |c| c.to_string());
    std::fs::write(&args[2], format!("{code} {} {}\n", u8::from(m.hung), m.peak_kib)).expect("write the result");
}
