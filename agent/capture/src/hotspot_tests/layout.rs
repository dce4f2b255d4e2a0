//! The layout from VMStructs tables (JDK 17 and 25 names), the code view, blob lookup.

use super::*;

// 10. The layout from VMStructs.

/// Adds field `name` at `off` of type `ty` to the table.
fn field(t: &mut VmTable, name: &str, off: u64, ty: &str) {
    t.fields.insert(name.to_string(), off);
    t.types.insert(name.to_string(), ty.to_string());
}

/// A JDK 17 table: `CodeBlob::_code_begin`, `CompiledMethod::_method`, `Thread::_stack_base`,
/// no kind field.
fn table17() -> VmTable {
    let mut t = VmTable::default();
    field(&mut t, "GrowableArrayBase::_len", 0, "int");
    field(&mut t, "GrowableArray<int>::_data", 8, "int*");
    field(&mut t, "CodeHeap::_memory", 0x10, "VirtualSpace");
    field(&mut t, "CodeHeap::_segmap", 0x60, "VirtualSpace");
    field(&mut t, "CodeHeap::_log2_segment_size", 0xb0, "int");
    field(&mut t, "VirtualSpace::_low", 0x10, "char*");
    field(&mut t, "VirtualSpace::_high", 0x18, "char*");
    field(&mut t, "HeapBlock::_header", 0, "HeapBlock::Header");
    field(&mut t, "HeapBlock::Header::_used", 8, "bool");
    field(&mut t, "StubQueue::_stub_buffer", 8, "address");
    field(&mut t, "StubQueue::_buffer_limit", 0x14, "int");
    field(&mut t, "CodeBlob::_size", 12, "int");
    field(&mut t, "CodeBlob::_frame_complete_offset", 20, "int");
    field(&mut t, "CodeBlob::_frame_size", 28, "int");
    field(&mut t, "CodeBlob::_code_begin", 32, "address");
    field(&mut t, "CompiledMethod::_method", 112, "Method*");
    field(&mut t, "JavaThread::_anchor", 0x2f0, "JavaFrameAnchor");
    field(&mut t, "JavaFrameAnchor::_last_Java_sp", ANCHOR_SP, "intptr_t*");
    field(&mut t, "JavaFrameAnchor::_last_Java_pc", ANCHOR_PC, "address");
    field(&mut t, "JavaFrameAnchor::_last_Java_fp", ANCHOR_FP, "intptr_t*");
    field(&mut t, "Thread::_stack_base", 0x1b8, "address");
    field(&mut t, "Thread::_stack_size", 0x1c0, "size_t");
    field(&mut t, "JavaCallWrapper::_anchor", WRAPPER_ANCHOR, "JavaFrameAnchor");
    field(&mut t, "Method::_constMethod", 8, "ConstMethod*");
    field(&mut t, "ConstMethod::_code_size", 0x2c, "u2");
    t.statics.insert("CodeCache::_heaps".into(), 0x6000_0000);
    t.statics.insert("AbstractInterpreter::_code".into(), 0x6000_0008);
    t.statics.insert("StubRoutines::_call_stub_return_address".into(), 0x6000_0010);
    t.sizes.insert("HeapBlock".into(), 16);
    t.sizes.insert("ConstMethod".into(), 0x38);
    t
}

/// A JDK 25 table: the code as an offset, the kind byte with its constant, the stack on
/// JavaThread, `nmethod::_method`.
fn table25() -> VmTable {
    let mut t = table17();
    for old in ["CodeBlob::_code_begin", "CompiledMethod::_method", "Thread::_stack_base", "Thread::_stack_size"] {
        t.fields.remove(old);
        t.types.remove(old);
    }
    field(&mut t, "CodeBlob::_code_offset", 36, "int");
    field(&mut t, "CodeBlob::_kind", 9, "CodeBlobKind");
    field(&mut t, "nmethod::_method", 96, "Method*");
    field(&mut t, "JavaThread::_stack_base", 0x1f0, "address");
    field(&mut t, "JavaThread::_stack_size", 0x1f8, "size_t");
    t.constants.insert("CodeBlobKind::Nmethod".into(), 1);
    t
}

#[test]
fn layout_from_jdk17_table() {
    let t = table17();
    assert_eq!(Layout::from_table(&t, None), Ok(Layout { nmethod_test: NmethodTest::Unknown, ..layout() }));
    let with_vtable = Layout::from_table(&t, Some(0x7f00_0000_1010)).unwrap();
    assert_eq!(with_vtable.nmethod_test, NmethodTest::Vtable(0x7f00_0000_1010));
    assert_eq!(with_vtable.blob_code, CodeStart::Pointer(32));
    // The older names of the same fields.
    let mut t = table17();
    let len = t.fields.remove("GrowableArrayBase::_len").unwrap();
    t.fields.insert("GenericGrowableArray::_len".into(), len);
    assert_eq!(Layout::from_table(&t, None).unwrap().array_len, 0);
    // Frame constants from the table override the defaults.
    t.constants.insert("frame::entry_frame_call_wrapper_offset".into(), -7);
    t.constants.insert("frame::interpreter_frame_bcp_offset".into(), -9);
    let l = Layout::from_table(&t, None).unwrap();
    assert_eq!((l.entry_call_wrapper, l.interp_bcp, l.interp_method, l.interp_sender_sp), (-7, -9, -3, -1));
}

#[test]
fn layout_from_jdk25_table() {
    let l = Layout::from_table(&table25(), Some(0x7f00_0000_1010)).unwrap();
    // The kind byte wins over the vtable.
    assert_eq!(l.nmethod_test, NmethodTest::Kind { field: Int { off: 9, width: 1 }, nmethod: 1 });
    assert_eq!(l.blob_code, CodeStart::Offset(Int { off: 36, width: 4 }));
    assert_eq!(l.nmethod_method, 96);
    assert_eq!((l.thread_stack_base, l.thread_stack_size), (0x1f0, 0x1f8));
    assert_eq!(l.block_used, Int { off: 8, width: 1 });
    assert_eq!(l.const_code_size, Int { off: 0x2c, width: 2 });
    // The kind field without its constant: the vtable, or nothing.
    let mut t = table25();
    t.constants.remove("CodeBlobKind::Nmethod");
    assert_eq!(Layout::from_table(&t, Some(8)).unwrap().nmethod_test, NmethodTest::Vtable(8));
    assert_eq!(Layout::from_table(&t, None).unwrap().nmethod_test, NmethodTest::Unknown);
}

#[test]
fn layout_names_what_is_missing() {
    let missing = |t: &VmTable| Layout::from_table(t, None).unwrap_err();
    for name in ["JavaCallWrapper::_anchor", "CodeBlob::_frame_size", "HeapBlock::Header::_used"] {
        let mut t = table17();
        t.fields.remove(name);
        assert!(missing(&t).contains(name), "{name}: {}", missing(&t));
    }
    // Neither name of the stack base: the error names one of them.
    let mut t = table17();
    t.fields.remove("Thread::_stack_base");
    assert!(missing(&t).contains("_stack_base"), "{}", missing(&t));
    // Neither the code pointer nor the code offset.
    let mut t = table25();
    t.fields.remove("CodeBlob::_code_offset");
    assert!(missing(&t).contains("CodeBlob::_code_offset"), "{}", missing(&t));
    let mut t = table17();
    t.statics.remove("StubRoutines::_call_stub_return_address");
    assert!(missing(&t).contains("static StubRoutines::_call_stub_return_address"), "{}", missing(&t));
    let mut t = table17();
    t.sizes.remove("HeapBlock");
    assert!(missing(&t).contains("size of HeapBlock"), "{}", missing(&t));
    // An integer type hpm does not read.
    let mut t = table17();
    t.types.insert("CodeBlob::_frame_size".into(), "float".into());
    let e = missing(&t);
    assert!(e.contains("CodeBlob::_frame_size") && e.contains("float"), "{e}");
}

#[test]
fn int_widths_from_types() {
    let mut t = VmTable::default();
    for (i, ty) in ["bool", "u2", "int", "size_t", "Foo*", "uint8_t", "jshort", "uint32_t", "jlong"].iter().enumerate()
    {
        t.fields.insert(format!("F::_{i}"), i as u64);
        t.types.insert(format!("F::_{i}"), ty.to_string());
    }
    t.fields.insert("F::_untyped".into(), 99);
    let widths: Vec<u8> = (0..9).map(|i| t.int(&format!("F::_{i}")).unwrap().width).collect();
    assert_eq!(widths, [1, 2, 4, 8, 8, 1, 2, 4, 8]);
    assert_eq!(t.int("F::_untyped"), Ok(Int { off: 99, width: 8 }));
    assert!(t.int("F::_none").is_err());
}

// The code cache and its blobs.

#[test]
fn code_view_from_the_vm() {
    let l = layout();
    let mut vm: HashMap<u64, u64> = HashMap::new();
    let (array, data, queue) = (0x6100_0000, 0x6100_1000, 0x6100_2000);
    vm.insert(l.call_stub_return, 0x1000_0440);
    vm.insert(l.interpreter_code, queue);
    vm.insert(queue + l.queue_buffer, INTERP_LO);
    // The limit is an int: the high half of the word is another field.
    vm.insert(queue + l.queue_limit.off, 0xffff_ffff_0001_0000);
    vm.insert(l.code_heaps, array);
    vm.insert(array + l.array_len, 0x7_0000_0006); // 6 heaps: only 4 read
    vm.insert(array + l.array_data, data);
    let heaps = [0x6200_0000, 0, 0x6300_0000, 0x6400_0000, 0x6500_0000, 0x6600_0000];
    for (i, &h) in heaps.iter().enumerate() {
        vm.insert(data + 8 * i as u64, h);
        if h == 0 {
            continue;
        }
        let k = i as u64;
        vm.insert(h + l.heap_memory + l.vs_low, 0x1000_0000 * (k + 1));
        vm.insert(h + l.heap_memory + l.vs_high, 0x1000_0000 * (k + 1) + 0x8000);
        vm.insert(h + l.heap_segmap + l.vs_low, 0x2000_0000 * (k + 1));
        vm.insert(h + l.heap_segmap + l.vs_high, 0x2000_0000 * (k + 1) + 0x200);
        // The third heap's segment size is out of range: skipped.
        vm.insert(h + l.heap_log2_segment.off, if i == 2 { 30 } else { 6 + k });
    }
    let read = RefCell::new(Vec::new());
    let v = CodeView::read(&l, |a| {
        read.borrow_mut().push(a);
        vm.get(&a).copied().unwrap_or(0)
    });
    assert_eq!(v.call_stub_return, 0x1000_0440);
    assert_eq!(v.interp, (INTERP_LO, INTERP_LO + 0x1_0000));
    assert_eq!(v.nheaps, 2);
    assert_eq!(
        v.heaps[..2],
        [
            Heap { low: 0x1000_0000, high: 0x1000_8000, seg_low: 0x2000_0000, seg_high: 0x2000_0200, log2_segment: 6 },
            Heap { low: 0x4000_0000, high: 0x4000_8000, seg_low: 0x8000_0000, seg_high: 0x8000_0200, log2_segment: 9 },
        ]
    );
    assert!(!read.borrow().contains(&(data + 32)), "a heap past MAX_HEAPS was read");
    assert!(v.contains(0x1000_0000) && v.contains(0x4000_7fff));
    assert!(!v.contains(0x1000_8000) && !v.contains(0x3000_0000) && !v.contains(INTERP_LO));
    assert!(v.in_interpreter(INTERP_LO) && !v.in_interpreter(INTERP_LO + 0x1_0000));
    // A VM without the statics set yet.
    let empty = CodeView::read(&l, |a| if a == l.call_stub_return { 5 } else { 0 });
    assert_eq!(empty, CodeView { call_stub_return: 5, ..CodeView::default() });
}

#[test]
fn blob_lookup_through_the_segment_map() {
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let start = a - CODE_OFF;
    let end = start + (BLOB_SEGS << LOG2_SEG) - 16;
    let blob = Blob { start, end, frame_words: 4, frame_complete: a + COMPLETE, method: M_A, is_nmethod: true };
    // Any pc of the blob, through hops back.
    for pc in [a, a + 1, start + 15 * 64, start + (BLOB_SEGS << LOG2_SEG) - 17] {
        assert_eq!(f.blob_of(pc), Some(blob), "pc {pc:#x}");
    }
    // Past the blob's size; in a free segment; outside the heap.
    assert_eq!(f.blob_of(start + (BLOB_SEGS << LOG2_SEG) - 16), None);
    assert_eq!(f.blob_of(HEAP_LO + (100 << LOG2_SEG)), None);
    assert_eq!(f.blob_of(HEAP_HI), None);
    assert_eq!(f.blob_of(HEAP_LO - 1), None);
    // A long blob: hops of up to 254 segments.
    let first = 100;
    let long = f.blob_at(first, 400, KIND_STUB, 6, 0x10, 0);
    for seg in [1, 253, 254, 255, 300, 399] {
        let b = f.blob_of(HEAP_LO + ((first + seg) << LOG2_SEG) + 5).unwrap();
        assert_eq!((b.start, b.frame_words, b.is_nmethod, b.method), (long, 6, false, 0), "segment {seg}");
    }
    // A block not in use.
    f.put_bytes(start - 8, &[0]);
    assert_eq!(f.blob_of(a), None);
    f.put_bytes(start - 8, &[1]);
    // A segment map hopping back past the heap's start, or through a free segment.
    f.put_bytes(SEG_LO + 17, &[200]);
    assert_eq!(f.blob_of(HEAP_LO + (17 << LOG2_SEG)), None);
    f.put_bytes(SEG_LO + 17, &[1]);
    f.put_bytes(SEG_LO + 16, &[FREE_SEGMENT]);
    assert_eq!(f.blob_of(HEAP_LO + (17 << LOG2_SEG)), None);
    assert!(f.mem.violations.borrow().is_empty());
}

#[test]
fn blob_header_checks() {
    let mut f = Fake::new();
    // Too near the heap's end for its header to be read whole.
    let start = f.blob_at(SEGS - 8, 8, KIND_NMETHOD, 4, 0, M_A);
    assert_eq!(f.blob_of(start + CODE_OFF), None);
    // Size zero or negative.
    let a = f.nmethod(4, M_A);
    let start = a - CODE_OFF;
    for size in [0_i32, -5] {
        f.put_bytes(start + 12, &size.to_le_bytes());
        assert_eq!(f.blob_of(a), None);
    }
    // A blob smaller than its block: pcs past its size are not in it.
    f.put_bytes(start + 12, &500_i32.to_le_bytes());
    assert!(f.blob_of(start + 499).is_some());
    assert_eq!(f.blob_of(start + 500), None);
    f.put_bytes(start + 12, &1000_i32.to_le_bytes());
    // No frame_complete offset: complete from the code's start.
    f.put_bytes(start + 20, &(-1_i32).to_le_bytes());
    assert_eq!(f.blob_of(a).unwrap().frame_complete, a);
    // JDK 23 and later: the code as an int offset from the blob.
    f.layout.blob_code = CodeStart::Offset(Int { off: 40, width: 4 });
    f.put_bytes(start + 40, &0x120_i32.to_le_bytes());
    f.put_bytes(start + 20, &0x10_i32.to_le_bytes());
    assert_eq!(f.blob_of(a).unwrap().frame_complete, start + 0x130);
    assert!(f.mem.violations.borrow().is_empty());
}
