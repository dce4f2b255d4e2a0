//! Pinned virtual threads (`jdk.VirtualThreadPinned`, JDK 21+): a virtual thread that parks
//! while it cannot unmount parks its carrier too. Why it could not unmount is read from the
//! park's stack ([`reason`]): a native frame between the park and the virtual thread's entry
//! (JDK 24+ pins only so, JEP 491: a JNI call back into Java), a class initialiser run by the
//! VM, or else a held monitor (JDK 21-23 pin on `synchronized`). The report's section
//! ([`report`]) counts the pinned parks by reason, by the frame that pinned, and by the class
//! of the monitor held.

use std::fmt::Write as _;
use std::sync::Arc;

use crate::model::{Frame, FrameKind, JvmEvent, JvmEventKind, Recording};
use crate::output::jvmevents::{by_class, by_site, table, Row};

/// The JDK's reason for a native frame between the park and the entry (its own words).
pub const NATIVE: &str = "Native or VM frame on stack";
/// A monitor held and nothing else found (JDK 21-23).
pub const MONITOR: &str = "Monitor held";
/// Neither: a critical section of the JDK's own, or an exception at the yield.
pub const OTHER: &str = "Other (critical section or exception)";

/// Frames of the JDK's park path above the code that parked: not where a pin comes from.
fn park_machinery(class: &str) -> bool {
    matches!(class, "jdk.internal.misc.Unsafe" | "java.lang.VirtualThread" | "java.lang.Thread")
        || class.starts_with("java.lang.System$")
        || class.starts_with("java.util.concurrent.locks.")
}

/// Where the virtual thread's own frames end, leaf first: its entry (`VirtualThread.run`) or
/// the continuation's (the carrier's frames follow; an event's stack may hold either).
fn entry(rec: &Recording, f: &Frame) -> bool {
    let m = rec.method(f.method);
    (&*m.class_name == "java.lang.VirtualThread" && &*m.name == "run")
        || &*m.class_name == "jdk.internal.vm.Continuation"
}

/// The virtual thread's frames between the park (the leaf, `Unsafe.park`) and its entry.
fn own_frames<'a>(rec: &Recording, stack: &'a [Frame]) -> &'a [Frame] {
    let rest = stack.get(1..).unwrap_or(&[]);
    let end = rest.iter().position(|f| entry(rec, f)).unwrap_or(rest.len());
    &rest[..end]
}

/// Why the virtual thread parked on its carrier, and the frame that pinned it (None: not
/// known from the stack), from a pinned park's stack (leaf first) and whether it held a
/// monitor (`monitor`: the event names one).
pub fn reason(rec: &Recording, stack: &[Frame], monitor: bool) -> (String, Option<Frame>) {
    let own = own_frames(rec, stack);
    for f in own {
        let m = rec.method(f.method);
        if f.kind == FrameKind::Native && !park_machinery(&m.class_name) {
            return (NATIVE.to_string(), Some(*f));
        }
        if &*m.name == "<clinit>" {
            return (format!("VM call to {}.<clinit> on stack", m.class_name), Some(*f));
        }
    }
    let site = own.iter().find(|f| !park_machinery(&rec.method(f.method).class_name)).copied();
    (if monitor { MONITOR } else { OTHER }.to_string(), site)
}

/// The frame that pinned a pinned event, as the report names it.
pub fn pinning_frame(rec: &Recording, ev: &JvmEvent) -> String {
    match reason(rec, &ev.stack, ev.class.is_some()).1 {
        Some(f) => rec.method(f.method).display_name(),
        None => "[not in the stack]".into(),
    }
}

fn write_rows(out: &mut String, rows: &[Row], total: u64, what: &str, top: usize) {
    let _ = writeln!(out, "  {:>12} {:>6} {:>8}  {what}", "parked", "%", "events");
    for r in rows.iter().take(top) {
        let share = if total > 0 { r.weight as f64 * 100.0 / total as f64 } else { 0.0 };
        let _ = writeln!(out, "  {:>9.1} ms {share:>5.1}% {:>8}  {}", r.weight as f64 / 1e6, r.events, r.key);
    }
    if rows.len() > top {
        let _ = writeln!(out, "  ... {} more", rows.len() - top);
    }
}

/// The report's section on pinned virtual threads: empty when the recording has none.
pub fn report(rec: &Recording, top: usize) -> String {
    let kinds = [JvmEventKind::VirtualThreadPinned];
    let n = rec.events.iter().filter(|e| e.kind == JvmEventKind::VirtualThreadPinned).count();
    if n == 0 {
        return String::new();
    }
    let by_reason = |e: &JvmEvent| (e.reason.as_ref().map_or(0, |r| Arc::as_ptr(r) as *const u8 as usize), 0, e.kind);
    let reasons = table(rec, &kinds, by_reason, |e| e.reason.as_deref().unwrap_or("[not recorded]").to_string());
    let total: u64 = reasons.iter().map(|r| r.weight).sum();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nVirtual threads pinned (jdk.VirtualThreadPinned): {n} parks on the carrier, {:.1} ms in all",
        total as f64 / 1e6
    );
    write_rows(&mut out, &reasons, total, "reason", top);
    out.push('\n');
    write_rows(&mut out, &table(rec, &kinds, by_site, |e| pinning_frame(rec, e)), total, "pinning frame", top);
    out.push('\n');
    let class = |e: &JvmEvent| e.class.as_deref().unwrap_or("[none known]").to_string();
    write_rows(&mut out, &table(rec, &kinds, by_class, class), total, "monitor held", top);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::MethodInfo;

    fn frame(rec: &mut Recording, class: &str, name: &str, kind: FrameKind) -> Frame {
        let method =
            rec.methods.intern(MethodInfo { class_name: class.into(), name: name.into(), ..Default::default() });
        Frame { method, bci: -1, line: -1, kind }
    }

    /// A pinned park's stack, leaf first: the park path, then `own` (leaf first), then the
    /// entry and a carrier frame.
    fn stack(rec: &mut Recording, own: &[(&str, &str, FrameKind)]) -> Vec<Frame> {
        let j = FrameKind::JitCompiled;
        let mut s = vec![
            frame(rec, "jdk.internal.misc.Unsafe", "park", FrameKind::Native),
            frame(rec, "java.lang.VirtualThread", "parkOnCarrierThread", j),
            frame(rec, "java.lang.VirtualThread", "parkNanos", j),
            frame(rec, "java.util.concurrent.locks.LockSupport", "parkNanos", j),
        ];
        for (c, m, k) in own {
            s.push(frame(rec, c, m, *k));
        }
        s.push(frame(rec, "java.lang.VirtualThread", "run", j));
        s.push(frame(rec, "jdk.internal.vm.Continuation", "enterSpecial", FrameKind::Native));
        s
    }

    fn event(stack: Vec<Frame>, class: Option<&str>, ms: u64, reason: &str) -> JvmEvent {
        let mut e = JvmEvent::of(JvmEventKind::VirtualThreadPinned, stack.into());
        e.duration = ms * 1_000_000;
        e.weight = e.duration;
        e.class = class.map(Into::into);
        e.reason = Some(reason.into());
        e
    }

    #[test]
    fn a_native_frame_between_the_park_and_the_entry_is_the_reason() {
        let mut rec = Recording::default();
        let j = FrameKind::Interpreted;
        let s = stack(
            &mut rec,
            &[("app.Pin", "callback", j), ("app.Pin", "nPark", FrameKind::Native), ("app.Pin", "task", j)],
        );
        let (why, f) = reason(&rec, &s, true);
        assert_eq!(why, NATIVE);
        assert_eq!(rec.method(f.unwrap().method).display_name(), "app.Pin.nPark");
    }

    #[test]
    fn the_park_itself_and_the_carrier_s_native_frames_do_not_pin() {
        let mut rec = Recording::default();
        let j = FrameKind::JitCompiled;
        let s = stack(&mut rec, &[("app.Pin", "locked", j), ("app.Pin", "task", j)]);
        // Unsafe.park (the leaf) and Continuation.enterSpecial (below the entry) are native.
        let (why, f) = reason(&rec, &s, true);
        assert_eq!(why, MONITOR);
        assert_eq!(rec.method(f.unwrap().method).display_name(), "app.Pin.locked");
        assert_eq!(reason(&rec, &s, false).0, OTHER);
    }

    #[test]
    fn a_class_initialiser_on_the_stack_is_named_as_the_jdk_does() {
        let mut rec = Recording::default();
        let j = FrameKind::Interpreted;
        let s = stack(&mut rec, &[("app.Slow", "<clinit>", j), ("app.Pin", "task", j)]);
        assert_eq!(reason(&rec, &s, false).0, "VM call to app.Slow.<clinit> on stack");
    }

    #[test]
    fn a_stack_without_the_entry_or_with_the_park_only_still_reads() {
        let mut rec = Recording::default();
        let park = frame(&mut rec, "jdk.internal.misc.Unsafe", "park", FrameKind::Native);
        assert_eq!(reason(&rec, &[park], false), (OTHER.to_string(), None));
        assert_eq!(reason(&rec, &[], true), (MONITOR.to_string(), None));
        // Cut before the entry (a depth limit): the frames to the end are the thread's own.
        let native = frame(&mut rec, "app.Pin", "nPark", FrameKind::Native);
        assert_eq!(reason(&rec, &[park, native], false).0, NATIVE);
    }

    #[test]
    fn the_report_counts_pins_by_reason_frame_and_monitor() {
        let mut rec = Recording::default();
        let j = FrameKind::Interpreted;
        let native = stack(&mut rec, &[("app.Pin", "callback", j), ("app.Pin", "nPark", FrameKind::Native)]);
        let held = stack(&mut rec, &[("app.Pin", "locked", j)]);
        let native: Arc<[Frame]> = native.into();
        let reason: Arc<str> = NATIVE.into();
        let class: Arc<str> = "app.PinLock".into();
        for _ in 0..3 {
            let mut e = event(native.to_vec(), None, 10, NATIVE);
            (e.stack, e.reason, e.class) = (native.clone(), Some(reason.clone()), Some(class.clone()));
            rec.events.push(e);
        }
        let e = event(held, None, 10, MONITOR);
        rec.events.push(e);
        // Other kinds are not counted here.
        rec.events.push(JvmEvent::of(JvmEventKind::ThreadPark, native.clone()));
        let text = report(&rec, 5);
        assert!(text.contains("4 parks on the carrier, 40.0 ms in all"), "{text}");
        assert!(text.contains("30.0 ms  75.0%        3  Native or VM frame on stack"), "{text}");
        assert!(text.contains("75.0%        3  app.Pin.nPark"), "{text}");
        assert!(text.contains("25.0%        1  app.Pin.locked"), "{text}");
        assert!(text.contains("75.0%        3  app.PinLock"), "{text}");
        assert!(text.contains("25.0%        1  [none known]"), "{text}");
        assert_eq!(report(&Recording::default(), 5), "");
    }
}
