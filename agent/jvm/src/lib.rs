//! libhpm.so — JVMTI agent glue.
