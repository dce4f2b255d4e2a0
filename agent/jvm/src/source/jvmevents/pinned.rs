//! Pinned virtual threads for `lock` (JDK 21+): `jdk.VirtualThreadPinned` from the parks hpm
//! already times. A virtual thread's `LockSupport.park` unmounts it (a yield of its
//! continuation) and never reaches `Unsafe.park`; only when the yield fails, because the
//! thread is pinned, does `VirtualThread.parkOnCarrierThread` call `Unsafe.park`, parking the
//! carrier too. So a park that hpm's `Unsafe.park` sees on a thread whose `Thread` object is a
//! `java.lang.VirtualThread` is a pinned park: it is recorded twice, as `jdk.ThreadPark` and
//! as `jdk.VirtualThreadPinned`, with the same stack, start and duration.
//!
//! Why not a JVMTI breakpoint on `Continuation.onPinned0` or `parkOnCarrierThread`: the
//! breakpoint capability is only granted at load, one agent at a time (a debugger's JDWP
//! could not have it), and HotSpot then keeps every local variable alive in compiled code
//! (`can_access_local_variables`: C2's escape analysis off) and slows the interpreter
//! (`RewriteFrequentPairs` off), for the whole run. `GetOwnedMonitorInfo` has the same cost
//! (`can_get_owned_monitor_info`), so the monitor held is read from the thread's lock stack
//! ([`hpm_capture::lockstack`]) instead. (And `onPinned0` runs inside the yield, after
//! `VirtualThread.yieldContinuation` told JVMTI of the unmount, where HotSpot hides the
//! thread's events: not checked by a run.)
//!
//! The reason (`pinnedReason`) is judged from the stack when the feed has named its frames
//! (`hpm_profile::output::pinned::reason`).

use std::sync::atomic::Ordering;
use std::sync::OnceLock;

use hpm_capture::lockstack::LockStackLayout;
use hpm_profile::model::java_class_name;

use hpm_profile::model::JvmEventKind;

use super::{EventClass, JvmEvents, Pending};

/// Pinned parks recorded in a session at most; more are counted (`JvmEvents::pinned_over`).
pub const MAX_PINNED: u64 = 10_000;

/// The class of a virtual thread's `Thread` object (`VirtualThread` is package-private and
/// final: every virtual thread that can yield is one).
pub const VIRTUAL_THREAD: &str = "java.lang.VirtualThread";

/// This JVM's lock stack layout (None: JDK 17, or VMStructs lacks a part), made at the first
/// pinned park (after VMInit: the heap's header layout exists then).
fn layout() -> Option<&'static LockStackLayout> {
    static LAYOUT: OnceLock<Option<LockStackLayout>> = OnceLock::new();
    LAYOUT
        .get_or_init(|| {
            let header = crate::vmstructs::heap_layout().ok()?.header;
            LockStackLayout::from_table(crate::vmstructs::table().ok()?, header).ok()
        })
        .as_ref()
}

/// The class of the monitor the calling thread (`thread`, its `JavaThread*`) entered last and
/// still holds, as its lock stack has it (none: it holds none uncontended, or this JVM keeps
/// no lock stack).
pub fn monitor_held(thread: u64) -> Option<EventClass> {
    if thread == 0 {
        return None;
    }
    let name = layout()?.held(&crate::vmstructs::Checked, thread, 1).into_iter().next()?;
    Some(EventClass { name: java_class_name(&name), loader: None })
}

/// A session starts: its pinned parks are counted from 0.
pub fn new_session(ev: &JvmEvents) {
    ev.pinned.store(0, Ordering::Relaxed);
    ev.pinned_over.store(0, Ordering::Relaxed);
}

/// The pinned event of a virtual thread's `park` (its `ThreadPark`), on the parked thread
/// after the park (the monitor it parked inside is still held); None past the session's cap
/// (counted).
pub fn of_park(ev: &JvmEvents, park: &Pending) -> Option<Pending> {
    if ev.pinned.fetch_add(1, Ordering::Relaxed) >= MAX_PINNED {
        ev.pinned_over.fetch_add(1, Ordering::Relaxed);
        return None;
    }
    let thread = ev.walkers.get().map_or(0, |w| w.vm.current_vm_thread());
    Some(Pending {
        kind: JvmEventKind::VirtualThreadPinned,
        time: park.time,
        duration: park.duration,
        thread: park.thread,
        frames: park.frames.clone(),
        walk: park.walk.clone(),
        class: monitor_held(thread),
        weight: park.weight,
        timeout: i64::MIN,
        until: i64::MIN,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn park() -> Pending {
        Pending {
            kind: JvmEventKind::ThreadPark,
            time: 10,
            duration: 20_000_000,
            thread: 3,
            frames: vec![(0x1000, -1), (0x2000, 819)],
            walk: None,
            class: None,
            weight: 20_000_000,
            timeout: 20_000_000,
            until: i64::MIN,
        }
    }

    #[test]
    fn a_pinned_event_is_its_park_s_stack_and_time_up_to_the_session_s_cap() {
        let ev = JvmEvents::new();
        let p = of_park(&ev, &park()).expect("the first pinned park is recorded");
        assert_eq!(p.kind, JvmEventKind::VirtualThreadPinned);
        assert_eq!((p.time, p.duration, p.weight, p.thread), (10, 20_000_000, 20_000_000, 3));
        assert_eq!(p.frames, park().frames);
        // Not the park's timeout; no monitor known without a JavaThread.
        assert_eq!((p.timeout, p.until), (i64::MIN, i64::MIN));
        assert!(p.class.is_none());
        for _ in 1..MAX_PINNED {
            assert!(of_park(&ev, &park()).is_some());
        }
        assert!(of_park(&ev, &park()).is_none());
        assert!(of_park(&ev, &park()).is_none());
        assert_eq!(ev.pinned_over.load(Ordering::Relaxed), 2);
        new_session(&ev);
        assert!(of_park(&ev, &park()).is_some());
        assert_eq!(ev.pinned_over.load(Ordering::Relaxed), 0);
    }
}
