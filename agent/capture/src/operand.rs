//! The memory access of a sampled instruction ("the software twin"): the bytes at the
//! sampled IP, decoded with iced-x86, and the interrupted thread's registers give the address
//! the instruction was about to touch. A timer sample interrupts the thread *before* the
//! instruction at its IP runs, so the registers are those the address is computed from.
//!
//! Besides the address, the split the paper's shortcut needs (Inoue & Nakatani §4.3, Figure
//! 2): a field access is `[object + offset]`, and with compressed oops HotSpot's JIT writes it
//! `[r12 + narrow*8 + offset]` (heap base, index, field offset), so the object's candidate
//! start is the address minus the displacement in both forms.

use iced_x86::{CodeSize, Decoder, DecoderOptions, InstructionInfoFactory, Mnemonic, OpAccess, OpKind, Register};

/// The interrupted thread's general registers in the hardware's encoding order: rax, rcx, rdx,
/// rbx, rsp, rbp, rsi, rdi, r8 ... r15.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gprs(pub [u64; 16]);

/// The longest x86 instruction, in bytes.
pub const MAX_INSTRUCTION: usize = 15;

/// How the instruction uses the memory it addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Load,
    Store,
    /// Read and written (`add [m], r`, `lock cmpxchg`, `xchg`).
    Update,
}

/// The memory access of one instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryAccess {
    /// The effective address.
    pub address: u64,
    /// The constant part of the address (a field's offset when the rest is the object).
    pub displacement: i64,
    /// Whether the address is `register(s) + displacement` (not rip-relative or absolute): only
    /// then is `address - displacement` a candidate object start.
    pub register_based: bool,
    /// Bytes accessed (0 when the decoder does not say).
    pub size: u32,
    pub access: Access,
    /// The instruction's length (the next instruction's address is `ip + len`).
    pub len: u8,
    /// A `mov` to memory: the value it stores (an immediate, or its source register's value
    /// before the instruction runs; 32-bit stores zero-extended).
    pub stored: Option<u64>,
}

impl MemoryAccess {
    /// The paper's shortcut: the object the instruction addresses starts at the address minus
    /// the constant offset, if the address is register-based.
    pub fn object_guess(&self) -> Option<u64> {
        self.register_based.then(|| self.address.wrapping_sub(self.displacement as u64))
    }
}

/// Why an instruction gave no address (counted per reason in the summary).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoAccess {
    /// The bytes are no valid instruction (or were cut short: a page end).
    Undecodable,
    /// Registers only, or an address computed without an access (`lea`, `nop [m]`, prefetch).
    NoMemoryOperand,
    /// fs/gs-relative: thread-local, its segment base is not among the registers.
    ThreadLocal,
    /// A vector-indexed (gather/scatter) access: one address per element.
    VectorIndex,
}

impl NoAccess {
    pub fn name(self) -> &'static str {
        match self {
            NoAccess::Undecodable => "undecodable",
            NoAccess::NoMemoryOperand => "no_memory_operand",
            NoAccess::ThreadLocal => "thread_local",
            NoAccess::VectorIndex => "vector_index",
        }
    }
}

/// Samples given an address from their instruction, and the others by reason (the summary's
/// `data addresses:` line).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DataStats {
    pub loads: u64,
    pub stores: u64,
    pub updates: u64,
    /// Samples without an address, per reason (first-seen order).
    pub none: Vec<(String, u64)>,
    /// Samples whose event reported an address too (page faults, precise memory samples),
    /// and of those, the ones where it lies within the decoded access.
    pub compared: u64,
    pub agreed: u64,
}

/// No instruction was captured: the sample was outside the code cache (native code, the
/// kernel) or not the one its signal interrupted (an earlier record of a coalesced signal).
pub const NOT_CAPTURED: &str = "outside_java_code";

impl DataStats {
    pub fn record(&mut self, r: Result<&MemoryAccess, &str>) {
        match r {
            Ok(a) => match a.access {
                Access::Load => self.loads += 1,
                Access::Store => self.stores += 1,
                Access::Update => self.updates += 1,
            },
            Err(reason) => hpm_profile::model::count_reason(&mut self.none, reason, 1),
        }
    }

    /// Checks a decoded access against the address the sample's event reported.
    pub fn compare(&mut self, event_address: u64, decoded: &MemoryAccess) {
        self.compared += 1;
        if event_address.wrapping_sub(decoded.address) < u64::from(decoded.size.max(1)) {
            self.agreed += 1;
        }
    }

    pub fn found(&self) -> u64 {
        self.loads + self.stores + self.updates
    }

    /// `data addresses: F of N samples (P%) from their instruction: L loads, S stores, U
    /// updates; none for: reason n, ...`; None before any sample.
    pub fn line(&self) -> Option<String> {
        let missing: u64 = self.none.iter().map(|(_, n)| n).sum();
        let total = self.found() + missing;
        if total == 0 {
            return None;
        }
        let g = hpm_profile::text::group;
        let mut s = format!(
            "data addresses: {} of {} samples ({:.1}%) from their instruction: {} loads, {} stores, {} updates",
            g(self.found()),
            g(total),
            100.0 * self.found() as f64 / total as f64,
            g(self.loads),
            g(self.stores),
            g(self.updates)
        );
        if missing > 0 {
            s.push_str(&format!("; none for: {}", hpm_profile::text::reason_list(&self.none)));
        }
        if self.compared > 0 {
            s.push_str(&format!(
                "; the event's own address within the decoded access on {} of {}",
                g(self.agreed),
                g(self.compared)
            ));
        }
        Some(s)
    }
}

/// The memory access of the 64-bit instruction whose bytes start `code` (at most
/// [`MAX_INSTRUCTION`] are looked at), at address `ip`, given the registers before it runs.
/// Of several accesses (`movs`, `push [m]`) the first explicit one, not the stack's.
pub fn sampled_access(code: &[u8], ip: u64, regs: &Gprs) -> Result<MemoryAccess, NoAccess> {
    let code = &code[..code.len().min(MAX_INSTRUCTION)];
    let mut decoder = Decoder::with_ip(64, code, ip, DecoderOptions::NONE);
    let ins = decoder.decode();
    if ins.is_invalid() {
        return Err(NoAccess::Undecodable);
    }
    let mut factory = InstructionInfoFactory::new();
    let info = factory.info(&ins);
    let accessed = |m: &&iced_x86::UsedMemory| !matches!(m.access(), OpAccess::NoMemAccess | OpAccess::None);
    let mut used = info.used_memory().iter().filter(accessed);
    let first = used.clone().next().ok_or(NoAccess::NoMemoryOperand)?;
    let m = used.find(|m| !is_stack_pointer(m.base())).unwrap_or(first);
    if matches!(m.segment(), Register::FS | Register::GS) {
        return Err(NoAccess::ThreadLocal);
    }
    if m.vsib_size() != 0 {
        return Err(NoAccess::VectorIndex);
    }
    let address =
        m.virtual_address(0, |reg, _, _| register_value(reg, regs, ins.next_ip())).ok_or(NoAccess::NoMemoryOperand)?;
    let access = match m.access() {
        OpAccess::Write | OpAccess::CondWrite => Access::Store,
        OpAccess::ReadWrite | OpAccess::ReadCondWrite => Access::Update,
        _ => Access::Load,
    };
    let displacement = if m.address_size() == CodeSize::Code32 {
        i64::from(m.displacement() as u32 as i32)
    } else {
        m.displacement() as i64
    };
    Ok(MemoryAccess {
        address,
        displacement,
        // iced gives a rip-relative operand no base and its target as displacement.
        register_based: m.base() != Register::None || m.index() != Register::None,
        size: m.memory_size().size() as u32,
        access,
        len: ins.len() as u8,
        stored: stored_value(&ins, regs),
    })
}

/// The value a `mov [m], imm` or `mov [m], reg` writes, truncated to the store's width.
fn stored_value(ins: &iced_x86::Instruction, regs: &Gprs) -> Option<u64> {
    use iced_x86::{Mnemonic, OpKind};
    if ins.mnemonic() != Mnemonic::Mov || ins.op0_kind() != OpKind::Memory {
        return None;
    }
    let v = match ins.op1_kind() {
        OpKind::Immediate8 | OpKind::Immediate16 | OpKind::Immediate32 | OpKind::Immediate32to64 => ins.immediate(1),
        OpKind::Register => register_value(ins.op1_register(), regs, ins.next_ip())?,
        _ => return None,
    };
    Some(match ins.memory_size().size() {
        1 => v & 0xff,
        2 => v & 0xffff,
        4 => v & 0xffff_ffff,
        _ => v,
    })
}

/// The address an instruction is about to touch, as the signal handler computes it (no
/// allocation: the decoder only, without the instruction-info tables `sampled_access` uses).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Effective {
    pub address: u64,
    /// The constant part (a field's offset when the rest is the object).
    pub displacement: i64,
    /// Whether the address is register-based (then `address - displacement` is a candidate
    /// object start).
    pub register_based: bool,
    /// The base register's value (an array's start in `[base + index*scale + offset]`), 0 when
    /// there is none or it is the stack pointer.
    pub base: u64,
}

/// The first explicit memory operand of the instruction at `code` (its address `ip`), given
/// the registers before it runs — only for an instruction that really accesses it: `lea`,
/// the multi-byte `nop [m]` of code alignment and prefetches compute an address they never
/// touch, which may be unmapped. fs/gs-relative and vector-indexed operands give None.
/// Async-signal-safe: no allocation, bounded.
pub fn effective_address(code: &[u8], ip: u64, regs: &Gprs) -> Option<Effective> {
    let code = &code[..code.len().min(MAX_INSTRUCTION)];
    let mut decoder = Decoder::with_ip(64, code, ip, DecoderOptions::NONE);
    let ins = decoder.decode();
    if ins.is_invalid() || touches_nothing(ins.mnemonic()) {
        return None;
    }
    let op = (0..ins.op_count()).find(|&i| ins.op_kind(i) == OpKind::Memory)?;
    if matches!(ins.memory_segment(), Register::FS | Register::GS) || ins.is_vsib() {
        return None;
    }
    let address = ins.virtual_address(op, 0, |reg, _, _| register_value(reg, regs, ins.next_ip()))?;
    let (base, index) = (ins.memory_base(), ins.memory_index());
    let register_based = !matches!(base, Register::None | Register::RIP | Register::EIP) || index != Register::None;
    let displacement = if base.is_gpr32() || index.is_gpr32() {
        i64::from(ins.memory_displacement32() as i32)
    } else {
        ins.memory_displacement64() as i64
    };
    let base = if base.is_gpr64() && !is_stack_pointer(base) { regs.0[base.number()] } else { 0 };
    Some(Effective { address, displacement, register_based, base })
}

/// Builds the decoder's tables, which iced-x86 makes on first use (thousands of allocations,
/// behind a lock): called before any signal handler decodes, never from one.
pub fn prepare() {
    let _ = effective_address(&[0x8b, 0x43, 0x10], 0, &Gprs::default());
}

/// Instructions with a memory operand they do not access.
fn touches_nothing(m: Mnemonic) -> bool {
    matches!(
        m,
        Mnemonic::Lea
            | Mnemonic::Nop
            | Mnemonic::Prefetch
            | Mnemonic::Prefetchnta
            | Mnemonic::Prefetcht0
            | Mnemonic::Prefetcht1
            | Mnemonic::Prefetcht2
            | Mnemonic::Prefetchw
            | Mnemonic::Prefetchwt1
            | Mnemonic::Bndcl
            | Mnemonic::Bndcn
            | Mnemonic::Bndcu
            | Mnemonic::Bndmk
    )
}

fn is_stack_pointer(r: Register) -> bool {
    matches!(r, Register::RSP | Register::ESP | Register::SP)
}

/// A register's value for an address: general registers from `regs` (a 32-bit one is the low
/// half, the decoder truncates the sum), rip the next instruction's address, the flat
/// segments zero; None for what is not among them (fs/gs bases, vector registers).
fn register_value(reg: Register, regs: &Gprs, next_ip: u64) -> Option<u64> {
    match reg {
        // Not asked for by iced's rip-relative operands (absolute already); kept for safety.
        Register::RIP | Register::EIP => Some(next_ip),
        Register::ES | Register::CS | Register::SS | Register::DS => Some(0),
        r if r.is_gpr64() || r.is_gpr32() => regs.0.get(r.full_register().number()).copied(),
        _ => None,
    }
}

#[cfg(test)]
#[path = "operand_tests.rs"]
mod tests;
