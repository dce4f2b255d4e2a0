//! Data addresses from the sampled instruction (the software twin): checked against
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
        // The profile is not read: written to scratch, not to the test's working directory.
        let file = scratch(&format!("data-faults-{}", jdk.name)).join("faults.jfr");
        let opts = format!("event=page-faults,interval=101,data,file={}", file.display());
        let run = run_java(&jdk, Some(&opts), &[], "MappedTouches", &["40"]);
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

// ---- Objects: class, field and space of the sampled addresses (tests/workloads/DataTargets.java)

use hpm_capture::javaheap::Space;
use hpm_profile::output::data::{DataBy, DataTallies};

/// Records `DataTargets MODE` for 3 s of its CPU time with `data` and returns the data tallies
/// (and the run). `array` runs 6 s: only 11-16% of its loop's samples have a memory operand, so
/// 3 s gave ~400 heap samples, against the 300 asked for below.
fn record_targets(jdk: &Jdk, jvm_args: &[&str], mode: &str, tag: &str) -> (DataTallies, Run) {
    let dir = scratch(&format!("data-{tag}-{mode}"));
    let file = dir.join("targets.jfr");
    let opts = format!("data,interval=1ms,file={}", file.display());
    let secs = if mode == "array" { "6" } else { "3" };
    let run = run_java(jdk, Some(&opts), jvm_args, "DataTargets", &[mode, secs]);
    run.assert_ok(&format!("DataTargets {mode} ({tag})"));
    let (rec, _) = hpm_profile::load::load_recording(&file).unwrap_or_else(|e| panic!("{tag} {mode}: {e}"));
    let t = DataTallies::of(&rec);
    let line = run.stderr.lines().find(|l| l.starts_with("hpm: objects: ")).unwrap_or("hpm: (no objects line)");
    eprintln!("{tag} {mode}: {}", line.trim_start_matches("hpm: "));
    assert!(t.heap >= 300, "{tag} {mode}: only {} samples in the heap of {}\n{}", t.heap, t.samples, run.stderr);
    assert!(
        t.identified * 100 >= t.heap * 90,
        "{tag} {mode}: {} of {} heap samples identified\n{}",
        t.identified,
        t.heap,
        run.stderr
    );
    // A stack address is named by the frame that holds it (hpm's walker: the default), or set
    // apart as the interpreter's own access (an interpreted frame's locals and operands).
    let stack: u64 = t.by_space.iter().filter(|r| r.key == "stack").map(|r| r.samples).sum();
    let framed: u64 = t.by_field.iter().filter(|r| r.key.starts_with("(stack) ")).map(|r| r.samples).sum();
    let interpreter: u64 = t
        .by_field
        .iter()
        .filter(|r| r.key == hpm_profile::output::data::INTERPRETER_INTERNAL)
        .map(|r| r.spaces[Space::Stack as usize])
        .sum();
    let named = framed + interpreter;
    eprintln!(
        "{tag} {mode}: {named} of {stack} stack addresses named by their frame ({interpreter} the interpreter's own)"
    );
    assert!(stack < 20 || named * 10 >= stack * 9, "{tag} {mode}: {named} of {stack} stack addresses have a frame");
    (t, run)
}

/// Samples of a row (0 when absent).
fn samples(t: &DataTallies, by: DataBy, key: &str) -> u64 {
    t.rows(by).iter().find(|r| r.key == key).map_or(0, |r| r.samples)
}

/// The space most of a row's samples were in.
fn space_of(t: &DataTallies, by: DataBy, key: &str) -> Space {
    let row = t.rows(by).iter().find(|r| r.key == key).unwrap_or_else(|| panic!("no row {key}"));
    let i = (0..row.spaces.len()).max_by_key(|&i| row.spaces[i]).unwrap();
    Space::from_u8(i as u8)
}

/// A's share of the samples on A or B: three quarters of the links are A's, by construction.
fn assert_a_share(t: &DataTallies, what: &str) {
    assert_share(samples(t, DataBy::Class, "DataTargets$A"), samples(t, DataBy::Class, "DataTargets$B"), what);
}

/// A's share of `a + b` samples is three quarters (within 1.5 points and what the count allows)
/// and there are enough.
fn assert_share(a: u64, b: u64, what: &str) {
    let share = 100.0 * a as f64 / (a + b).max(1) as f64;
    let within = share_tolerance(75.0, a + b, 1.5);
    eprintln!("{what}: A {a}, B {b}: A's share {share:.1}% (truth 75%, within {within:.1} points)");
    assert!(a + b >= 300, "{what}: {a} + {b} samples on the links");
    assert!((share - 75.0).abs() <= within, "{what}: A's share {share:.1}%, truth 75%");
}

#[test]
fn the_hot_class_gets_its_share_and_the_cold_ones_none() {
    for jdk in jdks() {
        let (t, _) = record_targets(&jdk, &[], "classes", &jdk.name);
        assert_a_share(&t, &format!("{} classes", jdk.name));
        let cold = samples(&t, DataBy::Class, "DataTargets$Cold1") + samples(&t, DataBy::Class, "DataTargets$Cold2");
        assert!(cold * 50 <= t.heap, "{}: the cold classes took {cold} of {}", jdk.name, t.heap);
        // Made before System.gc(): old.
        assert_eq!(space_of(&t, DataBy::Class, "DataTargets$A"), Space::Old, "{}", jdk.name);
        assert!(samples(&t, DataBy::Field, "DataTargets$Link.next") > 0, "{}: no Link.next", jdk.name);
    }
}

#[test]
fn parallel_and_serial_spaces_are_read_too() {
    let jdk = &jdks()[0];
    for gc in ["-XX:+UseParallelGC", "-XX:+UseSerialGC"] {
        let (t, _) = record_targets(jdk, &[gc], "classes", gc.trim_start_matches("-XX:+Use"));
        assert_a_share(&t, gc);
        assert_eq!(space_of(&t, DataBy::Class, "DataTargets$A"), Space::Old, "{gc}");
    }
}

#[test]
fn a_chase_through_an_array_a_subclass_field_and_a_hot_array_are_named() {
    for jdk in jdks() {
        let (t, _) = record_targets(&jdk, &[], "chase", &jdk.name);
        let node = samples(&t, DataBy::Class, "DataTargets$Node");
        assert!(node * 10 >= t.identified * 9, "{}: Node has {node} of {}", jdk.name, t.identified);
        assert!(samples(&t, DataBy::Field, "DataTargets$Node.next") > 0, "{}", jdk.name);

        let (t, _) = record_targets(&jdk, &[], "subclass", &jdk.name);
        let (next, w) =
            (samples(&t, DataBy::Field, "DataTargets$Sub.next"), samples(&t, DataBy::Field, "DataTargets$Sub.w"));
        assert!((next + w) * 10 >= t.identified * 9, "{}: Sub's fields {next} + {w} of {}", jdk.name, t.identified);
        assert!(w > 0 && next > 0, "{}", jdk.name);
        assert_eq!(samples(&t, DataBy::Field, "DataTargets$Base.v"), 0, "{}: Base.v is never read", jdk.name);

        // 16 MiB: humongous under G1, its elements found from the first region's header.
        let (t, _) = record_targets(&jdk, &[], "array", &jdk.name);
        let elements = samples(&t, DataBy::Field, "int[] element");
        assert!(elements * 10 >= t.identified * 9, "{}: int[] elements {elements} of {}", jdk.name, t.identified);
        assert_eq!(space_of(&t, DataBy::Class, "int[]"), Space::Humongous, "{}", jdk.name);
    }
}

#[test]
fn objects_moved_by_many_collections_keep_their_shares() {
    for jdk in jdks() {
        // A small young generation: a collection every few milliseconds.
        let (t, run) = record_targets(&jdk, &["-Xmn8m", "-Xlog:gc:stdout"], "gc", &jdk.name);
        let pauses = run.stdout.lines().filter(|l| l.contains("Pause Young")).count();
        eprintln!("{}: {pauses} young collections", jdk.name);
        assert!(pauses >= 20, "{}: only {pauses} collections", jdk.name);
        assert_a_share(&t, &format!("{} gc", jdk.name));
    }
}

/// The stack table (JSON's `data`, pprof's labels) gives each class its own samples too:
/// samples of one stack that touch different classes are not counted under the first one's.
#[test]
fn the_stack_table_gives_the_classes_their_shares() {
    for jdk in jdks() {
        let dir = scratch(&format!("data-json-{}", jdk.name));
        let file = dir.join("targets.json");
        let opts = format!("data,interval=1ms,file={}", file.display());
        let run = run_java(&jdk, Some(&opts), &[], "DataTargets", &["classes", "3"]);
        run.assert_ok(&format!("DataTargets classes ({})", jdk.name));
        let json = std::fs::read_to_string(&file).unwrap();
        let by_class = &json[json.find("\"byClass\":[").expect("a data section by class")..];
        let by_class = &by_class[..by_class.find(']').unwrap()];
        let class = |name: &str| -> u64 {
            let key = format!("{{\"name\":\"{name}\",\"sums\":{{\"samples\":");
            by_class.find(&key).map_or(0, |i| {
                let rest = &by_class[i + key.len()..];
                rest[..rest.find(|c: char| !c.is_ascii_digit()).unwrap()].parse().unwrap()
            })
        };
        assert_share(class("DataTargets$A"), class("DataTargets$B"), &format!("{} JSON data by class", jdk.name));
    }
}

/// The rows of `hpm report FILE --by class` as (line, samples), all of them.
fn class_rows(file: &std::path::Path) -> Vec<(String, u64)> {
    let out = std::process::Command::new(hpm_bin())
        .args(["report", "--by", "class", "--top", "1000"])
        .arg(file)
        .output()
        .expect("run hpm report");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "hpm report --by class: {}", String::from_utf8_lossy(&out.stderr));
    text.lines()
        .skip_while(|l| !l.trim_start().starts_with("samples%"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| {
            let n = l.split_whitespace().nth(1).unwrap_or_else(|| panic!("row {l:?}")).replace(',', "");
            (l.to_string(), n.parse().unwrap_or_else(|e| panic!("row {l:?}: {e}")))
        })
        .collect()
}

/// Samples of `row` (a line of [`class_rows`]) taken in `method`, from its top-methods share.
fn in_method(row: &(String, u64), method: &str) -> u64 {
    let Some(at) = row.0.find(&format!("{method} ")) else { return 0 };
    let rest = &row.0[at + method.len() + 1..];
    let pct: f64 = rest[..rest.find('%').unwrap()].parse().unwrap();
    (row.1 as f64 * pct / 100.0).round() as u64
}

/// A method the interpreter runs (kept from the compilers) reading a heap array at random:
/// its data samples outside the heap are the interpreter's own accesses (its bytecode fetches
/// and dispatch table, the locals in its frame) and are set apart in `(interpreter internal)`,
/// not charged to the method in `(native)`, `(stack)` or `(metadata)` rows
/// (`--by class` was led by those rows for an interpreted method). A timer's sample names the
/// instruction after the one that stalled, which after an interpreted array load is the next
/// bytecode's fetch: the array's own samples are few, and printed. Read through `hpm report`,
/// so that HPM_TEST_BUILD=<an older build> shows the older tables.
#[test]
fn the_interpreters_own_accesses_are_set_apart_from_the_methods_objects() {
    const GATHER: &str = "DataTargets.gather";
    for jdk in jdks() {
        let file = scratch(&format!("data-interpreted-{}", jdk.name)).join("interpreted.jfr");
        let opts = format!("data,interval=1ms,file={}", file.display());
        let exclude = ["-XX:CompileCommand=quiet", "-XX:CompileCommand=exclude,DataTargets::gather"];
        let run = run_java(&jdk, Some(&opts), &exclude, "DataTargets", &["interpreted", "3"]);
        run.assert_ok(&format!("DataTargets interpreted ({})", jdk.name));
        let rows = class_rows(&file);
        let of = |pick: &dyn Fn(&str) -> bool| -> u64 {
            rows.iter().filter(|r| pick(&r.0)).map(|r| in_method(r, GATHER)).sum()
        };
        let all = of(&|_| true);
        let internal = of(&|l| l.contains("  (interpreter internal)  "));
        let outside = ["(native)", "(stack)", "(metadata)", "(code_cache)", "(thread)"];
        let charged = of(&|l| outside.iter().any(|k| l.contains(&format!("  {k}  "))));
        let array = of(&|l| l.contains("  int[]  "));
        let top: Vec<&str> = rows.iter().take(4).map(|r| r.0.trim()).collect();
        eprintln!(
            "{}: {GATHER}'s {all} data samples: {internal} interpreter internal, {charged} in rows outside the \
             heap, {array} on the int[]; top rows:\n  {}",
            jdk.name,
            top.join("\n  ")
        );
        assert!(all >= 500, "{}: only {all} data samples in {GATHER}", jdk.name);
        assert!(internal * 10 >= all * 9, "{}: {internal} of {all} set apart as interpreter internal", jdk.name);
        assert!(charged * 50 <= all, "{}: {charged} of {all} charged to rows outside the heap", jdk.name);
    }
}
