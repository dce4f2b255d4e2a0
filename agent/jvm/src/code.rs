//! What the JVM tells about its code and collections, kept for the sessions: compiled and
//! generated code (the code map the signal sampler names instruction pointers with), garbage
//! collections, classes loaded. JVMTI callbacks record here; the running session's processor
//! drains it each round and applies the events in time order.
//!
//! The code map outlives sessions: a session's processor takes it at start
//! and gives it back at stop, so the next session resolves like the first. Between sessions the
//! callbacks apply code events to it directly, so nothing piles up while no session runs
//! (its size follows the code installed, not the time elapsed).

use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use hpm_profile::codemap::{CodeEvent, CodeTimeline};
use hpm_profile::jfr::TableKeys;
use hpm_resolve::resolve::{JavaNames, NativeCode};
use jni::sys::JNIEnv;

use crate::jnienv;
use crate::jvmti::{event, Jvmti, JvmtiError};

#[derive(Default)]
pub struct CodeEvents {
    inner: Mutex<Inner>,
    pub classes_loaded: AtomicU64,
    /// Every jmethodID the agent had the JVM make (ClassPrepare, replay), in order: how the
    /// processor names the `Method*`s of hpm's own stack walker.
    method_ids: Mutex<Vec<u64>>,
}

/// At most this many jmethodIDs are remembered (8 bytes each); a JVM with more methods
/// names the interpreted frames of the rest `[unknown method]`'s way: left out, counted.
const MAX_METHOD_IDS: usize = 1 << 22;

#[derive(Default)]
struct Inner {
    /// The code-map events are on (from load for a signal-sampler session, else from the first
    /// one started later).
    enabled: bool,
    /// Held here while no session runs (the callbacks keep it current); `None` while a
    /// processor owns it.
    idle: Option<CodeTimeline>,
    /// Symbol tables and kernel names, held here between sessions (`None` while a processor
    /// owns them): the code outside the code map, read once per process.
    native: Option<NativeCode>,
    /// What the last session named of Java code, and the JFR keys of its method table, for the
    /// next one (`None` while a processor owns them, or when the last one kept nothing).
    java: Option<(JavaNames, TableKeys)>,
    /// Events for the running processor, in arrival order.
    pending: Vec<CodeEvent>,
    /// GC (start?, time) for the running processor.
    gc: Vec<(bool, u64)>,
    /// A collection in progress (start time), kept between sessions so a session that starts
    /// during a GC marks it.
    gc_open: Option<u64>,
    /// A processor is draining `pending` and `gc`.
    draining: bool,
}

impl CodeEvents {
    /// Remembers jmethodIDs the JVM made for the agent.
    pub fn add_method_ids(&self, ids: &[jni::sys::jmethodID]) {
        let mut v = self.method_ids.lock().unwrap_or_else(|p| p.into_inner());
        let room = MAX_METHOD_IDS.saturating_sub(v.len());
        v.extend(ids.iter().take(room).map(|&m| m as u64));
    }

    /// The jmethodIDs remembered after the first `from`, appended to `out`; returns the new
    /// count.
    pub fn method_ids_since(&self, from: usize, out: &mut Vec<u64>) -> usize {
        let v = self.method_ids.lock().unwrap_or_else(|p| p.into_inner());
        if from < v.len() {
            out.extend_from_slice(&v[from..]);
        }
        v.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A callback's code event: applied to the idle map at once, or queued for the processor.
    pub fn push(&self, ev: CodeEvent) {
        let mut g = self.lock();
        if g.draining {
            g.pending.push(ev);
        } else {
            let map = g.idle.get_or_insert_with(CodeTimeline::default);
            map.push(ev);
            map.advance_to(u64::MAX);
        }
    }

    /// A callback's GC start or finish.
    pub fn gc(&self, start: bool, time: u64) {
        let mut g = self.lock();
        g.gc_open = start.then_some(time);
        if g.draining {
            g.gc.push((start, time));
        }
    }

    /// A session's processor starts: it gets the code map built so far and a collection in
    /// progress, if any; events from now on queue for it.
    pub fn begin_session(&self) -> (CodeTimeline, Option<u64>) {
        let mut g = self.lock();
        g.draining = true;
        g.pending.clear();
        g.gc.clear();
        (g.idle.take().unwrap_or_default(), g.gc_open)
    }

    /// The processor's round: every event queued since the last call.
    pub fn drain(&self, code: &mut Vec<CodeEvent>, gc: &mut Vec<(bool, u64)>) {
        let mut g = self.lock();
        code.append(&mut g.pending);
        gc.append(&mut g.gc);
    }

    /// The session ends: the map comes back, brought up to date with what queued meanwhile.
    pub fn end_session(&self, mut map: CodeTimeline) {
        let mut g = self.lock();
        g.draining = false;
        for ev in g.pending.drain(..) {
            map.push(ev);
        }
        g.gc.clear();
        map.advance_to(u64::MAX);
        g.idle = Some(map);
    }

    /// What earlier sessions learned of native code (empty for the first).
    pub fn take_native(&self) -> NativeCode {
        self.lock().native.take().unwrap_or_default()
    }

    /// Keeps what a session learned of native code for the next one.
    pub fn keep_native(&self, n: NativeCode) {
        self.lock().native = Some(n);
    }

    /// What the last session named of Java code, with the JFR keys of its method table
    /// (nothing for the first).
    pub fn take_java(&self) -> Option<(JavaNames, TableKeys)> {
        self.lock().java.take()
    }

    /// Keeps what a session named of Java code for the next one.
    pub fn keep_java(&self, n: Option<(JavaNames, TableKeys)>) {
        self.lock().java = n;
    }

    pub fn enabled(&self) -> bool {
        self.lock().enabled
    }

    /// Turns the code-map events on once (the signal sampler names IPs with them). With `jni`
    /// (the live phase, on a thread attached to the VM) classes loaded and code compiled before
    /// are replayed, so the map is complete from here on; at load nothing exists yet and VMInit
    /// replays what start-up made.
    pub fn enable(&self, jvmti: &Jvmti, jni: Option<*mut JNIEnv>) -> Result<(), JvmtiError> {
        // Callers are serialised (load, VMInit and the control lock); the JVMTI calls are made
        // without holding our lock, which the GC callbacks take inside a safepoint.
        if self.enabled() {
            return Ok(());
        }
        for ev in [
            event::CLASS_PREPARE,
            event::COMPILED_METHOD_LOAD,
            event::COMPILED_METHOD_UNLOAD,
            event::DYNAMIC_CODE_GENERATED,
        ] {
            jvmti.set_event(true, ev)?;
        }
        self.lock().enabled = true;
        if let Some(jni) = jni {
            replay(jvmti, jni, self);
        }
        Ok(())
    }
}

/// Makes jmethodIDs for classes loaded so far (AsyncGetCallTrace reports only existing ones)
/// and asks the JVM to replay the code it generated and compiled (with inline records).
pub fn replay(jvmti: &Jvmti, jni: *mut JNIEnv, code: &CodeEvents) {
    if let Ok(classes) = jvmti.loaded_classes() {
        for c in classes {
            if let Ok(ids) = jvmti.touch_class_methods(c) {
                code.add_method_ids(&ids);
            }
            jnienv::delete_local_ref(jni, c);
        }
    }
    for ev in [event::DYNAMIC_CODE_GENERATED, event::COMPILED_METHOD_LOAD] {
        if let Err(e) = jvmti.generate_events(ev) {
            eprintln!("hpm: {e}: code compiled before start-up will show as unknown");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hpm_profile::codemap::CodeBlob;

    fn load(method: u64, start: u64, time: u64) -> CodeEvent {
        CodeEvent::Load(CodeBlob::compiled(method, start, 0x100, vec![], time))
    }

    /// The map survives sessions, and events between sessions do not pile up.
    #[test]
    fn the_map_outlives_sessions_and_idle_events_are_applied_at_once() {
        let c = CodeEvents::default();
        c.push(load(1, 0x1000, 10));
        let (mut map, _) = c.begin_session();
        assert!(map.map.find(0x1010).is_some(), "a second session starts with the code so far");
        c.push(load(2, 0x2000, 20));
        let (mut code, mut gc) = (Vec::new(), Vec::new());
        c.drain(&mut code, &mut gc);
        assert_eq!(code.len(), 1);
        for ev in code {
            map.push(ev);
        }
        c.push(load(3, 0x3000, 30)); // after the last round, before the end
        c.end_session(map);
        for i in 0..10_000u64 {
            c.push(load(4 + i % 5, 0x4000, 40 + i));
            c.push(CodeEvent::Unload { time: 40 + i, start: 0x4000 });
        }
        let g = c.lock();
        assert!(g.pending.is_empty(), "nothing queues while no session runs");
        let idle = g.idle.as_ref().unwrap();
        assert_eq!(idle.pending(), 0);
        assert_eq!(idle.map.len(), 3, "0x1000, 0x2000, 0x3000: unloaded code is gone");
    }

    #[test]
    fn gc_events_queue_only_for_a_running_processor() {
        let c = CodeEvents::default();
        c.gc(true, 5);
        c.gc(false, 6);
        c.gc(true, 7);
        let (_, open) = c.begin_session();
        assert_eq!(open, Some(7), "a session starting during a GC knows it");
        c.gc(false, 9);
        let (mut code, mut gc) = (Vec::new(), Vec::new());
        c.drain(&mut code, &mut gc);
        assert_eq!(gc, [(false, 9)]);
        c.end_session(CodeTimeline::default());
        c.gc(true, 10);
        assert!(c.lock().gc.is_empty());
    }
}
