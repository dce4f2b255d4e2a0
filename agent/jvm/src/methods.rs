//! Method names and line tables from JVMTI, for the processor (an attached daemon thread).

use hpm_core::hash::IntMap;
use hpm_core::model::MethodInfo;
use hpm_core::resolve::JavaMethods;
use jni::sys::{jmethodID, JNIEnv};

use crate::jnienv::delete_local_ref;
use crate::jvmti::{class_name_from_signature, Jvmti};

pub struct JvmtiMethods {
    jvmti: Jvmti,
    /// The processor thread's own JNIEnv, to free the local class references JVMTI returns.
    jni: *mut JNIEnv,
    /// Line tables by method, sorted by start bci.
    lines: IntMap<u64, Vec<(i64, i32)>>,
    /// (method, bci) -> line, the common case once a method was seen.
    memo: IntMap<(u64, i32), i32>,
}

// SAFETY: the JNIEnv belongs to the processor thread, the only thread that uses this value
// after it is created there; it moves to the VMDeath thread only after the processor stopped,
// and JVMTI calls are valid from any attached thread.
unsafe impl Send for JvmtiMethods {}

impl JvmtiMethods {
    pub fn new(jvmti: Jvmti, jni: *mut JNIEnv) -> JvmtiMethods {
        JvmtiMethods { jvmti, jni, lines: IntMap::default(), memo: IntMap::default() }
    }
}

impl JavaMethods for JvmtiMethods {
    fn describe(&mut self, id: u64) -> Option<MethodInfo> {
        let m = id as jmethodID;
        // JDK 17+ checks jmethodIDs (a method of an unloaded class gives INVALID_METHODID).
        let (name, descriptor) = self.jvmti.method_name(m).ok()?;
        let class = self.jvmti.method_declaring_class(m).ok()?;
        let sig = self.jvmti.class_signature(class).unwrap_or_default();
        let source_file = self.jvmti.source_file_name(class).ok();
        delete_local_ref(self.jni, class);
        let (class_name, hidden) = class_name_from_signature(&sig);
        Some(MethodInfo {
            class_name,
            name,
            descriptor,
            source_file,
            modifiers: self.jvmti.method_modifiers(m).unwrap_or(0) as u32,
            hidden,
        })
    }

    fn line(&mut self, id: u64, bci: i32) -> i32 {
        if let Some(&l) = self.memo.get(&(id, bci)) {
            return l;
        }
        let jvmti = self.jvmti;
        let table = self.lines.entry(id).or_insert_with(|| {
            let mut t = jvmti.line_number_table(id as jmethodID).unwrap_or_default();
            t.sort_unstable();
            t
        });
        let l = line_for_bci(table, bci);
        self.memo.insert((id, bci), l);
        l
    }
}

/// The line of the last entry (sorted by start bci) starting at or before `bci`.
fn line_for_bci(table: &[(i64, i32)], bci: i32) -> i32 {
    let i = table.partition_point(|(start, _)| *start <= i64::from(bci));
    if i == 0 {
        -1
    } else {
        table[i - 1].1
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn lines_by_bci() {
        let t = [(0, 10), (5, 11), (9, 14)];
        assert_eq!(super::line_for_bci(&t, 0), 10);
        assert_eq!(super::line_for_bci(&t, 7), 11);
        assert_eq!(super::line_for_bci(&t, 100), 14);
        assert_eq!(super::line_for_bci(&[], 3), -1);
    }
}
