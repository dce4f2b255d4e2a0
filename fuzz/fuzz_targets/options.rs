#![no_main]
// The body is hpm::options::fuzz (shared with the stable replay of the corpus).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    hpm::options::fuzz(data);
});
