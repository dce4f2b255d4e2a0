//! The class file hook of the phases source: JVMTI ClassFileLoadHook hands each class file
//! that an application loader defines (or that is retransformed) to the Java rewriter,
//! `io.github.hpm.phases.Transformer.transform(loader, name, bytes)` in hpm-phases.jar, and
//! gives the JVM the class file it returns. Classes already loaded when a session starts are
//! retransformed ([`retransform_loaded`]), so a late attach instruments them too. The hook
//! remembers the names of the classes it changed; when the session stops, with the hook off,
//! [`restore_changed`] retransforms them again, which gives them back their original code.
//!
//! What the hook passes over without calling Java: the bootstrap loader's classes (their
//! loader is null: the JDK's own, and the rewriter with its ASM, which is on the bootstrap
//! search path), hpm's own classes, a class file over [`MAX_CLASS_BYTES`], and any class
//! loaded while the same thread is inside `transform` (loading the rewriter's classes
//! re-enters the hook). The rewriter itself never throws; an exception is counted as a
//! failure and the class is left as it was.
//!
//! The Java side ([`JavaSide`]) is found once per process: its jar appended to the bootstrap
//! search path (so instrumented classes of any loader link to `Probe`), its classes and
//! members looked up. The hook's state is process-wide (JVMTI callbacks get no user data);
//! a session turns it on and off.

use std::cell::Cell;
use std::collections::HashSet;
use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use jni::sys::{jclass, jfieldID, jint, jmethodID, jobject, jvalue, JNIEnv};

use crate::jnienv::{self, java};
use crate::jvmti::{event, Jvmti, JvmtiEnvPtr};

/// Largest class file handed to the rewriter (the JVM's own limit on a method's code is
/// 64 KiB; a class file this large is generated data, left as it is).
pub const MAX_CLASS_BYTES: usize = 64 << 20;
/// Largest class file taken back from the rewriter: its probes add a few bytes per method.
pub const MAX_NEW_CLASS_BYTES: usize = 2 * MAX_CLASS_BYTES;
/// Classes retransformed in one JVMTI call (one VM operation each).
pub const RETRANSFORM_BATCH: usize = 128;
/// Class names the hook remembers as changed in one session (a large application loads some
/// 50 000 classes; each name is a few dozen bytes). Past it, a stop restores every class the
/// hook could have changed.
pub const MAX_CHANGED: usize = 200_000;
/// Packages whose classes are never instrumented (the rewriter refuses them too; the hook
/// passes hpm's own over, and [`retransform_loaded`] all of them).
pub const EXCLUDED_PACKAGES: [&str; 6] = ["java/", "javax/", "jdk/", "sun/", "com/sun/", "io/github/hpm/"];

const PROBE: &CStr = c"io/github/hpm/phases/Probe";
const TRANSFORMER: &CStr = c"io/github/hpm/phases/Transformer";

/// The rewriter's classes and members, found once per process.
pub struct JavaSide {
    jvmti: Jvmti,
    /// The jar they were loaded from.
    pub jar: String,
    probe: jclass,
    on: jfieldID,
    transformer: jclass,
    transform: jmethodID,
    configure: jmethodID,
    stats: jmethodID,
}

// SAFETY: the classes are global references and the member ids stay valid while the classes
// are loaded; classes of the bootstrap loader are never unloaded. Any attached thread may use
// them.
unsafe impl Send for JavaSide {}
// SAFETY: as above; nothing in a JavaSide is written after it is built.
unsafe impl Sync for JavaSide {}

static JAVA: OnceLock<JavaSide> = OnceLock::new();
/// Serialises the first look-up (sessions start one at a time; this makes it certain).
static LOADING: Mutex<()> = Mutex::new(());

impl JavaSide {
    /// The rewriter's classes, from `jar` the first time (appended to the bootstrap search
    /// path); later sessions get the same classes, and a note when they asked for another jar.
    pub fn load(jvmti: &Jvmti, jni: *mut JNIEnv, jar: &str) -> Result<(&'static JavaSide, Option<String>), String> {
        let _one = LOADING.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(j) = JAVA.get() {
            let note = (j.jar != jar).then(|| {
                format!(
                    "phasesjar={jar}: the rewriter of {} is used, loaded by an earlier session (a JVM loads its \
                     classes once)",
                    j.jar
                )
            });
            return Ok((j, note));
        }
        let fix = "build it with scripts/phases-jar.sh, or give phasesjar=FILE";
        jvmti.add_to_bootstrap_class_loader_search(jar).map_err(|e| format!("phasesjar={jar}: {e}; {fix}"))?;
        let found = || -> Result<JavaSide, String> {
            let probe = java::global_class(jni, PROBE)?;
            let transformer = java::global_class(jni, TRANSFORMER)?;
            Ok(JavaSide {
                jvmti: *jvmti,
                jar: jar.to_string(),
                probe,
                on: java::static_field(jni, probe, c"on", c"Z")?,
                transformer,
                transform: java::static_method(
                    jni,
                    transformer,
                    c"transform",
                    c"(Ljava/lang/ClassLoader;Ljava/lang/String;[B)[B",
                )?,
                configure: java::static_method(jni, transformer, c"configure", c"([Ljava/lang/String;)V")?,
                stats: java::static_method(jni, transformer, c"stats", c"()[J")?,
            })
        };
        let side = found().map_err(|e| format!("phasesjar={jar} is not hpm's rewriter ({e}); {fix}"))?;
        Ok((JAVA.get_or_init(|| side), None))
    }

    /// Registers `natives` (the recorder's) as `Probe`'s native methods.
    pub fn register_natives(&self, jni: *mut JNIEnv, natives: &[(&CStr, &CStr, *mut c_void)]) -> Result<(), String> {
        java::register_natives(jni, self.probe, natives).map_err(|e| format!("phases: Probe's natives: {e}"))
    }

    /// `Transformer.configure(selected)`: `None` instruments by the size heuristic, else
    /// exactly the methods named.
    pub fn configure(&self, jni: *mut JNIEnv, selected: Option<&[String]>) -> Result<(), String> {
        let array = match selected {
            Some(names) => jnienv::new_string_array(jni, names)?,
            None => std::ptr::null_mut(),
        };
        let r = java::call_static_void(jni, self.transformer, self.configure, &[jvalue { l: array }]);
        jnienv::delete_local_ref(jni, array);
        r.map_err(|e| format!("phases: Transformer.configure: {e}"))
    }

    /// Sets `Probe.on`: whether the probes record.
    pub fn set_on(&self, jni: *mut JNIEnv, on: bool) -> Result<(), String> {
        java::set_static_boolean(jni, self.probe, self.on, on).map_err(|e| format!("phases: Probe.on: {e}"))
    }

    /// `Transformer.stats()`: classes seen, classes instrumented, methods instrumented,
    /// classes skipped, classes failed.
    pub fn stats(&self, jni: *mut JNIEnv) -> Result<[i64; 5], String> {
        let array = java::call_static_object(jni, self.transformer, self.stats, &[])?;
        let values = jnienv::long_array(jni, array, "Transformer.stats()");
        jnienv::delete_local_ref(jni, array);
        let values = values?;
        let mut out = [0i64; 5];
        for (o, v) in out.iter_mut().zip(&values) {
            *o = *v;
        }
        Ok(out)
    }
}

/// What the hook did in a session (reset when it is turned on).
struct HookCounts {
    /// Class files handed to the rewriter.
    passed: AtomicU64,
    /// ... of which it changed ...
    changed: AtomicU64,
    /// ... or failed on (an exception, a JNI failure, an oversized result).
    failed: AtomicU64,
    /// Class files over [`MAX_CLASS_BYTES`], left as they were.
    too_large: AtomicU64,
    /// Classes loaded by a thread inside the rewriter, left as they were.
    reentered: AtomicU64,
}

static COUNTS: HookCounts = HookCounts {
    passed: AtomicU64::new(0),
    changed: AtomicU64::new(0),
    failed: AtomicU64::new(0),
    too_large: AtomicU64::new(0),
    reentered: AtomicU64::new(0),
};

/// Whether the hook hands classes to the rewriter.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// The first failure of a session, for its summary.
static FIRST_FAILURE: Mutex<Option<String>> = Mutex::new(None);

/// The internal names (`a/b/C`) of the classes the hook changed since it was turned on; `None`
/// when there were more than [`MAX_CHANGED`].
static CHANGED: Mutex<Option<HashSet<Box<[u8]>>>> = Mutex::new(None);
/// Whether [`CHANGED`] overflowed.
static CHANGED_OVERFLOW: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Whether this thread is inside the rewriter (a class it loads re-enters the hook).
    static IN_TRANSFORM: Cell<bool> = const { Cell::new(false) };
}

/// Turns the hook on: the counts reset, ClassFileLoadHook enabled.
pub fn enable(jvmti: &Jvmti) -> Result<(), String> {
    for c in [&COUNTS.passed, &COUNTS.changed, &COUNTS.failed, &COUNTS.too_large, &COUNTS.reentered] {
        c.store(0, Ordering::Relaxed);
    }
    *FIRST_FAILURE.lock().unwrap_or_else(|p| p.into_inner()) = None;
    *CHANGED.lock().unwrap_or_else(|p| p.into_inner()) = Some(HashSet::new());
    CHANGED_OVERFLOW.store(false, Ordering::Relaxed);
    ACTIVE.store(true, Ordering::Release);
    jvmti.set_event(true, event::CLASS_FILE_LOAD_HOOK).map_err(|e| {
        ACTIVE.store(false, Ordering::Release);
        format!("phases: {e}: cannot hook class loading")
    })
}

/// Turns the hook off (a transform under way finishes).
pub fn disable(jvmti: &Jvmti) {
    ACTIVE.store(false, Ordering::Release);
    let _ = jvmti.set_event(false, event::CLASS_FILE_LOAD_HOOK);
}

/// The summary's line on the hook.
pub fn counts_line() -> String {
    let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
    let passed = n(&COUNTS.passed);
    let (changed, failed) = (n(&COUNTS.changed), n(&COUNTS.failed));
    let mut line = format!(
        "phases: the class hook gave {passed} class files to the rewriter: {changed} instrumented, {} unchanged, \
         {failed} failed",
        passed.saturating_sub(changed + failed)
    );
    if let Some(e) = FIRST_FAILURE.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
        line.push_str(&format!(" (first: {e})"));
    }
    let too_large = n(&COUNTS.too_large);
    if too_large > 0 {
        line.push_str(&format!("; {too_large} over {} MiB left as they were", MAX_CLASS_BYTES >> 20));
    }
    let reentered = n(&COUNTS.reentered);
    if reentered > 0 {
        line.push_str(&format!("; {reentered} loaded by the rewriter itself left as they were"));
    }
    line
}

/// JVMTI ClassFileLoadHook. No panic crosses it: the work runs under `catch_unwind`.
///
/// # Safety
/// Called by the JVM with the arguments of jvmtiEventClassFileLoadHook.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn class_file_load_hook(
    _env: JvmtiEnvPtr,
    jni: *mut JNIEnv,
    _class_being_redefined: jclass,
    loader: jobject,
    name: *const c_char,
    _protection_domain: jobject,
    class_data_len: jint,
    class_data: *const u8,
    new_class_data_len: *mut jint,
    new_class_data: *mut *mut u8,
) {
    if !ACTIVE.load(Ordering::Acquire)
        || loader.is_null()
        || name.is_null()
        || jni.is_null()
        || class_data.is_null()
        || new_class_data_len.is_null()
        || new_class_data.is_null()
    {
        return;
    }
    let Some(java) = JAVA.get() else { return };
    // SAFETY: JVMTI passes the class's NUL-terminated internal name, valid during the callback.
    let name = unsafe { CStr::from_ptr(name) };
    if name.to_bytes().starts_with(b"io/github/hpm/") {
        return;
    }
    if IN_TRANSFORM.with(|g| g.replace(true)) {
        COUNTS.reentered.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let len = class_data_len.max(0) as usize;
        if len == 0 || len > MAX_CLASS_BYTES {
            COUNTS.too_large.fetch_add((len > 0) as u64, Ordering::Relaxed);
            return;
        }
        // SAFETY: JVMTI passes `class_data_len` bytes at `class_data`, valid during the callback.
        let bytes = unsafe { std::slice::from_raw_parts(class_data, len) };
        COUNTS.passed.fetch_add(1, Ordering::Relaxed);
        match transform(java, jni, loader, name, bytes) {
            Ok(None) => {}
            Ok(Some((data, len))) => {
                // SAFETY: both out-pointers were checked non-null; JVMTI reads them after the
                // callback and frees `data`, which came from JVMTI Allocate.
                unsafe {
                    *new_class_data_len = len;
                    *new_class_data = data;
                }
                COUNTS.changed.fetch_add(1, Ordering::Relaxed);
                remember_changed(name.to_bytes());
            }
            Err(e) => {
                COUNTS.failed.fetch_add(1, Ordering::Relaxed);
                let mut first = FIRST_FAILURE.lock().unwrap_or_else(|p| p.into_inner());
                if first.is_none() {
                    *first = Some(format!("{}: {e}", name.to_string_lossy()));
                }
            }
        }
    }));
    IN_TRANSFORM.with(|g| g.set(false));
}

/// Adds `name` to [`CHANGED`], or marks it overflowed.
fn remember_changed(name: &[u8]) {
    let mut changed = CHANGED.lock().unwrap_or_else(|p| p.into_inner());
    let Some(set) = changed.as_mut() else { return };
    if set.len() < MAX_CHANGED {
        set.insert(name.into());
    } else if !set.contains(name) {
        *changed = None;
        CHANGED_OVERFLOW.store(true, Ordering::Relaxed);
    }
}

/// Runs the rewriter on one class file; its result in JVMTI memory, or `None` when it left the
/// class as it was.
fn transform(
    java: &JavaSide,
    jni: *mut JNIEnv,
    loader: jobject,
    name: &CStr,
    bytes: &[u8],
) -> Result<Option<(*mut u8, jint)>, String> {
    // Another exception is pending (no JNI call may run): not ours to clear.
    if java::exception_pending(jni) {
        return Ok(None);
    }
    let jname = java::new_string_modified_utf8(jni, name)?;
    let array = match java::new_byte_array(jni, bytes) {
        Ok(a) => a,
        Err(e) => {
            jnienv::delete_local_ref(jni, jname);
            return Err(e);
        }
    };
    let args = [jvalue { l: loader }, jvalue { l: jname }, jvalue { l: array }];
    let result = java::call_static_object(jni, java.transformer, java.transform, &args);
    jnienv::delete_local_ref(jni, jname);
    jnienv::delete_local_ref(jni, array);
    let out = result?;
    if out.is_null() {
        return Ok(None);
    }
    let copied = copy_result(java, jni, out);
    jnienv::delete_local_ref(jni, out);
    copied.map(Some)
}

/// The rewriter's `byte[]` copied into JVMTI memory.
fn copy_result(java: &JavaSide, jni: *mut JNIEnv, out: jobject) -> Result<(*mut u8, jint), String> {
    let n = java::array_len(jni, out)?;
    if n == 0 || n > MAX_NEW_CLASS_BYTES {
        return Err(format!("the rewriter returned a class file of {n} bytes"));
    }
    let mut copy = vec![0u8; n];
    java::copy_byte_array(jni, out, &mut copy)?;
    let data = java.jvmti.allocate(n).map_err(|e| e.to_string())?;
    // SAFETY: JVMTI Allocate returned `n` writable bytes at `data`, not overlapping `copy`.
    unsafe { std::ptr::copy_nonoverlapping(copy.as_ptr(), data, n) };
    Ok((data, n as jint))
}

/// Whether a class whose JVM signature is `sig` (`Lcom/foo/Bar;`) may hold methods to
/// instrument: not an array, not in [`EXCLUDED_PACKAGES`].
pub fn worth_retransforming(sig: &str) -> bool {
    let Some(name) = sig.strip_prefix('L') else { return false };
    !EXCLUDED_PACKAGES.iter().any(|p| name.starts_with(p))
}

/// Makes every application named module of the JVM read the probes' module (the bootstrap
/// loader's unnamed module), so that its rewritten classes link to `Probe`; the rewriter
/// chooses the modules (`Transformer.probeModuleFor`). Modules defined later, while the hook
/// is on, get the edge from the JVM. Returns how many modules were given it.
pub fn let_modules_read_probes(jvmti: &Jvmti, jni: *mut JNIEnv, java: &JavaSide) -> Result<usize, String> {
    let chooser =
        java::static_method(jni, java.transformer, c"probeModuleFor", c"(Ljava/lang/Module;)Ljava/lang/Module;")
            .map_err(|e| format!("phases: {e}; rebuild hpm-phases.jar with scripts/phases-jar.sh"))?;
    let modules = jvmti.all_modules().map_err(|e| format!("phases: {e}"))?;
    let mut given = 0;
    let mut first_error = None;
    for &m in &modules {
        match java::call_static_object(jni, java.transformer, chooser, &[jvalue { l: m }]) {
            Ok(to) if !to.is_null() => {
                match jvmti.add_module_reads(m, to) {
                    Ok(()) => given += 1,
                    Err(e) => first_error = first_error.or(Some(e.to_string())),
                }
                jnienv::delete_local_ref(jni, to);
            }
            Ok(_) => {}
            Err(e) => first_error = first_error.or(Some(e)),
        }
    }
    for m in modules {
        jnienv::delete_local_ref(jni, m);
    }
    match first_error {
        Some(e) => Err(format!("phases: an application module cannot be made to read the probes ({e})")),
        None => Ok(given),
    }
}

/// What [`retransform_loaded`] or [`restore_changed`] did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Retransformed {
    /// Classes chosen: loaded, of an application loader, modifiable, worth instrumenting (and
    /// for a restore, changed by the hook).
    pub classes: usize,
    /// Classes the JVM refused to retransform.
    pub failed: usize,
    pub first_error: Option<String>,
    /// How long the JVMTI calls took, choosing included.
    pub took: Duration,
}

impl Retransformed {
    /// The summary's line at start.
    pub fn line(&self) -> String {
        let mut line = format!(
            "phases: {} classes loaded before the session retransformed in {} ms, {} failed",
            self.classes,
            self.took.as_millis(),
            self.failed
        );
        self.push_first_error(&mut line);
        line
    }

    /// The summary's line at stop.
    pub fn restored_line(&self) -> String {
        let mut line = format!(
            "phases: {} instrumented classes given back their original code in {} ms, {} failed",
            self.classes.saturating_sub(self.failed),
            self.took.as_millis(),
            self.failed
        );
        self.push_first_error(&mut line);
        if self.failed > 0 {
            line.push_str("; their probes stay, switched off");
        }
        line
    }

    fn push_first_error(&self, line: &mut String) {
        if let Some(e) = &self.first_error {
            line.push_str(&format!(" (first: {e})"));
        }
    }
}

/// Retransforms the classes loaded so far that the hook would instrument (an application
/// loader's, modifiable, outside [`EXCLUDED_PACKAGES`]), [`RETRANSFORM_BATCH`] at a time; a
/// batch the JVM refuses is retried class by class, and the classes it refuses counted.
/// `done` is called with each class retransformed (its methods are new `Method`s now).
pub fn retransform_loaded(
    jvmti: &Jvmti,
    jni: *mut JNIEnv,
    selected: Option<&[String]>,
    done: impl FnMut(jclass),
) -> Result<Retransformed, String> {
    match selected {
        // Step 3: only the classes of the selected methods. Retransforming a class discards
        // its compiled code even when the rewriter leaves it as it was, so touching every
        // class would make the JIT compile the whole application again at each start.
        Some(methods) => {
            let classes = selected_classes(methods);
            retransform_where(jvmti, jni, |name| classes.contains(name), done)
        }
        None => retransform_where(jvmti, jni, |_| true, done),
    }
}

/// The internal names (`a/b/C`) of the classes declaring `methods`, named as phase files
/// name them (`a.b.C.method(descriptor)`).
fn selected_classes(methods: &[String]) -> std::collections::HashSet<Vec<u8>> {
    methods
        .iter()
        .filter_map(|m| {
            let head = &m[..m.find('(')?];
            Some(head[..head.rfind('.')?].replace('.', "/").into_bytes())
        })
        .collect()
}

/// With the hook off ([`disable`]), retransforms the classes the hook changed since
/// [`enable`]: the JVM gives each its original class file, so the session leaves no probe
/// behind. When the hook changed more than [`MAX_CHANGED`] classes, every class
/// [`retransform_loaded`] would choose. `done` as there. A class whose load was under way in
/// the hook when it was turned off, and defined after this looks, keeps its (switched off)
/// probes.
pub fn restore_changed(jvmti: &Jvmti, jni: *mut JNIEnv, done: impl FnMut(jclass)) -> Result<Retransformed, String> {
    let changed = CHANGED.lock().unwrap_or_else(|p| p.into_inner()).take().unwrap_or_default();
    if CHANGED_OVERFLOW.load(Ordering::Relaxed) {
        return retransform_where(jvmti, jni, |_| true, done);
    }
    if changed.is_empty() {
        return Ok(Retransformed::default());
    }
    retransform_where(jvmti, jni, |name| changed.contains(name), done)
}

/// [`retransform_loaded`] of the classes whose internal name (`a/b/C`) `chosen` accepts.
/// (`chosen` is given bytes, so a set of names is looked up without a copy per class.)
fn retransform_where(
    jvmti: &Jvmti,
    jni: *mut JNIEnv,
    chosen: impl Fn(&[u8]) -> bool,
    mut done: impl FnMut(jclass),
) -> Result<Retransformed, String> {
    let began = Instant::now();
    let all = jvmti.loaded_classes().map_err(|e| format!("phases: {e}"))?;
    let mut picked = Vec::new();
    for &c in &all {
        let loader = jvmti.class_loader(c).unwrap_or(std::ptr::null_mut());
        let app = !loader.is_null();
        jnienv::delete_local_ref(jni, loader);
        if app
            && jvmti.is_modifiable_class(c).unwrap_or(false)
            && jvmti
                .class_signature(c)
                .is_ok_and(|s| worth_retransforming(&s) && chosen(internal_name(&s).unwrap_or_default().as_bytes()))
        {
            picked.push(c);
        }
    }
    let mut out = Retransformed { classes: picked.len(), ..Retransformed::default() };
    for batch in picked.chunks(RETRANSFORM_BATCH) {
        if jvmti.retransform_classes(batch).is_ok() {
            batch.iter().for_each(|&c| done(c));
            continue;
        }
        for &c in batch {
            match jvmti.retransform_classes(&[c]) {
                Ok(()) => done(c),
                Err(e) => {
                    out.failed += 1;
                    if out.first_error.is_none() {
                        let name = jvmti.class_signature(c).unwrap_or_default();
                        out.first_error = Some(format!("{name}: {e}"));
                    }
                }
            }
        }
    }
    for c in all {
        jnienv::delete_local_ref(jni, c);
    }
    out.took = began.elapsed();
    Ok(out)
}

/// The internal name (`a/b/C`) in a class signature (`La/b/C;`).
fn internal_name(sig: &str) -> Option<&str> {
    sig.strip_prefix('L')?.strip_suffix(';')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_3_retransforms_the_classes_of_the_selected_methods_only() {
        let m = ["a.b.C.run()V".to_string(), "a.b.C$In.f(I)J".to_string(), "Top.g()V".to_string(), "bad".into()];
        let mut got: Vec<String> = selected_classes(&m).into_iter().map(|b| String::from_utf8(b).unwrap()).collect();
        got.sort();
        assert_eq!(got, ["Top", "a/b/C", "a/b/C$In"]);
    }

    #[test]
    fn the_jdk_hpm_and_arrays_are_not_retransformed() {
        for sig in ["LThreePhases;", "Lcom/example/App$Inner;", "Lorg/h2/Driver;", "Lcom/sunny/X;"] {
            assert!(worth_retransforming(sig), "{sig}");
        }
        for sig in [
            "Ljava/lang/String;",
            "Ljavax/net/SocketFactory;",
            "Ljdk/internal/misc/Unsafe;",
            "Lsun/nio/ch/FileChannelImpl;",
            "Lcom/sun/crypto/provider/AESCrypt;",
            "Lio/github/hpm/phases/Probe;",
            "[I",
            "[LThreePhases;",
            "I",
        ] {
            assert!(!worth_retransforming(sig), "{sig}");
        }
    }

    #[test]
    fn the_summary_says_what_was_refused() {
        let r = Retransformed {
            classes: 40,
            failed: 1,
            first_error: Some("LA;: error 62".into()),
            took: Duration::from_millis(12),
        };
        assert_eq!(
            r.line(),
            "phases: 40 classes loaded before the session retransformed in 12 ms, 1 failed (first: LA;: error 62)"
        );
        assert_eq!(
            r.restored_line(),
            "phases: 39 instrumented classes given back their original code in 12 ms, 1 failed (first: LA;: error \
             62); their probes stay, switched off"
        );
    }

    #[test]
    fn the_hook_remembers_what_it_changed_up_to_its_bound() {
        *CHANGED.lock().unwrap() = Some(HashSet::new());
        CHANGED_OVERFLOW.store(false, Ordering::Relaxed);
        remember_changed(b"a/B");
        remember_changed(b"a/B");
        let n = CHANGED.lock().unwrap().as_ref().map(HashSet::len);
        assert_eq!(n, Some(1));
        for i in 1..MAX_CHANGED {
            remember_changed(format!("c/{i}").as_bytes());
        }
        remember_changed(b"a/B");
        assert!(!CHANGED_OVERFLOW.load(Ordering::Relaxed));
        remember_changed(b"one/TooMany");
        assert!(CHANGED_OVERFLOW.load(Ordering::Relaxed) && CHANGED.lock().unwrap().is_none());
        remember_changed(b"a/C");
        assert!(CHANGED.lock().unwrap().is_none());
    }

    #[test]
    fn internal_names_from_signatures() {
        assert_eq!(internal_name("La/b/C$D;"), Some("a/b/C$D"));
        assert_eq!(internal_name("[La/B;"), None);
    }
}
