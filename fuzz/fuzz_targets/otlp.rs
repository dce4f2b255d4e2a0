#![no_main]
// The body is hpm_profile::fuzz_targets::otlp (shared with the stable replay of the corpus).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    hpm_profile::fuzz_targets::run("otlp", data, &std::env::temp_dir());
});
