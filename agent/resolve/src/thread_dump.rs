//! Full thread names from the JVM's `Thread.print` diagnostic command. The kernel keeps a
//! thread's name in 15 bytes (`/proc/self/task/TID/comm`: `C2 CompilerThre`); the VM's thread
//! dump names every thread, Java or not, whole, with its kernel id (`nid=`). The agent runs the
//! command; this reads its text. Bounded: at most [`MAX_DUMP_LINES`] lines are looked at, and a
//! name longer than [`hpm_profile::limits::MAX_THREAD_NAME_BYTES`] is left out.

use hpm_profile::limits::MAX_THREAD_NAME_BYTES;

/// Characters of a thread dump the agent reads (the rest is not copied out of the VM; the text
/// is ASCII but for names). A thread takes its header line and its stack, ~300 bytes for an
/// idle pool thread, so 4 MiB hold thousands. The dump lists the Java threads in the order they
/// started (the hidden ones, compiler and service threads, among the first), then the threads
/// without a Java object (GC workers, the VM thread): a dump cut here loses those last names,
/// and their threads keep their kernel names.
pub const MAX_DUMP_BYTES: usize = 4 << 20;

/// The most threads a JVM may have for hpm to take a thread dump for names: the dump stops
/// every Java thread while the VM thread prints each one's stack, a pause that grows with their
/// number and depth (a few ms for the tens of threads of a small JVM). Above this a server's
/// VM threads keep their 15-byte kernel names rather than pause it for them.
pub const MAX_THREADS_TO_DUMP: usize = 500;

/// Lines of a dump looked at.
pub const MAX_DUMP_LINES: usize = 200_000;

/// The length at which the kernel cuts a thread's name (TASK_COMM_LEN less its NUL): a name
/// read from `comm` this long may be cut, a shorter one is whole.
pub const COMM_BYTES: usize = 15;

/// Whether a name read from `/proc/.../comm` may be cut by the kernel.
pub fn may_be_cut(comm: &str) -> bool {
    comm.len() == COMM_BYTES
}

/// `(kernel id, full name)` of each thread header in `dump`, the output of `Thread.print`:
/// `"C2 CompilerThread0" #7 daemon prio=9 ... nid=0x38ff waiting on condition` (JDK 17: hex)
/// or `... nid=14705 ...` (JDK 19 and later: decimal). A name may hold quotes and spaces: it
/// runs from the line's first quote to the last quote before the line's last ` nid=`. Lines
/// that do not read so are skipped (a name with a line break, a stack frame).
pub fn thread_names(dump: &str) -> Vec<(u32, String)> {
    dump.lines().take(MAX_DUMP_LINES).filter_map(header).collect()
}

fn header(line: &str) -> Option<(u32, String)> {
    let rest = line.strip_prefix('"')?;
    let at = rest.rfind(" nid=")?;
    let name = &rest[..rest[..at].rfind('"')?];
    let id = rest[at + " nid=".len()..].split(' ').next()?;
    let tid = match id.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16).ok()?,
        None => id.parse().ok()?,
    };
    (tid != 0 && !name.is_empty() && name.len() <= MAX_THREAD_NAME_BYTES).then(|| (tid, name.to_string()))
}

/// The full name of a thread whose kernel name is `comm` (cut at [`COMM_BYTES`]), if the dump's
/// name for its id begins with it: a name for an id the kernel has since given to another
/// thread is not taken.
pub fn full_name<'a>(names: &'a [(u32, String)], tid: u32, comm: &str) -> Option<&'a str> {
    names
        .iter()
        .find(|(t, _)| *t == tid)
        .map(|(_, n)| n.as_str())
        .filter(|n| n.len() > comm.len() && n.as_bytes().starts_with(comm.as_bytes()))
}
