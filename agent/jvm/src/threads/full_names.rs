//! VM threads named in full. The /proc scan names a thread JVMTI does not list (GC workers,
//! the VM thread, compiler and service threads) by its kernel name, cut at 15 bytes
//! (`C2 CompilerThre`). Each round, the threads attached since the last under a name that may
//! be cut are named from the VM's own structures ([`super::hotspot_names`]: no safepoint, no
//! call into the VM). Only those still unnamed then (a thread that is not HotSpot's, or a JVM
//! whose structures do not read) are looked up in the VM's `Thread.print`, which stops the
//! world: at most once per round, and never again after it failed once. Run on the processor
//! thread only.

use std::sync::OnceLock;

use hpm_resolve::thread_dump::{full_name, thread_names, MAX_DUMP_BYTES, MAX_THREADS_TO_DUMP};
use jni::sys::JNIEnv;

use super::hotspot_names::{whole_names, NameLayout, Peek};
use super::Threads;
use crate::jnienv;

#[derive(Default)]
pub struct FullNames {
    given_up: bool,
}

impl FullNames {
    /// Names in full the threads attached under a kernel name that may be cut since the last
    /// call. `env` is the processor's JNIEnv.
    pub fn round(&mut self, threads: &Threads, env: *mut JNIEnv) {
        let cut = threads.take_maybe_cut();
        if cut.is_empty() {
            return;
        }
        let named = from_vm_structures(&cut);
        for (tid, name) in &named {
            threads.rename_vm_thread(*tid, name.clone());
        }
        let rest: Vec<(i32, String)> =
            cut.into_iter().filter(|(tid, _)| !named.iter().any(|(t, _)| t == tid)).collect();
        if rest.is_empty() || self.given_up {
            return;
        }
        let (live, ..) = threads.sizes();
        if live > MAX_THREADS_TO_DUMP {
            self.given_up = true;
            eprintln!(
                "hpm: {} threads keep the kernel's names, cut at 15 bytes: {live} threads, more than \
                 {MAX_THREADS_TO_DUMP}, and a thread dump for their names would pause the JVM too long",
                rest.len()
            );
            return;
        }
        match jnienv::diagnostic_command(env, "Thread.print", MAX_DUMP_BYTES) {
            Ok(dump) => {
                let names = thread_names(&dump);
                for (tid, comm) in rest {
                    if let Some(name) = full_name(&names, tid as u32, &comm) {
                        threads.rename_vm_thread(tid, name.to_string());
                    }
                }
            }
            Err(e) => {
                self.given_up = true;
                eprintln!("hpm: {} threads keep the kernel's names, cut at 15 bytes (Thread.print: {e})", rest.len());
            }
        }
    }
}

/// The whole names of the threads `wanted` (kernel id, kernel name) that the VM's structures
/// give; a thread they do not name is left out. Off the signal path (each read is a system
/// call); bounded as [`whole_names`].
pub fn from_vm_structures(wanted: &[(i32, String)]) -> Vec<(i32, String)> {
    match layout() {
        Some(l) if !wanted.is_empty() => whole_names(l, &Checked, wanted),
        _ => Vec::new(),
    }
}

/// This JVM's [`NameLayout`], made once; None when its threads' kernel ids cannot be read.
fn layout() -> Option<&'static NameLayout> {
    static LAYOUT: OnceLock<Option<NameLayout>> = OnceLock::new();
    LAYOUT
        .get_or_init(|| {
            let t = crate::vmstructs::table().ok()?;
            NameLayout::from_table(t, crate::vmstructs::libjvm_symbol, crate::vmstructs::flag, &Checked)
        })
        .as_ref()
}

/// Reads that never fault (`os::read_checked`): a thread may end and its memory be freed while
/// it is read.
struct Checked;

impl Peek for Checked {
    fn bytes(&self, addr: u64, buf: &mut [u8]) -> bool {
        crate::os::read_checked(addr, buf)
    }
}
