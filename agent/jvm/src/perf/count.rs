//! The phases trace's counting groups: per thread, counters read together at every probe
//! (a part of `perf`, the one module of perf system calls).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr;

use super::{errno, MappedRing, PerfError};
use perf_event_open_sys as sys;

/// A counter of the phases trace: its perf event and the name the trace gives its column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CountDef {
    pub name: &'static str,
    pub type_: u32,
    pub config: u64,
}

/// The counters where the CPU has a PMU (read with `rdpmc` where the kernel allows it).
pub const PMU_COUNTS: [CountDef; 2] = [
    CountDef { name: "cycles", type_: sys::bindings::PERF_TYPE_HARDWARE, config: 0 },
    CountDef { name: "instructions", type_: sys::bindings::PERF_TYPE_HARDWARE, config: 1 },
];

/// The counters where there is none (one group read(2) each time).
pub const SOFTWARE_COUNTS: [CountDef; 3] = [
    CountDef { name: "task-clock", type_: sys::bindings::PERF_TYPE_SOFTWARE, config: 1 },
    CountDef { name: "page-faults", type_: sys::bindings::PERF_TYPE_SOFTWARE, config: 2 },
    CountDef { name: "context-switches", type_: sys::bindings::PERF_TYPE_SOFTWARE, config: 3 },
];

/// `perf_event_mmap_page.capabilities`' bit `cap_user_rdpmc`.
const CAP_USER_RDPMC: u64 = 1 << 2;

/// Counters a [`CountGroup`] holds at most.
pub const MAX_COUNT_GROUP: usize = 4;

/// One thread's counting group (no ring, no signal), enabled when opened: one read(2) of the
/// leader returns every member's value (`PERF_FORMAT_GROUP`). For the calling thread's
/// hardware events each one's metadata page is mapped too, so that [`CountGroup::read`] takes
/// them with `rdpmc` in the page's seqlock protocol, without a system call, where the kernel
/// sets `cap_user_rdpmc`. Closing (drop) unmaps the pages and closes the descriptors.
pub struct CountGroup {
    fds: Vec<OwnedFd>,
    /// Per counter its metadata page, when every counter has one that allows `rdpmc`.
    pages: Vec<MappedRing>,
}

// SAFETY: the mapped pages belong to this value alone and are only read through `&self`.
unsafe impl Send for CountGroup {}

impl CountGroup {
    /// Opens `defs` (1 to [`MAX_COUNT_GROUP`]) as one group counting thread `tid` (0: the
    /// calling thread) on any CPU, kernel mode included where perf allows it. `user_reads`:
    /// map the pages for `rdpmc` (only for the calling thread: `rdpmc` reads the CPU the
    /// caller runs on).
    pub fn open(defs: &[CountDef], tid: i32, user_reads: bool) -> Result<CountGroup, PerfError> {
        if defs.is_empty() || defs.len() > MAX_COUNT_GROUP {
            return Err(PerfError { what: "a counting group of 1 to 4 counters".into(), errno: libc::EINVAL });
        }
        let mut last = None;
        for exclude_kernel in [0, 1] {
            match Self::open_mode(defs, tid, exclude_kernel) {
                Ok(fds) => {
                    let pages = if user_reads { Self::map_pages(&fds) } else { Vec::new() };
                    return Ok(CountGroup { fds, pages });
                }
                Err(e) if e.is_permission() => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or(PerfError { what: "perf_event_open".into(), errno: libc::EPERM }))
    }

    fn open_mode(defs: &[CountDef], tid: i32, exclude_kernel: u64) -> Result<Vec<OwnedFd>, PerfError> {
        let mut fds: Vec<OwnedFd> = Vec::with_capacity(defs.len());
        for d in defs {
            let mut a = sys::bindings::perf_event_attr {
                type_: d.type_,
                size: std::mem::size_of::<sys::bindings::perf_event_attr>() as u32,
                config: d.config,
                read_format: u64::from(sys::bindings::PERF_FORMAT_GROUP),
                ..Default::default()
            };
            a.set_exclude_hv(1);
            a.set_exclude_kernel(exclude_kernel);
            let group = fds.first().map_or(-1, |f| f.as_raw_fd());
            // SAFETY: `a` is a fully initialised perf_event_attr whose `size` matches the
            // struct; `tid` is a thread of this process (0: the caller), any CPU.
            let fd = unsafe { sys::perf_event_open(&mut a, tid, -1, group, sys::bindings::PERF_FLAG_FD_CLOEXEC as _) };
            if fd < 0 {
                return Err(PerfError { what: format!("perf_event_open({}) for counting", d.name), errno: errno() });
            }
            // SAFETY: the kernel returned a new descriptor that nothing else owns.
            fds.push(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        Ok(fds)
    }

    /// Every counter's metadata page if all of them allow `rdpmc` (x86-64 only), else none.
    fn map_pages(fds: &[OwnedFd]) -> Vec<MappedRing> {
        if !cfg!(target_arch = "x86_64") {
            return Vec::new();
        }
        let mut pages = Vec::with_capacity(fds.len());
        for fd in fds {
            let Ok(p) = MappedRing::map(fd, 0, 0) else { return Vec::new() };
            // SAFETY: the page was just mapped; `capabilities` is read volatile as the kernel
            // may update it.
            let caps = unsafe {
                let meta = p.ptr as *const sys::bindings::perf_event_mmap_page;
                ptr::read_volatile(ptr::addr_of!((*meta).__bindgen_anon_1.capabilities))
            };
            if caps & CAP_USER_RDPMC == 0 {
                return Vec::new();
            }
            pages.push(p);
        }
        pages
    }

    pub fn len(&self) -> usize {
        self.fds.len()
    }

    /// Whether reads take `rdpmc` (no system call) rather than read(2).
    pub fn user_reads(&self) -> bool {
        !self.pages.is_empty()
    }

    /// The counters' values now into `out[..len]`. Allocates nothing, takes no lock; with
    /// `rdpmc` no system call either (read(2) when a counter is not on the CPU just then).
    /// False when the read failed.
    pub fn read(&self, out: &mut [u64]) -> bool {
        let n = self.fds.len();
        if out.len() < n {
            return false;
        }
        if !self.pages.is_empty() {
            let mut all = true;
            for (o, p) in out.iter_mut().zip(&self.pages) {
                match page_read(p.ptr.cast()) {
                    Some(v) => *o = v,
                    None => {
                        all = false;
                        break;
                    }
                }
            }
            if all {
                return true;
            }
        }
        // { nr, values[nr] }
        let mut buf = [0u64; 1 + MAX_COUNT_GROUP];
        // SAFETY: reading at most the buffer's size into it from the group leader we own.
        let got = unsafe { libc::read(self.fds[0].as_raw_fd(), buf.as_mut_ptr().cast(), std::mem::size_of_val(&buf)) };
        if got < 8 * (1 + n as isize) || buf[0] as usize != n {
            return false;
        }
        out[..n].copy_from_slice(&buf[1..=n]);
        true
    }
}

/// One counter's value from its metadata page with `rdpmc` (perf_event_mmap_page's seqlock:
/// `lock` read before and after, retried while a writer moved it); `None` when the page does
/// not allow it (`cap_user_rdpmc` clear, the event not on this CPU now: `index` 0) or the
/// lock kept moving.
fn page_read(meta: *const sys::bindings::perf_event_mmap_page) -> Option<u64> {
    use std::sync::atomic::{compiler_fence, Ordering::SeqCst};
    for _ in 0..8 {
        // SAFETY: `meta` is a live mapped metadata page; the kernel updates these fields under
        // `lock`, so they are read volatile and checked against `lock` afterwards.
        let (seq, index, offset, caps, width) = unsafe {
            let seq = ptr::read_volatile(ptr::addr_of!((*meta).lock));
            compiler_fence(SeqCst);
            (
                seq,
                ptr::read_volatile(ptr::addr_of!((*meta).index)),
                ptr::read_volatile(ptr::addr_of!((*meta).offset)),
                ptr::read_volatile(ptr::addr_of!((*meta).__bindgen_anon_1.capabilities)),
                ptr::read_volatile(ptr::addr_of!((*meta).pmc_width)),
            )
        };
        if caps & CAP_USER_RDPMC == 0 || index == 0 || width == 0 || width > 64 {
            return None;
        }
        let pmc = rdpmc(index - 1)?;
        // The counter is `width` bits wide: sign-extend it.
        let shift = 64 - u32::from(width);
        let value = (offset as u64).wrapping_add((((pmc << shift) as i64) >> shift) as u64);
        compiler_fence(SeqCst);
        // SAFETY: as above.
        if unsafe { ptr::read_volatile(ptr::addr_of!((*meta).lock)) } == seq {
            return Some(value);
        }
    }
    None
}

#[cfg(target_arch = "x86_64")]
fn rdpmc(counter: u32) -> Option<u64> {
    let (lo, hi): (u32, u32);
    // SAFETY: rdpmc reads a performance counter; the kernel allows it in user mode for an event
    // whose mapped page has `cap_user_rdpmc` and a non-zero index (checked by the caller).
    unsafe { std::arch::asm!("rdpmc", in("ecx") counter, out("eax") lo, out("edx") hi, options(nostack)) };
    Some(u64::from(hi) << 32 | u64::from(lo))
}

#[cfg(not(target_arch = "x86_64"))]
fn rdpmc(_counter: u32) -> Option<u64> {
    None
}
