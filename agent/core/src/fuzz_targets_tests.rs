//! Every committed fuzzing input (`fuzz/corpus/TARGET/*`, the seeds and what libFuzzer kept, and
//! `fuzz/regressions/TARGET/*`, inputs of bugs found) runs through its target on stable, so a
//! finding stays fixed without a nightly toolchain.

use std::path::PathBuf;

use crate::fuzz_targets::{run, TARGETS};

fn fuzz_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

#[test]
fn every_committed_input_passes_its_target() {
    let scratch = crate::scratch_tests::ScratchDir::new("fuzz-replay");
    for target in TARGETS {
        let mut n = 0;
        for kind in ["corpus", "regressions"] {
            let Ok(dir) = std::fs::read_dir(fuzz_dir().join(kind).join(target)) else { continue };
            for entry in dir {
                let path = entry.unwrap().path();
                let data = std::fs::read(&path).unwrap();
                let r = std::panic::catch_unwind(|| run(target, &data, &scratch));
                assert!(r.is_ok(), "fuzz target {target} fails on {}", path.display());
                n += 1;
            }
        }
        assert!(n > 0, "no committed input for fuzz target {target}");
    }
}
