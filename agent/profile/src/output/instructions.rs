//! Per-instruction histograms (Schneider & Gross §6.3, Figures 4-5): the samples' instruction
//! pointers in compiled code, each decoded from the code as it was installed when the sample
//! was taken ([`Recording::code`], copied by the agent at CompiledMethodLoad: the code cache
//! reuses addresses), with the method, bytecode index and line of the sample's leaf frame.
//! `hpm report FILE --instructions [--method REGEX]`: the top instructions by samples and by
//! each counter, and the share the top ones hold.
//!
//! A sample's IP is the instruction about to run when the thread was interrupted: with a timer
//! or a counter's overflow interrupt the cost of an instruction usually shows on the next
//! one ("skid"); precise events (PEBS, IBS) name the instruction itself.

use std::collections::HashMap;
use std::fmt::Write as _;

use iced_x86::{Decoder, DecoderOptions, Formatter, IntelFormatter};
use regex::Regex;

use crate::codemap::{CodeBlob, CodeEvent, CodeTimeline};
use crate::model::{CompiledCode, Frame, Recording, VmComponent};

/// What `--instructions` shows.
#[derive(Clone, Debug, Default)]
pub struct InstructionOptions {
    /// Rows per table.
    pub top: usize,
    /// Only instructions whose leaf frame's method, or the compiled method they are in,
    /// matches (`Class.method` names).
    pub method: Option<Regex>,
}

impl InstructionOptions {
    /// Options with `method` compiled, or the user's error.
    pub fn new(top: usize, method: Option<&str>) -> Result<InstructionOptions, String> {
        let method = method
            .map(|re| Regex::new(re).map_err(|e| format!("--method `{re}`: not a regular expression: {e}")))
            .transpose()?;
        Ok(InstructionOptions { top, method })
    }
}

/// One instruction's samples.
#[derive(Clone, Debug, PartialEq)]
pub struct InstructionRow {
    /// Index into [`Recording::code`].
    pub code: usize,
    pub ip: u64,
    pub samples: u64,
    /// Sums of the samples' counter deltas, aligned with [`Recording::counters`].
    pub counters: Vec<u64>,
    /// The leaf Java frame most of its samples had (method, bytecode index, line).
    pub frame: Option<Frame>,
    /// The instruction in Intel syntax, or why it is not known.
    pub text: String,
}

/// The samples of a recording by instruction.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Histogram {
    /// Sorted by samples, most first (then by address).
    pub rows: Vec<InstructionRow>,
    /// Samples in compiled code (of the selected methods, with `--method`).
    pub in_code: u64,
    /// Samples with an instruction pointer (selected or not), and those outside compiled code
    /// by VM component.
    pub total: u64,
    pub outside: Vec<(VmComponent, u64)>,
    /// Samples with no instruction pointer (samplers that record none).
    pub no_ip: u64,
    /// Samples in compiled code whose instructions were not copied.
    pub not_copied: u64,
}

/// Builds the histogram of `rec`'s samples (all of them: the caller filters by thread and time).
pub fn histogram(rec: &Recording, method: Option<&Regex>) -> Histogram {
    let mut h = Histogram::default();
    let mut timeline = CodeTimeline::default();
    for (i, c) in rec.code.iter().enumerate() {
        // The blob's "method" is its index in `rec.code`: the map says which copy an IP is in.
        timeline.push(CodeEvent::Load(CodeBlob::compiled(i as u64, c.start, c.size, Vec::new(), c.loaded_at)));
    }
    let mut order: Vec<usize> = (0..rec.samples.len()).collect();
    order.sort_by_key(|&i| rec.samples[i].time);
    let ncounters = rec.counters.len();
    let mut rows: HashMap<(usize, u64), (InstructionRow, HashMap<Frame, u64>)> = HashMap::new();
    let mut outside: HashMap<VmComponent, u64> = HashMap::new();
    let mut selected: HashMap<(usize, usize), bool> = HashMap::new();
    for i in order {
        let s = &rec.samples[i];
        if s.ip == 0 {
            h.no_ip += 1;
            continue;
        }
        h.total += 1;
        timeline.advance_to(s.time);
        // Only samples the agent placed in compiled code: the file has no unload events, so an
        // address in a stub or the interpreter now could match a blob freed before.
        let found = timeline.map.find(s.ip).and_then(CodeBlob::method).filter(|_| s.component == VmComponent::Java);
        let Some(code) = found.map(|m| m as usize) else {
            *outside.entry(s.component).or_default() += 1;
            continue;
        };
        let leaf = s.stack.iter().find(|f| f.kind.is_java()).copied();
        if let Some(re) = method {
            let leaf_method = leaf.map_or(usize::MAX, |f| f.method.0 as usize);
            let keep = *selected.entry((code, leaf_method)).or_insert_with(|| {
                re.is_match(&rec.method(rec.code[code].method).display_name())
                    || leaf.is_some_and(|f| re.is_match(&rec.method(f.method).display_name()))
            });
            if !keep {
                continue;
            }
        }
        h.in_code += 1;
        let (row, frames) = rows.entry((code, s.ip)).or_insert_with(|| {
            (
                InstructionRow {
                    code,
                    ip: s.ip,
                    samples: 0,
                    counters: vec![0; ncounters],
                    frame: None,
                    text: String::new(),
                },
                HashMap::new(),
            )
        });
        row.samples += 1;
        for (sum, d) in row.counters.iter_mut().zip(&s.counters) {
            *sum = sum.saturating_add(*d);
        }
        if let Some(f) = leaf {
            *frames.entry(f).or_default() += 1;
        }
    }
    h.rows = rows
        .into_values()
        .map(|(mut row, frames)| {
            row.frame = frames.into_iter().max_by_key(|(f, n)| (*n, std::cmp::Reverse((f.method, f.bci)))).map(|p| p.0);
            row.text = disassemble(&rec.code[row.code], row.ip);
            row
        })
        .collect();
    h.not_copied = h.rows.iter().filter(|r| rec.code[r.code].bytes.is_empty()).map(|r| r.samples).sum();
    h.rows.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.ip.cmp(&b.ip)).then(a.code.cmp(&b.code)));
    h.outside = outside.into_iter().collect();
    h.outside.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.name().cmp(b.0.name())));
    h
}

/// `n` as a percentage of `of` (0 when `of` is 0).
fn share(n: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        n as f64 * 100.0 / of as f64
    }
}

/// The instruction at `ip` in `code`, in Intel syntax.
pub fn disassemble(code: &CompiledCode, ip: u64) -> String {
    if code.bytes.is_empty() {
        return "(code not recorded)".into();
    }
    let Some(off) = ip.checked_sub(code.start).map(|o| o as usize).filter(|&o| o < code.bytes.len()) else {
        return "(outside the code)".into();
    };
    let mut d = Decoder::with_ip(64, &code.bytes[off..], ip, DecoderOptions::NONE);
    let insn = d.decode();
    if insn.is_invalid() {
        return format!("(not an instruction: {:02x})", code.bytes[off]);
    }
    let mut out = String::new();
    IntelFormatter::new().format(&insn, &mut out);
    out
}

/// The report: what was looked at, then the top instructions by samples and by each counter.
pub fn report(rec: &Recording, opts: &InstructionOptions) -> Result<String, String> {
    let h = histogram(rec, opts.method.as_ref());
    if h.total == 0 && h.no_ip > 0 {
        return Err(format!(
            "--instructions: the samples carry no instruction pointer (sampler={}); record with sampler=asgct \
             or sampler=chain",
            rec.event.sampler
        ));
    }
    if rec.code.is_empty() {
        return Err("--instructions: the recording holds no compiled code (recorded by an hpm older than \
                    --instructions, or no sample was in compiled code)"
            .into());
    }
    let mut out = String::new();
    let what = opts.method.as_ref().map_or(String::new(), |re| format!(" of methods matching `{re}`"));
    let _ = writeln!(
        out,
        "Instructions{what}: {} samples in compiled code ({:.1}% of {} with an instruction pointer), {} distinct \
         instructions",
        h.in_code,
        share(h.in_code, h.total),
        h.total,
        h.rows.len()
    );
    if !h.outside.is_empty() {
        let parts: Vec<String> = h.outside.iter().map(|(c, n)| format!("{} {n}", c.name())).collect();
        let _ = writeln!(out, "  outside compiled code: {}", parts.join(", "));
    }
    if h.not_copied > 0 {
        let _ = writeln!(
            out,
            "  {} samples are in code whose instructions the recording does not hold (the agent keeps a blob's \
             instructions from its second sample in a session on, and copies at most {} MB of compiled code; a reader \
             decodes at most {} MB per file)",
            h.not_copied,
            crate::codemap::CODE_BYTES_BUDGET >> 20,
            crate::limits::MAX_CODE_BYTES >> 20
        );
    }
    if h.no_ip > 0 {
        let _ = writeln!(out, "  {} samples carry no instruction pointer", h.no_ip);
    }
    if h.rows.is_empty() {
        let _ = writeln!(out, "  no sample in compiled code{what}");
        return Ok(out);
    }
    let by_samples: Vec<&InstructionRow> = h.rows.iter().collect();
    table(&mut out, rec, &by_samples, "samples", opts.top, |r| r.samples);
    for (i, name) in rec.counters.iter().enumerate() {
        let mut by: Vec<&InstructionRow> = h.rows.iter().filter(|r| r.counters[i] > 0).collect();
        if by.is_empty() {
            let _ = writeln!(out, "\nTop instructions by {name}: the counter is 0 at every instruction");
            continue;
        }
        by.sort_by(|a, b| b.counters[i].cmp(&a.counters[i]).then(a.ip.cmp(&b.ip)));
        table(&mut out, rec, &by, name, opts.top, |r| r.counters[i]);
    }
    Ok(out)
}

/// One table: rows by `value` (already sorted by it), with the share the top ones hold.
fn table(
    out: &mut String,
    rec: &Recording,
    rows: &[&InstructionRow],
    name: &str,
    top: usize,
    value: impl Fn(&InstructionRow) -> u64,
) {
    let total: u64 = rows.iter().map(|r| value(r)).sum();
    let shown = &rows[..rows.len().min(top)];
    let held: u64 = shown.iter().map(|r| value(r)).sum();
    let pct = |n: u64| share(n, total);
    let _ =
        writeln!(out, "\nTop {} instructions by {name}: {:.1}% of the {name} in compiled code", shown.len(), pct(held));
    let _ = writeln!(
        out,
        "{:>5} {:>10} {:>6} {:>6}  {:<44} {:>9}  instruction",
        "rank", name, "%", "cum%", "method:line (bci)", "offset"
    );
    let mut cum = 0;
    for (k, r) in shown.iter().enumerate() {
        let v = value(r);
        cum += v;
        let code = &rec.code[r.code];
        let compiled = rec.method(code.method).display_name();
        let site = match r.frame {
            Some(f) => {
                let leaf = rec.method(f.method).display_name();
                let at = if f.line > 0 {
                    format!("{leaf}:{} (bci {})", f.line, f.bci)
                } else {
                    format!("{leaf} (bci {})", f.bci)
                };
                if leaf == compiled {
                    at
                } else {
                    format!("{at} in {compiled}")
                }
            }
            None => compiled,
        };
        let _ = writeln!(
            out,
            "{:>5} {:>10} {:>5.1}% {:>5.1}%  {:<44} {:>9}  {}",
            k + 1,
            v,
            pct(v),
            pct(cum),
            site,
            format!("+{:#x}", r.ip - code.start),
            r.text
        );
    }
}

#[cfg(test)]
#[path = "instructions_tests.rs"]
mod tests;
