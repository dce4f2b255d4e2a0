//! `sampler=chain`: the walker over a copy of a thread's stack top (PERF_SAMPLE_STACK_USER),
//! long after the sample: the stack from the copy, the code cache in place.

use super::{CodeView, FrameSink, Layout, Memory, Regs, Stop, ThreadView, Walker};

/// The top of a thread's stack as a sample copied it (PERF_SAMPLE_STACK_USER): `bytes` from
/// `sp`, read long after the thread moved on (`sampler=chain`).
#[derive(Clone, Copy, Debug)]
pub struct StackCopy<'a> {
    pub sp: u64,
    pub bytes: &'a [u8],
}

impl StackCopy<'_> {
    /// The little-endian integer of `width` bytes at `addr`, if the copy holds it.
    fn read(&self, addr: u64, width: u64) -> Option<u64> {
        let off = usize::try_from(addr.checked_sub(self.sp)?).ok()?;
        let b = self.bytes.get(off..off.checked_add(width as usize)?)?;
        Some(b.iter().rev().fold(0, |v, &x| (v << 8) | u64::from(x)))
    }
}

/// The walker's memory over a stack copy: stack addresses from the copy, everything else
/// (the code heap, its segment map, the VM's structures) from `code`.
struct CopyMemory<'a, M: Memory> {
    copy: StackCopy<'a>,
    code: &'a M,
}

impl<M: Memory> Memory for CopyMemory<'_, M> {
    fn word(&self, addr: u64) -> u64 {
        self.copy.read(addr, 8).unwrap_or_else(|| self.code.word(addr))
    }
    fn byte(&self, addr: u64) -> u8 {
        self.copy.read(addr, 1).map_or_else(|| self.code.byte(addr), |v| v as u8)
    }
    fn int(&self, addr: u64, width: u8) -> i64 {
        let sign = |v: u64| match width {
            1 => i64::from(v as u8 as i8),
            2 => i64::from(v as u16 as i16),
            4 => i64::from(v as u32 as i32),
            _ => v as i64,
        };
        self.copy.read(addr, u64::from(width.clamp(1, 8))).map_or_else(|| self.code.int(addr, width), sign)
    }
}

/// Walks the frames a stack copy holds, from the registers the sample recorded (`regs.sp`
/// must be `copy.sp`): as many frames as the copy reaches, with their activation addresses
/// when `out.addrs` is given. The stack is read from the copy only (the walk ends where it
/// does, usually `Stop::Lost`); `code` serves the code cache. No anchor: a sample in native
/// code finds Java only through rbp.
pub fn walk_copy<M: Memory>(
    layout: &Layout,
    code: &CodeView,
    code_mem: &M,
    copy: StackCopy,
    regs: Regs,
    out: &mut FrameSink,
) -> Stop {
    if regs.sp != copy.sp {
        return Stop::Lost;
    }
    let top = copy.sp.saturating_add(copy.bytes.len() as u64 & !7);
    let thread = ThreadView { stack_base: top, stack_end: copy.sp, ..ThreadView::default() };
    let mem = CopyMemory { copy, code: code_mem };
    Walker { layout, code, thread: &thread, mem: &mem, cache: None, memo: None, native: None }.walk(regs, out)
}
