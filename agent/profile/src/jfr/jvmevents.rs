//! The JDK's allocation-sample, monitor-enter, park and pinned-virtual-thread events
//! ([`JvmEvent`]s): written by the agent for `alloc` and `lock`, read back from hpm's files and
//! the JDK's own recordings.

use std::sync::Arc;

use super::by_place::ByPlace;
use super::event::EventBuf;
use super::pools::Pools;
use super::schema::{
    EVENT_JAVA_MONITOR_ENTER, EVENT_OBJECT_ALLOCATION_SAMPLE, EVENT_THREAD_PARK, EVENT_VIRTUAL_THREAD_PINNED,
};
use super::value::ObjectView;
use crate::model::{java_class_name, ClassLoaderName, JvmEvent, JvmEventKind, Recording};

/// Appends one event record per JVM event of `rec`.
pub fn write_jvm_events<'a>(out: &mut Vec<u8>, pools: &mut Pools<'a>, rec: &'a Recording) {
    let mut e = EventBuf::new(EVENT_OBJECT_ALLOCATION_SAMPLE);
    for ev in &rec.events {
        let thread = pools.thread(ev.thread);
        let stack = pools.stack_of(&ev.stack, ev.truncated);
        let class = pools.class_named(ev.class.as_deref(), ev.loader.as_deref());
        match ev.kind {
            JvmEventKind::Allocation => {
                e.restart(EVENT_OBJECT_ALLOCATION_SAMPLE);
                e.long(ev.time).long(thread).long(stack).long(class).long(ev.weight);
            }
            JvmEventKind::MonitorEnter => {
                e.restart(EVENT_JAVA_MONITOR_ENTER);
                e.long(ev.time).long(ev.duration).long(thread).long(stack).long(class);
            }
            JvmEventKind::ThreadPark => {
                e.restart(EVENT_THREAD_PARK);
                e.long(ev.time).long(ev.duration).long(thread).long(stack).long(class);
                e.long(ev.timeout as u64).long(ev.until as u64);
            }
            JvmEventKind::VirtualThreadPinned => {
                e.restart(EVENT_VIRTUAL_THREAD_PINNED);
                e.long(ev.time).long(ev.duration).long(thread).long(stack);
                e.string(Some(PINNED_OPERATION)).string(ev.reason.as_deref()).long(thread).long(class);
            }
        }
        e.finish(out);
    }
}

/// The blocking operation of every pinned event hpm records (the JDK's text for a park).
pub const PINNED_OPERATION: &str = "LockSupport.park";

/// The allocation events other recorders write instead of (or beside) `jdk.ObjectAllocationSample`:
/// the JDK's Flight Recorder (when enabled in its settings) and async-profiler's `alloc` mode.
/// hpm reads them as allocations ([`tlab_weight`]).
pub const TLAB_EVENTS: [&str; 2] = ["jdk.ObjectAllocationInNewTLAB", "jdk.ObjectAllocationOutsideTLAB"];

/// The bytes a TLAB allocation event stands for, as async-profiler's converter and JDK Mission
/// Control weigh them: an allocation that opened a new TLAB stands for the TLAB (`tlabSize`:
/// the bytes its thread allocates before the next such event, so classes come out by the bytes
/// they take; async-profiler writes its sampling interval there), or for itself (`allocationSize`)
/// when the TLAB size is missing; an allocation outside any TLAB stands for itself.
pub fn tlab_weight(event_type: &str, allocation_size: i64, tlab_size: i64) -> u64 {
    let size = allocation_size.max(0) as u64;
    if event_type == TLAB_EVENTS[0] && tlab_size > 0 {
        tlab_size as u64
    } else {
        size
    }
}

/// The kind of a JFR event type's name, if it is one of the JVM events.
pub fn kind_of(event_type: &str) -> Option<JvmEventKind> {
    JvmEventKind::ALL.into_iter().find(|k| k.jfr_name() == event_type)
}

/// The fields of a JVM event besides its thread and stack (which the reader resolves through
/// its caches). `ticks` converts a tick count of the chunk to nanoseconds.
pub fn event_fields<'c>(
    kind: JvmEventKind,
    e: &ObjectView<'c>,
    ticks: impl Fn(u64) -> u64,
    names: &mut ByPlace<'c, Arc<str>>,
    ev: &mut JvmEvent,
) {
    ev.time = ticks(e.i64("startTime").unwrap_or(0) as u64);
    ev.duration = ticks(e.i64("duration").unwrap_or(0).max(0) as u64);
    let class_field = match kind {
        JvmEventKind::Allocation => "objectClass",
        JvmEventKind::MonitorEnter => "monitorClass",
        JvmEventKind::ThreadPark => "parkedClass",
        JvmEventKind::VirtualThreadPinned => "monitorClass",
    };
    // Converted once per name string, however many events name the class.
    let class = e.object(class_field);
    ev.class = class.and_then(|c| c.str("name")).map(|raw| names.get(raw, |r| java_class_name(r).into()));
    ev.loader = class.and_then(|c| c.object("classLoader")).and_then(|l| {
        let class = l.object("type").and_then(|t| t.str("name"))?;
        let name = l.str("name").map(|n| names.get(n, |n| n.into()));
        Some(Arc::new(ClassLoaderName { class: names.get(class, |r| java_class_name(r).into()), name }))
    });
    ev.address = e.i64("address").unwrap_or(0) as u64;
    ev.weight = match kind {
        JvmEventKind::Allocation => e.i64("weight").unwrap_or(0).max(0) as u64,
        _ => ev.duration,
    };
    if kind == JvmEventKind::ThreadPark {
        ev.timeout = e.i64("timeout").unwrap_or(i64::MIN);
        ev.until = e.i64("until").unwrap_or(i64::MIN);
    }
    if kind == JvmEventKind::VirtualThreadPinned {
        ev.reason = e.str("pinnedReason").map(|r| names.get(r, |r| r.into()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jfr::parser::parse_chunks;
    use crate::jfr::tests::{sample_batch, sample_recording, times};
    use crate::jfr::writer::encode_chunk;
    use crate::model::ThreadIdx;

    fn events_of(rec: &mut Recording) -> Vec<JvmEvent> {
        let stack = sample_batch(rec, 5_000_000_000, 1)[0].stack.clone();
        let mut alloc = JvmEvent::of(JvmEventKind::Allocation, stack.clone());
        alloc.time = 5_000_000_100;
        alloc.thread = ThreadIdx(1);
        alloc.class = Some("byte[]".into());
        alloc.weight = 524_288;
        let mut monitor = JvmEvent::of(JvmEventKind::MonitorEnter, stack.clone());
        monitor.time = 5_000_000_200;
        monitor.duration = 1_500_000;
        monitor.weight = 1_500_000;
        monitor.class = Some("com.example.Account".into());
        monitor.loader = Some(Arc::new(ClassLoaderName {
            class: "jdk.internal.loader.ClassLoaders$AppClassLoader".into(),
            name: Some("app".into()),
        }));
        let mut pinned = JvmEvent::of(JvmEventKind::VirtualThreadPinned, stack.clone());
        pinned.time = 5_000_000_400;
        pinned.duration = 3_000_000;
        pinned.weight = 3_000_000;
        pinned.class = Some("app.PinLock".into());
        pinned.reason = Some("Native or VM frame on stack".into());
        let mut park = JvmEvent::of(JvmEventKind::ThreadPark, stack);
        park.time = 5_000_000_300;
        park.duration = 2_000_000;
        park.weight = 2_000_000;
        park.class = Some("java.util.concurrent.locks.ReentrantLock$NonfairSync".into());
        park.timeout = 5_000_000;
        let mut bare = park.clone();
        bare.class = None;
        bare.timeout = i64::MIN;
        vec![alloc, monitor, park, bare, pinned]
    }

    #[test]
    fn events_read_back_as_written_in_both_chunks() {
        let mut rec = sample_recording();
        rec.events = events_of(&mut rec);
        let mut bytes = encode_chunk(&rec, &[], times(5_000_000_000, 5_001_000_000));
        // A second chunk with the same classes: keys mean the same class in both.
        bytes.extend(encode_chunk(&rec, &[], times(5_001_000_000, 5_002_000_000)));
        let chunks = parse_chunks(&bytes, &|_| true).unwrap();
        let read = crate::jfr::recording_from_chunks(&chunks).unwrap();
        assert_eq!(read.events.len(), 10);
        for (a, b) in rec.events.iter().zip(&read.events[..5]).chain(rec.events.iter().zip(&read.events[5..])) {
            assert_eq!(
                (a.kind, a.time, a.duration, a.weight, &a.class, &a.loader, &a.reason),
                (b.kind, b.time, b.duration, b.weight, &b.class, &b.loader, &b.reason)
            );
            assert_eq!((a.address, a.timeout, a.until), (b.address, b.timeout, b.until));
            assert_eq!(read.stack_names_root_first(&Sample::of_stack(b.stack.clone())).len(), a.stack.len());
            assert_eq!(read.threads[b.thread.0 as usize].name, rec.threads[a.thread.0 as usize].name);
        }
        // The class as the JDK names it: internal form, arrays as descriptors.
        let a = chunks[0].events_named("jdk.ObjectAllocationSample").next().unwrap();
        assert_eq!(a.object("objectClass").and_then(|c| c.str("name")), Some("[B"));
        let m = chunks[1].events_named("jdk.JavaMonitorEnter").next().unwrap();
        assert_eq!(m.object("monitorClass").and_then(|c| c.str("name")), Some("com/example/Account"));
        // Its loader, as the JDK writes the application class loader.
        let loader = m.object("monitorClass").and_then(|c| c.object("classLoader")).expect("a class loader");
        assert_eq!(loader.str("name"), Some("app"));
        let loader_class = loader.object("type").and_then(|t| t.str("name"));
        assert_eq!(loader_class, Some("jdk/internal/loader/ClassLoaders$AppClassLoader"));
    }

    /// What hpm cannot know is left out, not written as a null owner or a 0 address that
    /// readers would take for known.
    #[test]
    fn lock_events_leave_out_the_owner_and_address_hpm_cannot_know() {
        let mut rec = sample_recording();
        rec.events = events_of(&mut rec);
        let bytes = encode_chunk(&rec, &[], times(5_000_000_000, 5_001_000_000));
        let chunks = parse_chunks(&bytes, &|_| true).unwrap();
        for name in ["jdk.JavaMonitorEnter", "jdk.ThreadPark"] {
            let e = chunks[0].events_named(name).next().unwrap();
            for field in ["previousOwner", "address"] {
                assert!(e.raw(field).is_none(), "{name} has a {field}");
            }
        }
        let m = chunks[0].events_named("jdk.JavaMonitorEnter").next().unwrap();
        assert!(m.object("monitorClass").is_some());
        // The pinned event: the JDK 25 fields hpm knows, and the park as its operation.
        let p = chunks[0].events_named("jdk.VirtualThreadPinned").next().unwrap();
        assert_eq!(p.str("blockingOperation"), Some(PINNED_OPERATION));
        assert_eq!(p.str("pinnedReason"), Some("Native or VM frame on stack"));
        assert!(p.raw("carrierThread").is_some());
    }

    use crate::model::Sample;

    #[test]
    fn tlab_events_weigh_the_tlab_or_the_object() {
        let [inside, outside] = TLAB_EVENTS;
        assert_eq!(tlab_weight(inside, 72, 524_288), 524_288, "a new TLAB stands for the TLAB");
        assert_eq!(tlab_weight(inside, 72, 0), 72, "no TLAB size: the object itself");
        assert_eq!(tlab_weight(outside, 1 << 20, 0), 1 << 20);
        assert_eq!(tlab_weight(outside, -5, 0), 0, "a forged size weighs nothing");
    }
}
