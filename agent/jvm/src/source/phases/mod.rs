//! `phases=TRACE`: method-level phases (Georges et al.), measured in the running JVM. The
//! application's methods are instrumented from the class file hook ([`hook`]) by the Java
//! rewriter in hpm-phases.jar: by the size heuristic (more than 50 bytes of bytecode, or a backward
//! branch), or exactly the methods of a phase file (`select=`). Each probe calls a native of
//! the recorder ([`recorder`]), which reads the thread's counters and writes the trace.
//!
//! The source runs beside the session's CPU source and brings no samples of its own. At start:
//! the recorder started, the rewriter found (its jar on the bootstrap search path), `Probe`'s
//! natives registered, the rewriter configured, the hook on, the classes loaded before
//! retransformed (at VMInit a few, after a late attach all of the application's), and last
//! `Probe.on` set. At stop the same undone: `Probe.on` cleared first, so no probe records
//! while the recorder stops; the hook off; then the classes the hook changed retransformed
//! once more, which with the hook off gives them their original code back: a stopped session
//! leaves no probe in the JVM (frames running at that moment finish in the instrumented code,
//! their probes switched off).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::code::CodeEvents;
use crate::jnienv::Vm;
use crate::jvmti::{cap, Jvmti};
use crate::options::{self, Options, PhasesOptions};
use crate::stack_source::StackSite;

use super::{EventSource, Planned, SourceDef, SourceTraits, Start};

pub mod hook;
mod probe;
mod recorder;
mod trust;
mod vmthreads;
mod writer;

use hook::{JavaSide, Retransformed};
use recorder::{Recorder, RecorderConfig};

/// The capabilities the source needs: the hook for every class, and retransformation. Added
/// when a session asks for phases (at load, and after a late attach: HotSpot grants both in
/// the live phase); a JVM holding them keeps class files for retransformation, so not before.
pub const CAPABILITIES: [u32; 2] = [cap::GENERATE_ALL_CLASS_HOOK_EVENTS, cap::RETRANSFORM_CLASSES];

/// Frames a thread looked at for old method versions after a retransformation.
const RUNNING_FRAMES: i32 = 4096;

/// Largest phase file read (its methods are bounded by the format too).
pub const MAX_PHASE_FILE_BYTES: u64 = 16 << 20;

/// Beside the CPU source, when `phases=` is given. It brings no samples, so it leaves the
/// processor's rounds to the other sources.
pub const SOURCE: SourceDef = SourceDef {
    traits: |opts| {
        opts.phases.as_ref().map(|_| SourceTraits { stretch_rounds: true, ..SourceTraits::plain(StackSite::InThread) })
    },
    plan,
};

/// What a phases session is built with, checked at plan time.
#[derive(Debug, PartialEq, Eq)]
struct Setup {
    jar: String,
    /// `select=`'s methods; `None`: the size heuristic.
    selected: Option<Vec<String>>,
    trace: PathBuf,
    max_bytes: u64,
}

fn plan(opts: &Options, jvmti: &Jvmti) -> Result<Planned, String> {
    let p = opts.phases.as_ref().ok_or("phases: no phases= given")?;
    let default_dir = crate::os::loaded_object(plan as fn(&Options, &Jvmti) -> Result<Planned, String> as usize as u64)
        .and_then(|(path, _)| Path::new(&path).parent().map(Path::to_path_buf));
    let start_secs = crate::os::now_wall_ns() / 1_000_000_000;
    let setup = check(p, default_dir.as_deref(), std::process::id(), start_secs, read_limited)?;
    let outputs: Vec<String> = opts.outputs().iter().map(|f| f.path(std::process::id(), start_secs)).collect();
    if let Some(clash) = outputs.iter().find(|o| Path::new(o) == setup.trace) {
        return Err(format!("phases={clash} is also file={clash}; give the trace its own name"));
    }
    jvmti.add_capabilities(&CAPABILITIES).map_err(|e| {
        format!("phases: {e}: this JVM does not grant the class file hook with retransformation; use HotSpot (JDK 17+)")
    })?;
    let notes = vec![match &setup.selected {
        None => {
            "phases: application methods over 50 bytes of bytecode or with a loop instrumented (step 1)".to_string()
        }
        Some(m) => format!(
            "phases: the {} methods of select={} instrumented (step 3)",
            m.len(),
            p.select.as_deref().unwrap_or("")
        ),
    }];
    let quiet = opts.quiet;
    let build = move |s: &Start| {
        Ok(Arc::new(PhasesSource { jvmti: s.jvmti, vm: s.vm, code: s.code, quiet, setup, running: Mutex::new(None) })
            as Arc<dyn EventSource>)
    };
    Ok(Planned { event: None, notes, build: Box::new(build) })
}

/// Checks the options against the files: the jar exists (given, or [`options::PHASES_JAR_NAME`]
/// in `default_dir`, libhpm.so's) and is one to trust ([`trust::check_jar`]), the phase file reads (through `read`), the trace's directory
/// exists. The trace's `%p` and `%t` are expanded. Errors are one line saying what to do.
fn check(
    p: &PhasesOptions,
    default_dir: Option<&Path>,
    pid: u32,
    start_secs: u64,
    read: impl Fn(&Path) -> std::io::Result<String>,
) -> Result<Setup, String> {
    let jar = match (&p.jar, default_dir) {
        (Some(j), _) => PathBuf::from(j),
        (None, Some(dir)) => dir.join(options::PHASES_JAR_NAME),
        (None, None) => {
            return Err(
                "phases: cannot tell where libhpm.so is to find hpm-phases.jar beside it; give phasesjar=FILE".into()
            )
        }
    };
    if !jar.is_file() {
        return Err(format!(
            "phases: the rewriter {} does not exist: build it with scripts/phases-jar.sh, or give phasesjar=FILE",
            jar.display()
        ));
    }
    let jar = trust::check_jar(&jar, hpm_profile::outfile::euid())?;
    let selected = match &p.select {
        None => None,
        Some(f) => {
            let text = read(Path::new(f)).map_err(|e| {
                format!("select={f}: cannot read it ({e}); write a phase file with `hpm phases TRACE --out FILE`")
            })?;
            let methods =
                hpm_profile::analysis::phases_format::parse_phase_file(&text).map_err(|(line, e)| match line {
                    0 => format!("select={f}: {e}"),
                    n => format!("select={f}: line {n}: {e}"),
                })?;
            Some(methods)
        }
    };
    let trace =
        PathBuf::from(p.trace.replace("%p", &pid.to_string()).replace("%t", &options::format_timestamp(start_secs)));
    let dir = trace.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(format!(
            "phases={}: the directory {} does not exist; create it or write elsewhere",
            p.trace,
            dir.display()
        ));
    }
    Ok(Setup { jar: jar.to_string_lossy().into_owned(), selected, trace, max_bytes: p.max_bytes })
}

/// A regular file's text (a named pipe would hang the JVM's start), refused past
/// [`MAX_PHASE_FILE_BYTES`].
fn read_limited(path: &Path) -> std::io::Result<String> {
    let mut text = String::new();
    let (file, _) = hpm_profile::infile::open_regular(path)?;
    file.take(MAX_PHASE_FILE_BYTES + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_PHASE_FILE_BYTES {
        return Err(std::io::Error::other(format!("longer than {} MiB", MAX_PHASE_FILE_BYTES >> 20)));
    }
    Ok(text)
}

/// The phases of one session.
struct PhasesSource {
    jvmti: Jvmti,
    vm: Vm,
    code: &'static CodeEvents,
    quiet: bool,
    setup: Setup,
    running: Mutex<Option<Running>>,
}

/// What a started session holds until it stops.
struct Running {
    recorder: Arc<Recorder>,
    java: &'static JavaSide,
    retransformed: Retransformed,
}

impl PhasesSource {
    fn say(&self, lines: &[String]) {
        if !self.quiet {
            for l in lines {
                eprintln!("hpm: {l}");
            }
        }
    }

    /// A retransformed class's methods are new `Method`s: their ids are given again, so the
    /// stack walker names them from the next round.
    fn name_methods(&self, c: jni::sys::jclass) {
        if let Ok(ids) = self.jvmti.touch_class_methods(c) {
            self.code.add_method_ids(&ids);
        }
    }

    /// After a retransformation, names the methods' old versions still running. Frames that
    /// were running a method when its class was retransformed go on in that version: an
    /// obsolete `Method` no jmethodID pointed to, which the stack walker could not name (its
    /// frames were left out). HotSpot gives an obsolete method an id of its own when a stack
    /// trace reaches it, so one look at every thread's stack (a safepoint; at most
    /// [`RUNNING_FRAMES`] frames a thread) gets those ids. Best effort: a failure names less.
    fn name_running_old_versions(&self, jni: *mut jni::sys::JNIEnv) {
        let Ok(threads) = self.jvmti.all_threads() else { return };
        if let Ok(stacks) = self.jvmti.thread_list_stack_traces(&threads, RUNNING_FRAMES) {
            let mut ids: Vec<u64> = stacks.iter().flat_map(|(_, _, frames)| frames.iter().map(|f| f.0)).collect();
            ids.sort_unstable();
            ids.dedup();
            let old: Vec<jni::sys::jmethodID> = ids
                .into_iter()
                .map(|m| m as jni::sys::jmethodID)
                .filter(|&m| self.jvmti.is_method_obsolete(m).unwrap_or(false))
                .collect();
            self.code.add_method_ids(&old);
        }
        for t in threads {
            crate::jnienv::delete_local_ref(jni, t);
        }
    }

    /// The steps of [`EventSource::start`] after the recorder started; on failure the caller
    /// undoes them.
    fn hook_on(&self, jni: *mut jni::sys::JNIEnv, java: &JavaSide) -> Result<Retransformed, String> {
        java.register_natives(jni, &Recorder::natives())?;
        java.configure(jni, self.setup.selected.as_deref())?;
        let modules = hook::let_modules_read_probes(&self.jvmti, jni, java)?;
        if modules > 0 {
            self.say(&[format!("phases: {modules} application modules made to read the probes' module")]);
        }
        hook::enable(&self.jvmti)?;
        let retransformed =
            hook::retransform_loaded(&self.jvmti, jni, self.setup.selected.as_deref(), |c| self.name_methods(c))?;
        self.name_running_old_versions(jni);
        java.set_on(jni, true)?;
        Ok(retransformed)
    }
}

impl EventSource for PhasesSource {
    fn start(&self) -> Result<(), String> {
        let jni = self.vm.env().ok_or("phases: the calling thread is not attached to the JVM")?;
        // The jar first: a missing rewriter creates no trace.
        let (java, note) = JavaSide::load(&self.jvmti, jni, &self.setup.jar)?;
        self.say(&note.into_iter().collect::<Vec<_>>());
        let cfg = RecorderConfig { path: self.setup.trace.clone(), max_bytes: self.setup.max_bytes };
        let (recorder, notes) = Recorder::start(cfg)?;
        recorder.set_jvmti(self.jvmti);
        self.say(&notes);
        match self.hook_on(jni, java) {
            Ok(retransformed) => {
                *self.running.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some(Running { recorder, java, retransformed });
                Ok(())
            }
            Err(e) => {
                let _ = java.set_on(jni, false);
                hook::disable(&self.jvmti);
                recorder.abandon();
                Err(e)
            }
        }
    }

    fn stop(&self) -> Vec<String> {
        let Some(r) = self.running.lock().unwrap_or_else(|p| p.into_inner()).take() else { return Vec::new() };
        let jni = self.vm.env();
        if let Some(jni) = jni {
            // Before the recorder stops: no probe records from here on.
            if let Err(e) = r.java.set_on(jni, false) {
                eprintln!("hpm: {e}");
            }
        }
        hook::disable(&self.jvmti);
        let restored = match jni {
            Some(jni) => {
                let r = hook::restore_changed(&self.jvmti, jni, |c| self.name_methods(c));
                self.name_running_old_versions(jni);
                r
            }
            None => Err("phases: the stopping thread is not attached to the JVM".into()),
        };
        let mut lines = r.recorder.stop();
        lines.push(hook::counts_line());
        lines.push(r.retransformed.line());
        lines.push(match restored {
            Ok(restored) => restored.restored_line(),
            Err(e) => format!("{e}: the instrumented classes keep their probes, switched off"),
        });
        if let Some(stats) = jni.and_then(|jni| r.java.stats(jni).ok()) {
            lines.push(rewriter_line(stats));
        }
        lines
    }
}

/// The summary's line on `Transformer.stats()`.
fn rewriter_line([seen, classes, methods, skipped, failed]: [i64; 5]) -> String {
    format!(
        "phases: the rewriter saw {seen} classes: {classes} instrumented ({methods} methods), {skipped} skipped \
         (excluded package, named module or class file version), {failed} failed"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(text: &str) -> PhasesOptions {
        options::parse(text).unwrap().phases.unwrap()
    }

    /// A directory with a jar in it, removed at the end.
    struct Dir(PathBuf);

    impl Dir {
        fn new(name: &str) -> Dir {
            let d = std::env::temp_dir().join(format!("hpm-phases-{name}-{}", std::process::id()));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("hpm-phases.jar"), b"PK").unwrap();
            Dir(d)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn no_file(_: &Path) -> std::io::Result<String> {
        Err(std::io::Error::from(std::io::ErrorKind::NotFound))
    }

    #[test]
    fn the_jar_is_found_beside_the_library_or_where_given() {
        let d = Dir::new("jar");
        let s = check(&opts("phases=t-%p.hpmtrace"), Some(&d.0), 42, 0, no_file).unwrap();
        assert_eq!(s.jar, d.0.join("hpm-phases.jar").to_string_lossy());
        assert_eq!((s.trace, s.selected, s.max_bytes), (PathBuf::from("t-42.hpmtrace"), None, 2 << 30));
        let given = d.0.join("hpm-phases.jar");
        let s = check(&opts(&format!("phases=t.hpmtrace,phasesjar={}", given.display())), None, 1, 0, no_file);
        assert_eq!(s.unwrap().jar, given.to_string_lossy());
        let e =
            check(&opts("phases=t.hpmtrace,phasesjar=/nonexistent/hpm-phases.jar"), None, 1, 0, no_file).unwrap_err();
        assert!(e.contains("/nonexistent/hpm-phases.jar does not exist") && e.contains("scripts/phases-jar.sh"), "{e}");
        let e = check(&opts("phases=t.hpmtrace"), None, 1, 0, no_file).unwrap_err();
        assert!(e.contains("give phasesjar=FILE"), "{e}");
    }

    #[test]
    fn the_phase_file_is_read_and_its_errors_name_the_line() {
        let d = Dir::new("select");
        let read = |_: &Path| Ok("# by hpm phases\nThreePhases.cpuPhase(I)J\nThreePhases.faultPhase(I)J\n".to_string());
        let s = check(&opts("phases=t.hpmtrace,select=p.txt"), Some(&d.0), 1, 0, read).unwrap();
        assert_eq!(s.selected.unwrap(), ["ThreePhases.cpuPhase(I)J", "ThreePhases.faultPhase(I)J"]);
        let bad = |_: &Path| Ok("A.b(I)V\nnot a method\n".to_string());
        let e = check(&opts("phases=t.hpmtrace,select=p.txt"), Some(&d.0), 1, 0, bad).unwrap_err();
        assert!(e.starts_with("select=p.txt: line 2: ") && !e.contains('\n'), "{e}");
        let empty = |_: &Path| Ok("# nothing\n".to_string());
        let e = check(&opts("phases=t.hpmtrace,select=p.txt"), Some(&d.0), 1, 0, empty).unwrap_err();
        assert!(e.starts_with("select=p.txt: the phase file selects no method"), "{e}");
        let e = check(&opts("phases=t.hpmtrace,select=p.txt"), Some(&d.0), 1, 0, no_file).unwrap_err();
        assert!(e.contains("cannot read it") && e.contains("hpm phases TRACE --out FILE"), "{e}");
    }

    #[test]
    fn the_trace_needs_an_existing_directory() {
        let d = Dir::new("trace");
        let e = check(&opts("phases=/nonexistent/dir/t.hpmtrace"), Some(&d.0), 1, 0, no_file).unwrap_err();
        assert!(e.contains("the directory /nonexistent/dir does not exist"), "{e}");
        let inside = format!("phases={}/t.hpmtrace", d.0.display());
        assert!(check(&opts(&inside), Some(&d.0), 1, 0, no_file).is_ok());
    }

    #[test]
    fn a_long_phase_file_is_refused() {
        let d = Dir::new("long");
        let path = d.0.join("p.txt");
        std::fs::write(&path, vec![b'#'; MAX_PHASE_FILE_BYTES as usize + 1]).unwrap();
        let e = read_limited(&path).unwrap_err().to_string();
        assert!(e.contains("longer than 16 MiB"), "{e}");
        std::fs::write(&path, b"A.b()V\n").unwrap();
        assert_eq!(read_limited(&path).unwrap(), "A.b()V\n");
    }

    #[test]
    fn a_named_pipe_is_refused_not_waited_on() {
        let d = Dir::new("fifo");
        let path = d.0.join("p.fifo");
        let status = std::process::Command::new("mkfifo").arg(&path).status().unwrap();
        assert!(status.success());
        let e = read_limited(&path).unwrap_err().to_string();
        assert!(e.contains("a named pipe"), "{e}");
    }

    #[test]
    fn phases_leaves_the_rounds_to_the_cpu_source() {
        let o = options::parse("phases=t.hpmtrace").unwrap();
        let t = (SOURCE.traits)(&o).unwrap();
        assert!(t.stretch_rounds && !t.data_addresses && !t.code_at_load && t.threads_per_tick.is_none());
        assert!((SOURCE.traits)(&options::parse("").unwrap()).is_none());
    }

    #[test]
    fn the_rewriters_counts_in_order() {
        assert_eq!(
            rewriter_line([10, 3, 7, 5, 1]),
            "phases: the rewriter saw 10 classes: 3 instrumented (7 methods), 5 skipped (excluded package, named \
             module or class file version), 1 failed"
        );
    }
}
