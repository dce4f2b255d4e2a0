//! The Java bridge: the natives of `io.github.hpm.Native` (java/bridge), which back the public
//! `io.github.hpm.Hpm` API — control (through [`crate::control::execute`], the contract shared
//! with `hpm attach`), counters of the calling thread, regions and phase markers written as
//! `hpm.Region` / `hpm.Phase` JFR events, and queries on the live profile.
//!
//! Every native catches unwinding and turns errors into a thrown `HpmException` whose message
//! says what to do; nothing here can take the JVM down.

mod counters;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use ::jni::sys::{
    jboolean, jclass, jint, jlong, jlongArray, jobjectArray, jstring, JNIEnv, JavaVM, JNI_FALSE, JNI_TRUE,
};
use hpm_profile::analysis::hot;
use hpm_profile::jfr::marks::Mark;
use hpm_profile::model::{ThreadIdx, ThreadInfo};

use crate::agent::{self, Agent};
use crate::jnienv as jni;

const NOT_LOADED: &str = "the hpm agent is not running in this JVM: call Hpm.load(path) or Hpm.getInstance() first, \
                          or start java with -agentpath:/path/to/libhpm.so";

/// How long a query waits for the processing thread's next round (a query wakes it).
const QUERY_TIMEOUT: Duration = Duration::from_secs(2);

/// Runs one native's body: `Err` and panics become a pending `HpmException`; the JVM then
/// ignores the returned `fallback`.
fn entry<T>(env: *mut JNIEnv, fallback: T, f: impl FnOnce() -> Result<T, String>) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(msg)) => {
            jni::throw(env, &msg);
            fallback
        }
        Err(_) => {
            jni::throw(env, "internal error in hpm's Java bridge (a bug in hpm; the profile may be incomplete)");
            fallback
        }
    }
}

fn loaded_agent() -> Result<&'static Agent, String> {
    agent::get().ok_or_else(|| NOT_LOADED.to_string())
}

/// `System.load` of libhpm.so: set the agent up in the live phase unless -agentpath (or an
/// earlier load) did. A failure is printed and leaves the library loaded without an agent, so
/// the Java side reports it as "not running" instead of failing the load.
pub fn on_jni_load(vm: *mut JavaVM) {
    match catch_unwind(|| crate::lifecycle::init_live(vm)) {
        Ok(Ok(_)) => {}
        Ok(Err(msg)) => eprintln!("hpm: {msg}"),
        Err(_) => eprintln!("hpm: internal error while starting from System.load; profiling is unavailable"),
    }
}

/// Whether a session is recording: like the JDK's own events, regions and phase markers are
/// written only while one runs (the processor also drops any older than its session).
fn recording(a: &Agent) -> bool {
    a.sessions.is_recording()
}

/// The thread index of the calling Java thread in the agent's registry. The caller runs Java
/// code, so it is a Java thread: one the session found before knowing it (the launcher's `main`
/// thread, whose OS name is the program's) takes its Java identity here.
fn this_thread(a: &Agent, java_id: jlong, name: String) -> Option<u32> {
    let tid = crate::os::gettid();
    let info = ThreadInfo { os_tid: tid as u32, java_id: Some(java_id as u64), name, is_java: true, is_virtual: false };
    let _ = a.threads.attach(tid, info.clone());
    a.threads.index_for_tid(tid).or_else(|| a.threads.index_for_java_id(java_id as u64, || info.name))
}

/// After a command: the calling thread (which started the session, say) is profiled as the
/// Java thread it is.
fn identify_caller(a: &Agent, env: *mut JNIEnv) {
    if !recording(a) {
        return;
    }
    if let Ok(t) = a.jvmti.current_thread() {
        crate::callbacks::attach_java_thread(&a.jvmti, &a.threads, a.vm, env, t);
        crate::jnienv::delete_local_ref(env, t);
    }
}

#[no_mangle]
pub extern "system" fn Java_io_github_hpm_Native_nativeLoaded(env: *mut JNIEnv, _c: jclass) -> jboolean {
    entry(env, JNI_FALSE, || Ok(if agent::get().is_some() { JNI_TRUE } else { JNI_FALSE }))
}

#[no_mangle]
pub extern "system" fn Java_io_github_hpm_Native_nativeExecute(
    env: *mut JNIEnv,
    _c: jclass,
    command: jstring,
) -> jstring {
    entry(env, std::ptr::null_mut(), || {
        let command = jni::string(env, command, "command")?;
        let a = loaded_agent()?;
        let out = crate::control::execute(&a.sessions, a.parts(), &command)?;
        identify_caller(a, env);
        jni::new_string(env, &out)
    })
}

#[no_mangle]
pub extern "system" fn Java_io_github_hpm_Native_nativeCounterNames(env: *mut JNIEnv, _c: jclass) -> jobjectArray {
    entry(env, std::ptr::null_mut(), || jni::new_string_array(env, &counters::names()))
}

#[no_mangle]
pub extern "system" fn Java_io_github_hpm_Native_nativeCountersMissing(env: *mut JNIEnv, _c: jclass) -> jobjectArray {
    entry(env, std::ptr::null_mut(), || jni::new_string_array(env, &counters::missing()))
}

#[no_mangle]
pub extern "system" fn Java_io_github_hpm_Native_nativeReadCounters(env: *mut JNIEnv, _c: jclass) -> jlongArray {
    entry(env, std::ptr::null_mut(), || jni::new_long_array(env, &counters::read()?))
}

/// A region: `start` and `end` are `nativeReadCounters` results of the calling thread.
#[no_mangle]
pub extern "system" fn Java_io_github_hpm_Native_nativeRegion(
    env: *mut JNIEnv,
    _c: jclass,
    name: jstring,
    start: jlongArray,
    end: jlongArray,
    java_id: jlong,
    thread_name: jstring,
) {
    entry(env, (), || {
        let a = loaded_agent()?;
        let name = jni::string(env, name, "region name")?;
        let start = jni::long_array(env, start, "start counters")?;
        let end = jni::long_array(env, end, "end counters")?;
        let names = counters::names();
        if start.len() != names.len() + 1 || end.len() != start.len() {
            return Err(format!(
                "region '{name}': counter readings of the wrong length (read them with Hpm.counters() on this thread)"
            ));
        }
        let tname = jni::string(env, thread_name, "thread name")?;
        if !recording(a) {
            return Ok(());
        }
        let Some(thread) = this_thread(a, java_id, tname) else { return Ok(()) };
        let counters = names
            .into_iter()
            .zip(start[1..].iter().zip(&end[1..]))
            .map(|(n, (s, e))| (n, e.wrapping_sub(*s).max(0) as u64))
            .collect();
        a.live.push(Mark::Region {
            start: start[0] as u64,
            end: (end[0] as u64).max(start[0] as u64),
            thread: ThreadIdx(thread),
            name,
            counters,
        });
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_github_hpm_Native_nativePhase(
    env: *mut JNIEnv,
    _c: jclass,
    name: jstring,
    index: jlong,
    java_id: jlong,
    thread_name: jstring,
) {
    entry(env, (), || {
        let a = loaded_agent()?;
        let name = jni::string(env, name, "phase name")?;
        let tname = jni::string(env, thread_name, "thread name")?;
        if !recording(a) {
            return Ok(());
        }
        let Some(thread) = this_thread(a, java_id, tname) else { return Ok(()) };
        a.live.push(Mark::Phase { time: crate::os::now_ticks(), thread: ThreadIdx(thread), name, index });
        Ok(())
    })
}

/// Rows `self<TAB>total<TAB>method`, hottest first.
#[no_mangle]
pub extern "system" fn Java_io_github_hpm_Native_nativeHottestMethods(
    env: *mut JNIEnv,
    _c: jclass,
    n: jint,
) -> jobjectArray {
    entry(env, std::ptr::null_mut(), || {
        let tree = loaded_agent()?.live.tree(QUERY_TIMEOUT)?;
        let rows: Vec<String> = hot::hottest_methods(&tree, n.max(0) as usize)
            .into_iter()
            .map(|m| format!("{}\t{}\t{}", m.self_samples, m.total_samples, m.name))
            .collect();
        jni::new_string_array(env, &rows)
    })
}

/// Rows `samples<TAB>callee`, hottest first.
#[no_mangle]
pub extern "system" fn Java_io_github_hpm_Native_nativeHottestCallees(
    env: *mut JNIEnv,
    _c: jclass,
    method: jstring,
    n: jint,
) -> jobjectArray {
    entry(env, std::ptr::null_mut(), || {
        let method = jni::string(env, method, "method")?;
        let tree = loaded_agent()?.live.tree(QUERY_TIMEOUT)?;
        let rows: Vec<String> = hot::hottest_callees(&tree, &method, n.max(0) as usize)
            .into_iter()
            .map(|w| format!("{}\t{}", w.samples, w.item))
            .collect();
        jni::new_string_array(env, &rows)
    })
}

/// Rows `samples<TAB>frame<TAB>frame...` (root first, ending in the caller), hottest first.
#[no_mangle]
pub extern "system" fn Java_io_github_hpm_Native_nativeCallContexts(
    env: *mut JNIEnv,
    _c: jclass,
    caller: jstring,
    callee: jstring,
    n: jint,
) -> jobjectArray {
    entry(env, std::ptr::null_mut(), || {
        let caller = jni::string(env, caller, "caller")?;
        let callee = jni::string(env, callee, "callee")?;
        let tree = loaded_agent()?.live.tree(QUERY_TIMEOUT)?;
        let rows: Vec<String> = hot::call_contexts(&tree, &caller, &callee, n.max(0) as usize)
            .into_iter()
            .map(|w| format!("{}\t{}", w.samples, w.item.join("\t")))
            .collect();
        jni::new_string_array(env, &rows)
    })
}
