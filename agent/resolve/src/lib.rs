//! hpm-resolve: what a captured record becomes, on the processing thread after the sample — the
//! resolver (`resolve`) placing each address in compiled code, the interpreter, a library or the
//! kernel, and naming it (`symbols`, `kallsyms`, `component`), the objects a data sample
//! touched (`objects`), and the threads' names from a dump (`thread_dump`).

pub mod component;
pub mod kallsyms;
pub mod objects;
pub mod resolve;
pub mod symbols;
pub mod thread_dump;
#[cfg(test)]
mod thread_dump_tests;
pub mod unwind_tables;
