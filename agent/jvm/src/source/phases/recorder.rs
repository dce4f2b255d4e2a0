//! A stand-in for the phases recorder, with its interface only: it records nothing. Its
//! natives do nothing but hand out method ids, so instrumented code runs. Replaced by the
//! recorder itself (the per-thread counter groups and buffers, the writer, the trace file).

use std::ffi::{c_void, CStr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use jni::sys::{jclass, jint, jstring, JNIEnv};

/// Where and how much the recorder writes.
pub struct RecorderConfig {
    /// The trace file.
    pub path: PathBuf,
    /// The trace stops growing at this many bytes.
    pub max_bytes: u64,
}

/// The recorder of one session.
pub struct Recorder {
    _private: (),
}

/// Method ids handed out by `register0`.
static NEXT_ID: AtomicU32 = AtomicU32::new(0);
/// Probe calls, for the summary.
static PROBES: AtomicU64 = AtomicU64::new(0);

impl Recorder {
    /// Starts recording into `cfg.path`; returns the recorder and lines for the start of the
    /// session.
    pub fn start(cfg: RecorderConfig) -> Result<(Arc<Recorder>, Vec<String>), String> {
        let note = format!(
            "phases: the recorder is a stand-in; nothing is written to {} (bound {} bytes)",
            cfg.path.display(),
            cfg.max_bytes
        );
        Ok((Arc::new(Recorder { _private: () }), vec![note]))
    }

    /// `Probe`'s natives: (name, JNI signature, function), for RegisterNatives.
    pub fn natives() -> Vec<(&'static CStr, &'static CStr, *mut c_void)> {
        vec![
            (c"enter0", c"(I)V", probe as *mut c_void),
            (c"exit0", c"(I)V", probe as *mut c_void),
            (c"thrown0", c"(I)V", probe as *mut c_void),
            (c"register0", c"(Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;)I", register as *mut c_void),
        ]
    }

    /// Stops recording; returns lines for the summary.
    pub fn stop(&self) -> Vec<String> {
        let (probes, methods) = (PROBES.swap(0, Ordering::Relaxed), NEXT_ID.load(Ordering::Relaxed));
        vec![format!("phases: the stand-in recorder saw {probes} probe calls of {methods} methods registered")]
    }
}

extern "system" fn probe(_env: *mut JNIEnv, _class: jclass, _id: jint) {
    PROBES.fetch_add(1, Ordering::Relaxed);
}

extern "system" fn register(_env: *mut JNIEnv, _class: jclass, _c: jstring, _m: jstring, _d: jstring) -> jint {
    NEXT_ID.fetch_add(1, Ordering::Relaxed) as jint
}
