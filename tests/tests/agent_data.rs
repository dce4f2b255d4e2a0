//! Data addresses from the sampled instruction (issue 13, the software twin): checked against
//! the kernel's own address. A page-fault sample carries the faulting address (PERF_SAMPLE_ADDR)
//! and interrupts the thread at the faulting instruction, before it runs again, so decoding
//! that instruction with the interrupted registers must give the same address.
//! tests/workloads/MappedTouches.java stores one byte per page of a mapped file, from JIT code
//! once compiled, and takes the pages away between rounds so every round faults again.

use hpm_tests::*;

/// The numbers of the summary's `data addresses: F of N samples ...; the event's own address
/// within the decoded access on A of C`: (F, N, stores, A, C).
fn data_line(stderr: &str) -> (u64, u64, u64, u64, u64) {
    let line = stderr.lines().find(|l| l.starts_with("hpm: data addresses: ") && l.contains(" of "));
    let line = line.unwrap_or_else(|| panic!("no data addresses line:\n{stderr}"));
    let num = |after: &str, before: &str| -> u64 {
        let start = line.find(after).unwrap_or_else(|| panic!("no `{after}` in {line}")) + after.len();
        let rest = &line[start..];
        let end = rest.find(before).unwrap_or_else(|| panic!("no `{before}` after `{after}` in {line}"));
        rest[..end].trim().replace(',', "").parse().unwrap_or_else(|e| panic!("{line}: {e}"))
    };
    (
        num("data addresses: ", " of "),
        num(" of ", " samples"),
        num("loads, ", " stores"),
        num("decoded access on ", " of "),
        line.rsplit(" of ").next().unwrap().trim().replace(',', "").parse().unwrap(),
    )
}

#[test]
fn decoded_addresses_agree_with_the_kernels_fault_addresses() {
    for jdk in jdks() {
        let opts = "event=page-faults,interval=101,data";
        let run = run_java(&jdk, Some(opts), &[], "MappedTouches", &["40"]);
        run.assert_ok("MappedTouches");
        let (found, samples, stores, agreed, compared) = data_line(&run.stderr);
        eprintln!(
            "{}: {found} of {samples} samples decoded ({stores} stores); fault address within the decoded \
             access on {agreed} of {compared}",
            jdk.name
        );
        // 40 rounds x 8,192 pages; a fault every page or few (fault-around): with one sample
        // per 101 faults, ~1,000 samples. Sampling every fault (the period ignored) gave ~110,000.
        assert!((300..=8_000).contains(&samples), "{}: {samples} samples at interval=101", jdk.name);
        assert!(
            compared * 10 >= samples * 8,
            "{}: only {compared} of {samples} samples decoded in Java code",
            jdk.name
        );
        assert!(stores * 10 >= compared * 9, "{}: the faults are stores: {stores} of {compared}", jdk.name);
        assert!(
            agreed * 100 >= compared * 99,
            "{}: the kernel's fault address is within the decoded access on only {agreed} of {compared}",
            jdk.name
        );
    }
}
