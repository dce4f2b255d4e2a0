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

/// libFuzzer's `-max_len` (scripts/fuzz.sh).
const MAX_LEN: usize = 65_536;

/// A hostile shape as large as fits in [`MAX_LEN`] (asked in steps of 1 KiB), so that a reader that
/// multiplies it costs the most.
fn largest(make: fn(usize) -> Vec<u8>) -> Vec<u8> {
    (1..=(2 * MAX_LEN) >> 10).rev().map(|k| make(k << 10)).find(|d| d.len() <= MAX_LEN).expect("a shape fits")
}

/// The hostile seeds of the corpus (`fuzz/corpus/jfr/hostile-*`, and a deep path of distinct
/// methods in `fuzz/corpus/collapsed/`) are what [`crate::adversarial`] makes, so the fuzz run
/// starts from the shapes that once cost gigabytes. `HPM_WRITE_HOSTILE_SEEDS=1` writes them.
#[test]
fn the_hostile_seeds_are_what_the_generators_make() {
    let write = std::env::var_os("HPM_WRITE_HOSTILE_SEEDS").is_some();
    let mut seeds: Vec<(PathBuf, Vec<u8>)> = crate::adversarial::hostile::SHAPES
        .iter()
        .map(|s| (fuzz_dir().join("corpus/jfr").join(format!("hostile-{}", s.name)), largest(s.make)))
        .collect();
    let deep = crate::adversarial::deep_collapsed(600, 1, 1, crate::adversarial::Names::Distinct);
    seeds.push((fuzz_dir().join("corpus/collapsed/hostile-deep-distinct"), deep.into_bytes()));
    for (path, data) in seeds {
        assert!(data.len() <= MAX_LEN, "{}: {} bytes, over -max_len", path.display(), data.len());
        if write {
            std::fs::write(&path, &data).unwrap();
        }
        let committed = std::fs::read(&path).unwrap_or_default();
        assert!(
            committed == data,
            "{} differs from its generator: HPM_WRITE_HOSTILE_SEEDS=1 writes it",
            path.display()
        );
    }
}
