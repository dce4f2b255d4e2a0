//! Decoding of perf ring-buffer records (linux/perf_event.h), allocation-free so the signal
//! handler can call it, and JVM-free so recorded byte streams replay in tests.
//!
//! The ring's data area is a power-of-two byte array that records wrap around; [`Ring`] reads
//! little-endian integers at any offset modulo its size.

/// Counters read with every sample besides the sampling event, at most (a PMU has 4–8
/// programmable counters): the size of [`RawSample::values`], so the option grammar bounds
/// `counters=` by it.
pub const MAX_COUNTERS: usize = 8;

pub const PERF_RECORD_LOST: u32 = 2;
pub const PERF_RECORD_THROTTLE: u32 = 5;
pub const PERF_RECORD_UNTHROTTLE: u32 = 6;
pub const PERF_RECORD_SAMPLE: u32 = 9;

pub const SAMPLE_IP: u64 = 1 << 0;
pub const SAMPLE_TID: u64 = 1 << 1;
pub const SAMPLE_TIME: u64 = 1 << 2;
pub const SAMPLE_ADDR: u64 = 1 << 3;
pub const SAMPLE_READ: u64 = 1 << 4;
pub const SAMPLE_CALLCHAIN: u64 = 1 << 5;
pub const SAMPLE_ID: u64 = 1 << 6;
pub const SAMPLE_CPU: u64 = 1 << 7;
pub const SAMPLE_PERIOD: u64 = 1 << 8;
pub const SAMPLE_REGS_USER: u64 = 1 << 12;
pub const SAMPLE_STACK_USER: u64 = 1 << 13;
pub const SAMPLE_WEIGHT: u64 = 1 << 14;
pub const SAMPLE_DATA_SRC: u64 = 1 << 15;
pub const SAMPLE_REGS_INTR: u64 = 1 << 18;

pub const FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
pub const FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;
pub const FORMAT_ID: u64 = 1 << 2;
pub const FORMAT_GROUP: u64 = 1 << 3;

/// Kernel frames kept per sample (the leaf side of the kernel call chain; the kernel is asked
/// for no more with `sample_max_stack`).
pub const MAX_KERNEL_FRAMES: usize = 32;
/// Call chain entries at or above this are context markers (PERF_CONTEXT_KERNEL, _USER, ...),
/// not addresses (linux/perf_event.h: PERF_CONTEXT_MAX = -4095).
const PERF_CONTEXT_MAX: u64 = (-4095i64) as u64;

/// x86_64 user register numbers (arch/x86/include/uapi/asm/perf_regs.h).
pub const REG_BP: u64 = 6;
pub const REG_SP: u64 = 7;
pub const REG_IP: u64 = 8;
/// The registers hpm asks for: BP, SP, IP (in that bit order, so that order in the record).
pub const REGS_MASK: u64 = (1 << REG_BP) | (1 << REG_SP) | (1 << REG_IP);
/// perf's x86_64 numbers of the general registers in hardware encoding order (rax, rcx, rdx,
/// rbx, rsp, rbp, rsi, rdi, r8 ... r15; `hpm_capture::operand::Gprs` order).
pub const GPR_PERF_NUMBERS: [u64; 16] = [0, 2, 3, 1, 7, 6, 4, 5, 16, 17, 18, 19, 20, 21, 22, 23];
/// The interrupted registers a precise memory sample asks for (PERF_SAMPLE_REGS_INTR): the 16
/// general registers, from which its instruction's address is computed.
pub const INTR_MASK: u64 = {
    let mut m = 0;
    let mut i = 0;
    while i < 16 {
        m |= 1 << GPR_PERF_NUMBERS[i];
        i += 1;
    }
    m
};

/// What the agent asks the kernel to put in every sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub sample_type: u64,
    pub read_format: u64,
    pub regs_mask: u64,
    /// Registers at the sampled instruction (precise memory samples; 0: none asked).
    pub intr_mask: u64,
    /// Bytes of the user stack copied from sp with every sample (PERF_SAMPLE_STACK_USER; 0:
    /// none asked).
    pub stack_user: u32,
}

/// The most user stack a sample can carry: the record's size is a u16, and the kernel
/// rounds the request to 8 bytes.
pub const MAX_STACK_USER: u32 = 0xffff - 0x1ff;

impl Layout {
    /// The layout hpm uses: IP, TID, TIME, ADDR, PERIOD, user BP/SP/IP, and the group's counter
    /// values (with enabled/running times, so multiplexed hardware counters can be scaled).
    pub fn standard(with_group_read: bool) -> Layout {
        let mut sample_type = SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME | SAMPLE_ADDR | SAMPLE_PERIOD | SAMPLE_REGS_USER;
        if with_group_read {
            sample_type |= SAMPLE_READ;
        }
        Layout {
            sample_type,
            read_format: FORMAT_GROUP | FORMAT_ID | FORMAT_TOTAL_TIME_ENABLED | FORMAT_TOTAL_TIME_RUNNING,
            regs_mask: REGS_MASK,
            intr_mask: 0,
            stack_user: 0,
        }
    }

    /// Also `bytes` of the sampled thread's user stack from its sp (rounded down to 8 bytes, at
    /// most [`MAX_STACK_USER`]): `sampler=chain` walks that copy, long after the thread moved on.
    pub fn with_user_stack(mut self, bytes: u32) -> Layout {
        self.sample_type |= SAMPLE_STACK_USER;
        self.stack_user = bytes.min(MAX_STACK_USER) & !7;
        self
    }

    /// The general registers at the sampled point (REGS_INTR): a uprobe's are the user
    /// registers at the probed function's entry (its arguments).
    pub fn with_intr_regs(mut self) -> Layout {
        self.sample_type |= SAMPLE_REGS_INTR;
        self.intr_mask = INTR_MASK;
        self
    }

    /// Also what a precise memory sample (PEBS, IBS) carries beside its data address: the
    /// access's latency (WEIGHT), where it was served (DATA_SRC), and the general registers at
    /// the sampled instruction (REGS_INTR), which the signal's own are not.
    pub fn with_memory_sample(mut self) -> Layout {
        self.sample_type |= SAMPLE_WEIGHT | SAMPLE_DATA_SRC | SAMPLE_REGS_INTR;
        self.intr_mask = INTR_MASK;
        self
    }

    /// Also the kernel part of the call chain (kernel mode sampled; the user part is asked
    /// away with `exclude_callchain_user`: the Java stack comes from the walk).
    pub fn with_kernel_chain(mut self) -> Layout {
        self.sample_type |= SAMPLE_CALLCHAIN;
        self
    }

    /// Without each sample's period: a software event counted in the kernel's code paths
    /// (page-faults, context-switches, migrations) asking for PERF_SAMPLE_PERIOD is sampled at
    /// *every* occurrence, its period ignored (`perf_swevent_event` in kernel/events/core.c),
    /// so `interval=` would mean nothing; each sample then stands for the period set.
    pub fn without_period(mut self) -> Layout {
        self.sample_type &= !SAMPLE_PERIOD;
        self
    }

    /// Also the group's values, even without counters: the leader's own count tells how many
    /// periods passed since the last sample.
    pub fn with_read(mut self) -> Layout {
        self.sample_type |= SAMPLE_READ;
        self
    }
}

/// One decoded PERF_RECORD_SAMPLE. Fixed size, no heap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawSample {
    pub ip: u64,
    pub pid: u32,
    pub tid: u32,
    pub time: u64,
    pub addr: u64,
    pub period: u64,
    pub time_enabled: u64,
    pub time_running: u64,
    /// Group values in group order: index 0 is the leader (the sampling event).
    pub nvalues: u32,
    pub values: [u64; MAX_COUNTERS + 1],
    /// ABI of the user registers (0 = none: the sample hit a kernel thread).
    pub regs_abi: u64,
    pub bp: u64,
    pub sp: u64,
    pub user_ip: u64,
    /// Kernel call chain, leaf first (addresses only, context markers dropped).
    pub nkernel: u8,
    pub kernel: [u64; MAX_KERNEL_FRAMES],
    /// Precise memory samples: the access's latency in cycles (PERF_SAMPLE_WEIGHT; 0 when
    /// the PMU gives none) and its data source (`perf_mem_data_src`, see [`data_source`]).
    pub weight: u64,
    pub data_src: u64,
    /// ABI of the interrupted registers (0: none), and the general registers at the sampled
    /// instruction in `Gprs` order.
    pub intr_abi: u64,
    pub intr: [u64; 16],
    /// The user stack copy (PERF_SAMPLE_STACK_USER): where its bytes start in the ring and how
    /// many are valid (the kernel's `dyn_size`; 0: none). Read them with [`Ring::copy_at`]
    /// before the record is consumed.
    pub stack_at: u64,
    pub stack_len: u64,
    /// Which event's overflow made this sample: 0 the sampling event (a ring record), `k` the
    /// group's `k`-th member, a counter that samples itself (the signal handler reads the
    /// group's values at its overflow: no ring record).
    pub source: u8,
}

impl RawSample {
    pub fn kernel_frames(&self) -> &[u64] {
        &self.kernel[..usize::from(self.nkernel).min(MAX_KERNEL_FRAMES)]
    }

    /// Copies `src`'s scalars and, of its arrays, what its counts say it holds (values, kernel
    /// frames, the interrupted registers when it has them); the rest of `self`'s arrays keeps
    /// what it had, so a copy is read through those counts only, as every reader does. The
    /// signal handler's copy into a record: the whole is ~600 bytes, most of it arrays a
    /// sample leaves empty (a memmove of it was 6% of the handler's time on lucene).
    pub fn copy_used_from(&mut self, src: &RawSample) {
        // Destructured: a field added later cannot be forgotten here.
        let RawSample {
            ip,
            pid,
            tid,
            time,
            addr,
            period,
            time_enabled,
            time_running,
            nvalues,
            values,
            regs_abi,
            bp,
            sp,
            user_ip,
            nkernel,
            kernel,
            weight,
            data_src,
            intr_abi,
            intr,
            stack_at,
            stack_len,
            source,
        } = src;
        (self.ip, self.pid, self.tid, self.time, self.addr) = (*ip, *pid, *tid, *time, *addr);
        (self.period, self.time_enabled, self.time_running) = (*period, *time_enabled, *time_running);
        (self.regs_abi, self.bp, self.sp, self.user_ip) = (*regs_abi, *bp, *sp, *user_ip);
        (self.weight, self.data_src, self.stack_at, self.stack_len) = (*weight, *data_src, *stack_at, *stack_len);
        self.source = *source;
        let nv = (*nvalues as usize).min(values.len());
        self.nvalues = *nvalues;
        self.values[..nv].copy_from_slice(&values[..nv]);
        self.nkernel = *nkernel;
        let nk = src.kernel_frames().len();
        self.kernel[..nk].copy_from_slice(&kernel[..nk]);
        self.intr_abi = *intr_abi;
        if *intr_abi != 0 {
            self.intr = *intr;
        }
    }
}

/// A decoded ring record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(
    clippy::large_enum_variant,
    reason = "decoded in the signal handler, which may not allocate; one record lives on its stack at a time"
)]
pub enum Record {
    Sample(RawSample),
    /// The kernel lost this many records (ring full).
    Lost(u64),
    Throttle,
    Unthrottle,
    Other(u32),
}

/// A wrapping view of the ring's data area.
pub struct Ring<'a> {
    data: &'a [u8],
    mask: u64,
}

impl<'a> Ring<'a> {
    /// `data.len()` must be a power of two.
    pub fn new(data: &'a [u8]) -> Ring<'a> {
        debug_assert!(data.len().is_power_of_two());
        Ring { data, mask: data.len() as u64 - 1 }
    }

    fn byte(&self, pos: u64) -> u8 {
        self.data[(pos & self.mask) as usize]
    }

    /// The `N` bytes at `pos`: one slice copy unless they wrap around the ring's end.
    fn bytes<const N: usize>(&self, pos: u64) -> [u8; N] {
        let i = (pos & self.mask) as usize;
        if let Some(b) = self.data.get(i..i + N) {
            let mut out = [0u8; N];
            out.copy_from_slice(b);
            return out;
        }
        let mut out = [0u8; N];
        for (k, x) in out.iter_mut().enumerate() {
            *x = self.byte(pos + k as u64);
        }
        out
    }

    /// Copies `out.len()` bytes from `pos`, wrapping at the ring's end.
    pub fn copy_at(&self, pos: u64, out: &mut [u8]) {
        let i = (pos & self.mask) as usize;
        let first = out.len().min(self.data.len() - i);
        out[..first].copy_from_slice(&self.data[i..i + first]);
        let rest = out.len() - first;
        for (k, b) in out[first..].iter_mut().enumerate().take(rest) {
            *b = self.data[k % self.data.len()];
        }
    }

    pub fn u16_at(&self, pos: u64) -> u16 {
        u16::from_le_bytes(self.bytes(pos))
    }

    pub fn u32_at(&self, pos: u64) -> u32 {
        u32::from_le_bytes(self.bytes(pos))
    }

    pub fn u64_at(&self, pos: u64) -> u64 {
        u64::from_le_bytes(self.bytes(pos))
    }

    /// The size of the record at `pos` and, for a sample that records its IP, that IP: what
    /// the signal handler needs to plan its walks, without decoding the rest. `None` as
    /// [`Self::record_at`] for a corrupt stream.
    pub fn peek_ip(&self, pos: u64, layout: &Layout) -> Option<(Option<u64>, u64)> {
        let type_ = self.u32_at(pos);
        let size = u64::from(self.u16_at(pos + 6));
        if size < 8 || size > self.data.len() as u64 {
            return None;
        }
        let ip = (type_ == PERF_RECORD_SAMPLE && layout.sample_type & SAMPLE_IP != 0 && size >= 16)
            .then(|| self.u64_at(pos + 8));
        Some((ip, size))
    }

    /// Decodes the record starting at `pos`; returns it and its size in bytes. A size of 0 or
    /// one larger than the ring means the stream is corrupt: `None`.
    pub fn record_at(&self, pos: u64, layout: &Layout) -> Option<(Record, u64)> {
        let type_ = self.u32_at(pos);
        let size = u64::from(self.u16_at(pos + 6));
        if size < 8 || size > self.data.len() as u64 {
            return None;
        }
        let body = pos + 8;
        let rec = match type_ {
            PERF_RECORD_SAMPLE => Record::Sample(self.decode_sample(body, body + size - 8, layout)?),
            // struct { u64 id; u64 lost; }
            PERF_RECORD_LOST => Record::Lost(self.u64_at(body + 8)),
            PERF_RECORD_THROTTLE => Record::Throttle,
            PERF_RECORD_UNTHROTTLE => Record::Unthrottle,
            other => Record::Other(other),
        };
        Some((rec, size))
    }

    fn decode_sample(&self, mut p: u64, end: u64, l: &Layout) -> Option<RawSample> {
        let mut s = RawSample::default();
        let mut next = |n: u64| -> Option<u64> {
            if p.checked_add(n)? > end {
                return None;
            }
            let at = p;
            p += n;
            Some(at)
        };
        let st = l.sample_type;
        if st & SAMPLE_IP != 0 {
            s.ip = self.u64_at(next(8)?);
        }
        if st & SAMPLE_TID != 0 {
            let at = next(8)?;
            s.pid = self.u32_at(at);
            s.tid = self.u32_at(at + 4);
        }
        if st & SAMPLE_TIME != 0 {
            s.time = self.u64_at(next(8)?);
        }
        if st & SAMPLE_ADDR != 0 {
            s.addr = self.u64_at(next(8)?);
        }
        if st & SAMPLE_ID != 0 {
            next(8)?;
        }
        if st & SAMPLE_CPU != 0 {
            next(8)?;
        }
        if st & SAMPLE_PERIOD != 0 {
            s.period = self.u64_at(next(8)?);
        }
        if st & SAMPLE_READ != 0 {
            self.decode_read(&mut next, &mut s, l.read_format)?;
        }
        if st & SAMPLE_CALLCHAIN != 0 {
            let nr = self.u64_at(next(8)?);
            let at = next(nr.checked_mul(8)?)?;
            for i in 0..nr {
                let ip = self.u64_at(at + 8 * i);
                if ip >= PERF_CONTEXT_MAX {
                    continue;
                }
                if usize::from(s.nkernel) < MAX_KERNEL_FRAMES {
                    s.kernel[usize::from(s.nkernel)] = ip;
                    s.nkernel += 1;
                }
            }
        }
        if st & SAMPLE_REGS_USER != 0 {
            s.regs_abi = self.u64_at(next(8)?);
            if s.regs_abi != 0 {
                // Registers come in increasing bit order of the mask.
                for bit in 0..64u64 {
                    if l.regs_mask & (1 << bit) != 0 {
                        let v = self.u64_at(next(8)?);
                        match bit {
                            REG_BP => s.bp = v,
                            REG_SP => s.sp = v,
                            REG_IP => s.user_ip = v,
                            _ => {}
                        }
                    }
                }
            }
        }
        if st & SAMPLE_STACK_USER != 0 {
            // { u64 size; char data[size]; u64 dyn_size; }, dyn_size only when size > 0 (no
            // user registers, as in a kernel thread: size 0).
            let size = self.u64_at(next(8)?);
            if size > 0 {
                let at = next(size)?;
                let dyn_size = self.u64_at(next(8)?);
                s.stack_at = at;
                s.stack_len = dyn_size.min(size);
            }
        }
        if st & SAMPLE_WEIGHT != 0 {
            s.weight = self.u64_at(next(8)?);
        }
        if st & SAMPLE_DATA_SRC != 0 {
            s.data_src = self.u64_at(next(8)?);
        }
        if st & SAMPLE_REGS_INTR != 0 {
            s.intr_abi = self.u64_at(next(8)?);
            if s.intr_abi != 0 {
                for bit in 0..64u64 {
                    if l.intr_mask & (1 << bit) != 0 {
                        let v = self.u64_at(next(8)?);
                        if let Some(i) = GPR_PERF_NUMBERS.iter().position(|&n| n == bit) {
                            s.intr[i] = v;
                        }
                    }
                }
            }
        }
        Some(s)
    }

    fn decode_read(&self, next: &mut impl FnMut(u64) -> Option<u64>, s: &mut RawSample, rf: u64) -> Option<()> {
        if rf & FORMAT_GROUP == 0 {
            s.values[0] = self.u64_at(next(8)?);
            s.nvalues = 1;
            if rf & FORMAT_TOTAL_TIME_ENABLED != 0 {
                s.time_enabled = self.u64_at(next(8)?);
            }
            if rf & FORMAT_TOTAL_TIME_RUNNING != 0 {
                s.time_running = self.u64_at(next(8)?);
            }
            if rf & FORMAT_ID != 0 {
                next(8)?;
            }
            return Some(());
        }
        let nr = self.u64_at(next(8)?);
        if rf & FORMAT_TOTAL_TIME_ENABLED != 0 {
            s.time_enabled = self.u64_at(next(8)?);
        }
        if rf & FORMAT_TOTAL_TIME_RUNNING != 0 {
            s.time_running = self.u64_at(next(8)?);
        }
        for i in 0..nr {
            let v = self.u64_at(next(8)?);
            if rf & FORMAT_ID != 0 {
                next(8)?;
            }
            if (i as usize) < s.values.len() {
                s.values[i as usize] = v;
                s.nvalues = (i + 1) as u32;
            }
        }
        Some(())
    }
}

/// Encodes a sample record the way the kernel would, for replay tests.
pub fn encode_sample(s: &RawSample, l: &Layout) -> Vec<u8> {
    encode_sample_with_stack(s, l, &[])
}

/// [`encode_sample`] with `stack` as the user stack copy (the kernel's `dyn_size` bytes of the
/// `l.stack_user` it writes; `s.stack_at`/`stack_len` are not read).
pub fn encode_sample_with_stack(s: &RawSample, l: &Layout, stack: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    let st = l.sample_type;
    let mut put = |v: u64| b.extend_from_slice(&v.to_le_bytes());
    if st & SAMPLE_IP != 0 {
        put(s.ip);
    }
    if st & SAMPLE_TID != 0 {
        put(u64::from(s.pid) | (u64::from(s.tid) << 32));
    }
    if st & SAMPLE_TIME != 0 {
        put(s.time);
    }
    if st & SAMPLE_ADDR != 0 {
        put(s.addr);
    }
    if st & SAMPLE_PERIOD != 0 {
        put(s.period);
    }
    if st & SAMPLE_READ != 0 {
        put(u64::from(s.nvalues));
        put(s.time_enabled);
        put(s.time_running);
        for i in 0..s.nvalues as usize {
            put(s.values[i]);
            put(100 + i as u64);
        }
    }
    if st & SAMPLE_CALLCHAIN != 0 {
        put(u64::from(s.nkernel) + 1);
        put((-128i64) as u64); // PERF_CONTEXT_KERNEL
        for &ip in s.kernel_frames() {
            put(ip);
        }
    }
    if st & SAMPLE_REGS_USER != 0 {
        put(s.regs_abi);
        if s.regs_abi != 0 {
            put(s.bp);
            put(s.sp);
            put(s.user_ip);
        }
    }
    if st & SAMPLE_STACK_USER != 0 {
        if s.regs_abi == 0 {
            put(0);
        } else {
            let size = l.stack_user as usize;
            put(size as u64);
            let mut data = stack[..stack.len().min(size)].to_vec();
            data.resize(size, 0);
            for w in data.chunks_exact(8) {
                put(u64::from_le_bytes(w.try_into().unwrap_or_default()));
            }
            put(stack.len().min(size) as u64);
        }
    }
    if st & SAMPLE_WEIGHT != 0 {
        put(s.weight);
    }
    if st & SAMPLE_DATA_SRC != 0 {
        put(s.data_src);
    }
    if st & SAMPLE_REGS_INTR != 0 {
        put(s.intr_abi);
        if s.intr_abi != 0 {
            for bit in 0..64u64 {
                if l.intr_mask & (1 << bit) != 0 {
                    put(GPR_PERF_NUMBERS.iter().position(|&n| n == bit).map_or(0, |i| s.intr[i]));
                }
            }
        }
    }
    let mut rec = Vec::with_capacity(b.len() + 8);
    rec.extend_from_slice(&PERF_RECORD_SAMPLE.to_le_bytes());
    rec.extend_from_slice(&0u16.to_le_bytes());
    rec.extend_from_slice(&((b.len() + 8) as u16).to_le_bytes());
    rec.extend_from_slice(&b);
    rec
}

/// Where a precise memory sample's access was served, from its `perf_mem_data_src`
/// (linux/perf_event.h): the level (`mem_lvl_num`, else the older `mem_lvl` bits) and whether
/// it hit; `remote` and `locked` when so. None when the PMU said nothing (`mem_lvl` NA).
pub fn data_source(src: u64) -> Option<String> {
    let op = src & 0x1f;
    let lvl = (src >> 5) & 0x3fff;
    let lock = (src >> 24) & 0x3;
    let num = (src >> 33) & 0xf;
    let remote = (src >> 37) & 1 == 1;
    const NA: u64 = 0x01;
    const HIT: u64 = 0x02;
    const MISS: u64 = 0x04;
    let level = match num {
        0x1 => Some("L1"),
        0x2 => Some("L2"),
        0x3 => Some("L3"),
        0x4 => Some("L4"),
        0xb => Some("cache"),
        0xc => Some("LFB"),
        0xd => Some("RAM"),
        0xe => Some("PMEM"),
        _ => None,
    }
    .or_else(|| {
        [
            (0x08, "L1"),
            (0x10, "LFB"),
            (0x20, "L2"),
            (0x40, "L3"),
            (0x80, "RAM"),
            (0x100, "RAM"),
            (0x200, "RAM"),
            (0x400, "cache"),
            (0x800, "cache"),
            (0x1000, "I/O"),
            (0x2000, "uncached"),
        ]
        .iter()
        .find(|(bit, _)| lvl & bit != 0)
        .map(|(_, n)| *n)
    });
    let level = level.filter(|_| lvl != NA && !(lvl == 0 && num == 0))?;
    let remote = remote || lvl & 0xf00 != 0;
    let mut s = String::from(level);
    if lvl & HIT != 0 {
        s.push_str(" hit");
    } else if lvl & MISS != 0 {
        s.push_str(" miss");
    }
    if remote {
        s.insert_str(0, "remote ");
    }
    if lock == 2 {
        s.push_str(" (locked)");
    }
    if op == 0x4 {
        s.push_str(" (store)");
    }
    Some(s)
}

/// True for kernel-space addresses on x86_64.
pub fn is_kernel_address(ip: u64) -> bool {
    ip >= 0xffff_8000_0000_0000
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(i: u64) -> RawSample {
        let mut s = RawSample {
            ip: 0x7f00_0000_1000 + i,
            pid: 10,
            tid: 11,
            time: 1_000 + i,
            addr: 0xdead_0000 + i,
            period: 1_000_000,
            time_enabled: 5,
            time_running: 5,
            nvalues: 3,
            regs_abi: 2,
            bp: 1,
            sp: 2,
            user_ip: 3,
            ..Default::default()
        };
        s.values[..3].copy_from_slice(&[i, 2 * i, 3 * i]);
        s
    }

    #[test]
    fn a_copy_of_the_used_parts_reads_as_the_whole() {
        let mut big = sample(7);
        big.nkernel = 5;
        big.kernel[..5].copy_from_slice(&[11, 12, 13, 14, 15]);
        big.intr_abi = 2;
        big.intr[7] = 0x77;
        let mut small = sample(3);
        // Every scalar other than big's: one not copied would show.
        (small.pid, small.tid, small.period, small.time_enabled, small.time_running) = (20, 21, 22, 23, 24);
        (small.regs_abi, small.bp, small.sp, small.user_ip) = (1, 25, 26, 27);
        (small.weight, small.data_src, small.stack_at, small.stack_len) = (28, 29, 30, 31);
        small.nkernel = 2;
        small.kernel[..2].copy_from_slice(&[21, 22]);
        small.nvalues = 1;
        let mut dst = big;
        dst.copy_used_from(&small);
        assert_eq!(dst.kernel_frames(), small.kernel_frames());
        assert_eq!(dst.values[..dst.nvalues as usize], small.values[..1]);
        assert_eq!(dst.intr_abi, 0, "no registers: the stale ones are not read");
        let counted = |s: &RawSample| {
            let mut s = *s;
            s.kernel[usize::from(s.nkernel)..].fill(0);
            s.values[s.nvalues as usize..].fill(0);
            if s.intr_abi == 0 {
                s.intr = [0; 16];
            }
            s
        };
        assert_eq!(counted(&dst), counted(&small));
        let mut again = small;
        again.copy_used_from(&big);
        assert_eq!(again, big, "a copy of a sample holding more fills every counted entry");
    }

    #[test]
    fn consumer_that_keeps_up_sees_every_sample_across_wraps() {
        let layout = Layout::standard(true);
        let mut ring = vec![0u8; 256];
        let n = ring.len() as u64;
        let mut head = 200u64;
        let mut tail = head;
        let r_samples: Vec<RawSample> = (0..10).map(sample).collect();
        for s in &r_samples {
            for b in encode_sample(s, &layout) {
                ring[(head % n) as usize] = b;
                head += 1;
            }
            let r = Ring::new(&ring[..]);
            let (rec, size) = r.record_at(tail, &layout).unwrap();
            assert_eq!(rec, Record::Sample(*s));
            // The handler's quick look agrees, wherever the record wraps.
            assert_eq!(r.peek_ip(tail, &layout), Some((Some(s.ip), size)));
            tail += size;
        }
        assert_eq!(tail, head);
    }

    #[test]
    fn kernel_call_chains_decode_without_their_markers() {
        let layout = Layout::standard(false).with_kernel_chain();
        let mut s = sample(1);
        s.nvalues = 0;
        s.values = [0; MAX_COUNTERS + 1];
        (s.time_enabled, s.time_running) = (0, 0);
        s.kernel[..3].copy_from_slice(&[0xffff_ffff_8100_0010, 0xffff_ffff_8100_0020, 0xffff_ffff_8100_0030]);
        s.nkernel = 3;
        let bytes = encode_sample(&s, &layout);
        let mut ring = vec![0u8; 512];
        ring[..bytes.len()].copy_from_slice(&bytes);
        let (rec, size) = Ring::new(&ring).record_at(0, &layout).unwrap();
        assert_eq!(size as usize, bytes.len());
        let Record::Sample(back) = rec else { panic!("{rec:?}") };
        assert_eq!(back.kernel_frames(), &s.kernel[..3]);
        assert_eq!((back.user_ip, back.sp), (s.user_ip, s.sp), "registers after the chain");
    }

    #[test]
    fn user_stack_copies_decode_and_copy_out_across_the_rings_end() {
        let layout = Layout::standard(false).with_user_stack(64);
        assert_eq!(Layout::standard(false).with_user_stack(100).stack_user, 96, "whole words");
        assert_eq!(Layout::standard(false).with_user_stack(1 << 20).stack_user, MAX_STACK_USER & !7);
        let mut s = sample(1);
        (s.nvalues, s.values, s.time_enabled, s.time_running) = (0, [0; MAX_COUNTERS + 1], 0, 0);
        let stack: Vec<u8> = (0..40u8).collect();
        let bytes = encode_sample_with_stack(&s, &layout, &stack);
        // Place the record so that it wraps around the ring's end inside the stack copy.
        let mut ring = vec![0u8; 256];
        let start = 256 - 80;
        for (i, b) in bytes.iter().enumerate() {
            ring[(start + i) % 256] = *b;
        }
        let r = Ring::new(&ring);
        let (rec, size) = r.record_at(start as u64, &layout).unwrap();
        assert_eq!(size as usize, bytes.len());
        let Record::Sample(back) = rec else { panic!("{rec:?}") };
        assert_eq!((back.sp, back.user_ip, back.stack_len), (s.sp, s.user_ip, 40));
        let mut out = vec![0u8; back.stack_len as usize];
        r.copy_at(back.stack_at, &mut out);
        assert_eq!(out, stack);
        // Fields after the copy still decode (a kernel thread: no registers, size 0, no dyn_size).
        let layout = layout.with_memory_sample();
        let mut k = s;
        (k.regs_abi, k.weight) = (0, 77);
        let bytes = encode_sample_with_stack(&k, &layout, &stack);
        let mut ring = vec![0u8; 512];
        ring[..bytes.len()].copy_from_slice(&bytes);
        let Some((Record::Sample(back), _)) = Ring::new(&ring).record_at(0, &layout) else { panic!() };
        assert_eq!((back.weight, back.stack_len), (77, 0));
        // A copy's size past the record's end is corrupt.
        let mut bytes = encode_sample_with_stack(&s, &Layout::standard(false).with_user_stack(64), &stack);
        let at = 8 + 5 * 8 + 4 * 8; // header, ip..period, regs (abi + 3)
        bytes[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
        let mut ring = vec![0u8; 512];
        ring[..bytes.len()].copy_from_slice(&bytes);
        assert!(Ring::new(&ring).record_at(0, &Layout::standard(false).with_user_stack(64)).is_none());
    }

    #[test]
    fn a_call_chain_longer_than_its_record_is_corrupt() {
        let layout = Layout::standard(false).with_kernel_chain();
        let mut s = sample(1);
        s.nkernel = 2;
        let mut bytes = encode_sample(&s, &layout);
        // The chain's count sits after ip, pid/tid, time, addr, period (5 words + header).
        let at = 8 + 5 * 8;
        for huge in [u64::MAX / 4, u64::MAX, 1 << 20] {
            bytes[at..at + 8].copy_from_slice(&huge.to_le_bytes());
            let mut ring = vec![0u8; 1024];
            ring[..bytes.len()].copy_from_slice(&bytes);
            assert!(Ring::new(&ring).record_at(0, &layout).is_none(), "nr = {huge}");
        }
    }

    /// A PEBS load sample as the kernel lays it out (ip, tid, time, addr, period, user regs,
    /// weight, data_src, interrupted registers), replayed through the ring.
    #[test]
    fn precise_memory_samples_decode_their_latency_source_and_registers() {
        let layout = Layout::standard(false).with_memory_sample();
        let mut s = sample(3);
        (s.nvalues, s.values, s.time_enabled, s.time_running) = (0, [0; MAX_COUNTERS + 1], 0, 0);
        s.weight = 187;
        // mem_op LOAD (0x2), mem_lvl L3|HIT (0x40|0x2 << 5), mem_lvl_num L3 (3 << 33).
        s.data_src = 0x2 | ((0x40 | 0x2) << 5) | (3 << 33);
        s.intr_abi = 2;
        for (i, r) in s.intr.iter_mut().enumerate() {
            *r = 0x1000 * (i as u64 + 1);
        }
        let bytes = encode_sample(&s, &layout);
        // Header, 5 words, regs (abi + 3), weight, data_src, intr (abi + 16).
        assert_eq!(bytes.len(), 8 + 8 * (5 + 4 + 2 + 17));
        let mut ring = vec![0u8; 512];
        ring[..bytes.len()].copy_from_slice(&bytes);
        let (rec, _) = Ring::new(&ring).record_at(0, &layout).unwrap();
        assert_eq!(rec, Record::Sample(s));
        // The record's order is perf's register numbers (ax, bx, cx, dx, si, di, bp, sp, ...):
        // bx is the second word, and lands in the hardware-order slot 3.
        let intr_at = 8 + 8 * (5 + 4 + 2) + 8;
        let second = u64::from_le_bytes(bytes[intr_at + 8..intr_at + 16].try_into().unwrap());
        assert_eq!(second, s.intr[3]);
        assert_eq!(data_source(s.data_src).as_deref(), Some("L3 hit"));
    }

    #[test]
    fn data_sources_read_as_perf_mem_prints_them() {
        let lvl = |bits: u64| (bits << 5) | 0x2;
        assert_eq!(data_source(lvl(0x08 | 0x2)).as_deref(), Some("L1 hit"));
        assert_eq!(data_source(lvl(0x10 | 0x2)).as_deref(), Some("LFB hit"));
        assert_eq!(data_source(lvl(0x80 | 0x2)).as_deref(), Some("RAM hit"));
        assert_eq!(data_source(lvl(0x100 | 0x2)).as_deref(), Some("remote RAM hit"));
        assert_eq!(data_source(lvl(0x20 | 0x4)).as_deref(), Some("L2 miss"));
        assert_eq!(data_source(lvl(0x01)), None, "not available");
        assert_eq!(data_source(0), None);
        // Level number wins over the older bits; a locked store.
        let store = 0x4 | ((0x08 | 0x2) << 5) | (2 << 24) | (0xd << 33);
        assert_eq!(data_source(store).as_deref(), Some("RAM hit (locked) (store)"));
    }

    #[test]
    fn corrupt_sizes_are_rejected() {
        let ring = vec![0u8; 64];
        assert!(Ring::new(&ring).record_at(0, &Layout::standard(false)).is_none());
    }

    #[test]
    fn a_quick_look_at_other_records_gives_their_size_and_no_ip() {
        let mut ring = vec![0u8; 64];
        ring[..4].copy_from_slice(&PERF_RECORD_LOST.to_le_bytes());
        ring[6..8].copy_from_slice(&24u16.to_le_bytes());
        assert_eq!(Ring::new(&ring).peek_ip(0, &Layout::standard(false)), Some((None, 24)));
        ring[6..8].copy_from_slice(&0u16.to_le_bytes());
        assert_eq!(Ring::new(&ring).peek_ip(0, &Layout::standard(false)), None, "corrupt size");
    }

    #[test]
    fn lost_records_report_their_count() {
        let mut ring = vec![0u8; 64];
        ring[0..4].copy_from_slice(&PERF_RECORD_LOST.to_le_bytes());
        ring[6..8].copy_from_slice(&24u16.to_le_bytes());
        ring[16..24].copy_from_slice(&7u64.to_le_bytes());
        let (rec, size) = Ring::new(&ring).record_at(0, &Layout::standard(false)).unwrap();
        assert_eq!((rec, size), (Record::Lost(7), 24));
    }
}
