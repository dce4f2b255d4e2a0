//! The readers and analyses on adversarial input ([`crate::adversarial`]): structure sizes stay
//! linear in the input, deep input completes, and the limits refuse with the line the README
//! documents. Timing goals are the benchmark's (`bench-readers`), not these tests'.

use std::sync::Arc;

use crate::adversarial::{self, Names};
use crate::analysis::callerchain::{parse_quads, quad_events, ChainTree, MAX_INDENT};
use crate::analysis::ccmap::{CcMap, CCMAP_MAX_CONTEXT};
use crate::analysis::compare::{compare, CompareOptions, Weight};
use crate::cct::Cct;
use crate::jfr::parser::parse_chunks;
use crate::jfr::{recording_from_chunks, ReadErrorKind};
use crate::limits::{LimitError, MAX_STACK_DEPTH};
use crate::load::{parse_collapsed, CollapsedError};
use crate::model::Recording;
use crate::output::{flame_html, flame_svg, to_collapsed, HtmlOptions, Measure, SvgOptions};

fn read(bytes: &[u8]) -> Recording {
    recording_from_chunks(&parse_chunks(bytes, &|_| true).unwrap()).unwrap()
}

fn temp(name: &str, data: &[u8]) -> crate::scratch_tests::TempFile {
    crate::scratch_tests::TempFile::new(name, data)
}

#[test]
fn samples_read_from_one_stored_stack_share_one_copy() {
    // 2,000 samples of a 5,000-frame stack: one copy of the frames, not 2,000.
    let rec = read(&adversarial::deep_jfr(5_000, 2_000, Names::Distinct));
    assert_eq!(rec.samples.len(), 2_000);
    let first = &rec.samples[0].stack;
    assert_eq!(first.len(), 5_000);
    assert!(rec.samples.iter().all(|s| Arc::ptr_eq(&s.stack, first)));
    // The tree has a node per frame, whatever the number of samples.
    let cct = Cct::from_recording(&rec, true);
    assert_eq!(cct.nodes.len(), 5_000 + 2);
    assert_eq!(cct.total_samples(), 2_000);
}

#[test]
fn deep_recursion_counts_once_per_sample() {
    let cct = parse_collapsed(&adversarial::deep_collapsed(20_000, 2, 3, Names::Recursive)).unwrap();
    let t = cct.method_totals();
    assert_eq!(t["gen.Rec.f"].total_samples, 6, "recursion counted once per sample");
    assert_eq!(t["gen.Leaf.l1"].self_samples, 3);
}

#[test]
fn flame_graphs_of_a_deep_stack_are_linear() {
    let depth = 20_000;
    let cct = parse_collapsed(&adversarial::deep_collapsed(depth, 1, 5, Names::Distinct)).unwrap();
    let svg = flame_svg(&cct, &SvgOptions::default());
    assert_eq!(svg.matches("<rect").count(), 1 + depth + 1, "background, root, one per frame");
    let html = flame_html(&cct, &HtmlOptions::default());
    assert!(html.len() < 200 * depth, "{} bytes", html.len());
    let collapsed = to_collapsed(&cct, Measure::Samples);
    assert_eq!(collapsed.lines().count(), 1);
}

#[test]
fn ccmap_of_a_deep_stack_grows_linearly() {
    let depth = 3_000;
    let cct = parse_collapsed(&adversarial::deep_collapsed(depth, 1, 1, Names::Distinct)).unwrap();
    let map = CcMap::from_cct(&cct);
    assert_eq!(map.methods().len(), depth);
    // Without the context bound this is depth^2 / 2 (4.5 million here).
    assert!(map.callee_refs().len() <= depth * CCMAP_MAX_CONTEXT, "{} callee refs", map.callee_refs().len());
    assert!(map.callee_refs().len() >= (depth - CCMAP_MAX_CONTEXT - 2) * CCMAP_MAX_CONTEXT);
    // Paths of the longest kept context are still found, with their counts.
    let longest = map.hottest_paths(1);
    assert_eq!(longest[0].methods.len(), CCMAP_MAX_CONTEXT + 2);
    assert_eq!(longest[0].count, 1);
    // The dump loads back (its contexts are within the bound the loader checks).
    let dump = map.dump();
    let back = CcMap::parse_dump(&dump).unwrap();
    assert_eq!(back, map);
}

#[test]
fn callerchain_output_is_linear_in_a_deep_chain() {
    let depth = 5_000;
    let quads = parse_quads(&adversarial::deep_quads(depth)).unwrap();
    let tree = ChainTree::build(&quads).unwrap();
    assert_eq!(tree.nodes.len(), depth + 1);
    let text = tree.render();
    assert_eq!(text.lines().count(), depth + 1);
    // Indentation stops at MAX_INDENT levels: without it the text is 25 MB here.
    let widest = 2 * MAX_INDENT + "[level 5000] f5000 @5000  1 samples".len();
    assert!(text.len() <= (depth + 1) * (widest + 1), "{} bytes", text.len());
    assert!(text.lines().last().unwrap().contains(&format!("[level {depth}] f{depth} @{depth}")));
    let s = tree.stats(&quad_events(&quads));
    assert_eq!((s.events, s.mapped), (depth as u64, depth as u64));
}

#[test]
fn comparing_deep_profiles_keys_contexts_by_node() {
    let a = parse_collapsed(&adversarial::deep_collapsed(20_000, 3, 2, Names::Distinct)).unwrap();
    let b = parse_collapsed(&adversarial::deep_collapsed(20_000, 3, 5, Names::Distinct)).unwrap();
    for weight in [Weight::SelfSamples, Weight::TotalSamples] {
        let c = compare(&a, &b, &CompareOptions { weight, ..Default::default() });
        assert!((c.overlap.unwrap() - 1.0).abs() < 1e-9, "{weight:?}: {:?}", c.overlap);
        assert_eq!(c.hot_edge_coverage, Some(1.0));
    }
}

#[test]
fn stacks_deeper_than_the_limit_are_refused() {
    let line = format!("{} 1\n", vec!["f"; MAX_STACK_DEPTH + 1].join(";"));
    let (n, e) = parse_collapsed(&line).unwrap_err();
    assert_eq!(n, 1);
    assert_eq!(e, CollapsedError::Limit(LimitError::StackTooDeep { frames: MAX_STACK_DEPTH as u64 + 1 }));
    assert!(e.to_string().contains("deeper than hpm reads (1000000 frames)"), "{e}");
    // At the limit it is read.
    let line = format!("{} 1\n", vec!["f"; MAX_STACK_DEPTH].join(";"));
    assert_eq!(parse_collapsed(&line).unwrap().nodes.len(), MAX_STACK_DEPTH + 1);
}

#[test]
fn jfr_weights_that_overflow_are_refused() {
    let p = temp("huge.jfr", &adversarial::huge_weights_jfr());
    let e = crate::jfr::read_recording(&p).unwrap_err();
    assert!(matches!(e.kind, ReadErrorKind::Limit(LimitError::SumOverflow { .. })), "{e}");
    assert!(e.to_string().contains("chunk 0: the sample weights (periods) add up to more than"), "{e}");
}

#[test]
fn a_cut_last_chunk_leaves_the_earlier_ones_readable() {
    for keep in [10, 68, 500] {
        let (bytes, at) = adversarial::truncated_jfr(3, keep);
        let p = temp(&format!("cut{keep}.jfr"), &bytes);
        let read = crate::jfr::read_recording(&p).unwrap();
        assert_eq!(read.recording.samples.len(), 30, "three complete chunks of 10");
        let lost = read.lost.unwrap();
        assert_eq!((lost.chunk, lost.offset), (3, at as u64));
        assert_eq!(lost.present, (bytes.len() - at) as u64);
        assert!(lost.to_string().starts_with(&format!("chunk 3 at byte {at} is incomplete")), "{lost}");
    }
    // A chunk whose header says it is still being written, and space that was never written.
    let (mut bytes, _) = adversarial::truncated_jfr(1, 0);
    let one = bytes.clone();
    let mut unfinished = one.clone();
    unfinished[64] = 1;
    bytes.extend_from_slice(&unfinished);
    let read = crate::jfr::read_recording(&temp("unfinished.jfr", &bytes)).unwrap();
    assert!(read.lost.unwrap().why.contains("still being written"));
    let mut zeros = one;
    zeros.extend(vec![0u8; 4096]);
    let read = crate::jfr::read_recording(&temp("zeros.jfr", &zeros)).unwrap();
    assert_eq!(read.recording.samples.len(), 10);
    assert!(read.lost.unwrap().why.contains("zero bytes"));
}

#[test]
fn source_files_survive_the_jfr_round_trip() {
    let rec = read(&adversarial::deep_jfr(30, 2, Names::Distinct));
    for (_, m) in rec.methods.iter() {
        let class = m.class_name.rsplit('.').next().unwrap();
        assert_eq!(m.source_file.as_deref(), Some(format!("{class}.java").as_str()), "{}", m.display_name());
    }
    let stacks = crate::output::stacks::StackTable::from_recording(&rec);
    let json = crate::output::json::to_json(&rec, &stacks);
    assert!(json.contains("\"sourceFile\":\"C5.java\",\"sourcePath\":\"gen/C5.java\""), "{json}");
}

// ---- Hostile JFR files (adversarial::hostile): what a naive reader multiplies. ----

use crate::adversarial::hostile;

fn read_hostile(make: fn(usize) -> Vec<u8>, bytes: usize) -> Result<Recording, crate::jfr::ReadError> {
    let data = make(bytes);
    crate::jfr::recording_from_bytes(&data, "hostile.jfr")
}

#[test]
fn values_of_no_bytes_are_bounded_by_the_chunks_size() {
    // Arrays of arrays of field-less structs (square of the size), structs of structs of them
    // (2^40 values): refused once the values outgrow the chunk, in a pool or in an event.
    for make in [
        |n| hostile::empty_struct_arrays(n, true),
        |n| hostile::empty_struct_arrays(n, false),
        hostile::empty_struct_fields,
    ] {
        let e = read_hostile(make, 64 << 10).unwrap_err();
        assert!(e.to_string().contains("decode to more than"), "{e}");
    }
    // A value is 24 bytes: the budget of values per byte is a budget of memory.
    assert_eq!(std::mem::size_of::<crate::jfr::value::Value>(), 24);
}

#[test]
fn metadata_strings_are_shared_not_copied_per_reference() {
    let data = hostile::metadata_string_refs(256 << 10);
    let chunk = &parse_chunks(&data, &|_| true).unwrap()[0];
    let root = &chunk.metadata.root;
    let (k, v) = &root.attributes[0];
    assert!(k.len() > 80_000);
    assert!(root.attributes.iter().all(|(a, b)| Arc::ptr_eq(a, k) && Arc::ptr_eq(b, v)), "one copy of the string");
    let types: Vec<_> = chunk.metadata.types.values().filter(|t| t.name.len() > 80_000).collect();
    assert!(types.len() > 1000, "{} types named by the string", types.len());
    assert!(types.iter().all(|t| Arc::ptr_eq(&t.name, k)));
}

#[test]
fn methods_named_by_one_long_symbol_share_it_and_are_bounded() {
    // A few methods: their names are the one symbol, shared.
    let rec = read_hostile(hostile::pooled_name_refs, 70_064).unwrap();
    let long: Vec<_> = rec.methods.iter().map(|(_, m)| m).filter(|m| m.name.len() == 60_000).collect();
    assert!(long.len() > 1);
    assert!(long
        .iter()
        .all(|m| Arc::ptr_eq(&m.name, &long[0].name) && Arc::ptr_eq(&m.class_name, &long[0].class_name)));
    // Thousands: their names would add up to thousands of times the file; refused.
    let e = read_hostile(hostile::pooled_name_refs, 256 << 10).unwrap_err();
    assert!(matches!(e.kind, ReadErrorKind::Limit(LimitError::MethodNamesTooLong { .. })), "{e}");
    assert!(e.to_string().contains("the methods' names add up to"), "{e}");
}

#[test]
fn thread_names_are_cut_and_counters_bounded() {
    let rec = read_hostile(hostile::thread_name_refs, 64 << 10).unwrap();
    assert!(rec.threads.len() > 1000);
    let max = crate::limits::MAX_THREAD_NAME_BYTES;
    assert!(rec.threads.iter().all(|t| t.name.len() <= max + 3), "names cut at {max} bytes");
    assert!(rec.threads.iter().any(|t| t.name.ends_with("...")));
    let e = read_hostile(hostile::counters_per_chunk, 64 << 10).unwrap_err();
    assert!(matches!(e.kind, ReadErrorKind::Limit(LimitError::TooManyCounters { .. })), "{e}");
}

#[test]
fn phase_names_and_compiled_code_are_read_once_per_string() {
    let data = hostile::phase_name_refs(64 << 10);
    let p = temp("phases.jfr", &data);
    let phases = crate::jfr::marks::read_phases(&p).unwrap();
    assert!(phases.len() > 1000);
    assert!(phases.iter().all(|m| Arc::ptr_eq(&m.name, &phases[0].name)), "one copy of the name");
    let e = crate::jfr::marks::cut_from_phase(&mut Vec::new(), &phases, "none").unwrap_err();
    assert!(e.len() < 2_000 && e.ends_with(", ..."), "the markers listed briefly: {e}");
    let rec = read_hostile(hostile::code_refs, 64 << 10).unwrap();
    assert!(rec.code.len() > 1000);
    assert!(!rec.code[0].bytes.is_empty());
    assert!(rec.code.iter().all(|c| Arc::ptr_eq(&c.bytes, &rec.code[0].bytes)), "decoded once");
}

#[test]
fn per_thread_trees_and_tables_of_one_deep_stack_stay_linear() {
    let data = hostile::threads_of_a_deep_stack(256 << 10);
    let rec = read_hostile(hostile::threads_of_a_deep_stack, 256 << 10).unwrap();
    let (threads, depth) = (rec.threads.len(), rec.samples[0].stack.len());
    assert!(threads > 5_000 && depth > 10_000, "{threads} threads, {depth} frames");
    // Without the bound: threads times depth nodes (~100 million here).
    let cct = Cct::from_recording(&rec, true);
    assert!(cct.nodes.len() <= 2 * crate::cct::split_tree_limit(&rec) + 1, "{} nodes", cct.nodes.len());
    assert!(cct.cut_samples() > 0);
    assert_eq!(cct.total_samples(), rec.samples.len() as u64);
    // The stack table holds the stack once for all threads; pprof merges them.
    let table = crate::output::stacks::StackTable::from_recording(&rec);
    assert_eq!(table.entries.len(), threads);
    assert!(table.entries.iter().all(|e| Arc::ptr_eq(&e.key.frames, &table.entries[0].key.frames)));
    let gz = crate::output::pprof::pprof_gz(&rec, &table);
    assert!(gz.len() < data.len(), "{} bytes of pprof", gz.len());
}

#[test]
fn virtual_threads_past_the_bound_share_one_entry() {
    let data = hostile::many_virtual_threads(64 << 10);
    let chunks = parse_chunks(&data, &|_| true).unwrap();
    let (rec, notes) = crate::jfr::recording::recording_bounded(&chunks, 1_000).unwrap();
    let virtuals = rec.threads.iter().filter(|t| t.is_virtual).count();
    assert_eq!(virtuals, 1_001, "1,000 kept apart, one for the rest");
    let other = rec.threads.iter().position(|t| t.is_virtual_group()).unwrap();
    let merged = rec.samples.iter().filter(|s| s.thread.0 as usize == other).count();
    assert!(merged > 1_000, "{merged} samples merged");
    assert!(notes[0].starts_with(&format!("{} more virtual threads", crate::text::group(merged as u64))), "{notes:?}");
}

#[test]
fn a_context_map_is_bounded_by_its_input() {
    let text = adversarial::deep_collapsed(20_000, 1, 1, Names::Distinct);
    let cct = parse_collapsed(&text).unwrap();
    let max = crate::limits::ccmap_max_contexts(text.len() as u64);
    assert_eq!(CcMap::from_cct_within(&cct, max).unwrap_err(), max);
    let e = LimitError::TooManyContexts { max }.to_string();
    assert!(e.contains("call context map would hold more than"), "{e}");
    // Recursion repeats its contexts: read at any depth.
    let text = adversarial::deep_collapsed(20_000, 1, 1, Names::Recursive);
    let cct = parse_collapsed(&text).unwrap();
    assert!(CcMap::from_cct_within(&cct, crate::limits::ccmap_max_contexts(text.len() as u64)).is_ok());
}
