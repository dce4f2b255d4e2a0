//! The feed of `alloc` and `lock` ([`crate::feed::EventFeed`]): each round, the JVM events the
//! callbacks queued get their stacks resolved (through a record like the timer samplers', so frames are named
//! and lined the same way) and join the recording; without a CPU event they also feed the tree
//! and the stack table, weighted by bytes or time waited, so every output shows them (a
//! pinned virtual thread's park once: as the park it also is). A pinned park's reason is
//! judged here, from its named frames.

use std::collections::HashMap;
use std::sync::Arc;

use hpm_capture::capture::{
    CallFrame, Captured, JvmFrames, RawWalk, SlotKind, StackKind, BCI_NATIVE_FRAME, MAX_FRAMES,
};
use hpm_profile::model::{FrameKind, JvmEvent, JvmEventKind};

use super::JvmEvents;
use crate::feed::{EventFeed, FeedCtx};
use hpm_profile::model::ThreadIdx;

/// Class names the events share at most (then started again).
const MAX_CLASS_NAMES: usize = 1 << 16;

/// The feed of one session: a record to resolve the events' stacks through, class names
/// shared, and per kind the events and their summed weight.
pub(super) struct JvmEventsFeed {
    events: &'static JvmEvents,
    /// What the session records (`alloc`, `lock`), and whether it has a CPU event: without
    /// one, the events feed the sinks too.
    alloc: bool,
    lock: bool,
    cpu: bool,
    record: Option<Box<Captured>>,
    classes: HashMap<String, Arc<str>>,
    /// Pinned reasons, shared by the events of each (a few texts).
    reasons: HashMap<String, Arc<str>>,
    totals: [(u64, u64); JvmEventKind::ALL.len()],
    /// Parks of idle pool threads waiting for work (hpm_profile::output::idle): events, ns.
    idle: (u64, u64),
}

impl JvmEventsFeed {
    pub(super) fn new(events: &'static JvmEvents, alloc: bool, lock: bool, cpu: bool) -> JvmEventsFeed {
        JvmEventsFeed {
            events,
            alloc,
            lock,
            cpu,
            record: None,
            classes: HashMap::new(),
            reasons: HashMap::new(),
            totals: Default::default(),
            idle: (0, 0),
        }
    }
}

impl EventFeed for JvmEventsFeed {
    /// The JVM's events taken so far, of every kind.
    fn records(&self) -> u64 {
        self.totals.iter().map(|t| t.0).sum()
    }

    /// Takes the events queued since the session's start into the recording, their stacks
    /// resolved; the sinks take them too in a session without a CPU event.
    fn drain(&mut self, ctx: &mut FeedCtx<'_>) {
        let from = self.events;
        let FeedCtx { start_ticks, resolver, methods, rec, sinks } = ctx;
        let start_ticks = *start_ticks;
        let pending = from.take();
        if pending.is_empty() {
            return;
        }
        for p in pending {
            if p.time < start_ticks {
                continue;
            }
            let c = self.record.get_or_insert_with(Box::default);
            c.raw = Default::default();
            c.raw.time = p.time;
            c.thread = p.thread;
            c.shares_walk = false;
            c.kernel_periods = 0;
            c.state = 0;
            c.vthread = 0;
            // Walked up to the events' depth: the stack may go on.
            let depth_cut = p.frames.len() >= from.max_depth() as usize;
            c.data = Default::default();
            let n = p.frames.len().min(MAX_FRAMES);
            for (i, &(m, bci)) in p.frames[..n].iter().enumerate() {
                if let Some((slots, _)) = &p.walk {
                    // hpm's walker's raw frames, as the signal handler records them.
                    c.frames[i] = CallFrame { lineno: bci, method_id: m };
                    c.slots[i] = slots.get(i).copied().unwrap_or(SlotKind::Method);
                    continue;
                }
                let native = bci < 0;
                c.frames[i] = CallFrame { lineno: if native { BCI_NATIVE_FRAME } else { bci }, method_id: m };
                // JVMTI does not say how a frame runs: Java frames of unknown kind.
                c.kinds[i] = if native { FrameKind::Native } else { FrameKind::Unknown };
            }
            c.stack = match &p.walk {
                Some((_, stop)) => StackKind::RawWalk(RawWalk { slots: n as u16, stop: *stop, key: None, depth_cut }),
                None => StackKind::JvmFrames(JvmFrames { n: n as u16, depth_cut, deep: 0 }),
            };
            let s = resolver.resolve(rec, *methods, c);
            let (name, loader) = p.class.map(|c| (c.name, c.loader)).unzip();
            let class = name.map(|name| match self.classes.get(&name) {
                Some(a) => a.clone(),
                None => {
                    let a: Arc<str> = name.as_str().into();
                    // Shared names only: a program that spins classes (hidden ones are named
                    // with their address) brings new names without end.
                    if self.classes.len() >= MAX_CLASS_NAMES {
                        self.classes.clear();
                    }
                    self.classes.insert(name, a.clone());
                    a
                }
            });
            let reason = (p.kind == JvmEventKind::VirtualThreadPinned).then(|| {
                let (why, _) = hpm_profile::output::pinned::reason(rec, &s.stack, class.is_some());
                if self.reasons.len() >= MAX_CLASS_NAMES {
                    self.reasons.clear();
                }
                self.reasons.entry(why).or_insert_with_key(|w| w.as_str().into()).clone()
            });
            let ev = JvmEvent {
                kind: p.kind,
                time: p.time,
                duration: p.duration,
                thread: ThreadIdx(p.thread),
                stack: s.stack,
                truncated: s.truncated,
                class,
                loader: loader.flatten(),
                weight: p.weight,
                address: 0,
                timeout: p.timeout,
                until: p.until,
                reason,
            };
            let k = JvmEventKind::ALL.iter().position(|&x| x == ev.kind).unwrap_or(0);
            self.totals[k].0 += 1;
            self.totals[k].1 = self.totals[k].1.saturating_add(ev.weight);
            if hpm_profile::output::idle::waits_for_work(rec, &ev) {
                self.idle.0 += 1;
                self.idle.1 = self.idle.1.saturating_add(ev.weight);
            }
            if !self.cpu && ev.kind != JvmEventKind::VirtualThreadPinned {
                let s = hpm_profile::output::jvmevents::as_sample(rec, &ev);
                sinks(&s, rec, resolver.interner());
            }
            rec.events.push(ev);
        }
    }

    fn drops(&self, drops: &mut Vec<(hpm_profile::model::DropReason, u64)>) {
        let dropped = self.events.dropped.load(std::sync::atomic::Ordering::Relaxed);
        drops.push((hpm_profile::model::DropReason::JvmEventsDropped, dropped));
    }

    /// The summary's line for the JVM events, if the session recorded any kind.
    fn line(&self) -> Option<String> {
        let ev = self.events;
        if !self.alloc && !self.lock {
            return None;
        }
        let [(na, wa), (nm, wm), (np, wp), (nv, wv)] = self.totals;
        let mut parts = Vec::new();
        if self.alloc {
            let calls = ev.alloc_calls.load(std::sync::atomic::Ordering::Relaxed);
            let cost = match ev.alloc_ns.load(std::sync::atomic::Ordering::Relaxed) as f64 / 1e3 {
                _ if calls == 0 => String::new(),
                us => format!(" ({:.1} us of CPU each in the allocating thread)", us / calls as f64),
            };
            parts
                .push(format!("{na} allocation samples standing for {:.1} MiB{cost}", wa as f64 / (1u64 << 20) as f64));
        }
        if self.lock {
            let short = ev.short_waits.load(std::sync::atomic::Ordering::Relaxed);
            let (ni, wi) = self.idle;
            let idle = match ni {
                0 => String::new(),
                _ => format!("; {ni} of them idle pool threads waiting for work, {:.1} ms", wi as f64 / 1e6),
            };
            parts.push(format!(
                "{nm} contended monitor enters ({:.1} ms), {np} parks ({:.1} ms{idle}), {short} shorter waits not recorded",
                wm as f64 / 1e6,
                wp as f64 / 1e6
            ));
            let over = ev.pinned_over.load(std::sync::atomic::Ordering::Relaxed);
            if nv > 0 || over > 0 {
                let over = match over {
                    0 => String::new(),
                    n => format!("; {n} more past the session's {} not recorded as pinned", super::pinned::MAX_PINNED),
                };
                parts.push(format!(
                    "{nv} of the parks by pinned virtual threads, on their carriers ({:.1} ms{over})",
                    wv as f64 / 1e6
                ));
            }
            let retakes = ev.park_retakes.load(std::sync::atomic::Ordering::Relaxed);
            if retakes > 0 {
                parts.push(format!(
                    "Unsafe.park taken from hpm by another agent in this JVM (times: {retakes}; the parks while it had it are missing, see the lines above)"
                ));
            }
        }
        let slow = ev.slow_stacks.load(std::sync::atomic::Ordering::Relaxed);
        if slow > 0 {
            parts.push(format!("{slow} stacks by GetStackTrace (AsyncGetCallTrace could not walk them)"));
        }
        Some(format!("JVM events: {}", parts.join("; ")))
    }
}
