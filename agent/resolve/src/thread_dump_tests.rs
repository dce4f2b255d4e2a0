use crate::thread_dump::{full_name, may_be_cut, thread_names, MAX_DUMP_LINES};

/// Header lines as JDK 17 prints them (kernel ids in hex), cut from `jcmd PID Thread.print`.
const JDK17: &str = r#"2026-11-29 04:00:01
Full thread dump OpenJDK 64-Bit Server VM (17.0.13+11-Debian-2 mixed mode, sharing):

"main" #1 prio=5 os_prio=0 cpu=432.48ms elapsed=4.28s tid=0x00007f9e94018020 nid=0x38f3 waiting on condition  [0x00007f9e993fe000]
   java.lang.Thread.State: TIMED_WAITING (sleeping)
	at java.lang.Thread.sleep(java.base@17.0.13/Native Method)

"Monitor Deflation Thread" #6 daemon prio=9 os_prio=0 cpu=0.72ms elapsed=4.21s tid=0x00007f9e94102550 nid=0x38fe runnable  [0x0000000000000000]
"C2 CompilerThread0" #7 daemon prio=9 os_prio=0 cpu=196.53ms elapsed=4.21s tid=0x00007f9e94103f00 nid=0x38ff waiting on condition  [0x0000000000000000]
"VM Periodic Task Thread" os_prio=0 cpu=2.75ms elapsed=4.16s tid=0x00007f9e94140d80 nid=0x3904 waiting on condition  
"GC Thread#0" os_prio=0 cpu=0.10ms elapsed=4.28s tid=0x00007f9e940419e0 nid=0x38f4 runnable  
JNI global refs: 15, weak refs: 0
"#;

/// As Temurin 25 prints them (decimal ids, the kernel id also in brackets).
const JDK25: &str = r#"
"C2 CompilerThread0" #17 [14705] daemon prio=9 os_prio=0 cpu=202.31ms elapsed=4.20s tid=0x00007f6f840bd1d0 nid=14705 waiting on condition  [0x0000000000000000]
"VM Periodic Task Thread" os_prio=0 cpu=0.16ms elapsed=4.25s tid=0x00007f6f84097f80 nid=14698 waiting on condition  
"#;

#[test]
fn jdk17_headers_give_hex_kernel_ids_and_whole_names() {
    let names = thread_names(JDK17);
    assert_eq!(
        names,
        vec![
            (0x38f3, "main".to_string()),
            (0x38fe, "Monitor Deflation Thread".to_string()),
            (0x38ff, "C2 CompilerThread0".to_string()),
            (0x3904, "VM Periodic Task Thread".to_string()),
            (0x38f4, "GC Thread#0".to_string()),
        ]
    );
}

#[test]
fn jdk25_headers_give_decimal_kernel_ids() {
    let names = thread_names(JDK25);
    assert_eq!(names, vec![(14705, "C2 CompilerThread0".to_string()), (14698, "VM Periodic Task Thread".to_string())]);
}

#[test]
fn a_name_may_hold_quotes_spaces_and_nid() {
    let dump = "\"a \"quoted\" nid=0x1 name\" #30 prio=5 os_prio=0 tid=0x1 nid=0x2a runnable  [0x0]\n";
    assert_eq!(thread_names(dump), vec![(42, "a \"quoted\" nid=0x1 name".to_string())]);
}

#[test]
fn lines_that_are_not_headers_are_skipped() {
    let dump = "\"cut by a\nline break\" #3 prio=5 tid=0x1 nid=0x10 runnable\n\"no id\" #4\n\"bad id\" nid=0xzz\n\
                \"zero\" nid=0x0 runnable\n\"\" nid=0x11 runnable\n\tat \"x\" nid=0x12\n";
    assert!(thread_names(dump).is_empty(), "{:?}", thread_names(dump));
}

#[test]
fn a_name_is_taken_only_for_the_thread_whose_comm_it_begins_with() {
    let names = thread_names(JDK17);
    assert_eq!(full_name(&names, 0x38ff, "C2 CompilerThre"), Some("C2 CompilerThread0"));
    // The id now names another thread: the dump's name is not its name.
    assert_eq!(full_name(&names, 0x38ff, "pool-1-thread-1"), None);
    // A name no longer than the comm adds nothing; an id not in the dump has none.
    assert_eq!(full_name(&names, 0x38f3, "main"), None);
    assert_eq!(full_name(&names, 7, "C2 CompilerThre"), None);
}

#[test]
fn only_a_comm_of_fifteen_bytes_may_be_cut() {
    assert!(may_be_cut("C2 CompilerThre"));
    assert!(!may_be_cut("GC Thread#0"));
    assert!(!may_be_cut(""));
}

#[test]
fn the_lines_read_are_bounded() {
    let mut dump = "x\n".repeat(MAX_DUMP_LINES);
    dump.push_str("\"late\" nid=0x5 runnable\n");
    assert!(thread_names(&dump).is_empty());
    let over = "\"long".to_string() + &"n".repeat(70_000) + "\" nid=0x5 runnable\n";
    assert!(thread_names(&over).is_empty());
}
