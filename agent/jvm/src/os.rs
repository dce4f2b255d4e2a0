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

/// Reads `buf.len()` bytes of this process's memory at `addr` without faulting (as
/// [`read_words_checked`]); false unless all of them were read.
pub fn read_checked(addr: u64, buf: &mut [u8]) -> bool {
    let local = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let remote = libc::iovec { iov_base: addr as *mut libc::c_void, iov_len: buf.len() };
    // SAFETY: `local` covers `buf`; the remote range is in our own process, read by the kernel
    // with fault checking.
    let got = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    got >= 0 && got as usize == buf.len()
}

/// Reads words of this process's memory that may have been freed since their address was
/// learnt, without faulting: `process_vm_readv` on ourselves returns EFAULT for an unmapped
/// page where a load would crash. `out[i]` is the word at `addrs[i]`, or None. Off the signal
/// path only (a system call per 1,024 words, and one more per unreadable word). Where the call
/// itself is refused (a seccomp filter: EPERM, ENOSYS), nothing is read.
pub fn read_words_checked(addrs: &[u64]) -> Vec<Option<u64>> {
    const CHUNK: usize = 1024;
    let mut out = vec![None; addrs.len()];
    let mut vals = vec![0u64; addrs.len().min(CHUNK)];
    let remote: Vec<libc::iovec> =
        addrs.iter().map(|&a| libc::iovec { iov_base: a as *mut libc::c_void, iov_len: 8 }).collect();
    let mut i = 0;
    while i < addrs.len() {
        let n = (addrs.len() - i).min(CHUNK);
        let local = libc::iovec { iov_base: vals.as_mut_ptr().cast(), iov_len: n * 8 };
        // SAFETY: `local` covers `vals` (n <= CHUNK words); the n remote iovecs name addresses
        // in our own process, which the kernel reads with fault checking (a bad one ends the
        // transfer at its boundary).
        let got =
            unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, remote[i..].as_ptr(), n as libc::c_ulong, 0) };
        if got < 0 {
            let e = std::io::Error::last_os_error().raw_os_error();
            if e != Some(libc::EFAULT) {
                break; // refused outright: nothing can be read this way
            }
        }
        let words = if got > 0 { got as usize / 8 } else { 0 };
        for k in 0..words {
            out[i + k] = Some(vals[k]);
        }
        // The word after the last one read could not be: skip it.
        i += words + usize::from(words < n);
    }
    out
}

/// Whether `addr` is in a loaded library whose file name ends with `name` (dladdr).
pub fn in_library(addr: u64, name: &str) -> bool {
    // SAFETY: dladdr only reads the loader's tables; `info` is plain data it fills, its name
    // valid while the library stays loaded (checked at once).
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(addr as *const libc::c_void, &mut info) == 0 || info.dli_fname.is_null() {
            return false;
        }
        std::ffi::CStr::from_ptr(info.dli_fname).to_bytes().ends_with(name.as_bytes())
    }
}
