//! The type ids hpm writes, in one table with no dependencies: the metadata builders
//! ([`super::typedef`]), the event declarations ([`super::schema`]), the pools and the writer
//! all refer to them.
//!
//! Type ids must never change meaning between chunks of one file: the JDK's reader reuses a
//! previous chunk's constant-pool entries by (type id, key).

// Built-in value types.
pub const T_BOOLEAN: u64 = 4;
pub const T_CHAR: u64 = 5;
pub const T_FLOAT: u64 = 6;
pub const T_DOUBLE: u64 = 7;
pub const T_BYTE: u64 = 8;
pub const T_SHORT: u64 = 9;
pub const T_INT: u64 = 10;
pub const T_LONG: u64 = 11;
pub const T_STRING: u64 = 20;

// Structs, all stored in constant pools except StackFrame (inline in StackTrace).
pub const T_THREAD: u64 = 30;
pub const T_THREAD_GROUP: u64 = 31;
pub const T_CLASS: u64 = 32;
pub const T_CLASS_LOADER: u64 = 33;
pub const T_PACKAGE: u64 = 34;
pub const T_MODULE: u64 = 35;
pub const T_SYMBOL: u64 = 36;
pub const T_METHOD: u64 = 37;
pub const T_STACK_TRACE: u64 = 38;
pub const T_STACK_FRAME: u64 = 39;
pub const T_FRAME_TYPE: u64 = 40;
pub const T_THREAD_STATE: u64 = 41;
/// hpm's own pool type: the source file of a class (JFR's class and method types have none).
pub const T_SOURCE_FILE: u64 = 42;

// Annotation types (as the JDK declares them).
pub const A_LABEL: u64 = 200;
pub const A_DESCRIPTION: u64 = 201;
pub const A_CATEGORY: u64 = 202;
pub const A_TIMESTAMP: u64 = 203;
pub const A_TIMESPAN: u64 = 204;
pub const A_UNSIGNED: u64 = 205;
pub const A_MEMORY_ADDRESS: u64 = 206;
pub const A_CONTENT_TYPE: u64 = 207;
pub const A_DATA_AMOUNT: u64 = 208;
pub const A_PERCENTAGE: u64 = 209;
pub const A_EXPERIMENTAL: u64 = 210;

// Event types.
pub const EVENT_EXECUTION_SAMPLE: u64 = 100;
pub const EVENT_HPM_SAMPLE: u64 = 101;
pub const EVENT_HPM_CONFIG: u64 = 102;
pub const EVENT_HPM_DROPS: u64 = 103;
pub const EVENT_HPM_REGION: u64 = 104;
pub const EVENT_HPM_PHASE: u64 = 105;
pub const EVENT_WALL_CLOCK_SAMPLE: u64 = 106;
pub const EVENT_OBJECT_ALLOCATION_SAMPLE: u64 = 107;
pub const EVENT_JAVA_MONITOR_ENTER: u64 = 108;
pub const EVENT_THREAD_PARK: u64 = 109;
pub const EVENT_HPM_COMPILED_CODE: u64 = 110;
/// Kept apart from the ids above, which other event types take next.
pub const EVENT_VIRTUAL_THREAD_PINNED: u64 = 120;
