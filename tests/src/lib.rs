//! Helpers for the end-to-end tests: build the agent and CLI once, find the installed JDKs,
//! compile the Java workloads, run them under `-agentpath:libhpm.so`, and read the outputs.
//!
//! JVM runs are serialised (one at a time): the machine has two cores and several tests
//! measure CPU shares.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard, OnceLock};

mod attachee;
pub mod backend;
pub mod browser;
pub mod collector;
pub mod measure;
pub use attachee::{attach_ok, hpm, usage_error, Attachee};

pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ has a parent").to_path_buf()
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| workspace_root().join("target"))
}

/// Builds libhpm.so and hpm (release: the tests measure shares under realistic costs) once per
/// test process and returns the directory holding both; `HPM_TEST_BUILD=DIR` uses DIR instead.
pub fn built() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        // Another build's directory (an older commit's, to see a test fail there), used as is.
        if let Some(dir) = std::env::var_os("HPM_TEST_BUILD") {
            return PathBuf::from(dir);
        }
        let status = Command::new(env!("CARGO"))
            .args(["build", "--release", "-p", "hpm-agent", "-p", "hpm-cli"])
            .current_dir(workspace_root())
            .status()
            .expect("run cargo build");
        assert!(status.success(), "cargo build of the agent failed");
        let release = target_dir().join("release");
        phases_jar_beside(&release);
        release
    })
}

/// Newest modification time of the files under `dir` (and `dir` itself).
fn newest(dir: &Path) -> std::time::SystemTime {
    let mut t = std::fs::metadata(dir).and_then(|m| m.modified()).unwrap_or(std::time::UNIX_EPOCH);
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            let m = if p.is_dir() { newest(&p) } else { e.metadata().and_then(|m| m.modified()).unwrap_or(t) };
            t = t.max(m);
        }
    }
    t
}

/// hpm-phases.jar beside the agent in `dir`, where `phases=` finds it: built with
/// scripts/phases-jar.sh when missing or older than java/phases' sources.
fn phases_jar_beside(dir: &Path) {
    let jar = dir.join("hpm-phases.jar");
    let sources = workspace_root().join("java/phases");
    let fresh = std::fs::metadata(&jar)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t >= newest(&sources.join("src")).max(newest(&sources.join("pom.xml"))));
    if !fresh {
        let status = Command::new("bash")
            .arg(workspace_root().join("scripts/phases-jar.sh"))
            .arg(dir)
            .status()
            .expect("run scripts/phases-jar.sh");
        assert!(status.success(), "scripts/phases-jar.sh failed: phases= needs hpm-phases.jar");
    }
}

pub fn agent_path() -> PathBuf {
    built().join("libhpm.so")
}

pub fn hpm_bin() -> PathBuf {
    built().join("hpm")
}

/// A JDK to test on.
#[derive(Clone, Debug)]
pub struct Jdk {
    pub name: String,
    pub home: PathBuf,
}

impl Jdk {
    pub fn java(&self) -> PathBuf {
        self.home.join("bin/java")
    }
    pub fn tool(&self, name: &str) -> PathBuf {
        self.home.join("bin").join(name)
    }
}

/// JDK 17 (the default `java`) and every other JDK under /usr/lib/jvm (Temurin). Set
/// `HPM_TEST_JDKS=/path/a:/path/b` to choose. Prints what it found, so a missing JDK is seen.
pub fn jdks() -> Vec<Jdk> {
    static JDKS: OnceLock<Vec<Jdk>> = OnceLock::new();
    JDKS.get_or_init(|| {
        let homes: Vec<PathBuf> = match std::env::var("HPM_TEST_JDKS") {
            Ok(v) => v.split(':').filter(|s| !s.is_empty()).map(PathBuf::from).collect(),
            Err(_) => {
                let mut v = vec![PathBuf::from("/usr/lib/jvm/java-17-openjdk-amd64")];
                if let Ok(rd) = std::fs::read_dir("/usr/lib/jvm") {
                    let mut others: Vec<PathBuf> = rd
                        .filter_map(|e| e.ok().map(|e| e.path()))
                        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("temurin")))
                        .filter(|p| p.join("bin/java").is_file())
                        .collect();
                    others.sort();
                    v.extend(others);
                }
                v
            }
        };
        let jdks: Vec<Jdk> = homes
            .into_iter()
            .filter(|h| {
                let ok = h.join("bin/java").is_file();
                if !ok {
                    eprintln!("test JDK {} has no bin/java: not tested", h.display());
                }
                ok
            })
            .map(|home| Jdk { name: home.file_name().unwrap().to_string_lossy().into_owned(), home })
            .collect();
        assert!(!jdks.is_empty(), "no JDK found to test on");
        eprintln!("testing on JDKs: {}", jdks.iter().map(|j| j.name.as_str()).collect::<Vec<_>>().join(", "));
        if jdks.len() < 2 {
            eprintln!("only one JDK found: the second JDK (Temurin) is not tested");
        }
        jdks
    })
    .clone()
}

/// The workloads in tests/workloads, compiled for Java 17 into a directory shared by the tests.
pub fn workloads() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let out = target_dir().join("test-workloads");
        std::fs::create_dir_all(&out).unwrap();
        // The workloads, and the Java bridge's classes (the stress and soak workloads drive
        // sessions through it).
        let dirs = [
            workspace_root().join("tests/workloads"),
            workspace_root().join("java/bridge/src/main/java/io/github/hpm"),
        ];
        let files: Vec<PathBuf> = dirs
            .iter()
            .flat_map(|d| std::fs::read_dir(d).unwrap())
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "java"))
            .collect();
        let javac = jdks()[0].tool("javac");
        let status =
            Command::new(javac).args(["--release", "17", "-d"]).arg(&out).args(&files).status().expect("run javac");
        assert!(status.success(), "javac of the workloads failed");
        out
    })
}

/// tests/native/NAME.c built into `libNAME.so` (under the target directory, shared by the tests)
/// with `cc -O2 -fomit-frame-pointer -shared -fPIC` and the first JDK's JNI headers: no frame
/// pointers, so only DWARF CFI finds its functions' callers. Rebuilt when older than its
/// source; one build at a time, written under a temporary name and renamed into place.
pub fn native_lib(name: &str) -> PathBuf {
    static BUILDING: Mutex<()> = Mutex::new(());
    let _one = BUILDING.lock().unwrap_or_else(|p| p.into_inner());
    let source = workspace_root().join("tests/native").join(format!("{name}.c"));
    let dir = target_dir().join("test-native");
    let lib = dir.join(format!("lib{name}.so"));
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let fresh = matches!((modified(&lib), modified(&source)), (Some(l), Some(s)) if l >= s);
    if !fresh {
        std::fs::create_dir_all(&dir).unwrap();
        let include = jdks()[0].home.join("include");
        let part = dir.join(format!("lib{name}.so.part"));
        let status = Command::new("cc")
            .args(["-O2", "-fomit-frame-pointer", "-shared", "-fPIC"])
            .arg("-I")
            .arg(&include)
            .arg("-I")
            .arg(include.join("linux"))
            .arg("-o")
            .arg(&part)
            .arg(&source)
            .status()
            .expect("run cc (install a C compiler: apt-get install gcc)");
        assert!(status.success(), "cc of {} failed", source.display());
        std::fs::rename(&part, &lib).unwrap();
    }
    lib
}

/// A fresh scratch directory for one test.
/// The patched JDK of jvm-patches/ (`HPM_SPS_JDK`, else build.sh's default location), or None
/// with the reason printed.
pub fn patched_jdk() -> Option<Jdk> {
    let home = std::env::var_os("HPM_SPS_JDK")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/hpm/jdk-sps-latest"));
    if home.join("bin/java").is_file() {
        Some(Jdk { name: "patched-17-sps".into(), home })
    } else {
        eprintln!(
            "NOT RUN on the patched JDK: {} has no bin/java; build it with `bash jvm-patches/build.sh` (CI does) or set HPM_SPS_JDK",
            home.display()
        );
        None
    }
}

/// The async-profiler release the coexistence tests run beside hpm (Maven Central
/// `tools.profiler:async-profiler`, a jar holding the library for each platform).
pub const ASYNC_PROFILER_VERSION: &str = "4.6";

/// async-profiler's library ([`ASYNC_PROFILER_VERSION`]), unpacked under the target directory
/// from its jar: the jar in the local Maven repository, fetched there with `mvn dependency:get`
/// when missing (scripts/test.sh fetches it before the tests, and fails the run if it cannot),
/// or `HPM_ASYNC_PROFILER_JAR`. None, with NOT RUN and the reason printed, if it cannot be had.
pub fn async_profiler() -> Option<PathBuf> {
    static LIB: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let lib = LIB.get_or_init(|| {
        let v = ASYNC_PROFILER_VERSION;
        let jar = match std::env::var_os("HPM_ASYNC_PROFILER_JAR") {
            Some(j) => PathBuf::from(j),
            None => {
                let home = std::env::var_os("HOME").map(PathBuf::from).ok_or("HOME is not set")?;
                let jar = home.join(format!(".m2/repository/tools/profiler/async-profiler/{v}/async-profiler-{v}.jar"));
                if !jar.is_file() {
                    let out = Command::new("mvn")
                        .args(["-q", "dependency:get", &format!("-Dartifact=tools.profiler:async-profiler:{v}")])
                        .output()
                        .map_err(|e| format!("cannot run mvn ({e}); scripts/setup.sh installs it"))?;
                    if !out.status.success() || !jar.is_file() {
                        let said = String::from_utf8_lossy(&out.stdout);
                        return Err(format!(
                            "mvn dependency:get could not fetch it: {}",
                            said.trim().lines().last().unwrap_or("")
                        ));
                    }
                }
                jar
            }
        };
        if !jar.is_file() {
            return Err(format!("{} is not a file", jar.display()));
        }
        let platform = if cfg!(target_arch = "aarch64") { "linux-arm64" } else { "linux-x64" };
        let member = format!("{platform}/libasyncProfiler.so");
        let dir = target_dir().join(format!("async-profiler-{v}"));
        let lib = dir.join(&member);
        if !lib.is_file() {
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            // The JDK's own jar tool: no unzip needed.
            let ok = Command::new(jdks()[0].tool("jar"))
                .arg("xf")
                .arg(&jar)
                .arg(&member)
                .current_dir(&dir)
                .status()
                .is_ok_and(|s| s.success());
            if !ok || !lib.is_file() {
                return Err(format!("{} holds no {member}", jar.display()));
            }
        }
        Ok(lib)
    });
    match lib {
        Ok(lib) => Some(lib.clone()),
        Err(e) => {
            eprintln!("NOT RUN with async-profiler {ASYNC_PROFILER_VERSION}: {e}");
            None
        }
    }
}

pub fn scratch(name: &str) -> PathBuf {
    let d = target_dir().join("test-scratch").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// [`scratch`] for the tests of one binary that share a directory: emptied at its first use in
/// the process only.
pub fn shared_scratch(name: &str) -> PathBuf {
    static EMPTIED: Mutex<Vec<String>> = Mutex::new(Vec::new());
    // Held while the directory is made: no test gets its path before it exists.
    let mut emptied = EMPTIED.lock().unwrap_or_else(|p| p.into_inner());
    if emptied.iter().any(|n| n == name) {
        return target_dir().join("test-scratch").join(name);
    }
    emptied.push(name.to_string());
    scratch(name)
}

/// Held while a JVM runs (one at a time, see the module's doc): for a test that drives a JVM
/// itself.
pub fn jvm_lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// Result of one JVM run.
pub struct Run {
    pub status: std::process::ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    fn from(o: Output) -> Run {
        Run {
            status: o.status,
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }

    pub fn assert_ok(&self, what: &str) -> &Run {
        assert!(
            self.status.success(),
            "{what} failed: {}\nstdout:\n{}\nstderr:\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
        self
    }
}

/// The one-line error of an `hpm` command that must fail with status 2 (a usage or input error).
pub fn hpm_fails(args: &[&str]) -> String {
    let out = Command::new(hpm_bin()).args(args).output().expect("run hpm");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "hpm {args:?} should fail with status 2; stderr: {err}");
    assert_eq!(err.lines().count(), 1, "one line expected: {err}");
    assert!(err.starts_with("hpm: "), "{err}");
    err
}

/// Runs a prepared command (a JVM started another way, e.g. as another user), one JVM at a time.
pub fn run_command(mut cmd: Command) -> Run {
    let _guard = jvm_lock();
    Run::from(cmd.output().unwrap_or_else(|e| panic!("run {:?}: {e}", cmd.get_program())))
}

/// Whether the tests run as root (some run a JVM as another user, or need privileges).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Runs `java [jvm_args] -agentpath:libhpm.so=OPTIONS -cp workloads MAIN args`; `options`
/// `None` runs without the agent.
pub fn run_java(jdk: &Jdk, options: Option<&str>, jvm_args: &[&str], main: &str, args: &[&str]) -> Run {
    run_java_env(jdk, options, jvm_args, main, args, &[])
}

pub fn run_java_env(
    jdk: &Jdk,
    options: Option<&str>,
    jvm_args: &[&str],
    main: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Run {
    let mut cmd = Command::new(jdk.java());
    cmd.args(jvm_args);
    if let Some(o) = options {
        cmd.arg(format!("-agentpath:{}={o}", agent_path().display()));
    }
    cmd.arg("-cp").arg(workloads()).arg(main).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let _guard = jvm_lock();
    Run::from(cmd.output().expect("run java"))
}

/// Collapsed stacks: root-first frame lists with counts.
pub fn read_collapsed(path: &Path) -> Vec<(Vec<String>, u64)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (stack, n) = l.rsplit_once(' ').expect("collapsed line has a count");
            (stack.split(';').map(str::to_string).collect(), n.parse().expect("count"))
        })
        .collect()
}

/// Samples whose stack contains `frame`, and how many of those also contain each of `names`:
/// the "total" share of each name among samples under `frame`.
/// The known shares of `Shares.a`, `b` and `c` (tests/workloads/Shares.java, also run by
/// Attachee): 50%, 30% and 20% of the samples under `under`.
pub const KNOWN_SHARES: [(&str, f64); 3] = [("Shares.a", 50.0), ("Shares.b", 30.0), ("Shares.c", 20.0)];

/// How far a share measured over `n` samples may lie from its truth `p` (both in percent):
/// `systematic` points (what the sampling itself may add: skid, a loop's own frames) plus four
/// binomial standard deviations of `p` over `n`, so the tolerance follows from the samples a
/// run got. A busy machine that leaves a run fewer samples widens it; it cannot turn a right
/// profile red. (Four deviations: about one comparison in 16,000 strays past them by chance.)
pub fn share_tolerance(p: f64, n: u64, systematic: f64) -> f64 {
    let q = (p / 100.0).clamp(0.0, 1.0);
    systematic + 4.0 * 100.0 * (q * (1.0 - q) / n.max(1) as f64).sqrt()
}

/// Asserts that at least `min_samples` samples lie under `under` and that each known share is
/// within `points` of the truth plus what its sample count allows ([`share_tolerance`]);
/// `what` names the run in messages. Returns the sample count.
pub fn assert_known_shares(
    stacks: &[(Vec<String>, u64)],
    under: &str,
    min_samples: u64,
    points: f64,
    what: &str,
) -> u64 {
    let names: Vec<&str> = KNOWN_SHARES.iter().map(|t| t.0).collect();
    let (n, shares) = total_shares(stacks, under, &names);
    eprintln!("{what}: {n} samples under {under}, shares {shares:?}");
    assert!(n >= min_samples, "{what}: only {n} samples under {under}");
    for (name, truth) in KNOWN_SHARES {
        let got = shares[name];
        let within = share_tolerance(truth, n, points);
        assert!(
            (got - truth).abs() <= within,
            "{what}: {name} has {got:.1}% of {n} samples, truth {truth}% (within {within:.1} points)"
        );
    }
    n
}

/// Samples under `under` that are in one of `names`, and each name's percentage of them.
pub fn total_shares(stacks: &[(Vec<String>, u64)], under: &str, names: &[&str]) -> (u64, HashMap<String, f64>) {
    let mut base = 0u64;
    let mut counts: HashMap<String, u64> = HashMap::new();
    for (frames, n) in stacks {
        // Shares among the named methods (as the benchmark suite computes them): samples in
        // `under`'s own code (its loop, the random choice, the deadline check) count for none.
        if !frames.iter().any(|f| f == under) || !names.iter().any(|name| frames.iter().any(|f| f == name)) {
            continue;
        }
        base += n;
        for name in names {
            if frames.iter().any(|f| f == name) {
                *counts.entry(name.to_string()).or_default() += n;
            }
        }
    }
    let shares = names
        .iter()
        .map(|n| (n.to_string(), 100.0 * *counts.get(*n).unwrap_or(&0) as f64 / base.max(1) as f64))
        .collect();
    (base, shares)
}

/// Total samples in a collapsed profile.
pub fn total(stacks: &[(Vec<String>, u64)]) -> u64 {
    stacks.iter().map(|(_, n)| n).sum()
}

/// Reads a JFR file with the JDK's own RecordingFile API (tests/java/CheckJfr.java, focused on
/// `class`): its `name value` lines (event counts, frame types, lines...) as a map.
pub fn check_jfr(jdk: &Jdk, jfr: &Path, class: &str) -> HashMap<String, u64> {
    let checker = workspace_root().join("tests/java/CheckJfr.java");
    let out = Command::new(jdk.java()).arg(&checker).arg(jfr).arg(class).output().expect("run CheckJfr");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}: RecordingFile failed: {}", jdk.name, String::from_utf8_lossy(&out.stderr));
    stdout
        .lines()
        .filter_map(|l| {
            let (k, v) = l.rsplit_once(' ')?;
            Some((k.to_string(), v.parse().unwrap_or(1)))
        })
        .collect()
}

/// `hpm compare A B`'s figures by name ("overlap", "method overlap", "hot-edge coverage", ...,
/// percentages as numbers); panics with hpm's message if it fails.
pub fn hpm_compare(a: &Path, b: &Path) -> HashMap<String, f64> {
    hpm_compare_with(a, b, &[])
}

/// [`hpm_compare`] with more options (`--threshold T`, ...).
pub fn hpm_compare_with(a: &Path, b: &Path, options: &[&str]) -> HashMap<String, f64> {
    let out = Command::new(hpm_bin()).arg("compare").args(options).arg(a).arg(b).output().unwrap();
    assert!(out.status.success(), "hpm compare failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (key, value) = l.split_once(':')?;
            Some((key.trim().to_string(), value.trim().trim_end_matches('%').parse().ok()?))
        })
        .collect()
}

/// A collapsed profile of `subs` x `chains` stacks, each `depth` frames below its subsystem,
/// every frame name distinct: 1 + subs x (1 + chains x depth) frames. Chain `c` of subsystem `s` has
/// `1 + c % 3` samples. The flame graph page's test and benchmark (tests/tests/flame_browser.rs,
/// bench-flame) open it as a page of many frames.
pub fn wide_collapsed(subs: usize, chains: usize, depth: usize) -> String {
    let mut out = String::new();
    for s in 0..subs {
        for c in 0..chains {
            out.push_str(&format!("sub{s}"));
            for d in 0..depth {
                out.push_str(&format!(";s{s}.c{c}.f{d}"));
            }
            out.push_str(&format!(" {}\n", 1 + c % 3));
        }
    }
    out
}
