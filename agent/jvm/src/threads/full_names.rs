//! VM threads named in full. The /proc scan names a thread JVMTI does not list (GC workers,
//! the VM thread, compiler and service threads) by its kernel name, cut at 15 bytes
//! (`C2 CompilerThre`); the VM's `Thread.print` names each whole with its kernel id. Run on the
//! processor thread only, once per round at most, only when the scan attached a thread whose
//! kernel name is exactly 15 bytes, and never again after it failed once.

use hpm_resolve::thread_dump::{full_name, thread_names, MAX_DUMP_BYTES, MAX_THREADS_TO_DUMP};
use jni::sys::JNIEnv;

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
        if self.given_up {
            return;
        }
        let cut = threads.take_maybe_cut();
        if cut.is_empty() {
            return;
        }
        let (live, ..) = threads.sizes();
        if live > MAX_THREADS_TO_DUMP {
            self.given_up = true;
            eprintln!(
                "hpm: VM threads keep the kernel's names, cut at 15 bytes: {live} threads, more than \
                 {MAX_THREADS_TO_DUMP}, and a thread dump for their names would pause the JVM too long"
            );
            return;
        }
        match jnienv::diagnostic_command(env, "Thread.print", MAX_DUMP_BYTES) {
            Ok(dump) => {
                let names = thread_names(&dump);
                for (tid, comm) in cut {
                    if let Some(name) = full_name(&names, tid as u32, &comm) {
                        threads.rename_vm_thread(tid, name.to_string());
                    }
                }
            }
            Err(e) => {
                self.given_up = true;
                eprintln!("hpm: VM threads keep the kernel's names, cut at 15 bytes (Thread.print: {e})");
            }
        }
    }
}
