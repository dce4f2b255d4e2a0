//! The patched JVM's extension functions (jvm-patches/hpm_sps.h): found by id among the JVMTI
//! extension functions and checked against the interface version, for `sps` and `isps`.

use std::ffi::c_void;

use hpm_profile::model::FrameKind;

use crate::jvmti::{Jvmti, JvmtiEnvPtr};

pub const SPS_VERSION_ID: &str = "com.github.hpm.sps.Version";
/// The interface version this agent speaks (jvm-patches/hpm_sps.h); `sps` works with 2 and 3,
/// `isps` needs 3.
pub const SPS_VERSION: i32 = 3;

/// The patched JVM's extension functions by id, and its interface version (checked against
/// `need`); the errors say what to do.
pub fn functions(jvmti: &Jvmti, sampler: &str, need: i32) -> Result<Vec<(String, *const c_void)>, String> {
    let fns = jvmti.extension_functions().map_err(|e| e.to_string())?;
    let get = |id: &str| fns.iter().find(|(i, _)| i == id).map(|(_, f)| *f);
    let Some(version) = get(SPS_VERSION_ID) else {
        return Err(format!(
            "sampler={sampler} needs the patched JVM's extension functions ({SPS_VERSION_ID}), which this JVM does not offer; \
             build it with `bash jvm-patches/build.sh` and run with its java, or use sampler=asgct"
        ));
    };
    let mut v: i32 = 0;
    // SAFETY: the extension registered under SPS_VERSION_ID takes (jvmtiEnv*, jint*), per
    // jvm-patches/hpm_sps.h; `v` outlives the call.
    let rc = unsafe {
        let f: unsafe extern "C" fn(JvmtiEnvPtr, *mut i32) -> u32 = std::mem::transmute(version);
        f(jvmti.raw(), &mut v)
    };
    if rc != 0 || v < need || v > SPS_VERSION {
        return Err(format!(
            "sampler={sampler}: the JVM's partial-safepoint extension speaks version {v} (error {rc}); this agent needs \
             {need} to {SPS_VERSION}: rebuild the patched JDK from this checkout (`bash jvm-patches/build.sh`)"
        ));
    }
    Ok(fns)
}

/// The function registered under `id`.
pub fn function(fns: &[(String, *const c_void)], id: &str) -> Result<*const c_void, String> {
    fns.iter().find(|(i, _)| i == id).map(|(_, f)| *f).ok_or_else(|| {
        format!("the patched JVM lacks {id}: rebuild it from this checkout (`bash jvm-patches/build.sh`)")
    })
}

/// `HPM_SPS_FRAME_*` as a frame kind.
pub fn frame_kind(t: i32) -> FrameKind {
    match t {
        0 => FrameKind::Interpreted,
        1 => FrameKind::JitCompiled,
        2 => FrameKind::Inlined,
        3 => FrameKind::Native,
        _ => FrameKind::Unknown,
    }
}
