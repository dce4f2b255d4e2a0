#![no_main]
// The body is hpm_core::fuzz_targets::options (shared with the stable replay of the corpus).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    hpm_core::fuzz_targets::run("options", data, &std::env::temp_dir());
});
