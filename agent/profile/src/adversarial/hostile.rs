//! Hostile `.jfr` files: small files whose content a naive reader multiplies. Each shape is
//! built by hand (metadata, constant pools and events as bytes) to the size asked, so a test
//! can measure a reader's peak memory against the file's size, and the fuzz corpus can start
//! from them (`fuzz/corpus/jfr/hostile-*`).
//!
//! What each one attacks:
//! - structs without fields take no bytes, yet every value of one is made: arrays of arrays of
//!   them ([`empty_struct_arrays`]) and structs made of them ([`empty_struct_fields`]);
//! - one long string named many times: by metadata elements ([`metadata_string_refs`]), by the
//!   methods of a stack ([`pooled_name_refs`]), by threads ([`thread_name_refs`]), by phase
//!   markers ([`phase_name_refs`]), by compiled-code events ([`code_refs`]);
//! - many chunks, each with counters of its own ([`counters_per_chunk`]);
//! - many threads sharing one deep stack, for the per-thread tree ([`threads_of_a_deep_stack`]);
//! - many virtual threads, one sample each, as the JDK records a program that starts millions
//!   ([`many_virtual_threads`]);
//! - many drop reasons and allocation events of one long class name: time, not memory
//!   ([`drop_reasons`], [`allocation_class_refs`]).

use crate::jfr::event::EventBuf;
use crate::jfr::parser::{CONSTANT_POOL_TYPE_ID, HEADER_SIZE, MAGIC, METADATA_TYPE_ID};
use crate::jfr::schema::{self, *};
use crate::jfr::varint::{put_string, put_string_ref, put_varint, varint_len};

/// A hostile shape: its name (the fuzz corpus file is `hostile-NAME`), how to make a file of
/// about `bytes` bytes, and the `hpm` arguments after the file's path that reach what it
/// attacks.
pub struct Shape {
    pub name: &'static str,
    pub make: fn(usize) -> Vec<u8>,
    pub args: &'static [&'static str],
}

/// Every shape, for the tests, the benchmark and the fuzz corpus.
pub const SHAPES: &[Shape] = &[
    Shape { name: "empty-struct-arrays-pool", make: |n| empty_struct_arrays(n, true), args: &[] },
    Shape { name: "empty-struct-arrays-event", make: |n| empty_struct_arrays(n, false), args: &[] },
    Shape { name: "empty-struct-fields", make: empty_struct_fields, args: &[] },
    Shape { name: "metadata-string-refs", make: metadata_string_refs, args: &[] },
    Shape { name: "pooled-name-refs", make: pooled_name_refs, args: &[] },
    Shape { name: "thread-name-refs", make: thread_name_refs, args: &["--threads"] },
    Shape { name: "phase-name-refs", make: phase_name_refs, args: &["--from-phase", "none"] },
    Shape { name: "code-refs", make: code_refs, args: &[] },
    Shape { name: "counters-per-chunk", make: counters_per_chunk, args: &[] },
    Shape { name: "threads-of-a-deep-stack", make: threads_of_a_deep_stack, args: &["--threads"] },
    Shape { name: "many-virtual-threads", make: many_virtual_threads, args: &["--threads", "--vthreads", "each"] },
    Shape { name: "drop-reasons", make: drop_reasons, args: &[] },
    Shape { name: "allocation-class-refs", make: allocation_class_refs, args: &["--event", "alloc"] },
];

/// One constant pool of a chunk: its type, number of entries and their bytes (key, value...).
struct Pool {
    type_id: u64,
    count: u64,
    body: Vec<u8>,
}

impl Pool {
    fn new(type_id: u64) -> Pool {
        Pool { type_id, count: 0, body: Vec::new() }
    }

    /// Adds entry `key`; `value` writes its bytes.
    fn entry(&mut self, key: u64, value: impl FnOnce(&mut Vec<u8>)) -> &mut Pool {
        put_varint(&mut self.body, key);
        value(&mut self.body);
        self.count += 1;
        self
    }
}

/// Appends an event record of `type_id` whose fields `body` writes.
fn event(out: &mut Vec<u8>, type_id: u64, body: impl FnOnce(&mut Vec<u8>)) {
    let mut b = Vec::new();
    body(&mut b);
    EventBuf::new(type_id).bytes(&b).finish(out);
}

const START: u64 = 1_000_000_000;

/// A chunk: header, `events` (records), one constant-pool event holding `pools`, and a
/// metadata event whose body after its id is `tree` (an encoded string table and element tree).
fn chunk_of_tree(tree: &[u8], events: &[u8], pools: &[Pool]) -> Vec<u8> {
    let mut out = vec![0u8; HEADER_SIZE];
    out.extend_from_slice(events);
    let cp_offset = if pools.is_empty() {
        0
    } else {
        let at = out.len();
        let mut body = Vec::new();
        put_varint(&mut body, START);
        put_varint(&mut body, 0); // duration
        put_varint(&mut body, 0); // no older pool event
        body.push(0); // flags
        put_varint(&mut body, pools.len() as u64);
        for p in pools {
            put_varint(&mut body, p.type_id);
            put_varint(&mut body, p.count);
            body.extend_from_slice(&p.body);
        }
        EventBuf::new(CONSTANT_POOL_TYPE_ID).bytes(&body).finish(&mut out);
        at
    };
    let meta_offset = out.len();
    EventBuf::new(METADATA_TYPE_ID).long(START).long(0).long(1).bytes(tree).finish(&mut out);
    let size = out.len() as u64;
    let mut h = Vec::with_capacity(HEADER_SIZE);
    h.extend_from_slice(MAGIC);
    h.extend_from_slice(&2u16.to_be_bytes());
    h.extend_from_slice(&0u16.to_be_bytes());
    h.extend_from_slice(&size.to_be_bytes());
    h.extend_from_slice(&(cp_offset as u64).to_be_bytes());
    h.extend_from_slice(&(meta_offset as u64).to_be_bytes());
    h.extend_from_slice(&1_700_000_000_000_000_000u64.to_be_bytes());
    h.extend_from_slice(&START.to_be_bytes()); // duration
    h.extend_from_slice(&START.to_be_bytes()); // start ticks
    h.extend_from_slice(&1_000_000_000u64.to_be_bytes());
    h.extend_from_slice(&1u32.to_be_bytes()); // finished, compressed integers
    out[..HEADER_SIZE].copy_from_slice(&h);
    out
}

/// [`chunk_of_tree`] with the metadata of `types`.
fn chunk(types: &[TypeDef], events: &[u8], pools: &[Pool]) -> Vec<u8> {
    let mut tree = Vec::new();
    schema::metadata_tree(types).encode_tree(&mut tree);
    chunk_of_tree(&tree, events, pools)
}

/// hpm's built-in types and its event types of the given ids.
fn types_with_events(ids: &[u64]) -> Vec<TypeDef> {
    let mut t = builtin_types();
    let defs = event_defs(&[], &[]).into_iter().chain(jvm_event_defs()).chain(mark_event_defs());
    t.extend(defs.filter(|d| ids.contains(&d.id)).map(|d| d.to_type()));
    t
}

/// A struct type of the given fields (no annotations).
fn strukt(id: u64, name: &str, fields: Vec<FieldDef>) -> TypeDef {
    TypeDef { annotations: vec![], ..TypeDef::strukt(id, name, "", fields) }
}

fn field(name: &str, type_id: u64) -> FieldDef {
    FieldDef { annotations: vec![], ..FieldDef::new(name, type_id, "") }
}

const T_EMPTY: u64 = 300;

/// Counts for `n` arrays in a row, each as large as the bytes after its own count allow (the
/// bound a reader checks a count against): the last 0, each earlier one the size of the
/// counts after it. Returns them encoded.
fn greedy_counts(n: usize) -> Vec<u8> {
    let mut counts = Vec::with_capacity(n);
    let mut after = 0u64;
    for _ in 0..n {
        counts.push(after);
        after += varint_len(after) as u64;
    }
    let mut out = Vec::new();
    for c in counts.iter().rev() {
        put_varint(&mut out, *c);
    }
    out
}

/// An array of `holders`, each holding an array of structs without fields: every holder's
/// count is checked against the bytes left, which its elements never use, so the holders'
/// elements add up to the square of the file's size. In a constant pool (`in_pool`, read
/// whatever the events) or in `jdk.ExecutionSample` events (read by every command).
pub fn empty_struct_arrays(bytes: usize, in_pool: bool) -> Vec<u8> {
    const T_HOLDER: u64 = 301;
    const T_OUTER: u64 = 302;
    let holder = strukt(T_HOLDER, "hostile.Holder", vec![FieldDef { array: true, ..field("items", T_EMPTY) }]);
    let holders = FieldDef { array: true, ..field("holders", T_HOLDER) };
    let mut types = types_with_events(&[EVENT_EXECUTION_SAMPLE]);
    types.extend([strukt(T_EMPTY, "hostile.Empty", vec![]), holder]);
    // One holder per 3 bytes (its count) of what is left after ~8 KB of metadata.
    let n = bytes.saturating_sub(8 << 10) / 3 + 1;
    let mut body = Vec::new();
    put_varint(&mut body, n as u64);
    body.extend(greedy_counts(n));
    if in_pool {
        types.push(strukt(T_OUTER, "hostile.Outer", vec![holders]));
        let mut pool = Pool::new(T_OUTER);
        pool.entry(1, |b| b.extend_from_slice(&body));
        chunk(&types, &[], &[pool])
    } else {
        let sample = types.iter_mut().find(|t| t.id == EVENT_EXECUTION_SAMPLE).expect("declared");
        sample.fields.push(holders);
        let mut events = Vec::new();
        event(&mut events, EVENT_EXECUTION_SAMPLE, |b| {
            b.extend_from_slice(&[1, 0, 0, 0]); // startTime, thread, stack, state
            b.extend_from_slice(&body);
        });
        chunk(&types, &events, &[])
    }
}

/// Structs of structs without fields, each level two fields of the one below: one value of
/// the top type, written as zero bytes, is 2^40 values. A string pool before it makes the
/// file `bytes` long.
pub fn empty_struct_fields(bytes: usize) -> Vec<u8> {
    const LEVELS: u64 = 40;
    let mut types = builtin_types();
    types.push(strukt(T_EMPTY, "hostile.Empty", vec![]));
    for level in 1..=LEVELS {
        let below = if level == 1 { T_EMPTY } else { T_EMPTY + level - 1 };
        types.push(strukt(
            T_EMPTY + level,
            &format!("hostile.Nest{level}"),
            vec![field("a", below), field("b", below)],
        ));
    }
    let mut padding = Pool::new(T_STRING);
    padding.entry(1, |b| put_string(b, Some(&"p".repeat(bytes.saturating_sub(4 << 10)))));
    let mut pool = Pool::new(T_EMPTY + LEVELS);
    pool.entry(1, |_| {});
    chunk(&types, &[], &[padding, pool])
}

/// A metadata event whose string table holds one string of a third of the file, named by
/// thousands of attributes, type names and field names (a pair of bytes each).
pub fn metadata_string_refs(bytes: usize) -> Vec<u8> {
    let long = bytes / 3;
    let refs = bytes / 3;
    // String table: 0 the long string, then the element and attribute names, then ids.
    let fixed = ["root", "metadata", "class", "name", "id", "field", "long", "11", "12", "hostile.Fields"];
    let (root, metadata, class, name, id, fld, long_name, id11, id12, fields_name) = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10);
    let classes = refs / 3 / 12;
    let mut strings: Vec<String> = vec!["x".repeat(long)];
    strings.extend(fixed.iter().map(|s| s.to_string()));
    let first_id = strings.len() as u64;
    strings.extend((0..classes).map(|i| (1000 + i).to_string()));
    let mut tree = Vec::new();
    put_varint(&mut tree, strings.len() as u64);
    for s in &strings {
        put_string(&mut tree, Some(s));
    }
    let element = |out: &mut Vec<u8>, name: u64, attrs: &[(u64, u64)], children: u64| {
        put_varint(out, name);
        put_varint(out, attrs.len() as u64);
        for (k, v) in attrs {
            put_varint(out, *k);
            put_varint(out, *v);
        }
        put_varint(out, children);
    };
    // <root> with a third of the references as attributes (long = long), one child.
    put_varint(&mut tree, root);
    let pairs = refs / 3 / 2;
    put_varint(&mut tree, pairs as u64);
    for _ in 0..pairs {
        tree.extend_from_slice(&[0, 0]);
    }
    put_varint(&mut tree, 1);
    // <metadata>: `long`, a type with a third of the references as field names, and a third
    // as type names.
    element(&mut tree, metadata, &[], 2 + classes as u64);
    element(&mut tree, class, &[(name, long_name), (id, id11)], 0);
    let nfields = refs / 3 / 7;
    element(&mut tree, class, &[(name, fields_name), (id, id12)], nfields as u64);
    for _ in 0..nfields {
        element(&mut tree, fld, &[(name, 0), (class, id11)], 0);
    }
    for i in 0..classes as u64 {
        element(&mut tree, class, &[(name, 0), (id, first_id + i)], 0);
    }
    chunk_of_tree(&tree, &[], &[])
}

/// Pools shared by the shapes below: thread 1 `main`, the state and frame type, class 1 and
/// method 1 named by symbol 1 (`f`), stack 1 of one frame of method 1, and symbol 3, `long`,
/// naming class 2.
fn basic_pools(long: &str) -> Vec<Pool> {
    let mut threads = Pool::new(T_THREAD);
    threads.entry(1, |b| {
        put_string(b, Some("main"));
        put_varint(b, 1);
        put_string(b, Some("main"));
        put_varint(b, 1);
        put_varint(b, 0);
        put_varint(b, 0); // not virtual
    });
    let mut states = Pool::new(T_THREAD_STATE);
    states.entry(1, |b| put_string(b, Some("STATE_RUNNABLE")));
    let mut frame_types = Pool::new(T_FRAME_TYPE);
    frame_types.entry(1, |b| put_string(b, Some("JIT compiled")));
    let mut symbols = Pool::new(T_SYMBOL);
    symbols.entry(1, |b| put_string(b, Some("f")));
    symbols.entry(2, |b| put_string(b, Some("()V")));
    symbols.entry(3, |b| put_string(b, Some(long)));
    let mut classes = Pool::new(T_CLASS);
    classes.entry(1, |b| b.extend_from_slice(&[0, 1, 0, 1, 0]));
    classes.entry(2, |b| b.extend_from_slice(&[0, 3, 0, 1, 0]));
    let mut methods = Pool::new(T_METHOD);
    methods.entry(1, |b| b.extend_from_slice(&[1, 1, 2, 1, 0]));
    let mut stacks = Pool::new(T_STACK_TRACE);
    // Not truncated, one frame: method 1, line 1, bci 1, type 1, a Java frame.
    stacks.entry(1, |b| b.extend_from_slice(&[0, 1, 1, 1, 1, 1, 1]));
    vec![threads, states, frame_types, symbols, classes, methods, stacks]
}

fn pool_mut(pools: &mut [Pool], type_id: u64) -> &mut Pool {
    pools.iter_mut().find(|p| p.type_id == type_id).expect("a basic pool")
}

/// A sample of thread `thread` in stack `stack`.
fn sample(events: &mut Vec<u8>, thread: u64, stack: u64) {
    event(events, EVENT_EXECUTION_SAMPLE, |b| {
        put_varint(b, START);
        put_varint(b, thread);
        put_varint(b, stack);
        put_varint(b, 1);
    });
}

/// A symbol just under the name limit naming a class, and thousands of methods of that class
/// (each with other modifiers, so each is a method of its own) named and described by it,
/// all in one stack.
pub fn pooled_name_refs(bytes: usize) -> Vec<u8> {
    let mut pools = basic_pools(&"x".repeat(60_000));
    let n = bytes.saturating_sub(70_000) / 16 + 1;
    let methods = pool_mut(&mut pools, T_METHOD);
    for k in 2..=n as u64 + 1 {
        methods.entry(k, |b| {
            b.extend_from_slice(&[2, 3, 3]); // class 2, name and descriptor: the long symbol
            put_varint(b, k); // modifiers: a method of its own
            b.push(0);
        });
    }
    let stacks = pool_mut(&mut pools, T_STACK_TRACE);
    stacks.entry(2, |b| {
        b.push(0);
        put_varint(b, n as u64);
        for k in 2..=n as u64 + 1 {
            put_varint(b, k);
            b.extend_from_slice(&[1, 1, 1, 1]);
        }
    });
    let mut events = Vec::new();
    sample(&mut events, 1, 2);
    chunk(&types_with_events(&[EVENT_EXECUTION_SAMPLE]), &events, &pools)
}

/// One string of half the file named by thousands of threads, each with a sample.
pub fn thread_name_refs(bytes: usize) -> Vec<u8> {
    let mut pools = basic_pools("long");
    let mut strings = Pool::new(T_STRING);
    strings.entry(1, |b| put_string(b, Some(&"t".repeat(bytes / 2))));
    pools.push(strings);
    let n = bytes / 2 / 16 + 1;
    let threads = pool_mut(&mut pools, T_THREAD);
    for k in 2..=n as u64 + 1 {
        threads.entry(k, |b| {
            put_string_ref(b, 1);
            put_varint(b, k);
            put_string_ref(b, 1);
            put_varint(b, k);
            put_varint(b, 0);
            put_varint(b, 0); // not virtual
        });
    }
    let mut events = Vec::new();
    for k in 2..=n as u64 + 1 {
        sample(&mut events, k, 1);
    }
    chunk(&types_with_events(&[EVENT_EXECUTION_SAMPLE]), &events, &pools)
}

/// One string of half the file naming thousands of phase markers.
pub fn phase_name_refs(bytes: usize) -> Vec<u8> {
    let mut pools = basic_pools("long");
    let mut strings = Pool::new(T_STRING);
    strings.entry(1, |b| put_string(b, Some(&"p".repeat(bytes / 2))));
    pools.push(strings);
    let mut events = Vec::new();
    sample(&mut events, 1, 1);
    for i in 0..(bytes / 2 / 8) as u64 {
        event(&mut events, EVENT_HPM_PHASE, |b| {
            put_varint(b, START + i);
            put_varint(b, 1);
            put_string_ref(b, 1);
            put_varint(b, i);
        });
    }
    chunk(&types_with_events(&[EVENT_EXECUTION_SAMPLE, EVENT_HPM_PHASE]), &events, &pools)
}

/// One hex string of half the file as the code of thousands of compiled-code events, each at
/// another address.
pub fn code_refs(bytes: usize) -> Vec<u8> {
    let mut pools = basic_pools("long");
    let mut strings = Pool::new(T_STRING);
    let hex_len = (bytes / 2) & !1;
    strings.entry(1, |b| put_string(b, Some(&"90".repeat(hex_len / 2))));
    pools.push(strings);
    let mut events = Vec::new();
    sample(&mut events, 1, 1);
    for i in 0..(bytes / 2 / 12) as u64 {
        event(&mut events, EVENT_HPM_COMPILED_CODE, |b| {
            put_varint(b, START);
            put_varint(b, 1); // method
            put_varint(b, 0x1000_0000 + i * 0x1000); // address
            put_varint(b, hex_len as u64 / 2); // size
            put_string_ref(b, 1);
        });
    }
    chunk(&types_with_events(&[EVENT_EXECUTION_SAMPLE, EVENT_HPM_COMPILED_CODE]), &events, &pools)
}

/// Chunks of one sample each, every chunk declaring counters named as no other chunk's: the
/// counters of the whole file times the samples.
pub fn counters_per_chunk(bytes: usize) -> Vec<u8> {
    const COUNTERS: usize = 4;
    let mut out = Vec::new();
    let mut i = 0;
    while out.len() < bytes.max(1) {
        let mut sample_type = strukt(EVENT_HPM_SAMPLE, "hpm.Sample", vec![field("startTime", T_LONG)]);
        sample_type.super_type = Some("jdk.jfr.Event");
        sample_type.fields.extend((0..COUNTERS).map(|c| field(&format!("c{i}x{c}"), T_LONG)));
        let types = [strukt(T_LONG, "long", vec![]), sample_type];
        let mut events = Vec::new();
        event(&mut events, EVENT_HPM_SAMPLE, |b| b.extend_from_slice(&[1; COUNTERS + 1]));
        out.extend(chunk(&types, &events, &[]));
        i += 1;
    }
    out
}

/// A stack a third of the file deep and thousands of threads with a sample in it each.
pub fn threads_of_a_deep_stack(bytes: usize) -> Vec<u8> {
    let mut pools = basic_pools("long");
    let depth = bytes / 3 / 5 + 1;
    let stacks = pool_mut(&mut pools, T_STACK_TRACE);
    stacks.entry(2, |b| {
        b.push(0);
        put_varint(b, depth as u64);
        for _ in 0..depth {
            b.extend_from_slice(&[1, 1, 1, 1, 1]);
        }
    });
    let n = bytes / 3 / 12 + 1;
    let threads = pool_mut(&mut pools, T_THREAD);
    for k in 2..=n as u64 + 1 {
        threads.entry(k, |b| {
            put_string(b, Some("t"));
            put_varint(b, k);
            put_string(b, Some("t"));
            put_varint(b, k);
            put_varint(b, 0);
            put_varint(b, 0); // not virtual
        });
    }
    let mut events = Vec::new();
    for k in 2..=n as u64 + 1 {
        sample(&mut events, k, 2);
    }
    chunk(&types_with_events(&[EVENT_EXECUTION_SAMPLE]), &events, &pools)
}

/// Thousands of virtual threads (unnamed, no OS thread, each its own Java id), a sample each.
pub fn many_virtual_threads(bytes: usize) -> Vec<u8> {
    let mut pools = basic_pools("long");
    let n = bytes / 20 + 1;
    let threads = pool_mut(&mut pools, T_THREAD);
    for k in 2..=n as u64 + 1 {
        threads.entry(k, |b| {
            put_string(b, None);
            put_varint(b, 0);
            put_string(b, Some(""));
            put_varint(b, k);
            put_varint(b, 0);
            put_varint(b, 1); // virtual
        });
    }
    let mut events = Vec::new();
    for k in 2..=n as u64 + 1 {
        sample(&mut events, k, 1);
    }
    chunk(&types_with_events(&[EVENT_EXECUTION_SAMPLE]), &events, &pools)
}

/// Thousands of drop events, each with a reason of its own.
pub fn drop_reasons(bytes: usize) -> Vec<u8> {
    let mut events = Vec::new();
    let mut i = 0u64;
    while events.len() < bytes.saturating_sub(8 << 10) {
        event(&mut events, EVENT_HPM_DROPS, |b| {
            put_varint(b, START);
            put_string(b, Some(&format!("r{i}")));
            put_varint(b, 1);
        });
        i += 1;
    }
    let mut out = events;
    sample(&mut out, 1, 1);
    chunk(&types_with_events(&[EVENT_EXECUTION_SAMPLE, EVENT_HPM_DROPS]), &out, &basic_pools("long"))
}

/// A class named by a symbol of half the file, allocated by thousands of allocation events.
pub fn allocation_class_refs(bytes: usize) -> Vec<u8> {
    let pools = basic_pools(&"c".repeat(bytes / 2));
    let mut events = Vec::new();
    for i in 0..(bytes / 2 / 8) as u64 {
        event(&mut events, EVENT_OBJECT_ALLOCATION_SAMPLE, |b| {
            put_varint(b, START + i);
            b.extend_from_slice(&[1, 1, 2]); // thread, stack, class 2
            put_varint(b, 1024);
        });
    }
    chunk(&types_with_events(&[EVENT_OBJECT_ALLOCATION_SAMPLE]), &events, &pools)
}
