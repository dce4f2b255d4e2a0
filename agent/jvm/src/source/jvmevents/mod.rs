//! `alloc` and `lock`: events the JVM reports with their stacks, recorded as the JDK's own
//! `jdk.ObjectAllocationSample`, `jdk.JavaMonitorEnter` and `jdk.ThreadPark`.
//!
//! - Allocations: JVMTI SampledObjectAlloc at a mean interval in bytes (HotSpot's TLAB-based
//!   heap sampler). Each sample stands for `size / (1 - exp(-size / interval))` bytes, the
//!   inverse of the chance that an object of that size is sampled: the interval for small
//!   objects, the size for large ones.
//! - Monitors: JVMTI MonitorContendedEnter / MonitorContendedEntered. The stack is taken at
//!   Enter, while another thread holds the monitor (the walk costs this thread's waiting time,
//!   not the holder's critical section); the wait is recorded at Entered if it lasted at least
//!   the threshold.
//! - Parks: `LockSupport.park` has no JVMTI event. `jdk.internal.misc.Unsafe.park` is a JNI
//!   native; hpm re-registers it with a function that times the original (read from the
//!   `Method`'s native entry through VMStructs) and records the park blocker's class (see
//!   docs/design.md, "Allocation and lock profiles"). Another agent may re-register it too
//!   (async-profiler's lock mode does at each start, calling the JVM's own function and so
//!   leaving hpm's out): the source's tick checks the entry each round and takes it back, calling
//!   the other agent's function inside hpm's ([`JvmEvents::keep_park`]).
//! - Pinned virtual threads (JDK 21+): a park of a virtual thread that reaches `Unsafe.park`
//!   is one on its carrier, recorded as `jdk.VirtualThreadPinned` too ([`pinned`]).
//!
//! The callbacks run on the Java threads, outside any signal: they may allocate and lock. They
//! queue [`Pending`] events (bounded; more are counted and dropped) in the process's [`EVENTS`];
//! the session's feed (`feed`, a [`crate::feed::EventFeed`]) resolves their stacks each round.

use std::cell::RefCell;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use hpm_profile::model::{java_class_name, ClassLoaderName, JvmEventKind};
use jni::sys::{jboolean, jclass, jlong, jobject, JNIEnv};

use crate::options::Options;
use hpm_capture::capture::CallFrame;
use hpm_capture::capture::SlotKind;
use hpm_capture::hotspot::FrameSink;

use super::{EventSource, Planned, SourceDef, SourceTraits, Start};
use crate::feed::EventFeed;
use crate::jnienv::{self, Vm};
use crate::jvmti::{FrameInfo, Jvmti};
use crate::os::{gettid, now_ticks, thread_cpu_ns};
use crate::sink::{AsgctFn, CallTrace};
use crate::stack_source::StackSite;
use crate::threads::Threads;

/// Events kept while the processor has not taken them; later ones are counted and dropped.
const MAX_PENDING: usize = 100_000;
mod feed;
mod pinned;

/// Deepest stack recorded with an event (the session's `jstackdepth` may ask for less).
pub const MAX_EVENT_FRAMES: usize = hpm_capture::capture::MAX_FRAMES;

/// One event as a callback saw it: frames are (jmethodID, bytecode index or -1).
pub struct Pending {
    pub kind: JvmEventKind,
    pub time: u64,
    pub duration: u64,
    pub thread: u32,
    pub frames: Vec<(u64, i32)>,
    /// The frames are hpm's walker's raw frames (pcs and `Method*`s tagged by these kinds),
    /// with how the walk ended; else (jmethodID, bci) pairs.
    pub walk: Option<(Vec<SlotKind>, u8)>,
    /// The object's, monitor's or blocker's class.
    pub class: Option<EventClass>,
    pub weight: u64,
    pub timeout: i64,
    pub until: i64,
}

/// A class as events name it: its Java name, and its loader (none: the bootstrap loader's, or
/// not known).
#[derive(Clone)]
pub struct EventClass {
    pub name: String,
    pub loader: Option<Arc<ClassLoaderName>>,
}

/// What the callbacks record into, for the life of the process; a session turns the kinds on
/// and off.
pub struct JvmEvents {
    queue: Mutex<Vec<Pending>>,
    /// Events dropped because the queue was full.
    pub dropped: AtomicU64,
    /// Waits shorter than the threshold, not recorded.
    pub short_waits: AtomicU64,
    /// CPU time the allocating threads spent in the allocation callback (ns), measured on one
    /// call in [`COST_EVERY`] (`alloc_calls` of them).
    pub alloc_ns: AtomicU64,
    pub alloc_calls: AtomicU64,
    /// Event stacks AsyncGetCallTrace could not walk (GetStackTrace took them).
    pub slow_stacks: AtomicU64,
    /// Mean allocation sampling interval; 0 = off.
    alloc_interval: AtomicU64,
    /// Shortest wait recorded, ns; `u64::MAX` = off.
    lock_threshold: AtomicU64,
    max_depth: AtomicU32,
    /// Whether Unsafe.park is intercepted (once per process): by hpm alone, or around another
    /// agent's function (its library's name); or why not.
    park: OnceLock<Result<Option<String>, String>>,
    /// Times another agent re-registered Unsafe.park and hpm took it back (for the process).
    pub park_retakes: AtomicU64,
    /// Pinned virtual-thread parks seen in the session, and those past [`pinned::MAX_PINNED`]
    /// (not recorded as pinned; their parks are).
    pub pinned: AtomicU64,
    pub pinned_over: AtomicU64,
    /// How event stacks are walked (set at the first session).
    walkers: OnceLock<Walkers>,
    /// Classes by the tag of their mirror, less one (see [`class_name`]).
    class_names: Mutex<Vec<EventClass>>,
}

/// Classes named through tags; later ones are named every time.
const MAX_CLASS_NAMES: usize = 1 << 16;

/// hpm's own walker (its layout, and the VM to find the thread) and AsyncGetCallTrace.
struct Walkers {
    vm: Vm,
    layout: Option<&'static hpm_capture::hotspot::Layout>,
    asgct: Option<AsgctFn>,
}

/// A stack as [`own_stack`] took it.
type Walked = (Vec<(u64, i32)>, Option<(Vec<SlotKind>, u8)>);

/// What the callbacks record into, for the life of the process.
pub static EVENTS: JvmEvents = JvmEvents::new();

impl JvmEvents {
    const fn new() -> Self {
        JvmEvents {
            queue: Mutex::new(Vec::new()),
            dropped: AtomicU64::new(0),
            short_waits: AtomicU64::new(0),
            alloc_ns: AtomicU64::new(0),
            alloc_calls: AtomicU64::new(0),
            slow_stacks: AtomicU64::new(0),
            alloc_interval: AtomicU64::new(0),
            lock_threshold: AtomicU64::new(u64::MAX),
            max_depth: AtomicU32::new(256),
            park: OnceLock::new(),
            park_retakes: AtomicU64::new(0),
            pinned: AtomicU64::new(0),
            pinned_over: AtomicU64::new(0),
            walkers: OnceLock::new(),
            class_names: Mutex::new(Vec::new()),
        }
    }
}

/// What [`JvmEvents::start`] works with: the JVM's interfaces and the session's threads.
pub struct Setup<'a> {
    pub jvmti: &'a Jvmti,
    pub threads: &'static Threads,
    pub vm: Vm,
    /// The calling thread's JNI environment (to intercept Unsafe.park).
    pub jni: Option<*mut JNIEnv>,
    pub asgct: Option<AsgctFn>,
    /// hpm's own stack walker's layout of this JVM, if it has one.
    pub walker: Option<&'static hpm_capture::hotspot::Layout>,
}

/// `alloc` weight: the bytes a sample of an object of `size` bytes stands for when the mean
/// interval is `interval` (each object is sampled with probability 1 - exp(-size/interval)).
pub fn allocation_weight(size: u64, interval: u64) -> u64 {
    if interval == 0 || size == 0 {
        return size;
    }
    let p = -(-(size as f64) / interval as f64).exp_m1();
    if p <= 0.0 {
        return interval;
    }
    (size as f64 / p).round() as u64
}

/// `alloc` / `lock` beside the CPU source, or alone (then `idle` names the threads).
pub const SOURCE: SourceDef = SourceDef {
    traits: |opts| (opts.alloc.is_some() || opts.lock.is_some()).then_some(SourceTraits::plain(StackSite::InThread)),
    plan,
};

fn plan(opts: &Options, _: &Jvmti) -> Result<Planned, String> {
    let max = hpm_capture::capture::MAX_FRAMES;
    let notes = (opts.max_depth as usize > max)
        .then(|| format!("jstackdepth={}: the alloc and lock events keep at most {max} frames", opts.max_depth));
    let build = |s: &Start| {
        Ok(Arc::new(EventsSource {
            events: &EVENTS,
            jvmti: s.jvmti,
            threads: s.threads,
            vm: s.vm,
            asgct: s.asgct,
            alloc: s.opts.alloc,
            lock: s.opts.lock,
            max_depth: s.max_depth,
            quiet: s.opts.quiet,
            cpu: s.opts.cpu,
        }) as Arc<dyn EventSource>)
    };
    Ok(Planned { event: None, notes: notes.into_iter().collect(), build: Box::new(build) })
}

/// The JVM's events of one session, turned on at its start and off at its stop.
struct EventsSource {
    events: &'static JvmEvents,
    jvmti: Jvmti,
    threads: &'static Threads,
    vm: Vm,
    asgct: Option<AsgctFn>,
    alloc: Option<u64>,
    lock: Option<u64>,
    max_depth: u32,
    quiet: bool,
    /// The session has a CPU event: the events do not feed the profile's tree.
    cpu: bool,
}

impl EventSource for EventsSource {
    fn start(&self) -> Result<(), String> {
        let with = Setup {
            jvmti: &self.jvmti,
            threads: self.threads,
            vm: self.vm,
            jni: self.vm.env(),
            asgct: self.asgct,
            walker: crate::vmstructs::walker_layout().ok(),
        };
        let notes = self.events.start(with, self.alloc, self.lock, self.max_depth)?;
        if !self.quiet {
            for n in notes {
                eprintln!("hpm: {n}");
            }
        }
        Ok(())
    }

    /// Another agent may have taken Unsafe.park from hpm's function since the last round.
    fn tick(&self, _round: u64, _scan: bool) {
        if self.lock.is_none() {
            return;
        }
        if let Some(note) = self.vm.env().and_then(|env| self.events.keep_park(env)) {
            if !self.quiet {
                eprintln!("hpm: {note}");
            }
        }
    }

    fn feeds(&self) -> Vec<Box<dyn EventFeed>> {
        vec![Box::new(feed::JvmEventsFeed::new(self.events, self.alloc.is_some(), self.lock.is_some(), self.cpu))]
    }

    fn stop(&self) -> Vec<String> {
        self.events.stop(&self.jvmti);
        Vec::new()
    }
}

impl JvmEvents {
    /// Java frames each event's stack holds at most (its walk stops there).
    pub fn max_depth(&self) -> u32 {
        (self.max_depth.load(Ordering::Relaxed) as usize).min(MAX_EVENT_FRAMES) as u32
    }

    /// Turns on what a session asks for; returns lines for the start of the session.
    pub fn start(
        &'static self,
        with: Setup,
        alloc: Option<u64>,
        lock: Option<u64>,
        max_depth: u32,
    ) -> Result<Vec<String>, String> {
        use crate::jvmti::event;
        let Setup { jvmti, threads, vm, jni, asgct, walker } = with;
        let mut notes = Vec::new();
        let _ = self.walkers.set(Walkers { vm, layout: walker, asgct });
        self.max_depth.store(max_depth.clamp(1, MAX_EVENT_FRAMES as u32), Ordering::Relaxed);
        for c in [&self.dropped, &self.short_waits, &self.alloc_ns, &self.alloc_calls, &self.slow_stacks] {
            c.store(0, Ordering::Relaxed);
        }
        pinned::new_session(self);
        if let Some(bytes) = alloc {
            let interval = bytes.clamp(1, i32::MAX as u64);
            jvmti
                .set_heap_sampling_interval(interval as i32)
                .and_then(|()| jvmti.set_event(true, event::SAMPLED_OBJECT_ALLOC))
                .map_err(|e| format!("alloc: {e}; this JVM cannot sample allocations (JDK 11 or later can)"))?;
            self.alloc_interval.store(interval, Ordering::Release);
            notes.push(format!(
                "alloc: allocations sampled every {} KiB on average (JVMTI SampledObjectAlloc)",
                interval / 1024
            ));
        }
        if let Some(ns) = lock {
            for ev in [event::MONITOR_CONTENDED_ENTER, event::MONITOR_CONTENDED_ENTERED] {
                jvmti.set_event(true, ev).map_err(|e| format!("lock: {e}; this JVM reports no monitor contention"))?;
            }
            self.lock_threshold.store(ns, Ordering::Release);
            let mut first = false;
            let park = self.park.get_or_init(|| {
                first = true;
                let _ = PARK_CONTEXT.set(ParkContext { events: self, jvmti: *jvmti, threads });
                jni.ok_or("no JNI environment".to_string()).and_then(intercept_park)
            });
            // A later session: another agent may have taken the park since the last one.
            if let (false, Some(env)) = (first, jni) {
                notes.extend(self.keep_park(env));
            }
            let parks = match park {
                Ok(None) => "parks (Unsafe.park intercepted)".to_string(),
                Ok(Some(lib)) => format!(
                    "parks (Unsafe.park intercepted around the function of another agent, {lib}, which had \
                     re-registered it before: both see the parks)"
                ),
                Err(e) => format!("no parks ({e})"),
            };
            notes.push(format!(
                "lock: contended monitor enters (JVMTI) and {parks} that waited at least {} us",
                ns as f64 / 1e3
            ));
        }
        Ok(notes)
    }

    /// Turns every kind off (the park interception stays, passing straight through).
    pub fn stop(&self, jvmti: &Jvmti) {
        use crate::jvmti::event;
        self.alloc_interval.store(0, Ordering::Release);
        self.lock_threshold.store(u64::MAX, Ordering::Release);
        for ev in [event::SAMPLED_OBJECT_ALLOC, event::MONITOR_CONTENDED_ENTER, event::MONITOR_CONTENDED_ENTERED] {
            let _ = jvmti.set_event(false, ev);
        }
    }

    /// The feed, once per round: the events queued since the last call.
    pub fn take(&self) -> Vec<Pending> {
        std::mem::take(&mut *self.queue.lock().unwrap_or_else(|p| p.into_inner()))
    }

    fn push(&self, p: Pending) {
        let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        if q.len() >= MAX_PENDING {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        } else {
            q.push(p);
        }
    }

    /// The source's tick, each round of a session with `lock`: whether `Unsafe.park` is still hpm's.
    /// If another agent re-registered it since, hpm registers its own again, calling that agent's
    /// function inside (so both see the parks), at most [`MAX_PARK_RETAKES`] times a process.
    /// Returns a line for the user when it found a takeover.
    pub fn keep_park(&self, jni: *mut JNIEnv) -> Option<String> {
        self.park.get()?.as_ref().ok()?;
        let slot = PARK_ENTRY_SLOT.load(Ordering::Acquire);
        let mut word = [0u8; 8];
        if slot == 0 || !crate::os::read_checked(slot, &mut word) {
            return None;
        }
        let entry = u64::from_le_bytes(word);
        if entry == park as *const () as u64 || entry == 0 {
            return None;
        }
        let n = self.park_retakes.fetch_add(1, Ordering::Relaxed) + 1;
        let Some(lib) = crate::os::library_name(entry) else {
            return (n == 1).then(|| {
                format!(
                    "lock: Unsafe.park was re-registered with code outside any library ({entry:#x}); hpm does not \
                     call it: parks are no longer recorded"
                )
            });
        };
        if n > MAX_PARK_RETAKES {
            return (n == MAX_PARK_RETAKES + 1).then(|| {
                format!(
                    "lock: Unsafe.park was re-registered by another agent ({lib}) {n} times; hpm no longer takes it \
                     back (each re-registration leaves a native wrapper in the code cache, JDK-8369219): parks \
                     are no longer recorded; stop the other agent's lock profiling to record them"
                )
            });
        }
        ORIGINAL_PARK.store(entry as usize, Ordering::Release);
        match jnienv::register_native(jni, UNSAFE, c"park", c"(ZJ)V", park as *mut c_void) {
            Ok(()) => Some(format!(
                "lock: Unsafe.park was re-registered by another agent ({lib}; async-profiler's lock mode does this \
                 at each start), which left hpm's out; hpm took it back, calling that agent's function inside its \
                 own: both see the parks, but those in between were not recorded"
            )),
            Err(e) => Some(format!(
                "lock: Unsafe.park was re-registered by another agent ({lib}) and hpm could not take it back ({e}): \
                 parks are no longer recorded"
            )),
        }
    }

    fn lock_on(&self) -> Option<u64> {
        Some(self.lock_threshold.load(Ordering::Acquire)).filter(|&t| t != u64::MAX)
    }
}

/// A contended monitor enter in progress: its start, stack and monitor class.
type Waiting = (u64, Walked, Option<EventClass>);

thread_local! {
    /// This thread's frame buffers for GetStackTrace and AsyncGetCallTrace.
    static FRAMES: RefCell<Vec<FrameInfo>> = const { RefCell::new(Vec::new()) };
    static CALL_FRAMES: RefCell<Vec<CallFrame>> = const { RefCell::new(Vec::new()) };
    static WALK: RefCell<(Vec<CallFrame>, Vec<SlotKind>)> = const { RefCell::new((Vec::new(), Vec::new())) };
    static WAITING: RefCell<Option<Waiting>> = const { RefCell::new(None) };
    /// This thread's allocation callbacks, for timing one in [`COST_EVERY`].
    static COST_CALL: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// One allocation callback in this many (per thread) is timed for the summary's cost figure.
const COST_EVERY: u32 = 8;

/// The calling thread's Java stack, leaf first, at most `max` frames. The callbacks run in
/// native state, where HotSpot keeps the thread's last Java frame (its anchor) walkable:
/// hpm's own walker starts there (a few microseconds), where GetStackTrace (vframes, handles,
/// method ids) took 15-60 us per allocation sample on h2's and lucene's deep stacks and
/// AsyncGetCallTrace refused most of h2's (`not_walkable_not_Java`). Then AsyncGetCallTrace,
/// then GetStackTrace.
fn own_stack(ev: &JvmEvents, jvmti: &Jvmti, jni: *mut JNIEnv) -> Walked {
    let max = (ev.max_depth.load(Ordering::Relaxed) as usize).min(MAX_EVENT_FRAMES);
    let w = ev.walkers.get();
    if let Some((layout, thread)) = w.and_then(|w| Some((w.layout?, w.vm.current_vm_thread()))).filter(|x| x.1 != 0) {
        let walked = WALK.with(|b| {
            let mut b = b.borrow_mut();
            let (frames, kinds) = &mut *b;
            if frames.len() < max {
                frames.resize(max, CallFrame::default());
                kinds.resize(max, SlotKind::Method);
            }
            let mut sink = FrameSink::new(&mut frames[..max], &mut kinds[..max]);
            // The walk starts in this (native) frame: not Java code, so the anchor is taken.
            let here = 0u64;
            // SAFETY: ucontext_t is plain data; all-zero is a valid value.
            let mut uc: libc::ucontext_t = unsafe { std::mem::zeroed() };
            uc.uc_mcontext.gregs[libc::REG_RIP as usize] = own_stack as *const () as i64;
            uc.uc_mcontext.gregs[libc::REG_RSP as usize] = (&here as *const u64 as i64) & !7;
            let code = crate::vmstructs::code_view(layout);
            let stop = crate::vmstructs::walk_here(
                layout,
                &code,
                crate::vmstructs::Walked { thread, java: true, native: None },
                (&uc as *const libc::ucontext_t).cast(),
                None,
                &mut sink,
            );
            let n = sink.len;
            (n > 0).then(|| {
                let raw = frames[..n].iter().map(|f| (f.method_id, f.lineno)).collect();
                (raw, Some((kinds[..n].to_vec(), stop as u8)))
            })
        });
        if let Some(w) = walked {
            return w;
        }
    }
    if let Some(asgct) = w.and_then(|w| w.asgct) {
        let walked = CALL_FRAMES.with(|b| {
            let mut b = b.borrow_mut();
            if b.len() < max {
                b.resize(max, CallFrame::default());
            }
            let mut trace = CallTrace { env_id: jni, num_frames: 0, frames: b.as_mut_ptr() };
            // A context for the signature only: in native state HotSpot walks from the thread's
            // own last Java frame and reads nothing of it.
            // SAFETY: ucontext_t is plain data; all-zero is a valid value.
            let mut uc: libc::ucontext_t = unsafe { std::mem::zeroed() };
            // SAFETY: AsyncGetCallTrace of this JVM, called on the current (attached) thread
            // with a buffer of `max` frames and a valid, if empty, context.
            unsafe { asgct(&mut trace, max as i32, (&mut uc as *mut libc::ucontext_t).cast()) };
            let n = trace.num_frames;
            (n > 0).then(|| b[..(n as usize).min(max)].iter().map(|f| (f.method_id, f.lineno.max(-1))).collect())
        });
        if let Some(frames) = walked {
            return (frames, None);
        }
    }
    ev.slow_stacks.fetch_add(1, Ordering::Relaxed);
    let frames = FRAMES.with(|b| {
        let mut b = b.borrow_mut();
        if b.len() < max {
            b.resize(max, FrameInfo::default());
        }
        let n = jvmti.own_stack_trace(&mut b[..max]).unwrap_or(0);
        b[..n].iter().map(|f| (f.method as u64, f.location.clamp(-1, i32::MAX as i64) as i32)).collect()
    });
    (frames, None)
}

/// The Java name and loader of `class`. GetClassSignature cost ~10 us per call on h2's
/// allocation samples, most of a sample's cost: each class is named once, and its mirror tagged
/// with the name's index + 1 (JVMTI tags follow the object through every collection), so later
/// events pay one GetTag. Without the tagging capability, the signature every time.
fn class_name(ev: &JvmEvents, jvmti: &Jvmti, jni: *mut JNIEnv, class: jclass) -> Option<EventClass> {
    if class.is_null() {
        return None;
    }
    if let Ok(tag) = jvmti.tag(class) {
        if tag > 0 {
            let names = ev.class_names.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(n) = names.get(tag as usize - 1) {
                return Some(n.clone());
            }
        }
    }
    let name = java_class_name(&jvmti.class_signature(class).ok()?);
    let named = EventClass { name, loader: loader_of(jvmti, jni, class) };
    let mut names = ev.class_names.lock().unwrap_or_else(|p| p.into_inner());
    if names.len() < MAX_CLASS_NAMES && jvmti.set_tag(class, names.len() as i64 + 1).is_ok() {
        names.push(named.clone());
    }
    Some(named)
}

/// The loader of `class` as JFR's `jdk.types.ClassLoader` names it (its class and name); none
/// for the bootstrap loader's classes (JDK tools showed `classLoader = null`
/// for the application's classes).
fn loader_of(jvmti: &Jvmti, jni: *mut JNIEnv, class: jclass) -> Option<Arc<ClassLoaderName>> {
    let loader = jvmti.class_loader(class).ok().filter(|l| !l.is_null())?;
    let loader_class = jnienv::object_class(jni, loader);
    let class_name = jvmti.class_signature(loader_class).ok().map(|s| java_class_name(&s));
    let name = jnienv::loader_name(jni, loader);
    jnienv::delete_local_ref(jni, loader_class);
    jnienv::delete_local_ref(jni, loader);
    Some(Arc::new(ClassLoaderName { class: class_name?.into(), name: name.map(Into::into) }))
}

/// The class of `obj`.
fn class_of(ev: &JvmEvents, jvmti: &Jvmti, jni: *mut JNIEnv, obj: jobject) -> Option<EventClass> {
    let c = jnienv::object_class(jni, obj);
    let name = class_name(ev, jvmti, jni, c);
    jnienv::delete_local_ref(jni, c);
    name
}

/// The session index of the calling thread.
fn thread_index(threads: &Threads, jvmti: &Jvmti, jni: *mut JNIEnv, thread: jobject) -> Option<u32> {
    threads.index_for_tid(gettid()).or_else(|| {
        let id = jnienv::java_thread_id(jni, thread)?;
        threads.index_for_java_id(id, || jvmti.thread_name(thread).unwrap_or_default())
    })
}

/// SampledObjectAlloc.
pub fn allocated(
    ev: &JvmEvents,
    jvmti: &Jvmti,
    threads: &Threads,
    jni: *mut JNIEnv,
    thread: jobject,
    class: jclass,
    size: u64,
) {
    let interval = ev.alloc_interval.load(Ordering::Acquire);
    if interval == 0 {
        return;
    }
    // The cost is the thread's CPU time, not the wall time between the two reads: with more
    // runnable threads than cores a preemption inside the callback added milliseconds to a
    // few samples and moved the mean from 7 to 135 us between sessions of one h2 run. The
    // thread's CPU clock is a system call (~0.9 us here), so one call in COST_EVERY is timed.
    let timed = COST_CALL.with(|c| {
        let n = c.get().wrapping_add(1);
        c.set(n);
        n % COST_EVERY == 1
    });
    let cpu = if timed { thread_cpu_ns() } else { 0 };
    let start = now_ticks();
    let Some(idx) = thread_index(threads, jvmti, jni, thread) else { return };
    let (frames, walk) = own_stack(ev, jvmti, jni);
    let class = class_name(ev, jvmti, jni, class);
    ev.push(Pending {
        kind: JvmEventKind::Allocation,
        time: start,
        duration: 0,
        thread: idx,
        frames,
        walk,
        class,
        weight: allocation_weight(size, interval),
        timeout: i64::MIN,
        until: i64::MIN,
    });
    if timed {
        ev.alloc_ns.fetch_add(thread_cpu_ns().saturating_sub(cpu), Ordering::Relaxed);
        ev.alloc_calls.fetch_add(1, Ordering::Relaxed);
    }
}

/// MonitorContendedEnter: the thread is about to wait for `object`'s monitor.
pub fn monitor_waiting(ev: &JvmEvents, jvmti: &Jvmti, jni: *mut JNIEnv, object: jobject) {
    if ev.lock_on().is_none() {
        return;
    }
    let frames = own_stack(ev, jvmti, jni);
    let class = class_of(ev, jvmti, jni, object);
    WAITING.with(|w| *w.borrow_mut() = Some((now_ticks(), frames, class)));
}

/// MonitorContendedEntered: the wait is over.
pub fn monitor_entered(ev: &JvmEvents, jvmti: &Jvmti, threads: &Threads, jni: *mut JNIEnv, thread: jobject) {
    let end = now_ticks();
    let Some((start, (frames, walk), class)) = WAITING.with(|w| w.borrow_mut().take()) else { return };
    let Some(threshold) = ev.lock_on() else { return };
    let duration = end.saturating_sub(start);
    if duration < threshold {
        ev.short_waits.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let Some(idx) = thread_index(threads, jvmti, jni, thread) else { return };
    ev.push(Pending {
        kind: JvmEventKind::MonitorEnter,
        time: start,
        duration,
        thread: idx,
        frames,
        walk,
        class,
        weight: duration,
        timeout: i64::MIN,
        until: i64::MIN,
    });
}

type ParkFn = unsafe extern "C" fn(*mut JNIEnv, jobject, jboolean, jlong);

/// What [`park`] records with (set once, before it is registered).
struct ParkContext {
    events: &'static JvmEvents,
    jvmti: Jvmti,
    threads: &'static Threads,
}

static PARK_CONTEXT: OnceLock<ParkContext> = OnceLock::new();

/// What [`park`] calls: the JVM's own `Unsafe_Park`, or another agent's function that took it
/// over (and calls the JVM's); 0 until intercepted.
static ORIGINAL_PARK: AtomicUsize = AtomicUsize::new(0);

/// The entry found at the interception, before any function of hpm's was registered, so it
/// cannot lead back to [`park`]: what a [`park`] re-entered on its thread calls (another agent
/// whose function hpm calls may call the one it found, hpm's).
static FIRST_PARK: AtomicUsize = AtomicUsize::new(0);

/// Where `Unsafe.park`'s `Method` keeps its native entry (read to see who has it); 0 until
/// intercepted.
static PARK_ENTRY_SLOT: AtomicU64 = AtomicU64::new(0);

/// Takeovers hpm answers in a process: each re-registration leaves the method's previous native
/// wrapper in the code cache (async-profiler stopped resetting its hook for this, JDK-8369219).
const MAX_PARK_RETAKES: u64 = 16;

const UNSAFE: &std::ffi::CStr = c"jdk/internal/misc/Unsafe";

thread_local! {
    /// Whether this thread is inside [`park`] (a re-entry comes through another agent's function).
    static IN_PARK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Re-registers `Unsafe.park(ZJ)V` with [`park`], after reading the original native entry
/// from the `Method` (HotSpot keeps it in the word after the `Method`, whose size VMStructs
/// gives). The entry is the JVM's own, or, when another agent re-registered the method first
/// (async-profiler's lock mode), that agent's function, whose library is returned.
fn intercept_park(jni: *mut JNIEnv) -> Result<Option<String>, String> {
    let method_size =
        crate::vmstructs::table()?.sizes.get("Method").copied().ok_or("VMStructs gives no size of Method")?;
    let mid = jnienv::method_id(jni, UNSAFE, c"park", c"(ZJ)V").ok_or("no Unsafe.park(ZJ)V")?;
    // A jmethodID points at a slot holding the Method*.
    let mut word = [0u8; 8];
    if !crate::os::read_checked(mid, &mut word) {
        return Err("cannot read Unsafe.park's jmethodID".into());
    }
    let method = u64::from_le_bytes(word);
    if method == 0 || !crate::os::read_checked(method + method_size, &mut word) {
        return Err("cannot read Unsafe.park's native entry".into());
    }
    let original = u64::from_le_bytes(word);
    // The entry must be code of libjvm (not a stub that links it on first call), or of another
    // agent's library that re-registered it.
    let lib = crate::os::library_name(original).filter(|_| original != 0);
    let other = match lib.as_deref() {
        Some("libjvm.so") => None,
        Some(l) if !l.starts_with("libjava") => Some(l.to_string()),
        _ => return Err(format!("Unsafe.park's native entry {original:#x} is neither libjvm's nor an agent's")),
    };
    ORIGINAL_PARK.store(original as usize, Ordering::Release);
    FIRST_PARK.store(original as usize, Ordering::Release);
    PARK_ENTRY_SLOT.store(method + method_size, Ordering::Release);
    jnienv::register_native(jni, UNSAFE, c"park", c"(ZJ)V", park as *mut c_void)?;
    Ok(other)
}

/// What [`park`] notes before the original runs.
struct ParkStart {
    time: u64,
    frames: Walked,
    threshold: u64,
}

/// `Unsafe.park` while hpm is loaded: times the JVM's own, and records the park as
/// `jdk.ThreadPark` when `lock` is on and it lasted at least the threshold.
unsafe extern "C" fn park(env: *mut JNIEnv, this: jobject, absolute: jboolean, time: jlong) {
    // Re-entered through another agent's function that calls what it found, hpm's: the park
    // itself, once, by the entry found first (no function of hpm's behind it).
    if IN_PARK.with(|p| p.replace(true)) {
        let first = FIRST_PARK.load(Ordering::Acquire);
        if first != 0 {
            // SAFETY: `first` is the native entry Unsafe.park had before hpm registered its own
            // (the JVM's Unsafe_Park or an earlier agent's function): Unsafe.park's signature.
            let f: ParkFn = unsafe { std::mem::transmute::<usize, ParkFn>(first) };
            // SAFETY: called with the arguments this native method received.
            unsafe { f(env, this, absolute, time) };
        }
        return;
    }
    park_timed(env, this, absolute, time);
    IN_PARK.with(|p| p.set(false));
}

/// [`park`] on its first entry in this thread.
fn park_timed(env: *mut JNIEnv, this: jobject, absolute: jboolean, time: jlong) {
    let before = catch_unwind(AssertUnwindSafe(|| {
        let a = PARK_CONTEXT.get()?;
        let threshold = a.events.lock_on()?;
        let frames = own_stack(a.events, &a.jvmti, env);
        Some(ParkStart { time: now_ticks(), frames, threshold })
    }))
    .ok()
    .flatten();
    let original = ORIGINAL_PARK.load(Ordering::Acquire);
    if original != 0 {
        // SAFETY: `original` is the JVM's Unsafe_Park, read from the Method's native entry
        // before this function replaced it; it has Unsafe.park's JNI signature.
        let f: ParkFn = unsafe { std::mem::transmute::<usize, ParkFn>(original) };
        // SAFETY: called with the arguments this native method received.
        unsafe { f(env, this, absolute, time) };
    }
    let Some(start) = before else { return };
    let _ = catch_unwind(AssertUnwindSafe(|| parked(env, start, absolute != 0, time)));
}

fn parked(jni: *mut JNIEnv, start: ParkStart, absolute: bool, time: jlong) {
    let Some(a) = PARK_CONTEXT.get() else { return };
    let duration = now_ticks().saturating_sub(start.time);
    if duration < start.threshold {
        a.events.short_waits.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let Ok(thread) = a.jvmti.current_thread() else { return };
    // LockSupport sets the blocker before Unsafe.park and clears it after: still set here.
    let thread_class = jnienv::object_class(jni, thread);
    let blocker = jnienv::object_field(jni, thread_class, thread, c"parkBlocker", c"Ljava/lang/Object;");
    let class = class_of(a.events, &a.jvmti, jni, blocker);
    // Only a pinned virtual thread parks through Unsafe.park (see `pinned`).
    let virtual_thread =
        class_name(a.events, &a.jvmti, jni, thread_class).is_some_and(|c| c.name == pinned::VIRTUAL_THREAD);
    jnienv::delete_local_ref(jni, blocker);
    jnienv::delete_local_ref(jni, thread_class);
    let idx = thread_index(a.threads, &a.jvmti, jni, thread);
    jnienv::delete_local_ref(jni, thread);
    let Some(idx) = idx else { return };
    let (timeout, until) = match (absolute, time) {
        (_, 0) => (i64::MIN, i64::MIN),
        (true, t) => (i64::MIN, t),
        (false, t) => (t, i64::MIN),
    };
    let park = Pending {
        kind: JvmEventKind::ThreadPark,
        time: start.time,
        duration,
        thread: idx,
        frames: start.frames.0,
        walk: start.frames.1,
        class,
        weight: duration,
        timeout,
        until,
    };
    if virtual_thread {
        if let Some(p) = pinned::of_park(a.events, &park) {
            a.events.push(p);
        }
    }
    a.events.push(park);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocation_weights_stand_for_the_bytes_behind_a_sample() {
        // Small objects: each sample stands for about the interval.
        assert_eq!(allocation_weight(16, 524_288), 524_296);
        // Large objects are sampled almost surely: the size.
        assert_eq!(allocation_weight(64 << 20, 524_288), 64 << 20);
        // In between: more than either alone.
        let w = allocation_weight(524_288, 524_288);
        assert!(w > 524_288 && w < 2 * 524_288, "{w}");
        assert_eq!(allocation_weight(100, 0), 100);
    }
}
