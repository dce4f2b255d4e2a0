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

/// The host's name (`gethostname`), `None` when it cannot be read, is empty or not UTF-8.
pub fn hostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is writable for the length given; gethostname writes at most that many
    // bytes (without a NUL if the name is cut, hence the search bounded by the buffer below).
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    std::str::from_utf8(&buf[..len]).ok().filter(|h| !h.is_empty()).map(str::to_string)
}

/// The calling thread's kernel id. Async-signal-safe (a system call).
pub fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// `si_code` of a signal sent with a value (sigqueue, rt_tgsigqueueinfo).
pub const SI_QUEUE: i32 = -1;

/// Sends `sig` to this process's thread `tid` with `value` in `si_value` and `si_code`
/// [`SI_QUEUE`] (rt_tgsigqueueinfo), from this process (`si_pid`). Never blocks; fails with
/// ESRCH once the thread has ended. A standard signal already pending on the thread is not
/// queued again (its handler runs once).
pub fn signal_thread(tid: i32, sig: i32, value: u64) -> std::io::Result<()> {
    /// The kernel's `siginfo_t` for SI_QUEUE on 64-bit Linux: 128 bytes, the value at 24.
    #[repr(C)]
    struct QueuedInfo {
        signo: i32,
        errno: i32,
        code: i32,
        _pad: i32,
        pid: i32,
        uid: u32,
        value: u64,
        _rest: [u64; 12],
    }
    const _: () = assert!(std::mem::size_of::<QueuedInfo>() == 128);
    let pid = std::process::id() as i32;
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let info = QueuedInfo { signo: sig, errno: 0, code: SI_QUEUE, _pad: 0, pid, uid, value, _rest: [0; 12] };
    // SAFETY: rt_tgsigqueueinfo reads a siginfo_t of 128 bytes from the pointer, which `info`
    // is; a thread of our own process may be sent any si_code.
    let rc = unsafe { libc::syscall(libc::SYS_rt_tgsigqueueinfo, pid, tid, sig, &info as *const QueuedInfo) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// A thread of this process's kernel name (`/proc/self/task/TID/comm`, cut by the kernel at 15
/// bytes), without its newline; `None` once the thread is gone.
pub fn thread_comm(tid: i32) -> Option<String> {
    let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).ok()?;
    Some(comm.trim_end().to_string())
}

/// The calling thread's thread pointer (`pthread_self`: glibc reads it from the thread
/// register, no system call). Async-signal-safe in practice, distinct between live threads.
pub fn thread_pointer() -> u64 {
    // SAFETY: pthread_self has no preconditions and only reads the calling thread's TCB.
    unsafe { libc::pthread_self() as u64 }
}

/// This process's tasks (threads), listed through one descriptor of `/proc/self/task` kept
/// open: opening the directory was most of a listing's cost (~50 of ~85 us on a VM here, the
/// path walk through /proc), rewinding and reading it again is not.
pub struct TaskDir {
    fd: std::os::fd::OwnedFd,
    buf: Vec<u8>,
}

/// Tasks listed at most (the kernel's own limit on threads is far above what a JVM runs).
const MAX_TASKS: usize = 1 << 16;

impl TaskDir {
    pub fn open() -> std::io::Result<TaskDir> {
        use std::os::fd::FromRawFd;
        // SAFETY: a NUL-terminated path and flags; the result is checked before it is owned.
        let fd =
            unsafe { libc::open(c"/proc/self/task".as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened here and is owned by nothing else.
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        Ok(TaskDir { fd, buf: vec![0; 16 << 10] })
    }

    /// The directory's link count: the kernel counts the process's threads in it (two plus
    /// one per thread), so an unchanged count says no thread came or went, unless as many
    /// ended as started. One fstat, far cheaper than a listing (which instantiates an entry
    /// per thread); None if it fails.
    pub fn links(&self) -> Option<u64> {
        use std::os::fd::AsRawFd;
        // SAFETY: an all-zero `stat` is a valid value for fstat to overwrite.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat writes one `stat` into `st`, on a descriptor this value owns.
        let r = unsafe { libc::fstat(self.fd.as_raw_fd(), &mut st) };
        #[allow(clippy::useless_conversion, reason = "nlink_t is u32 on aarch64 and riscv64")]
        (r == 0).then(|| u64::from(st.st_nlink))
    }

    /// The kernel ids of the process's tasks now, into `out` (cleared first); an error past
    /// [`MAX_TASKS`] (a partial list would make the others look gone).
    pub fn list(&mut self, out: &mut Vec<i32>) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        out.clear();
        let fd = self.fd.as_raw_fd();
        // SAFETY: rewinds a directory descriptor this value owns.
        if unsafe { libc::lseek(fd, 0, libc::SEEK_SET) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        loop {
            if out.len() > MAX_TASKS {
                return Err(std::io::Error::other(format!("more than {MAX_TASKS} tasks")));
            }
            // SAFETY: getdents64 writes at most `buf.len()` bytes of records into `buf`.
            let n = unsafe { libc::syscall(libc::SYS_getdents64, fd, self.buf.as_mut_ptr(), self.buf.len()) };
            if n < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if n == 0 {
                return Ok(());
            }
            dirent_ids(&self.buf[..n as usize], out);
        }
    }
}

/// The numeric names of the `linux_dirent64` records in `bytes` (`.` and `..` are not).
fn dirent_ids(bytes: &[u8], out: &mut Vec<i32>) {
    // d_ino (8), d_off (8), d_reclen (2), d_type (1), then the NUL-terminated name.
    const NAME: usize = 19;
    let mut at = 0;
    while at + NAME <= bytes.len() {
        let len = usize::from(u16::from_ne_bytes([bytes[at + 16], bytes[at + 17]]));
        if len < NAME || at + len > bytes.len() {
            return;
        }
        let name = &bytes[at + NAME..at + len];
        let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
        if let Some(id) = std::str::from_utf8(name).ok().and_then(|s| s.parse().ok()) {
            out.push(id);
        }
        at += len;
    }
}

/// Reads `buf.len()` bytes of this process's memory at `addr` without faulting (as
/// [`read_words_checked`]); false unless all of them were read.
pub fn read_checked(addr: u64, buf: &mut [u8]) -> bool {
    let local = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let remote = libc::iovec { iov_base: addr as *mut libc::c_void, iov_len: buf.len() };
    // SAFETY: `local` covers `buf`; the remote range is in our own process, read by the kernel
    // with fault checking.
    let got = unsafe { libc::process_vm_readv(pid(), &local, 1, &remote, 1, 0) };
    got >= 0 && got as usize == buf.len()
}

/// Reads words of this process's memory that may have been freed since their address was
/// learnt, without faulting: `process_vm_readv` on ourselves returns EFAULT for an unmapped
/// page where a load would crash. `out[i]` is the word at `addrs[i]`, or None. Off the signal
/// path only. Where the call itself is refused (a seccomp filter: EPERM, ENOSYS), nothing is
/// read.
///
/// The words are read by ranges, not one by one: sorted, and those in one page a few bytes
/// apart read as one range (a page is mapped or not as a whole, so the bytes between are
/// readable too). The kernel pins each range's page once instead of each word's: the
/// jmethodIDs a class load makes sit side by side in HotSpot's blocks of ids, and reading
/// xalan's ~3,000-7,000 new ones at a time cost ~0.45 us per word one by one. A range that
/// cannot be read (its page is gone) costs one more call.
pub fn read_words_checked(addrs: &[u64]) -> Vec<Option<u64>> {
    let mut out = vec![None; addrs.len()];
    let mut order: Vec<usize> = (0..addrs.len()).collect();
    order.sort_unstable_by_key(|&i| addrs[i]);
    let ranges = word_ranges(addrs, &order);
    let mut buf: Vec<u8> = Vec::new();
    let mut r = 0;
    while r < ranges.len() {
        let batch = &ranges[r..(r + MAX_IOVECS).min(ranges.len())];
        let total: usize = batch.iter().map(WordRange::len).sum();
        buf.clear();
        buf.resize(total, 0);
        let remote: Vec<libc::iovec> =
            batch.iter().map(|g| libc::iovec { iov_base: g.start as *mut libc::c_void, iov_len: g.len() }).collect();
        let local = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: total };
        // SAFETY: `local` covers `buf` (`total` bytes, the sum of the remote lengths); the
        // remote iovecs (at most MAX_IOVECS, the kernel's IOV_MAX) name ranges of our own
        // process, which the kernel reads with fault checking (a bad one ends the transfer).
        let got =
            unsafe { libc::process_vm_readv(pid(), &local, 1, remote.as_ptr(), remote.len() as libc::c_ulong, 0) };
        if got < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EFAULT) {
            break; // refused outright: nothing can be read this way
        }
        let got = got.max(0) as usize;
        let mut at = 0;
        let mut stopped = batch.len();
        for (k, g) in batch.iter().enumerate() {
            for &i in &order[g.first..g.first + g.count] {
                let off = at + (addrs[i] - g.start) as usize;
                if off + 8 <= got {
                    let word: [u8; 8] = buf[off..off + 8].try_into().expect("8 bytes");
                    out[i] = Some(u64::from_le_bytes(word));
                }
            }
            at += g.len();
            if at > got {
                stopped = k;
                break;
            }
        }
        // The transfer ended inside range `stopped` (unreadable from there on): go on after it.
        r += if stopped < batch.len() { stopped + 1 } else { batch.len() };
    }
    out
}

/// The kernel's limit on iovecs per call (IOV_MAX).
const MAX_IOVECS: usize = 1024;

/// Bytes between two words read as one range at most (what is read for nothing).
const MAX_GAP: u64 = 64;

/// Words read as one range: `[start, end)`, and the words' places in the sorted order
/// (`order[first..first + count]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct WordRange {
    start: u64,
    end: u64,
    first: usize,
    count: usize,
}

impl WordRange {
    fn len(&self) -> usize {
        (self.end - self.start) as usize
    }
}

/// The ranges of the words at `addrs` taken in `order` (sorted by address): a word joins the
/// range before it when both lie in one page and at most [`MAX_GAP`] bytes separate them. A
/// word across a page boundary (or at the top of the address space) is a range of its own.
fn word_ranges(addrs: &[u64], order: &[usize]) -> Vec<WordRange> {
    const PAGE: u64 = 4096;
    let mut ranges: Vec<WordRange> = Vec::new();
    for (k, &i) in order.iter().enumerate() {
        let a = addrs[i];
        let end = a.saturating_add(8);
        let one_page = end - a == 8 && a / PAGE == (end - 1) / PAGE;
        if let Some(g) = ranges.last_mut() {
            let joins = one_page && g.start / PAGE == a / PAGE && (g.end - 1) / PAGE == a / PAGE;
            if joins && a <= g.end.saturating_add(MAX_GAP) {
                g.end = g.end.max(end);
                g.count += 1;
                continue;
            }
        }
        ranges.push(WordRange { start: a, end, first: k, count: 1 });
    }
    ranges
}

/// This process's id (one system call, then remembered: the agent's threads never change
/// process).
pub fn pid() -> libc::pid_t {
    static PID: std::sync::OnceLock<libc::pid_t> = std::sync::OnceLock::new();
    // SAFETY: getpid has no preconditions.
    *PID.get_or_init(|| unsafe { libc::getpid() })
}

/// The path and load address of the loaded object holding `addr` (dladdr), or None when no
/// loaded object holds it.
pub fn loaded_object(addr: u64) -> Option<(String, u64)> {
    // SAFETY: Dl_info is plain data; all-zero is a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the loader's tables and fills `info`.
    if unsafe { libc::dladdr(addr as *const libc::c_void, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr set dli_fname to the object's NUL-terminated path, valid while it stays
    // loaded (copied at once).
    let path = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned();
    Some((path, info.dli_fbase as u64))
}

/// The file name of the loaded library holding `addr` (`libjvm.so`), or None when no loaded
/// object holds it.
pub fn library_name(addr: u64) -> Option<String> {
    let (path, _) = loaded_object(addr)?;
    Some(path.rsplit('/').next().unwrap_or(&path).to_string())
}

/// The dynamic loader's counts of objects loaded and unloaded in the process so far (glibc's
/// `dlpi_adds` and `dlpi_subs`), or None where the C library does not give them.
pub fn loader_counts() -> Option<(u64, u64)> {
    /// # Safety
    /// `info` valid for `size` bytes and `data` the `Option` below (dl_iterate_phdr's contract).
    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        let end = std::mem::offset_of!(libc::dl_phdr_info, dlpi_subs) + std::mem::size_of::<libc::c_ulonglong>();
        if size >= end {
            // SAFETY: `data` is the `Option` below, borrowed by nothing else during the call;
            // `info` is valid for the callback and `size` says it has both fields.
            unsafe { *(data as *mut Option<(u64, u64)>) = Some(((*info).dlpi_adds, (*info).dlpi_subs)) };
        }
        1 // The counts are the same in every object's entry: the first is enough.
    }
    let mut counts: Option<(u64, u64)> = None;
    // SAFETY: the callback only writes `counts`, which outlives the call; nothing in it can
    // panic (a panic in an `extern "C"` function would abort, not unwind into the loader).
    unsafe { libc::dl_iterate_phdr(Some(first), &mut counts as *mut Option<(u64, u64)> as *mut libc::c_void) };
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_env = "gnu")]
    fn the_loader_counts_a_library_loaded_and_one_unloaded() {
        let before = loader_counts().expect("glibc gives the counts");
        // libBrokenLocale: part of glibc, so present, and linked by nothing here.
        // SAFETY: dlopen/dlclose of a library without constructors of note; the handle is
        // closed once.
        let handle = unsafe { libc::dlopen(c"libBrokenLocale.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        assert!(!handle.is_null(), "libBrokenLocale.so.1 not found");
        let loaded = loader_counts().unwrap();
        // SAFETY: the handle from dlopen above, closed once.
        assert_eq!(unsafe { libc::dlclose(handle) }, 0);
        let unloaded = loader_counts().unwrap();
        assert!(loaded.0 > before.0, "{before:?} -> {loaded:?}");
        assert!(unloaded.1 > loaded.1, "{loaded:?} -> {unloaded:?}");
    }

    #[test]
    fn the_kept_task_directory_lists_threads_as_they_come_and_go() {
        let mut dir = TaskDir::open().expect("/proc/self/task");
        let mut ids = Vec::new();
        dir.list(&mut ids).unwrap();
        assert!(ids.contains(&gettid()), "{ids:?}");
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            tx.send(gettid()).unwrap();
            done_rx.recv().unwrap();
        });
        let other = rx.recv().unwrap();
        dir.list(&mut ids).unwrap();
        assert!(ids.contains(&other), "{other} not in {ids:?}");
        // The link count counts the threads: this one and the one waiting at least.
        assert!(dir.links().is_some_and(|n| n >= 2 + 2), "{:?}", dir.links());
        // Other tests' threads come and go meanwhile: what the kept directory lists both
        // before and after a fresh listing was there during it.
        let before = ids.clone();
        let by_read_dir: Vec<i32> = std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect();
        dir.list(&mut ids).unwrap();
        let throughout: Vec<i32> = before.iter().copied().filter(|t| ids.contains(t)).collect();
        assert!(throughout.contains(&other) && throughout.contains(&gettid()), "{throughout:?}");
        assert!(throughout.iter().all(|t| by_read_dir.contains(t)), "{throughout:?} not all in {by_read_dir:?}");
        done_tx.send(()).unwrap();
        t.join().unwrap();
        dir.list(&mut ids).unwrap();
        // A joined thread may still be listed for a moment: the kernel wakes the joiner while
        // the thread exits (clearing its tid), before it leaves the task list. Then it must be
        // exiting (PF_EXITING in its flags, set before the wake) or gone by now.
        if ids.contains(&other) {
            let flags = std::fs::read_to_string(format!("/proc/self/task/{other}/stat"))
                .ok()
                .and_then(|s| s.rsplit_once(')')?.1.split_whitespace().nth(6)?.parse::<u64>().ok());
            const PF_EXITING: u64 = 0x4;
            assert!(flags.is_none_or(|f| f & PF_EXITING != 0), "{other} still in {ids:?}, flags {flags:?}");
        }
    }

    #[test]
    fn directory_records_give_their_numeric_names_and_a_cut_record_ends_the_reading() {
        let record = |name: &str| {
            let len = (19 + name.len() + 1).next_multiple_of(8);
            let mut r = vec![0u8; len];
            r[16..18].copy_from_slice(&(len as u16).to_ne_bytes());
            r[19..19 + name.len()].copy_from_slice(name.as_bytes());
            r
        };
        let bytes: Vec<u8> = [".", "..", "123", "4567", "x9"].iter().flat_map(|n| record(n)).collect();
        let mut out = Vec::new();
        dirent_ids(&bytes, &mut out);
        assert_eq!(out, [123, 4567]);
        out.clear();
        let mut cut = record("88");
        cut.extend(record("99"));
        cut.truncate(cut.len() - 3);
        dirent_ids(&cut, &mut out);
        assert_eq!(out, [88]);
        out.clear();
        dirent_ids(&[0u8; 18], &mut out);
        let mut zero = record("7");
        zero[16..18].copy_from_slice(&0u16.to_ne_bytes());
        dirent_ids(&zero, &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn words_in_one_page_are_one_range_and_pages_apart_are_not() {
        let addrs = [0x1010, 0x1000, 0x1008, 0x1100, 0x2000, 0x2ffc, 0x1000];
        let mut order: Vec<usize> = (0..addrs.len()).collect();
        order.sort_unstable_by_key(|&i| addrs[i]);
        let r = word_ranges(&addrs, &order);
        let spans: Vec<(u64, u64, usize)> = r.iter().map(|g| (g.start, g.end, g.count)).collect();
        // 0x1000 twice, 0x1008, 0x1010 together; 0x1100 too far; 0x2000 another page; 0x2ffc
        // crosses into the next page: alone.
        assert_eq!(spans, [(0x1000, 0x1018, 4), (0x1100, 0x1108, 1), (0x2000, 0x2008, 1), (0x2ffc, 0x3004, 1)]);
    }

    #[test]
    fn reads_what_is_mapped_and_nothing_where_a_page_is_not() {
        // Three pages: the middle one unmapped.
        // SAFETY: an anonymous private mapping of three pages, unmapped at the end of the test.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                3 * 4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED);
        let base = base as u64;
        let words: Vec<u64> = (0..512 * 3).map(|i| base + 8 * i).collect();
        for (i, &a) in words.iter().enumerate() {
            // SAFETY: `a` is a word of the mapping above, still mapped.
            unsafe { *(a as *mut u64) = 1000 + i as u64 };
        }
        // SAFETY: the middle page of the mapping above.
        assert_eq!(unsafe { libc::munmap((base + 4096) as *mut libc::c_void, 4096) }, 0);
        // Every word of the three pages, each twice, in a shuffled order, and address 8.
        let mut addrs: Vec<u64> = words.iter().chain(words.iter()).copied().collect();
        addrs.reverse();
        addrs.swap(3, 2000);
        addrs.push(8);
        let got = read_words_checked(&addrs);
        for (&a, v) in addrs.iter().zip(&got) {
            let i = a.wrapping_sub(base) / 8;
            let expect = (a != 8 && !(512..1024).contains(&i)).then(|| 1000 + i);
            assert_eq!(*v, expect, "word {i}");
        }
        // SAFETY: the first and last pages of the mapping above.
        unsafe {
            libc::munmap(base as *mut libc::c_void, 4096);
            libc::munmap((base + 2 * 4096) as *mut libc::c_void, 4096);
        }
    }
}
