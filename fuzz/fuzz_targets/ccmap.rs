#![no_main]
// The body is hpm_core::fuzz_targets::ccmap (shared with the stable replay of the corpus).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    hpm_core::fuzz_targets::run("ccmap", data, &std::env::temp_dir());
});
