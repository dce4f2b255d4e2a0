//! The step's rules on a table and a stack made up here, the index's sorted insertion and
//! refusals, and the sequence lock: a reader racing a writer sees a library's own table or
//! none, never another's (a stress run with two threads, and loom's every interleaving).

use super::*;

/// A library at `start` (bias = start) with `rows`, 64 KiB long.
fn lib(start: u64, rows: Vec<Row>) -> LibTable {
    LibTable { start, end: start + 0x1_0000, bias: start, rows: rows.into_boxed_slice() }
}

fn row(pc: u32, cfa: Cfa, cfa_off: i32, fp_off: i16) -> Row {
    Row { pc, cfa_off, fp_off, cfa }
}

/// A made-up memory: every 8-aligned address in `[lo, hi)` holds its own address xor K.
const K: u64 = 0x5a5a_0000;

fn stack(lo: u64, hi: u64) -> impl Fn(u64) -> Option<u64> {
    move |a| (a >= lo && a < hi && a.is_multiple_of(8)).then_some(a ^ K)
}

#[cfg(not(loom))]
mod rules {
    use super::*;

    const LIB: u64 = 0x40_0000;

    fn tables() -> NativeTables {
        let t = NativeTables::default();
        assert!(t.add(lib(
            LIB,
            vec![
                row(0x100, Cfa::Sp, 8, 0),
                row(0x104, Cfa::Sp, 16, -16),
                row(0x110, Cfa::Fp, 16, -16),
                row(0x200, Cfa::Plt, 11, 0),
                row(0x210, Cfa::Refuse, 0, 0),
                row(0x300, Cfa::Bottom, 0, 0),
                row(0x400, Cfa::Sp, 0, 0),
                row(0x410, Cfa::Sp, 12, 0),
                row(0x420, Cfa::Refuse, 0, 0),
            ]
        )));
        t
    }

    const SP: u64 = 0x7000_1000;

    #[test]
    fn sp_and_fp_rules_read_the_return_address_at_cfa_minus_8_and_the_saved_rbp() {
        let t = tables();
        let w = stack(SP, SP + 0x1000);
        // At entry: CFA = sp + 8, rbp unchanged.
        assert_eq!(t.step(LIB + 0x100, SP, 77, false, &w), Ok((SP ^ K, SP + 8, 77)));
        // After `push rbp`: CFA = sp + 16, rbp saved at CFA - 16.
        assert_eq!(t.step(LIB + 0x104, SP, 77, false, &w), Ok(((SP + 8) ^ K, SP + 16, SP ^ K)));
        // On rbp: CFA = rbp + 16.
        let fp = SP + 0x40;
        assert_eq!(t.step(LIB + 0x180, SP, fp, false, &w), Ok(((fp + 8) ^ K, fp + 16, fp ^ K)));
    }

    #[test]
    fn a_return_address_is_looked_up_at_the_call_before_it() {
        let t = tables();
        let w = stack(SP, SP + 0x1000);
        // 0x110 as a return address is the last byte of the call at 0x10f: the 0x104 row.
        assert_eq!(t.step(LIB + 0x110, SP, 77, true, &w), Ok(((SP + 8) ^ K, SP + 16, SP ^ K)));
        assert_eq!(t.step(LIB + 0x110, SP, SP + 0x40, false, &w).map(|r| r.1), Ok(SP + 0x50));
    }

    #[test]
    fn the_plt_rule_adds_8_past_the_entrys_push() {
        let t = tables();
        let w = stack(SP, SP + 0x1000);
        assert_eq!(t.step(LIB + 0x200, SP, 1, false, &w).map(|r| r.1), Ok(SP + 8));
        assert_eq!(t.step(LIB + 0x20a, SP, 1, false, &w).map(|r| r.1), Ok(SP + 8));
        assert_eq!(t.step(LIB + 0x20b, SP, 1, false, &w).map(|r| r.1), Ok(SP + 16));
    }

    #[test]
    fn bottom_refused_gaps_and_pcs_below_the_first_row() {
        let t = tables();
        let w = stack(SP, SP + 0x1000);
        assert_eq!(t.step(LIB + 0x300, SP, 1, false, &w), Err(NativeStop::Bottom));
        assert_eq!(t.step(LIB + 0x250, SP, 1, false, &w), Err(NativeStop::Refused));
        assert_eq!(t.step(LIB + 0x500, SP, 1, false, &w), Err(NativeStop::Refused));
        assert_eq!(t.step(LIB + 0x10, SP, 1, false, &w), Err(NativeStop::Refused));
    }

    #[test]
    fn a_cfa_not_above_sp_misaligned_overflowing_or_off_the_stack_is_lost() {
        let t = tables();
        let w = stack(SP, SP + 0x1000);
        assert_eq!(t.step(LIB + 0x400, SP, 1, false, &w), Err(NativeStop::Lost));
        assert_eq!(t.step(LIB + 0x410, SP, 1, false, &w), Err(NativeStop::Lost));
        assert_eq!(t.step(LIB + 0x110, SP, u64::MAX - 8, false, &w), Err(NativeStop::Lost));
        assert_eq!(t.step(LIB + 0x100, SP + 0x1000, 1, false, &w), Err(NativeStop::Lost));
    }

    #[test]
    fn without_a_table_rbp_is_followed_only_above_sp() {
        let t = tables();
        let w = stack(SP, SP + 0x1000);
        let fp = SP + 0x20;
        assert_eq!(t.step(0x9000, SP, fp, true, &w), Ok(((fp + 8) ^ K, fp + 16, fp ^ K)));
        assert_eq!(t.step(0x9000, SP, SP, true, &w), Err(NativeStop::NoTable));
        assert_eq!(t.step(0x9000, SP, SP + 0x21, true, &w), Err(NativeStop::NoTable));
        assert_eq!(t.step(LIB + 0x1_0000, SP, 0, false, &w), Err(NativeStop::NoTable));
    }

    #[test]
    fn the_index_stays_sorted_and_refuses_empties_and_a_full_registry() {
        let t = NativeTables::default();
        let w = stack(SP, SP + 0x1000);
        for i in (0..MAX_LIBS as u64).rev() {
            let start = 0x100_0000 + i * 0x2_0000;
            assert!(t.add(lib(start, vec![row(0, Cfa::Sp, 8 * (i as i32 % 100 + 1), 0)])), "{i}");
        }
        assert_eq!(t.len(), MAX_LIBS);
        assert!(t.covers(0x100_0000) && !t.covers(0x101_0000) && !t.covers(0xff_ffff));
        assert!(!t.add(lib(0x1, vec![])), "full");
        for i in 0..MAX_LIBS as u64 {
            let start = 0x100_0000 + i * 0x2_0000;
            let cfa = SP + 8 * (i % 100 + 1);
            assert_eq!(t.step(start + 5, SP, 0, false, &w), Ok(((cfa - 8) ^ K, cfa, 0)), "{i}");
            // Between two libraries: no table.
            assert_eq!(t.step(start + 0x1_0000, SP, 0, false, &w), Err(NativeStop::NoTable));
        }

        let t = NativeTables::default();
        assert!(!t.add(LibTable { start: 5, end: 5, bias: 0, rows: Box::new([]) }), "empty");
        assert!(t.add(lib(0x10_0000, vec![])));
        assert!(t.add(lib(0xf_0000, vec![])) && t.add(lib(0x11_0000, vec![])));
        assert_eq!(t.len(), 3);
    }

    /// A library unloaded and another mapped over its addresses: the new one's table is the
    /// one found, wherever the new range falls on the old ones.
    #[test]
    fn a_library_mapped_over_others_replaces_them() {
        let w = stack(SP, SP + 0x1000);
        let cfa_of = |t: &NativeTables, pc: u64| t.step(pc, SP, 0, false, &w).map(|r| r.1);
        let t = NativeTables::default();
        for (i, start) in [0x10_0000u64, 0x11_0000, 0x12_0000, 0x13_0000].into_iter().enumerate() {
            assert!(t.add(lib(start, vec![row(0, Cfa::Sp, 8 * (i as i32 + 1), 0)])));
        }
        // Over the second and third exactly: one entry in place of two.
        let two =
            LibTable { start: 0x11_0000, end: 0x13_0000, bias: 0x11_0000, rows: Box::new([row(0, Cfa::Sp, 64, 0)]) };
        assert!(t.add(two));
        assert_eq!(t.len(), 3);
        assert_eq!(cfa_of(&t, 0x10_0010), Ok(SP + 8));
        assert_eq!(cfa_of(&t, 0x11_0010), Ok(SP + 64));
        assert_eq!(cfa_of(&t, 0x12_0010), Ok(SP + 64), "the old third's rule is gone");
        assert_eq!(cfa_of(&t, 0x13_0010), Ok(SP + 32));
        // Over the first only, at the same start: replaced, the rest stay.
        assert!(t.add(lib(0x10_0000, vec![row(0, Cfa::Sp, 128, 0)])));
        assert_eq!(t.len(), 3);
        assert_eq!(cfa_of(&t, 0x10_0010), Ok(SP + 128));
        assert_eq!(cfa_of(&t, 0x13_0010), Ok(SP + 32));
        // Straddling two: both go.
        assert!(t.add(lib(0x12_8000, vec![row(0, Cfa::Sp, 16, 0)])));
        assert_eq!(t.len(), 2);
        assert_eq!(cfa_of(&t, 0x11_0010), Err(NativeStop::NoTable));
        assert_eq!(cfa_of(&t, 0x12_8010), Ok(SP + 16));
        assert_eq!(cfa_of(&t, 0x13_7ff0), Ok(SP + 16));
        assert!(!t.covers(0x13_8000));
    }

    #[test]
    fn the_frame_pointer_rule_only_when_asked() {
        let t = tables();
        let w = stack(SP, SP + 0x1000);
        let fp = SP + 0x20;
        assert_eq!(t.step_by(0x9000, SP, fp, true, false, &w), Err(NativeStop::NoTable));
        assert_eq!(t.step_by(0x9000, SP, fp, true, true, &w), t.step(0x9000, SP, fp, true, &w));
        // A table's rule is followed either way.
        assert_eq!(t.step_by(LIB + 0x100, SP, 77, false, false, &w), Ok((SP ^ K, SP + 8, 77)));
        assert!(NativeTables::frame_pointers().frame_pointers_only() && !t.frame_pointers_only());
    }

    /// A reader stepping through every library while a writer adds them in a scrambled order:
    /// each step gives that library's own rule, or no table (not added yet, or a writer
    /// inside), never another library's.
    #[test]
    fn a_reader_racing_the_writer_sees_each_librarys_own_table_or_none() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        const N: u64 = MAX_LIBS as u64;
        let start = |i: u64| 0x100_0000 + i * 0x2_0000;
        let t = Arc::new(NativeTables::default());
        let done = Arc::new(AtomicBool::new(false));
        let writer = {
            let (t, done) = (t.clone(), done.clone());
            std::thread::spawn(move || {
                for k in 0..N {
                    let i = (k * 389) % N;
                    assert!(t.add(lib(start(i), vec![row(0, Cfa::Sp, 8 * (i as i32 + 1), 0)])));
                }
                done.store(true, Ordering::Release);
            })
        };
        let w = stack(SP, SP + 0x10_0000);
        let (mut seen, mut rounds) = (0u64, 0u64);
        while !done.load(Ordering::Acquire) || rounds == 0 {
            for i in 0..N {
                let cfa = SP + 8 * (i + 1);
                match t.step(start(i) + 0x10, SP, 0, false, &w) {
                    Ok(r) => {
                        assert_eq!(r, ((cfa - 8) ^ K, cfa, 0), "library {i}");
                        seen += 1;
                    }
                    Err(e) => assert_eq!(e, NativeStop::NoTable, "library {i}"),
                }
            }
            rounds += 1;
        }
        writer.join().unwrap();
        assert!(seen > 0 || rounds == 1, "{seen} {rounds}");
        assert_eq!(t.len(), MAX_LIBS);
    }
}

#[cfg(loom)]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    /// Every interleaving (up to three preemptions) of a handler's step with the writer
    /// inserting a library before the one the handler's pc is in (the entry shifts under the
    /// reader): the step finds that library's table or gives up, never the other's. Without the
    /// sequence's second check it found the inserted library's table.
    #[test]
    fn loom_a_step_racing_an_insert_finds_its_own_table_or_none() {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(3);
        b.check(|| {
            let t = Arc::new(NativeTables::default());
            assert!(t.add(lib(0x20_0000, vec![row(0, Cfa::Sp, 16, 0)])));
            let h = {
                let t = t.clone();
                loom::thread::spawn(move || {
                    let w = stack(0x1000, 0x2000);
                    let r = t.step(0x20_0010, 0x1000, 0, false, &w);
                    match r {
                        Ok(r) => assert_eq!(r, (0x1008 ^ K, 0x1010, 0)),
                        Err(e) => assert_eq!(e, NativeStop::NoTable),
                    }
                })
            };
            assert!(t.add(lib(0x10_0000, vec![row(0, Cfa::Sp, 8, 0)])));
            h.join().unwrap();
        });
    }
}
