//! The types hpm writes: the event types, each declared once in a table and turned into the
//! metadata element tree (the `jdk.types.*` structs are in [`typedef`], the ids in [`ids`]).
//!
//! To add an event type (say `hpm.Region`, a counter region with a duration):
//! 1. take an unused id from the `EVENT_*` range of [`ids`];
//! 2. add an [`EventDef`] to [`event_defs`]: fields `start_time_field()`, then
//!    `duration_field()` (the JDK requires this order), then its own fields, with labels;
//! 3. in the writer, emit one record per instance with an [`EventBuf`], writing the fields
//!    in the declared order (pool references through [`Pools`]);
//! 4. read it back with [`Chunk::events_named`] and the [`ObjectView`] accessors.
//!
//! [`typedef`]: super::typedef
//! [`ids`]: super::ids
//! [`EventBuf`]: super::event::EventBuf
//! [`Pools`]: super::pools::Pools
//! [`Chunk::events_named`]: super::value::Chunk::events_named
//! [`ObjectView`]: super::value::ObjectView

pub use super::ids::*;
use super::metadata::Element;
pub use super::typedef::*;

pub const HPM_CATEGORY: &[&str] = &["hpm"];

/// The name of the event type holding compiled code (`Recording::code`).
pub const COMPILED_CODE_EVENT: &str = "hpm.CompiledCode";

/// Fixed fields of `hpm.Sample`, in order; one `long` per counter follows.
pub const HPM_SAMPLE_FIXED_FIELDS: &[&str] = &[
    "startTime",
    "sampledThread",
    "stackTrace",
    "event",
    "period",
    "component",
    "dataAddress",
    "ip",
    "state",
    "dataSpace",
    "dataClass",
    "dataField",
    "dataOffset",
    "dataIndex",
    "dataSource",
    "dataLatency",
    "carrierThread",
];

/// The fields of a thread's sample as JFR's own `jdk.ExecutionSample` has them.
fn thread_sample_fields() -> Vec<FieldDef> {
    vec![
        start_time_field(),
        FieldDef::new("sampledThread", T_THREAD, "Thread").pooled(),
        FieldDef::new("stackTrace", T_STACK_TRACE, "Stack Trace").pooled(),
        FieldDef::new("state", T_THREAD_STATE, "Thread State").pooled(),
    ]
}

/// Every event type hpm writes. `counters` are `Recording::counters`: one `long` field each in
/// `hpm.Sample`, named by [`counter_field_names`] and labelled with the counter's own name; its
/// description says how its values came to their stacks (`periods`: `Recording::counter_periods`,
/// read back by [`counter_period_of`]).
pub fn event_defs(counters: &[String], periods: &[u64]) -> Vec<EventDef> {
    let mut sample_fields = vec![
        start_time_field(),
        FieldDef::new("sampledThread", T_THREAD, "Thread").pooled(),
        FieldDef::new("stackTrace", T_STACK_TRACE, "Stack Trace").pooled(),
        string_field("event", "Sampling Event"),
        FieldDef::new("period", T_LONG, "Period")
            .with(description(
                "Amount of the sampling event this sample stands for: ns for clock events, a count otherwise",
            ))
            .with(marker(A_UNSIGNED)),
        string_field("component", "VM Component"),
        FieldDef::new("dataAddress", T_LONG, "Data Address")
            .with(description("Data address reported with the sample, 0 if none"))
            .with(marker(A_MEMORY_ADDRESS))
            .with(marker(A_UNSIGNED)),
        FieldDef::new("ip", T_LONG, "Instruction Pointer").with(marker(A_MEMORY_ADDRESS)).with(marker(A_UNSIGNED)),
        string_field("state", "Thread State"),
        string_field("dataSpace", "Data Space").with(description(
            "Where the data address lies (option data): eden, survivor, old, humongous, stack, code_cache, metadata, native; empty without one",
        )),
        string_field("dataClass", "Data Class")
            .with(description("Class of the Java object the data address is in, when identified")),
        string_field("dataField", "Data Field").with(description(
            "Field at the data address (Declaring.name), [] for an array element, <header>, <length> or <padding>",
        )),
        FieldDef::new("dataOffset", T_LONG, "Data Offset")
            .with(description("Bytes from the object's start to the data address (from the stack pointer on a stack)"))
            .with(marker(A_UNSIGNED)),
        FieldDef::new("dataIndex", T_INT, "Data Array Index")
            .with(description("Index of the array element at the data address, -1 if none")),
        string_field("dataSource", "Data Source").with(description(
            "Where a precise memory sample's access was served (L1 hit, LFB hit, L3 hit, RAM hit, ...); empty if the PMU gave none",
        )),
        FieldDef::new("dataLatency", T_LONG, "Data Access Latency")
            .with(description("A precise memory sample's access latency in cycles, 0 if the PMU gave none"))
            .with(marker(A_UNSIGNED)),
        FieldDef::new("carrierThread", T_THREAD, "Carrier Thread")
            .pooled()
            .with(description(
                "The platform thread that ran the sample: the one the sampled virtual thread was mounted on, \
                 else the sampled thread itself",
            )),
    ];
    for (i, (name, counter)) in counter_field_names(counters).iter().zip(counters).enumerate() {
        let period = periods.get(i).copied().unwrap_or(0);
        let how = crate::model::counter_attribution(period);
        sample_fields.push(
            FieldDef::new(name, T_LONG, counter)
                .with(description(&format!("Counter `{counter}`, {how}")))
                .with(marker(A_UNSIGNED)),
        );
    }
    let mut defs = vec![
        EventDef {
            id: EVENT_EXECUTION_SAMPLE,
            name: "jdk.ExecutionSample",
            label: "Method Profiling Sample",
            description: "Snapshot of a threads state",
            category: &["Java Virtual Machine", "Profiling"],
            fields: thread_sample_fields(),
        },
        EventDef {
            // What async-profiler writes for event=wall, and what Pyroscope reads as wall time.
            id: EVENT_WALL_CLOCK_SAMPLE,
            name: "profiler.WallClockSample",
            label: "Wall Clock Sample",
            description: "A thread sampled at the wall-clock interval whatever its state (event=wall)",
            category: &["Java Virtual Machine", "Profiling"],
            fields: [thread_sample_fields(), vec![FieldDef::new("samples", T_INT, "Samples")]].concat(),
        },
        EventDef {
            id: EVENT_HPM_SAMPLE,
            name: "hpm.Sample",
            label: "hpm Sample",
            description:
                "A sample taken by hpm on a hardware or software performance event, with the counters read with it",
            category: HPM_CATEGORY,
            fields: sample_fields,
        },
        EventDef {
            id: EVENT_HPM_CONFIG,
            name: "hpm.Config",
            label: "hpm Configuration",
            description: "The sampling event as requested and as used, the counters and the stack sampler",
            category: HPM_CATEGORY,
            fields: vec![
                start_time_field(),
                string_field("event", "Sampling Event"),
                string_field("requestedEvent", "Requested Event"),
                string_field("fallback", "Fallback Reason"),
                FieldDef::new("period", T_LONG, "Period").with(marker(A_UNSIGNED)),
                string_field("periodUnit", "Period Unit"),
                string_field("counters", "Counters"),
                string_field("sampler", "Stack Sampler"),
                string_field("jvm", "JVM"),
                FieldDef::new("pid", T_LONG, "Process Id"),
                string_field("kernel", "Kernel Time"),
                FieldDef::new("allocInterval", T_LONG, "Allocation Sampling Interval")
                    .with(description("Option alloc: the mean bytes between allocation samples, 0 without it"))
                    .with(marker(A_UNSIGNED)),
                FieldDef::new("threadsSeen", T_LONG, "Threads Seen")
                    .with(description("Threads the agent saw so far, with samples or not"))
                    .with(marker(A_UNSIGNED)),
                FieldDef::new("virtualThreadNs", T_LONG, "Live Virtual Thread Time")
                    .with(description(
                        "event=wall on JDK 21+: live virtual threads times the ns they were live, so far (0: not counted)",
                    ))
                    .with(marker(A_UNSIGNED)),
                FieldDef::new("virtualThreadSpanNs", T_LONG, "Virtual Threads Counted For")
                    .with(description("The ns over which live virtual threads were counted so far"))
                    .with(marker(A_UNSIGNED)),
                FieldDef::new("virtualThreadMax", T_LONG, "Most Live Virtual Threads")
                    .with(description("The most virtual threads live at once, so far"))
                    .with(marker(A_UNSIGNED)),
                FieldDef::new("virtualThreadMountedNs", T_LONG, "Mounted Virtual Thread Time")
                    .with(description("The wall time the samples of mounted virtual threads stand for, so far"))
                    .with(marker(A_UNSIGNED)),
            ],
        },
        EventDef {
            id: EVENT_HPM_DROPS,
            name: "hpm.Drops",
            label: "hpm Dropped Samples",
            description: "Samples lost so far for one reason (cumulative since the start of the recording)",
            category: HPM_CATEGORY,
            fields: vec![
                start_time_field(),
                string_field("reason", "Reason"),
                FieldDef::new("count", T_LONG, "Count").with(marker(A_UNSIGNED)),
            ],
        },
        EventDef {
            id: EVENT_HPM_COMPILED_CODE,
            name: COMPILED_CODE_EVENT,
            label: "hpm Compiled Code",
            description: "A compiled method's instructions as installed, written once for the samples taken in it \
                          (hpm report --instructions decodes their instruction pointers)",
            category: HPM_CATEGORY,
            fields: vec![
                start_time_field().with(description("When the method's code was installed")),
                FieldDef::new("method", T_METHOD, "Method").pooled(),
                FieldDef::new("address", T_LONG, "Code Address")
                    .with(marker(A_MEMORY_ADDRESS))
                    .with(marker(A_UNSIGNED)),
                FieldDef::new("size", T_LONG, "Code Size").with(marker(A_UNSIGNED)),
                string_field("code", "Instructions").with(description(
                    "The instructions' bytes in hex; empty if they were not copied, or are in another \
                         chunk's event for the same blob (written once per session)",
                )),
            ],
        },
    ];
    defs.extend(mark_event_defs());
    defs.extend(jvm_event_defs());
    defs
}

/// The JDK's allocation-sample, monitor-enter and park events, field for field as JDK 17 and
/// 25 declare them (`metadata.xml`) but for the addresses and previous owner hpm cannot know, so
/// that JMC's allocation and lock pages, IntelliJ and
/// Pyroscope read hpm's `alloc` and `lock` events as the JDK's own.
pub fn jvm_event_defs() -> Vec<EventDef> {
    let thread_and_stack = || {
        vec![
            FieldDef::new("eventThread", T_THREAD, "Event Thread").pooled(),
            FieldDef::new("stackTrace", T_STACK_TRACE, "Stack Trace").pooled(),
        ]
    };
    let bytes = Annotation { type_id: A_DATA_AMOUNT, values: vec![("value".into(), "BYTES".into())] };
    let ns = Annotation { type_id: A_TIMESPAN, values: vec![("value".into(), "NANOSECONDS".into())] };
    let millis = Annotation { type_id: A_TIMESTAMP, values: vec![("value".into(), "MILLISECONDS_SINCE_EPOCH".into())] };
    vec![
        EventDef {
            id: EVENT_OBJECT_ALLOCATION_SAMPLE,
            name: "jdk.ObjectAllocationSample",
            label: "Object Allocation Sample",
            description: "An allocation sampled by bytes (hpm: JVMTI SampledObjectAlloc, option alloc)",
            category: &["Java Application"],
            fields: [
                vec![start_time_field()],
                thread_and_stack(),
                vec![
                    FieldDef::new("objectClass", T_CLASS, "Object Class")
                        .pooled()
                        .with(description("Class of allocated object")),
                    FieldDef::new("weight", T_LONG, "Sample Weight").with(bytes).with(description(
                        "The relative weight of the sample. Aggregating the weights for a large number of samples, \
                         for a particular class, thread or stack trace, gives a statistically accurate representation \
                         of the allocation pressure",
                    )),
                ],
            ]
            .concat(),
        },
        EventDef {
            id: EVENT_JAVA_MONITOR_ENTER,
            name: "jdk.JavaMonitorEnter",
            label: "Java Monitor Blocked",
            description:
                "A thread waited to enter a contended monitor (hpm: JVMTI MonitorContendedEnter/Entered, option lock)",
            category: &["Java Application"],
            fields: [
                vec![start_time_field(), duration_field()],
                thread_and_stack(),
                // The JDK's `previousOwner` and `address` are left out: JVMTI's contended-enter
                // events name neither the thread that released the monitor nor where it lives
                // (a handle, not an address), and a null owner or a 0 address would read as
                // known. Readers find a field by name; JMC and `jfr` show it absent.
                vec![FieldDef::new("monitorClass", T_CLASS, "Monitor Class").pooled()],
            ]
            .concat(),
        },
        EventDef {
            id: EVENT_THREAD_PARK,
            name: "jdk.ThreadPark",
            label: "Java Thread Park",
            description: "A thread parked in LockSupport.park (hpm: Unsafe.park intercepted, option lock)",
            category: &["Java Application"],
            fields: [
                vec![start_time_field(), duration_field()],
                thread_and_stack(),
                vec![
                    FieldDef::new("parkedClass", T_CLASS, "Class Parked On").pooled(),
                    FieldDef::new("timeout", T_LONG, "Park Timeout").with(ns),
                    FieldDef::new("until", T_LONG, "Park Until").with(millis),
                    // `address` left out: hpm does not know it (see jdk.JavaMonitorEnter).
                ],
            ]
            .concat(),
        },
        EventDef {
            id: EVENT_VIRTUAL_THREAD_PINNED,
            name: "jdk.VirtualThreadPinned",
            label: "Virtual Thread Pinned",
            description: "A virtual thread parked on its carrier, unable to unmount (hpm: Unsafe.park of a virtual \
                          thread, option lock; the event thread is the carrier)",
            category: &["Java Application"],
            fields: [
                vec![start_time_field(), duration_field()],
                thread_and_stack(),
                vec![
                    string_field("blockingOperation", "Blocking Operation"),
                    string_field("pinnedReason", "Pinned Reason"),
                    FieldDef::new("carrierThread", T_THREAD, "Carrier Thread").pooled(),
                    // hpm's own: the JDK's event has no monitor (JDK 21-23 pin on any).
                    FieldDef::new("monitorClass", T_CLASS, "Monitor Class")
                        .pooled()
                        .with(description("Class of the monitor the virtual thread entered last and holds")),
                ],
            ]
            .concat(),
        },
    ]
}
/// The counters a region can carry: (perf event name, JFR field name).
pub const REGION_COUNTERS: &[(&str, &str)] = &[
    ("cycles", "cycles"),
    ("instructions", "instructions"),
    ("task-clock", "taskClock"),
    ("page-faults", "pageFaults"),
    ("context-switches", "contextSwitches"),
];

/// The `hpm.Region` and `hpm.Phase` event types.
pub fn mark_event_defs() -> Vec<EventDef> {
    let mut region = vec![
        start_time_field(),
        duration_field(),
        FieldDef::new("eventThread", T_THREAD, "Thread").pooled(),
        string_field("name", "Region"),
        string_field("counters", "Counters Measured").with(description(
            "Counters read at the region's start and end, comma-separated; the other counter fields are 0",
        )),
    ];
    for (event, field) in REGION_COUNTERS {
        region.push(
            FieldDef::new(field, T_LONG, event)
                .with(description(&format!("Counter `{event}`: delta over the region")))
                .with(marker(A_UNSIGNED)),
        );
    }
    vec![
        EventDef {
            id: EVENT_HPM_REGION,
            name: "hpm.Region",
            label: "hpm Region",
            description:
                "A code region marked through the Java bridge, with the counter deltas of the thread that ran it",
            category: HPM_CATEGORY,
            fields: region,
        },
        EventDef {
            id: EVENT_HPM_PHASE,
            name: "hpm.Phase",
            label: "hpm Phase",
            description:
                "The start of a phase or iteration, marked through the Java bridge; samples after it belong to it",
            category: HPM_CATEGORY,
            fields: vec![
                start_time_field(),
                FieldDef::new("eventThread", T_THREAD, "Thread").pooled(),
                string_field("name", "Phase"),
                FieldDef::new("index", T_LONG, "Iteration")
                    .with(description("Iteration number, -1 for a phase without one")),
            ],
        },
    ]
}

/// `hpm.types.SourceFile`: a class's source file name, in a constant pool of its own keyed
/// like the class. JFR's class and method types have no such field; a separate type leaves the
/// JDK's types as the JDK declares them (JMC warns about fields it does not know), and readers
/// that do not know it skip the pool.
pub const SOURCE_FILE_TYPE: &str = "hpm.types.SourceFile";

fn source_file_type() -> TypeDef {
    TypeDef::strukt(
        T_SOURCE_FILE,
        SOURCE_FILE_TYPE,
        "Source File",
        vec![FieldDef::new("type", T_CLASS, "Class").pooled(), string_field("sourceFile", "Source File")],
    )
}

/// All types of an hpm chunk, in declaration order.
pub fn all_types(counters: &[String], periods: &[u64]) -> Vec<TypeDef> {
    let mut t = builtin_types();
    t.push(source_file_type());
    t.extend(event_defs(counters, periods).iter().map(EventDef::to_type));
    t
}

/// The metadata element tree for `types`.
pub fn metadata_tree(types: &[TypeDef]) -> Element {
    let mut meta = Element::new("metadata");
    meta.children = types.iter().map(TypeDef::to_element).collect();
    Element::new("root")
        .child(meta)
        .child(Element::new("region").attr("locale", "en_US").attr("gmtOffset", "0").attr("dst", "0"))
}

/// A counter's own-sample period from its field's description ([`event_defs`]), 0 for an
/// interval-attributed counter or a description of an older version.
pub fn counter_period_of(description: &str) -> u64 {
    description
        .split_once("its own overflow every ")
        .and_then(|(_, rest)| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// `hpm.Sample` field names for counters: a Java-identifier-like camelCase form of each name
/// (`task-clock` -> `taskClock`, `L1-dcache-load-misses` -> `L1DcacheLoadMisses`, `r01c2` ->
/// `r01c2`), prefixed with `c` if it would start with a digit, and suffixed `_2`, `_3`... if it
/// would clash with a fixed field or an earlier counter. Stable: depends only on the list.
pub fn counter_field_names(counters: &[String]) -> Vec<String> {
    let mut used: Vec<String> = HPM_SAMPLE_FIXED_FIELDS.iter().map(|s| s.to_string()).collect();
    let mut out = Vec::with_capacity(counters.len());
    for c in counters {
        let mut name = String::new();
        for (i, part) in c.split(|ch: char| !ch.is_ascii_alphanumeric()).filter(|p| !p.is_empty()).enumerate() {
            let mut chars = part.chars();
            if i > 0 {
                if let Some(f) = chars.next() {
                    name.push(f.to_ascii_uppercase());
                }
            }
            name.extend(chars);
        }
        if name.is_empty() {
            name.push_str("counter");
        }
        if name.starts_with(|ch: char| ch.is_ascii_digit()) {
            name.insert(0, 'c');
        }
        let mut candidate = name.clone();
        let mut n = 2;
        while used.contains(&candidate) {
            candidate = format!("{name}_{n}");
            n += 1;
        }
        used.push(candidate.clone());
        out.push(candidate);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_field_names_are_camel_case_and_unique() {
        let c: Vec<String> = [
            "task-clock",
            "cycles",
            "r01c2",
            "L1-dcache-load-misses",
            "cpu/event=0x3c,umask=0/",
            "ip",
            "task_clock",
            "--",
            "1x",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            counter_field_names(&c),
            [
                "taskClock",
                "cycles",
                "r01c2",
                "L1DcacheLoadMisses",
                "cpuEvent0x3cUmask0",
                "ip_2",
                "taskClock_2",
                "counter",
                "c1x"
            ]
        );
    }

    #[test]
    fn type_ids_are_unique() {
        let types = all_types(&["cycles".to_string()], &[]);
        let mut ids: Vec<u64> = types.iter().map(|t| t.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), types.len());
    }
}
