use std::sync::Arc;

use super::*;
use crate::model::MethodIdx;
use crate::model::{FrameKind, MethodInfo, Sample};

/// `add rax, rbx; mov rax, [rbx+0x10]; ret` at 0x1000, `Hot.loop` (method 0), inlining
/// `Util.get` (method 1) at the load.
const CODE_A: &[u8] = &[0x48, 0x01, 0xd8, 0x48, 0x8b, 0x43, 0x10, 0xc3];
/// What the JIT put at the same address later: `nop; ret` in `Other.run` (method 2).
const CODE_B: &[u8] = &[0x90, 0xc3];

fn frame(method: u32, bci: i32, line: i32) -> Frame {
    Frame { method: MethodIdx(method), bci, line, kind: FrameKind::JitCompiled }
}

fn sample(time: u64, ip: u64, leaf: Frame, counter: u64) -> Sample {
    Sample { time, ip, counters: vec![counter], ..Sample::of_stack(Arc::from(vec![leaf, frame(0, 3, 40)])) }
}

fn recording() -> Recording {
    let mut rec = Recording { counters: vec!["page-faults".into()], ..Recording::default() };
    for (class, name) in [("Hot", "loop"), ("Util", "get"), ("Other", "run")] {
        rec.methods.intern(MethodInfo::java(class, name, "()V"));
    }
    rec.code.push(CompiledCode { method: MethodIdx(0), start: 0x1000, size: 8, loaded_at: 10, bytes: CODE_A.into() });
    rec.code.push(CompiledCode { method: MethodIdx(2), start: 0x1000, size: 2, loaded_at: 100, bytes: CODE_B.into() });
    // Before the reuse: 3 at the add, 5 at the load (inlined Util.get), 1 in the interpreter.
    for t in 0..3 {
        rec.samples.push(sample(20 + t, 0x1000, frame(0, 7, 42), 0));
    }
    for t in 0..5 {
        rec.samples.push(sample(30 + t, 0x1003, Frame { kind: FrameKind::Inlined, ..frame(1, 2, 9) }, 4));
    }
    let mut interpreted = sample(40, 0x9000, frame(0, 1, 41), 0);
    interpreted.component = VmComponent::Interpreter;
    rec.samples.push(interpreted);
    // After it: the same address is Other.run's nop.
    for t in 0..2 {
        rec.samples.push(sample(200 + t, 0x1000, frame(2, 0, 5), 1));
    }
    rec
}

#[test]
fn samples_are_counted_per_instruction_of_the_code_installed_when_taken() {
    let rec = recording();
    let h = histogram(&rec, None);
    assert_eq!((h.total, h.in_code, h.no_ip, h.not_copied), (11, 10, 0, 0));
    assert_eq!(h.outside, vec![(VmComponent::Interpreter, 1)]);
    let got: Vec<(usize, u64, u64, &str)> = h.rows.iter().map(|r| (r.code, r.ip, r.samples, r.text.as_str())).collect();
    assert_eq!(
        got,
        vec![
            (0, 0x1003, 5, "mov rax,[rbx+10h]"),
            (0, 0x1000, 3, "add rax,rbx"),
            // The reused address decodes as the later code.
            (1, 0x1000, 2, "nop"),
        ]
    );
    assert_eq!(h.rows[0].frame, Some(Frame { kind: FrameKind::Inlined, ..frame(1, 2, 9) }));
    assert_eq!(h.rows[0].counters, vec![20]);
}

#[test]
fn the_report_names_method_line_and_instruction_and_ranks_by_each_counter() {
    let rec = recording();
    let out = report(&rec, &InstructionOptions { top: 100, method: None }).unwrap();
    assert!(out.contains("10 samples in compiled code (90.9% of 11"), "{out}");
    assert!(out.contains("outside compiled code: Interpreter 1"), "{out}");
    let by_samples = out.split("Top 3 instructions by samples").nth(1).expect(&out);
    let first = by_samples.lines().nth(2).unwrap();
    assert!(first.contains("Util.get:9 (bci 2) in Hot.loop"), "{first}");
    assert!(first.contains("+0x3") && first.ends_with("mov rax,[rbx+10h]"), "{first}");
    assert!(first.contains("50.0%"), "{first}");
    // By page-faults: the load 20 of 22, Other.run's nop 2; the add (0) is left out.
    let by_faults = out.split("Top 2 instructions by page-faults: 100.0%").nth(1).expect(&out);
    let rows: Vec<&str> = by_faults.lines().skip(2).take(2).collect();
    assert!(rows[0].contains("90.9%") && rows[0].contains("Util.get"), "{rows:?}");
    assert!(rows[1].contains("Other.run:5 (bci 0)") && rows[1].ends_with("nop"), "{rows:?}");
}

#[test]
fn method_filter_matches_the_leaf_or_the_compiled_method() {
    let rec = recording();
    let only = |re: &str| {
        let h = histogram(&rec, Some(&Regex::new(re).unwrap()));
        h.rows.iter().map(|r| (r.code, r.ip)).collect::<Vec<_>>()
    };
    assert_eq!(only("^Util\\."), vec![(0, 0x1003)]);
    assert_eq!(only("Hot\\.loop"), vec![(0, 0x1003), (0, 0x1000)]);
    assert_eq!(only("Other"), vec![(1, 0x1000)]);
    let out = report(&rec, &InstructionOptions { top: 1, method: Some(Regex::new("Nothing").unwrap()) }).unwrap();
    assert!(out.contains("no sample in compiled code of methods matching `Nothing`"), "{out}");
}

#[test]
fn missing_ips_and_missing_code_are_said_plainly() {
    let mut rec = recording();
    rec.code[0].bytes = Default::default();
    let h = histogram(&rec, None);
    assert_eq!(h.not_copied, 8);
    assert_eq!(h.rows[0].text, "(code not recorded)");
    assert!(report(&rec, &InstructionOptions { top: 5, method: None })
        .unwrap()
        .contains("8 samples are in code whose"));

    for s in &mut rec.samples {
        s.ip = 0;
    }
    rec.event.sampler = "jvmti".into();
    let e = report(&rec, &InstructionOptions { top: 5, method: None }).unwrap_err();
    assert!(e.contains("no instruction pointer (sampler=jvmti)"), "{e}");

    let none = Recording { samples: recording().samples, ..Recording::default() };
    let e = report(&none, &InstructionOptions { top: 5, method: None }).unwrap_err();
    assert!(e.contains("holds no compiled code"), "{e}");
}

#[test]
fn ips_outside_or_between_instructions_do_not_panic() {
    let code = CompiledCode {
        method: MethodIdx(0),
        start: 0x1000,
        size: 4,
        loaded_at: 0,
        bytes: [0x48, 0x8b, 0x43, 0x10].into(),
    };
    assert_eq!(disassemble(&code, 0x0fff), "(outside the code)");
    assert_eq!(disassemble(&code, 0x1004), "(outside the code)");
    // A cut instruction: `adc` without its operand byte.
    assert_eq!(disassemble(&code, 0x1003), "(not an instruction: 10)");
}

#[test]
fn forged_code_extents_do_not_overflow() {
    let mut rec = recording();
    rec.code.push(CompiledCode {
        method: MethodIdx(0),
        start: u64::MAX - 4,
        size: u64::MAX,
        loaded_at: 0,
        bytes: [0x90].into(),
    });
    rec.samples.push(sample(300, u64::MAX - 2, frame(0, 1, 41), 0));
    let h = histogram(&rec, None);
    let forged = h.rows.iter().find(|r| r.ip == u64::MAX - 2).expect("the sample is in the forged blob");
    assert_eq!(forged.text, "(outside the code)");
}

#[test]
fn samples_outside_java_code_are_not_charged_to_a_blob_at_their_address() {
    let mut rec = recording();
    // A stub now at an address a freed blob once held.
    let mut stub = sample(400, 0x1001, frame(0, 1, 41), 0);
    stub.component = VmComponent::Stubs;
    rec.samples.push(stub);
    let h = histogram(&rec, Some(&Regex::new("Nothing").unwrap()));
    assert_eq!((h.total, h.in_code), (12, 0), "every sample with an IP counts, selected or not");
    assert!(h.outside.contains(&(VmComponent::Stubs, 1)), "{:?}", h.outside);
}
