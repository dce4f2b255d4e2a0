//! The sampling thread of a source that samples from a thread of its own (`timer`, `wall`):
//! started once with the session, told to stop, woken and joined, its result handed back.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

pub(crate) struct SamplerThread<T> {
    running: Mutex<Option<(Arc<AtomicBool>, JoinHandle<T>)>>,
}

impl<T: Send + 'static> SamplerThread<T> {
    pub(crate) fn new() -> SamplerThread<T> {
        SamplerThread { running: Mutex::new(None) }
    }

    /// Starts `run` on a thread named `hpm-sampler`; `run` ends when its flag is set.
    pub(crate) fn start(&self, run: impl FnOnce(&AtomicBool) -> T + Send + 'static) -> Result<(), String> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let join = std::thread::Builder::new()
            .name("hpm-sampler".into())
            .spawn(move || run(&flag))
            .map_err(|e| format!("cannot start the sampling thread: {e}"))?;
        *self.running.lock().unwrap_or_else(|e| e.into_inner()) = Some((stop, join));
        Ok(())
    }

    /// Stops the thread (woken if it parks) and returns what it gave; `None` when it was not
    /// running or panicked.
    pub(crate) fn stop(&self) -> Option<T> {
        let (stop, join) = self.running.lock().unwrap_or_else(|e| e.into_inner()).take()?;
        stop.store(true, Ordering::Release);
        join.thread().unpark();
        join.join().ok()
    }
}
