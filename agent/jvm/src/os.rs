//! Clocks and the kernel thread id (leaf module). Every sample and JVMTI event is stamped with
//! CLOCK_MONOTONIC nanoseconds ("ticks"), the clock perf is asked to use (`use_clockid`).

/// CLOCK_MONOTONIC in nanoseconds. Async-signal-safe (vDSO).
pub fn now_ticks() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CPU time the calling thread has used, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec we pass; both clocks exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Wall-clock time, nanoseconds since the Unix epoch.
pub fn now_wall_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

/// The calling thread's kernel id. Async-signal-safe (a system call).
pub fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}
