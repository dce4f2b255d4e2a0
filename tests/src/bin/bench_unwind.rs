//! Benchmark of the two ways to unwind native stacks (run by hand, never by the tests), per
//! sample, on one deep native stack of this process (a Rust recursion through libc's `qsort`
//! callback), unwound to the thread's entry:
//! (a) hpm's own tables in place (`NativeTables::step`, what a signal handler would run);
//! (b) copying the top 16 KiB / 64 KiB of the stack (what a handler would copy instead) and
//!     unwinding the copy with `framehop` (samply's unwinder, its rule cache warm);
//! (c) the copy alone.
//! A copy stops at the stack's top: this stack is shallower than 64 KiB, so the bytes copied
//! are shown.
//! Then the cost of building the tables: rows, bytes and time per library.
//!
//! ```text
//! cargo run --release -p hpm-tests --bin bench-unwind -- [--depth N] [--samples N] [LIB.so ...]
//! ```
//!
//! `--depth` is the number of qsort levels (default 10: about 50 frames); each figure is the
//! best of 5 runs of `--samples` (default 20,000) samples. The libraries named (libjvm.so of
//! each JDK) get their table built and measured too; this process's own libraries always do.

use std::cell::Cell;
use std::hint::black_box;
use std::time::Instant;

use hpm_capture::native::{LibTable, NativeStop, NativeTables, Row};
use hpm_resolve::symbols::{parse_maps, Mapping};
use hpm_resolve::unwind_tables::table_for;
use object::{Object, ObjectSection, ObjectSegment};

struct Opts {
    depth: u32,
    samples: u32,
    libs: Vec<String>,
}

fn parse_args() -> Result<Opts, String> {
    let mut o = Opts { depth: 10, samples: 20_000, libs: Vec::new() };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut num = |name: &str| -> Result<u32, String> {
            args.next().and_then(|v| v.parse().ok()).ok_or(format!("{name} takes a number"))
        };
        match a.as_str() {
            "--depth" => o.depth = num("--depth")?,
            "--samples" => o.samples = num("--samples")?.max(1),
            s if s.starts_with("--") => return Err(format!("unknown option {s}; see the file's doc")),
            s => o.libs.push(s.to_string()),
        }
    }
    Ok(o)
}

thread_local! {
    static LEFT: Cell<u32> = const { Cell::new(0) };
}

/// What the deepest frame runs: the measurements, with the stack above it live.
struct Bench {
    tables: NativeTables,
    frame_hop: framehop::x86_64::UnwinderX86_64<Vec<u8>>,
    samples: u32,
}

static mut BENCH: Option<Bench> = None;

extern "C" fn compare(_: *const libc::c_void, _: *const libc::c_void) -> libc::c_int {
    let left = LEFT.get();
    if left > 0 {
        LEFT.set(left - 1);
        if left == 1 {
            bottom();
        } else {
            level();
        }
    }
    0
}

#[inline(never)]
fn level() {
    let mut v = [2i32, 1];
    // SAFETY: two i32s, sorted in place by a comparator that reads neither.
    unsafe { libc::qsort(v.as_mut_ptr().cast(), 2, 4, Some(compare)) };
    black_box(&v);
}

#[inline(never)]
fn bottom() {
    let (pc, sp, fp): (u64, u64, u64);
    // SAFETY: reads rip, rsp and rbp; no memory, no stack change.
    unsafe {
        std::arch::asm!("lea {0}, [rip]", "mov {1}, rsp", "mov {2}, rbp", out(reg) pc, out(reg) sp, out(reg) fp,
            options(nomem, nostack, preserves_flags));
    }
    // SAFETY: set by main before the recursion, read only here, on the one thread.
    let b = unsafe { (*std::ptr::addr_of!(BENCH)).as_ref().unwrap() };
    measure(b, pc, sp, fp);
}

/// This thread's stack: [lo, hi).
fn stack_bounds() -> (u64, u64) {
    // SAFETY: the attribute object is initialised by pthread_getattr_np before it is read and
    // destroyed after.
    unsafe {
        let mut attr = std::mem::zeroed::<libc::pthread_attr_t>();
        assert_eq!(libc::pthread_getattr_np(libc::pthread_self(), &mut attr), 0);
        let (mut addr, mut size) = (std::ptr::null_mut(), 0usize);
        assert_eq!(libc::pthread_attr_getstack(&attr, &mut addr, &mut size), 0);
        libc::pthread_attr_destroy(&mut attr);
        (addr as u64, addr as u64 + size as u64)
    }
}

/// Best of 5 runs of `n` calls of `f`, in ns per call.
fn best(n: u32, mut f: impl FnMut() -> usize) -> (f64, usize) {
    let mut out = (f64::MAX, 0);
    for _ in 0..5 {
        let t = Instant::now();
        let mut frames = 0;
        for _ in 0..n {
            frames = black_box(f());
        }
        out = (out.0.min(t.elapsed().as_nanos() as f64 / f64::from(n)), frames);
    }
    out
}

fn measure(b: &Bench, pc: u64, sp: u64, fp: u64) {
    let (_, hi) = stack_bounds();
    let word = |a: u64| {
        // SAFETY: an aligned word of this thread's stack between the deepest frame's sp and
        // its top: mapped, and not written while `measure` runs below the frames read.
        (a >= sp && a.checked_add(8).is_some_and(|e| e <= hi) && a.is_multiple_of(8))
            .then(|| unsafe { std::ptr::read_volatile(a as *const u64) })
    };
    let mut end = None;
    let own = || {
        let (mut p, mut s, mut f, mut exact, mut n) = (pc, sp, fp, false, 1);
        for _ in 0..512 {
            match b.tables.step(p, s, f, exact, &word) {
                Ok((np, ns, nf)) => (p, s, f, exact, n) = (np, ns, nf, true, n + 1),
                Err(e) => {
                    end = Some(e);
                    break;
                }
            }
        }
        n
    };
    let (ns, frames) = best(b.samples, own);
    println!("(a) own tables in place:      {ns:8.0} ns/sample  {frames} frames, then {end:?}");
    let used = hi - sp;
    for kib in [16u64, 64] {
        let len = (kib << 10).min(hi - sp) as usize;
        let mut copy = vec![0u8; len];
        let mut cache = framehop::x86_64::CacheX86_64::<framehop::MayAllocateDuringUnwind>::new();
        let mut fh = || {
            // SAFETY: `len` bytes from sp lie within this thread's stack (capped at its top).
            unsafe { std::ptr::copy_nonoverlapping(sp as *const u8, copy.as_mut_ptr(), len) };
            let mut read = |a: u64| -> Result<u64, ()> {
                let off = usize::try_from(a.checked_sub(sp).ok_or(())?).map_err(|_| ())?;
                let w = copy.get(off..off + 8).ok_or(())?;
                Ok(u64::from_le_bytes(w.try_into().unwrap()))
            };
            use framehop::Unwinder;
            let regs = framehop::x86_64::UnwindRegsX86_64::new(pc, sp, fp);
            let mut it = b.frame_hop.iter_frames(pc, regs, &mut cache, &mut read);
            let mut n = 0;
            while let Ok(Some(_)) = it.next() {
                n += 1;
            }
            n
        };
        let (ns, frames) = best(b.samples, &mut fh);
        println!("(b) copy {kib:2} KiB ({len} B) + framehop: {ns:8.0} ns/sample  {frames} frames");
        let mut copy2 = vec![0u8; len];
        let (ns, _) = best(b.samples, || {
            // SAFETY: as above.
            unsafe { std::ptr::copy_nonoverlapping(sp as *const u8, copy2.as_mut_ptr(), len) };
            black_box(&copy2);
            len
        });
        println!("(c) copy {kib:2} KiB ({len} B) alone:      {ns:8.0} ns/sample");
    }
    println!("stack used above the deepest frame: {used} bytes");
}

/// A framehop module for the mapping `m` whose table's bias is `bias`.
fn framehop_module(m: &Mapping, bias: u64) -> Option<framehop::Module<Vec<u8>>> {
    let data = std::fs::read(&m.path).ok()?;
    let file = object::File::parse(&*data).ok()?;
    let sec = |name: &str| file.section_by_name(name).map(|s| (s.address()..s.address() + s.size(), s));
    let (eh_svma, eh) = sec(".eh_frame")?;
    let hdr = sec(".eh_frame_hdr");
    let text = sec(".text");
    let info = framehop::ExplicitModuleSectionInfo {
        base_svma: 0,
        text_svma: text.as_ref().map(|t| t.0.clone()),
        text: text.and_then(|t| t.1.data().ok().map(<[u8]>::to_vec)),
        got_svma: sec(".got").map(|g| g.0),
        eh_frame_svma: Some(eh_svma),
        eh_frame: Some(eh.data().ok()?.to_vec()),
        eh_frame_hdr_svma: hdr.as_ref().map(|h| h.0.clone()),
        eh_frame_hdr: hdr.and_then(|h| h.1.data().ok().map(<[u8]>::to_vec)),
        ..Default::default()
    };
    Some(framehop::Module::new(m.path.clone(), m.start..m.end, bias, info))
}

/// The executable mapping a library would get at its own addresses (bias 0).
fn file_mapping(path: &str) -> Result<Mapping, String> {
    let data = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    let file = object::File::parse(&*data).map_err(|e| format!("{path}: {e}"))?;
    let seg = file
        .segments()
        .find(|s| matches!(s.flags(), object::SegmentFlags::Elf { p_flags, .. } if p_flags & 1 != 0))
        .ok_or(format!("{path}: no executable segment"))?;
    let (off, _) = seg.file_range();
    let page = |a: u64| a & !0xfff;
    Ok(Mapping {
        start: page(seg.address()),
        end: (seg.address() + seg.size() + 0xfff) & !0xfff,
        offset: page(off),
        exec: true,
        path: path.to_string(),
        dev: 0,
        inode: 0,
    })
}

fn print_table(m: &Mapping) -> Option<LibTable> {
    let t = Instant::now();
    match table_for(m) {
        Ok(table) => {
            let ms = t.elapsed().as_secs_f64() * 1e3;
            let bytes = table.rows.len() * std::mem::size_of::<Row>();
            println!("  {:<60} {:>9} rows {:>6} KiB {ms:8.1} ms", m.path, table.rows.len(), bytes >> 10);
            Some(table)
        }
        Err(e) => {
            println!("  {e}");
            None
        }
    }
}

fn main() {
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("bench-unwind: {e}");
            std::process::exit(2);
        }
    };
    println!("tables (row: {} bytes):", std::mem::size_of::<Row>());
    for lib in &o.libs {
        match file_mapping(lib) {
            Ok(m) => drop(print_table(&m)),
            Err(e) => println!("  {e}"),
        }
    }
    let maps = parse_maps(&std::fs::read_to_string("/proc/self/maps").unwrap());
    let tables = NativeTables::default();
    let mut frame_hop = framehop::x86_64::UnwinderX86_64::new();
    for m in maps.iter().filter(|m| m.exec && m.path.starts_with('/')) {
        if let Some(t) = print_table(m) {
            if let Some(module) = framehop_module(m, t.bias) {
                use framehop::Unwinder;
                frame_hop.add_module(module);
            }
            tables.add(t);
        }
    }
    // SAFETY: written once before the recursion reads it, on this one thread.
    unsafe { BENCH = Some(Bench { tables, frame_hop, samples: o.samples }) };
    println!("\nper sample, {} qsort levels deep (best of 5 x {} samples):", o.depth, o.samples);
    LEFT.set(o.depth);
    level();
    let _ = NativeStop::Bottom;
}
