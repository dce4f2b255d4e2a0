use super::*;

const RAX: usize = 0;
const RBX: usize = 3;
const RSP: usize = 4;
const RSI: usize = 6;
const RDI: usize = 7;
const R11: usize = 11;
const R12: usize = 12;

fn regs(set: &[(usize, u64)]) -> Gprs {
    let mut g = Gprs::default();
    for &(r, v) in set {
        g.0[r] = v;
    }
    g
}

#[test]
fn a_field_load_gives_its_address_and_the_object() {
    // mov eax, [rbx+0x10]
    let a = sampled_access(&[0x8b, 0x43, 0x10], 0x1000, &regs(&[(RBX, 0x7000)])).unwrap();
    assert_eq!((a.address, a.displacement, a.size, a.access, a.len), (0x7010, 0x10, 4, Access::Load, 3));
    assert_eq!(a.object_guess(), Some(0x7000));
}

#[test]
fn a_compressed_oop_access_splits_into_heap_base_index_and_offset() {
    // mov eax, [r12+r11*8+0xc]: HotSpot's field load through a narrow oop (r12 = heap base).
    let r = regs(&[(R12, 0x8_0000_0000), (R11, 0x100)]);
    let a = sampled_access(&[0x43, 0x8b, 0x44, 0xdc, 0x0c, 0x90, 0x90], 0, &r).unwrap();
    assert_eq!(a.address, 0x8_0000_0800 + 0xc);
    assert_eq!(a.object_guess(), Some(0x8_0000_0800), "the decoded narrow oop");
    assert_eq!(a.len, 5, "trailing bytes are not part of it");
}

#[test]
fn stores_and_updates_are_told_apart_from_loads() {
    // mov [rdi+8], rsi
    let s = sampled_access(&[0x48, 0x89, 0x77, 0x08], 0, &regs(&[(RDI, 0x500), (RSI, 1)])).unwrap();
    assert_eq!((s.address, s.size, s.access), (0x508, 8, Access::Store));
    // add dword [rax], 1
    let u = sampled_access(&[0x83, 0x00, 0x01], 0, &regs(&[(RAX, 0x900)])).unwrap();
    assert_eq!((u.address, u.access), (0x900, Access::Update));
}

#[test]
fn rip_relative_and_absolute_addresses_have_no_object_guess() {
    // mov rax, [rip+0x10] at 0x1000: the next instruction (0x1007) plus 0x10.
    let a = sampled_access(&[0x48, 0x8b, 0x05, 0x10, 0, 0, 0], 0x1000, &Gprs::default()).unwrap();
    assert_eq!(a.address, 0x1017);
    assert_eq!(a.object_guess(), None);
}

#[test]
fn explicit_operands_win_over_the_stack() {
    // push qword [rbx]: reads [rbx], writes [rsp-8].
    let r = regs(&[(RBX, 0x4000), (RSP, 0x7fff_0000)]);
    let a = sampled_access(&[0xff, 0x33], 0, &r).unwrap();
    assert_eq!((a.address, a.access), (0x4000, Access::Load));
    // ret: only the stack.
    let a = sampled_access(&[0xc3], 0, &r).unwrap();
    assert_eq!((a.address, a.access), (0x7fff_0000, Access::Load));
}

#[test]
fn a_32_bit_address_is_truncated_as_the_cpu_does() {
    // mov eax, [ebx+4]
    let a = sampled_access(&[0x67, 0x8b, 0x43, 0x04], 0, &regs(&[(RBX, 0xffff_ffff_0000_0010)])).unwrap();
    assert_eq!(a.address, 0x14);
}

#[test]
fn instructions_without_an_address_say_why() {
    let r = regs(&[(RBX, 0x10)]);
    // lea rax, [rbx+8]: an address, no access.
    assert_eq!(sampled_access(&[0x48, 0x8d, 0x43, 0x08], 0, &r), Err(NoAccess::NoMemoryOperand));
    // add eax, ebx
    assert_eq!(sampled_access(&[0x01, 0xd8], 0, &r), Err(NoAccess::NoMemoryOperand));
    // mov rax, fs:[0x28]
    let fs = [0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0];
    assert_eq!(sampled_access(&fs, 0, &r), Err(NoAccess::ThreadLocal));
    // push es (invalid in 64-bit mode), a cut-off instruction, nothing.
    for bytes in [&[0x06][..], &[0x8b][..], &[][..]] {
        assert_eq!(sampled_access(bytes, 0, &r), Err(NoAccess::Undecodable), "{bytes:x?}");
    }
}

#[test]
fn a_gather_is_not_one_address() {
    // vpgatherdd xmm0, [rax+xmm1*4], xmm2
    let g = [0xc4, 0xe2, 0x69, 0x90, 0x04, 0x88];
    assert_eq!(sampled_access(&g, 0, &regs(&[(RAX, 0x10)])), Err(NoAccess::VectorIndex));
}

#[test]
fn the_summary_line_counts_kinds_and_reasons() {
    let mut d = DataStats::default();
    assert_eq!(d.line(), None);
    let load = sampled_access(&[0x8b, 0x43, 0x10], 0, &regs(&[(RBX, 0x7000)])).unwrap();
    for _ in 0..3 {
        d.record(Ok(&load));
    }
    d.record(Err(NOT_CAPTURED));
    d.record(Err(NoAccess::NoMemoryOperand.name()));
    d.record(Err(NoAccess::NoMemoryOperand.name()));
    assert_eq!(
        d.line().unwrap(),
        "data addresses: 3 of 6 samples (50.0%) from their instruction: 3 loads, 0 stores, 0 updates; \
         none for: no_memory_operand 2, outside_java_code 1"
    );
}

#[test]
fn the_handler_s_address_agrees_with_the_full_decoding() {
    let r = regs(&[
        (RAX, 0x900),
        (RBX, 0x7000),
        (RDI, 0x500),
        (RSI, 1),
        (R11, 0x100),
        (R12, 0x8_0000_0000),
        (RSP, 0x7fff_0000),
    ]);
    for code in [
        &[0x8b, 0x43, 0x10][..],
        &[0x43, 0x8b, 0x44, 0xdc, 0x0c],
        &[0x48, 0x89, 0x77, 0x08],
        &[0x83, 0x00, 0x01],
        &[0x48, 0x8b, 0x05, 0x10, 0, 0, 0],
        &[0xff, 0x33],
        &[0x8b, 0x43, 0xf0],
    ] {
        let full = sampled_access(code, 0x1000, &r).unwrap();
        let quick = effective_address(code, 0x1000, &r).unwrap();
        assert_eq!(
            (quick.address, quick.displacement, quick.register_based),
            (full.address, full.displacement, full.register_based),
            "{code:x?}"
        );
    }
    // [r12 + r11*8 + 0xc]: the base is the heap base, the object is address - offset.
    let q = effective_address(&[0x43, 0x8b, 0x44, 0xdc, 0x0c], 0, &r).unwrap();
    assert_eq!((q.base, q.address - q.displacement as u64), (0x8_0000_0000, 0x8_0000_0800));
    // Stack-pointer bases are not object candidates.
    let s = effective_address(&[0x48, 0x8b, 0x44, 0x24, 0x08], 0, &r).unwrap(); // mov rax, [rsp+8]
    assert_eq!((s.address, s.base), (0x7fff_0008, 0));
}

#[test]
fn instructions_that_touch_no_memory_give_no_address_to_read() {
    let r = regs(&[(RAX, 0xdead_0000), (RBX, 0x7000)]);
    for code in [
        &[0x48, 0x8d, 0x43, 0x10][..],               // lea rax, [rbx+0x10]
        &[0x0f, 0x1f, 0x44, 0x00, 0x00],             // nop dword [rax+rax]
        &[0x0f, 0x18, 0x0b],                         // prefetcht0 [rbx]
        &[0x64, 0x48, 0x8b, 0x04, 0x25, 0, 0, 0, 0], // mov rax, fs:[0]
        &[0x48, 0x89, 0xd8],                         // mov rax, rbx
        &[0xff, 0xff],                               // invalid
    ] {
        assert_eq!(effective_address(code, 0, &r), None, "{code:x?}");
    }
}
