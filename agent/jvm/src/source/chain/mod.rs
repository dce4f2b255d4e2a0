//! `sampler=chain`: CallerChaining's sampler (Inoue & Nakatani §6). Every thread gets a perf
//! group as under `asgct`, but no signal: each sample carries the user registers and
//! [`crate::perf::CHAIN_STACK`] bytes of the stack, and the processor thread drains the rings
//! every round, walking each copy as far as it reaches (`hotspot::walk_copy`). The sampled
//! thread pays the kernel's sample and nothing else. Each walked frame's depth below its
//! thread's stack base keys the tree the processor rebuilds (`hpm_profile::analysis::chaining`);
//! an anchor event per thread copies [`crate::perf::ANCHOR_STACK`] bytes every
//! [`crate::perf::ANCHOR_EVERY`] periods, so whole stacks root the tree.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::options::{Options, SamplerKind};
use hpm_capture::capture::{Captured, ChainMarks, RawWalk, SlotKind, StackKind, CHAIN_DEPTHS, MAX_FRAMES};
use hpm_capture::hotspot::{FrameSink, Regs, StackCopy, Stop};
use hpm_capture::perf_record::{Layout, RawSample, Record, Ring, MAX_STACK_USER};
use hpm_profile::hash::IntMap;
use hpm_profile::model::KernelMode;

use super::{EventSource, Planned, SourceDef, SourceTraits, Start};
use crate::code::CodeEvents;
use crate::complete::StackCompleter;
use crate::jnienv::{self, Vm};
use crate::jvmti::Jvmti;
use crate::perf::{PerfSpec, RingPtr};
use crate::sink::{SignalCtx, Sink};
use crate::stack_source::StackSite;
use crate::threads::Threads;

mod complete;

pub const SOURCE: SourceDef = SourceDef {
    traits: |opts| (opts.cpu && opts.sampler == SamplerKind::Chain).then_some(SourceTraits::plain(StackSite::Copied)),
    plan,
};

fn plan(opts: &Options, _: &Jvmti) -> Result<Planned, String> {
    let (spec, event, mut notes) = crate::perf::choose_events(opts, true)?;
    notes.extend(super::depth_note(opts));
    let build = |s: &Start| {
        Ok(Arc::new(ChainSampler {
            threads: s.threads,
            code: s.code,
            jvmti: s.jvmti,
            vm: s.vm,
            spec: s.spec.clone(),
            // Published with the slots, never used by a handler: no ASGCT, no data.
            ctx: s.signal_ctx(None, None),
            sink: s.sink.clone(),
            walker: s.stack.walker(),
            state: Default::default(),
            signal_stats: s.stats,
            stats: Default::default(),
            quiet: s.opts.quiet,
        }) as Arc<dyn EventSource>)
    };
    Ok(Planned { event: Some((spec, event)), notes, build: Box::new(build) })
}

/// Rounds between two lookups of the Java threads' stack bases while some thread lacks one.
const LOOKUP_EVERY: u64 = 10;

pub struct ChainSampler {
    pub threads: &'static Threads,
    pub code: &'static CodeEvents,
    pub jvmti: Jvmti,
    pub vm: Vm,
    pub spec: PerfSpec,
    /// Published with each thread's slot, as the registry wants; no handler ever uses it.
    pub ctx: Arc<SignalCtx>,
    pub sink: Arc<Sink>,
    pub walker: Option<&'static hpm_capture::hotspot::Layout>,
    pub state: Mutex<State>,
    /// The session's sample and drop counts (samples read, kernel losses, corrupt rings).
    pub signal_stats: &'static crate::signal::SignalStats,
    pub stats: ChainStats,
    /// No summary lines (the completer's).
    pub quiet: bool,
}

/// Counts for the summary line.
#[derive(Default)]
pub struct ChainStats {
    pub anchors: AtomicU64,
    pub anchors_lost: AtomicU64,
    pub no_base: AtomicU64,
    pub walk_ns: AtomicU64,
}

/// The drain's working state (one drain at a time: the processor's rounds, then `stop`).
#[derive(Default)]
pub struct State {
    /// Stack bases by kernel thread id (0: looked up, not a Java thread).
    bases: IntMap<i32, u64>,
    missing: bool,
    last_lookup: Option<u64>,
    /// Clock time accounted for per thread (kernel time counted, not sampled).
    accounted: IntMap<i32, u64>,
    copy: Vec<u8>,
    addrs: Vec<u64>,
}

impl ChainSampler {
    /// Learns the stack bases of the Java threads the VM lists (on a thread attached to it).
    fn look_up_bases(&self, st: &mut State) {
        let (Some(layout), Some(jni)) = (self.walker, self.vm.env()) else { return };
        let Ok(threads) = self.jvmti.all_threads() else { return };
        for t in threads {
            let ptr = jnienv::java_thread_ptr(jni, t);
            jnienv::delete_local_ref(jni, t);
            if let Some((tid, base)) = (ptr != 0).then(|| crate::vmstructs::java_thread_stack(layout, ptr)).flatten() {
                st.bases.insert(tid, base);
            }
        }
        st.missing = false;
    }

    /// Reads every ring into the sink; in a processor round (`round`), first asks the VM for
    /// the stack bases still missing (at most every [`LOOKUP_EVERY`] rounds).
    fn drain(&self, round: Option<u64>) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = round {
            if st.missing && st.last_lookup.is_none_or(|l| r >= l + LOOKUP_EVERY) {
                st.last_lookup = Some(r);
                self.look_up_bases(&mut st);
            }
        }
        let st = &mut *st;
        if st.copy.len() < MAX_STACK_USER as usize {
            st.copy.resize(MAX_STACK_USER as usize, 0);
            st.addrs.resize(MAX_FRAMES, 0);
        }
        let code = self.walker.map(crate::vmstructs::code_view);
        let anchor_layout = self.spec.anchor_layout();
        let started = crate::os::thread_cpu_ns();
        self.threads.with_rings(|tid, idx, ring, anchor| {
            let layout = if anchor { anchor_layout.unwrap_or(self.spec.layout) } else { self.spec.layout };
            self.drain_ring(st, code.as_ref(), tid, idx, ring, &layout, anchor);
        });
        self.stats.walk_ns.fetch_add(crate::os::thread_cpu_ns().saturating_sub(started), Ordering::Relaxed);
    }

    #[allow(clippy::too_many_arguments, reason = "one ring's reading: its thread, layout and the drain's buffers")]
    fn drain_ring(
        &self,
        st: &mut State,
        code: Option<&hpm_capture::hotspot::CodeView>,
        tid: i32,
        idx: u32,
        ring: &RingPtr,
        layout: &Layout,
        anchor: bool,
    ) {
        let (mut tail, head, data) = ring.pending();
        let view = Ring::new(data);
        while tail < head {
            let Some((rec, size)) = view.record_at(tail, layout) else {
                self.signal_stats.corrupt_ring.fetch_add(1, Ordering::Relaxed);
                tail = head;
                break;
            };
            let at = tail;
            tail += size;
            match rec {
                Record::Sample(raw) => {
                    let n = (raw.stack_len as usize).min(st.copy.len());
                    // The copy is read before the record is handed back (below, after the loop).
                    view.copy_at(raw.stack_at, &mut st.copy[..n]);
                    debug_assert!(raw.stack_at >= at && raw.stack_at < tail);
                    self.push(st, code, tid, idx, &raw, n, anchor);
                }
                Record::Lost(n) if anchor => {
                    self.stats.anchors_lost.fetch_add(n, Ordering::Relaxed);
                }
                Record::Lost(n) => {
                    self.signal_stats.kernel_lost.fetch_add(n, Ordering::Relaxed);
                }
                _ => {}
            }
        }
        ring.consume_to(tail);
    }

    #[allow(clippy::too_many_arguments, reason = "one record: its thread, its stack copy and the drain's buffers")]
    fn push(
        &self,
        st: &mut State,
        code: Option<&hpm_capture::hotspot::CodeView>,
        tid: i32,
        idx: u32,
        raw: &RawSample,
        copied: usize,
        anchor: bool,
    ) {
        if anchor {
            self.stats.anchors.fetch_add(1, Ordering::Relaxed);
        } else {
            self.signal_stats.samples.fetch_add(1, Ordering::Relaxed);
        }
        let kernel_periods = if !anchor && self.spec.kernel == KernelMode::Counted && raw.nvalues > 0 {
            hpm_capture::capture::kernel_periods(st.accounted.entry(tid).or_default(), raw.values[0], raw.period)
        } else {
            0
        };
        let base = match st.bases.get(&tid) {
            Some(&b) => b,
            None => {
                st.missing = true;
                0
            }
        };
        let (copy, addrs) = (&st.copy[..copied], &mut st.addrs);
        let _ = self.sink.timer_queue.push_with(&self.sink.pool, |c: &mut Captured| {
            c.begin_perf_sample(raw, idx, kernel_periods);
            c.chain = ChainMarks { anchor, depths: [0; CHAIN_DEPTHS] };
            c.stack = StackKind::RawWalk(RawWalk { slots: 0, stop: Stop::Lost as u8, key: None, depth_cut: false });
            let (Some(layout), Some(code), true) = (self.walker, code, raw.regs_abi != 0) else {
                return true;
            };
            let regs = Regs { pc: raw.user_ip, sp: raw.sp, fp: raw.bp, method_reg: 0 };
            addrs.iter_mut().for_each(|a| *a = 0);
            let mut sink = FrameSink { addrs: Some(&mut addrs[..]), ..FrameSink::new(&mut c.frames, &mut c.slots) };
            let stop =
                crate::vmstructs::walk_copy(layout, code, StackCopy { sp: raw.sp, bytes: copy }, regs, &mut sink);
            let len = sink.len;
            c.stack = StackKind::RawWalk(RawWalk { slots: len as u16, stop: stop as u8, key: None, depth_cut: false });
            // Each physical frame starts at a pc or interpreted slot (a method slot follows a pc).
            let starts = c.slots[..len].iter().zip(addrs.iter()).filter(|(k, _)| **k != SlotKind::Method);
            for (d, (_, &a)) in c.chain.depths.iter_mut().zip(starts) {
                *d = if base != 0 && a != 0 && a < base { u32::try_from(base - a).unwrap_or(0) } else { 0 };
            }
            if base == 0 && len > 0 {
                self.stats.no_base.fetch_add(1, Ordering::Relaxed);
            }
            true
        });
    }
}

impl EventSource for ChainSampler {
    fn start(&self) -> Result<(), String> {
        if self.walker.is_none() {
            return Err("sampler=chain walks stack copies with hpm's own walker, which cannot read this JVM's \
                        VMStructs; use sampler=asgct"
                .into());
        }
        super::start_perf_groups(self.threads, self.code, &self.jvmti, self.vm, &self.spec, &self.ctx)?;
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        self.look_up_bases(&mut st);
        Ok(())
    }

    fn tick(&self, round: u64, scan: bool) {
        if scan {
            self.threads.scan_if_changed();
        }
        self.drain(Some(round));
    }

    fn set_period(&self, period: u64) -> usize {
        self.threads.set_period(period)
    }

    /// The samples' stacks end where the copy does: they are completed at the end from the
    /// run's tree of (method, depth) keys.
    fn completer(&self) -> Option<Box<dyn StackCompleter>> {
        Some(Box::new(complete::ChainCompleter::new(self.quiet)))
    }

    fn stop(&self) -> Vec<String> {
        // The groups are closed, their rings kept for this last reading.
        self.threads.stop_all();
        self.drain(None);
        let s = &self.stats;
        let (samples, anchors) = (self.signal_stats.samples.load(Ordering::Relaxed), s.anchors.load(Ordering::Relaxed));
        let mut line = format!(
            "chain: {samples} samples and {anchors} anchors read from the rings and walked in {:.1} ms of the \
             processor's CPU ({:.2} us each)",
            s.walk_ns.load(Ordering::Relaxed) as f64 / 1e6,
            s.walk_ns.load(Ordering::Relaxed) as f64 / 1e3 / (samples + anchors).max(1) as f64
        );
        for (what, n) in [
            ("anchors lost by the kernel (ring full)", s.anchors_lost.load(Ordering::Relaxed)),
            ("samples without their thread's stack base (no depth)", s.no_base.load(Ordering::Relaxed)),
        ] {
            if n > 0 {
                line.push_str(&format!("; {n} {what}"));
            }
        }
        vec![line]
    }
}
