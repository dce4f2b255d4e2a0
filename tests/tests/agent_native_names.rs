//! Native frames named: a thread in libc shows the libc function's name, internal
//! ones included, which only libc's debug file names (Debian: libc6-dbg, installed by
//! scripts/setup.sh). tests/workloads/LibcCalls.java runs a thread writing single bytes to
//! /dev/null (libc `write`) and one whose CPU goes into libc's memset (zlib clearing its hash
//! table in Deflater.reset), at 1 ms, on every JDK.

use hpm_resolve::symbols::{parse_maps, DebugSearch, SymbolTable};
use hpm_tests::*;

/// Samples of the thread named `thread` (the root frame `[NAME tid=N]` of a `threads`
/// profile), how many contain a frame for which `named` holds, and the distinct frames that
/// print as an unnamed libc address (`libc.so.6+0x…`).
fn thread_frames(stacks: &[(Vec<String>, u64)], thread: &str, named: impl Fn(&str) -> bool) -> (u64, u64, Vec<String>) {
    let root = format!("[{thread} ");
    let (mut all, mut hits, mut unnamed) = (0, 0, Vec::new());
    for (frames, n) in stacks.iter().filter(|(f, _)| f.first().is_some_and(|r| r.starts_with(&root))) {
        all += n;
        if frames.iter().any(|f| named(f)) {
            hits += n;
        }
        for f in frames.iter().filter(|f| f.starts_with("libc.so") && f.contains("+0x")) {
            if !unnamed.contains(f) {
                unnamed.push(f.clone());
            }
        }
    }
    (all, hits, unnamed)
}

/// The libc this machine's processes map, and the debug file hpm finds for it.
fn libc_debug_file() -> (String, Option<String>) {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("read /proc/self/maps");
    let libc = parse_maps(&maps)
        .into_iter()
        .find(|m| m.exec && m.path.rsplit('/').next().is_some_and(|n| n.starts_with("libc.so")))
        .expect("this process maps a libc.so")
        .path;
    let table = SymbolTable::open_with(std::path::Path::new(&libc), &DebugSearch::default(), &mut Vec::new())
        .unwrap_or_else(|e| panic!("{libc}: {e}"))
        .expect("libc exists");
    let debug = table.debug_source().map(str::to_string);
    (libc, debug)
}

#[test]
fn libc_write_and_memset_are_named() {
    let (libc, debug) = libc_debug_file();
    let Some(debug) = debug else {
        panic!(
            "{libc} has no debug file installed, so libc's internal functions (memset's variants) cannot be \
             named: install it (Debian: `apt-get install libc6-dbg`, which scripts/setup.sh does; it lands in \
             /usr/lib/debug/.build-id/)"
        );
    };
    eprintln!("libc {libc}, debug file {debug}");
    for jdk in jdks() {
        let dir = scratch(&format!("native-names-{}", jdk.name));
        let out = dir.join("p.collapsed");
        let opts = format!("interval=1ms,threads,file={},quiet", out.display());
        // 2 s of CPU time per thread: ~2,000 samples of each at 1 ms, however loaded the
        // machine is.
        run_java(&jdk, Some(&opts), &[], "LibcCalls", &["2"]).assert_ok("LibcCalls");
        let stacks = read_collapsed(&out);

        // With kernel mode sampled (root here), a sample in the write system call carries the
        // libc function that entered the kernel (from the user registers): ~70% of the
        // writer's samples have `write` (JDK 17 and 25). With kernel time only counted (an
        // unprivileged user) its kernel periods go to the next user-mode sample, in `write`
        // about 30% of the time.
        let min_share = if is_root() { 50.0 } else { 10.0 };
        let is_write = |f: &str| matches!(f, "write" | "__write" | "__libc_write" | "__GI___libc_write");
        let (n, hits, unnamed) = thread_frames(&stacks, "libc-write", is_write);
        let share = 100.0 * hits as f64 / n.max(1) as f64;
        eprintln!("{}: libc-write: {n} samples, {share:.1}% in libc write, unnamed libc frames {unnamed:?}", jdk.name);
        assert!(n >= 1_000, "{}: only {n} samples of thread libc-write", jdk.name);
        assert!(
            share >= min_share,
            "{}: only {share:.1}% of libc-write's {n} samples have libc's write in their stack",
            jdk.name
        );
        assert!(
            unnamed.is_empty(),
            "{}: libc-write has libc frames without a name: {unnamed:?} (debug file {debug})",
            jdk.name
        );

        // memset runs in a CPU-specific internal function, e.g. __memset_avx2_unaligned_erms:
        // ~75% of the thread's samples here; the rest are zlib and the JNI path.
        let is_memset = |f: &str| f == "memset" || f.starts_with("__memset_");
        let (n, hits, unnamed) = thread_frames(&stacks, "libc-memset", is_memset);
        let share = 100.0 * hits as f64 / n.max(1) as f64;
        eprintln!(
            "{}: libc-memset: {n} samples, {share:.1}% in libc memset, unnamed libc frames {unnamed:?}",
            jdk.name
        );
        assert!(n >= 1_000, "{}: only {n} samples of thread libc-memset", jdk.name);
        assert!(
            share >= 50.0,
            "{}: only {share:.1}% of libc-memset's {n} samples have a libc memset function (memset, __memset_*) \
             in their stack; libc's debug file is {debug}",
            jdk.name
        );
        assert!(
            unnamed.is_empty(),
            "{}: libc-memset has libc frames without a name: {unnamed:?} (debug file {debug})",
            jdk.name
        );
    }
}
