//! Idle pool threads in a lock profile: parks of threads that wait for their next task.
//!
//! A thread pool's idle workers park in the queue they take tasks from (a `ConditionObject`
//! of `LinkedBlockingQueue`, a `SynchronousQueue`, `ForkJoinPool.awaitWork`), and on a server
//! they wait far longer than any contended lock: on a Jetty server tried by a new user 70% of the time
//! waited was Jetty's idle `awaitNanos`. That time is no contention, so the lock tables and
//! `--event lock|park` set it apart in a row of its own, [`IDLE_ROW`], and `--no-idle` leaves
//! it out ([`leave_out`]).
//!
//! The judgement is by the stack, not by the blocker's class (an application's own condition
//! waits have the same `ConditionObject`) nor by the thread's name (pools name their threads as
//! they like): a park is idle when, going from the leaf towards the root, a pool's work-fetch
//! method ([`WORK_FETCH`]) comes before any lock acquisition (`AbstractQueuedSynchronizer`'s
//! `acquire*`). A park on the queue's own lock on the way to a task (`LinkedBlockingQueue.take`
//! → `ReentrantLock.lockInterruptibly`), or on reacquiring it after a signal, is contention and
//! stays in the table; contended monitor enters always do.

use std::collections::HashMap;

use crate::model::{JvmEvent, JvmEventKind, Recording};

/// The row (table key, and flame-graph leaf) that idle waits are summed in.
pub const IDLE_ROW: &str = "(idle: waiting for work)";

/// Methods in which a pool's worker waits for its next task: (class, method).
pub const WORK_FETCH: &[(&str, &str)] = &[
    // Every ThreadPoolExecutor (Executors.new*ThreadPool, ScheduledThreadPoolExecutor,
    // com.sun.net.httpserver's executor, Tomcat's and most servers' pools): the queue's
    // take/poll (LinkedBlockingQueue, SynchronousQueue, DelayedWorkQueue, ...) under it.
    ("java.util.concurrent.ThreadPoolExecutor", "getTask"),
    // A scheduled pool's queue, also where it is drained outside getTask.
    ("java.util.concurrent.ScheduledThreadPoolExecutor$DelayedWorkQueue", "take"),
    // ForkJoinPool workers (the common pool, parallel streams, CompletableFuture's async).
    ("java.util.concurrent.ForkJoinPool", "awaitWork"),
    // Jetty's QueuedThreadPool: an idle thread polls the job queue.
    ("org.eclipse.jetty.util.thread.QueuedThreadPool$Runner", "idleJobPoll"),
    // Jetty's reserved threads wait for a job handed to them.
    ("org.eclipse.jetty.util.thread.ReservedThreadExecutor$ReservedThread", "reservedWait"),
];

/// Classes whose `acquire*` methods take a lock (a park under them waits for the lock).
const LOCK_CLASSES: &[&str] = &[
    "java.util.concurrent.locks.AbstractQueuedSynchronizer",
    "java.util.concurrent.locks.AbstractQueuedLongSynchronizer",
];

/// Whether an event is an idle thread's wait for work (see the module's documentation).
pub fn waits_for_work(rec: &Recording, ev: &JvmEvent) -> bool {
    if ev.kind != JvmEventKind::ThreadPark {
        return false;
    }
    for f in ev.stack.iter() {
        let m = rec.method(f.method);
        let (class, name) = (&*m.class_name, &*m.name);
        if LOCK_CLASSES.contains(&class) && name.starts_with("acquire") {
            return false;
        }
        if WORK_FETCH.iter().any(|&(c, n)| c == class && n == name) {
            return true;
        }
    }
    false
}

/// [`waits_for_work`] judged once per stack: events share their stacks, so a recording of
/// many events over a few deep stacks is judged in time linear in its stacks' frames.
#[derive(Default)]
pub struct IdleJudge {
    known: HashMap<(usize, usize), bool>,
}

impl IdleJudge {
    pub fn is_idle(&mut self, rec: &Recording, ev: &JvmEvent) -> bool {
        if ev.kind != JvmEventKind::ThreadPark {
            return false;
        }
        *self.known.entry((ev.stack.as_ptr() as usize, ev.stack.len())).or_insert_with(|| waits_for_work(rec, ev))
    }
}

/// `--no-idle`: removes the idle waits from the recording's events; returns how many.
pub fn leave_out(rec: &mut Recording) -> usize {
    let mut judge = IdleJudge::default();
    let events = std::mem::take(&mut rec.events);
    let before = events.len();
    let kept: Vec<JvmEvent> = events.into_iter().filter(|e| !judge.is_idle(rec, e)).collect();
    rec.events = kept;
    before - rec.events.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Frame, FrameKind, MethodInfo, Stack};
    use crate::output::jvmevents::{project, report, EventSel};
    use std::sync::Arc;

    /// A stack of `Class.method` names, leaf first.
    fn stack(rec: &mut Recording, frames: &[&str]) -> Stack {
        let frames: Vec<Frame> = frames
            .iter()
            .map(|f| {
                let (class, method) = f.rsplit_once('.').unwrap();
                let method = rec.methods.intern(MethodInfo::java(class, method, "()V"));
                Frame { method, bci: 1, line: 10, kind: FrameKind::JitCompiled }
            })
            .collect();
        Arc::from(frames)
    }

    fn event(rec: &mut Recording, kind: JvmEventKind, class: &str, ns: u64, frames: &[&str]) -> JvmEvent {
        let mut e = JvmEvent::of(kind, stack(rec, frames));
        e.class = Some(class.into());
        e.weight = ns;
        e.duration = ns;
        e
    }

    const PARK: [&str; 2] = ["jdk.internal.misc.Unsafe.park", "java.util.concurrent.locks.LockSupport.park"];
    const AQS: &str = "java.util.concurrent.locks.AbstractQueuedSynchronizer";
    const COND: &str = "java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject";

    fn with_park(rest: &[&str]) -> Vec<String> {
        PARK.iter().chain(rest).map(|s| s.to_string()).collect()
    }

    fn idle(kind: JvmEventKind, rest: &[&str]) -> bool {
        let mut rec = Recording::default();
        let frames = with_park(rest);
        let frames: Vec<&str> = frames.iter().map(String::as_str).collect();
        let e = event(&mut rec, kind, COND, 1, &frames);
        waits_for_work(&rec, &e)
    }

    #[test]
    fn a_pool_thread_waiting_in_its_queue_is_idle() {
        let tpe =
            ["java.util.concurrent.ThreadPoolExecutor.getTask", "java.util.concurrent.ThreadPoolExecutor.runWorker"];
        let take = [&format!("{COND}.await")[..], "java.util.concurrent.LinkedBlockingQueue.take"];
        assert!(idle(JvmEventKind::ThreadPark, &[&take[..], &tpe[..]].concat()));
        // SynchronousQueue (newCachedThreadPool) and a keep-alive poll.
        let sq = ["java.util.concurrent.LinkedTransferQueue.awaitMatch", "java.util.concurrent.SynchronousQueue.poll"];
        assert!(idle(JvmEventKind::ThreadPark, &[&sq[..], &tpe[..]].concat()));
        assert!(idle(JvmEventKind::ThreadPark, &["java.util.concurrent.ForkJoinPool.awaitWork"]));
        let jetty = [
            &format!("{COND}.awaitNanos")[..],
            "org.eclipse.jetty.util.BlockingArrayQueue.poll",
            "org.eclipse.jetty.util.thread.QueuedThreadPool$Runner.idleJobPoll",
            "org.eclipse.jetty.util.thread.QueuedThreadPool$Runner.run",
        ];
        assert!(idle(JvmEventKind::ThreadPark, &jetty));
        let scheduled = [
            &format!("{COND}.awaitNanos")[..],
            "java.util.concurrent.ScheduledThreadPoolExecutor$DelayedWorkQueue.take",
            "app.Main.drain",
        ];
        assert!(idle(JvmEventKind::ThreadPark, &scheduled));
    }

    #[test]
    fn contention_on_the_way_to_work_and_elsewhere_is_not_idle() {
        let tpe =
            ["java.util.concurrent.ThreadPoolExecutor.getTask", "java.util.concurrent.ThreadPoolExecutor.runWorker"];
        // The queue's own lock: contended on the way to a task.
        let lock = [
            &format!("{AQS}.acquire")[..],
            &format!("{AQS}.acquireInterruptibly")[..],
            "java.util.concurrent.locks.ReentrantLock.lockInterruptibly",
            "java.util.concurrent.LinkedBlockingQueue.take",
        ];
        assert!(!idle(JvmEventKind::ThreadPark, &[&lock[..], &tpe[..]].concat()));
        // Reacquiring it after the signal: the acquire sits above the await.
        let reacquire = [
            &format!("{AQS}.acquire")[..],
            &format!("{COND}.await")[..],
            "java.util.concurrent.LinkedBlockingQueue.take",
        ];
        assert!(!idle(JvmEventKind::ThreadPark, &[&reacquire[..], &tpe[..]].concat()));
        // The program's own condition wait, with the same blocker class: not idle.
        assert!(!idle(
            JvmEventKind::ThreadPark,
            &[&format!("{COND}.await")[..], "app.Orders.awaitPayment", "app.Main.run"]
        ));
        // A task's own park run by a pool thread (below the task, not under getTask).
        let task = [
            "java.util.concurrent.Semaphore.acquire",
            "app.Task.run",
            "java.util.concurrent.ThreadPoolExecutor.runWorker",
        ];
        assert!(!idle(JvmEventKind::ThreadPark, &task));
        // A contended monitor is contention whatever the thread does.
        assert!(!idle(JvmEventKind::MonitorEnter, &tpe));
    }

    /// A Jetty server as a new user tried it: idle parks 70% of the time waited, a Semaphore 12%, the
    /// program's contended monitor 12%.
    fn server() -> Recording {
        let mut rec = Recording::default();
        rec.add_thread(crate::model::ThreadInfo { name: "pool-1".into(), is_java: true, ..Default::default() });
        let idle_frames = with_park(&[
            &format!("{COND}.awaitNanos"),
            "org.eclipse.jetty.util.BlockingArrayQueue.poll",
            "org.eclipse.jetty.util.thread.QueuedThreadPool$Runner.idleJobPoll",
            "org.eclipse.jetty.util.thread.QueuedThreadPool$Runner.run",
        ]);
        let idle_frames: Vec<&str> = idle_frames.iter().map(String::as_str).collect();
        let sem = with_park(&["java.util.concurrent.Semaphore.acquire", "app.Audit.write"]);
        let sem: Vec<&str> = sem.iter().map(String::as_str).collect();
        let mut evs = Vec::new();
        for _ in 0..7 {
            evs.push(event(&mut rec, JvmEventKind::ThreadPark, COND, 10_000_000, &idle_frames));
        }
        evs.push(event(
            &mut rec,
            JvmEventKind::ThreadPark,
            "java.util.concurrent.Semaphore$NonfairSync",
            12_000_000,
            &sem,
        ));
        evs.push(event(
            &mut rec,
            JvmEventKind::MonitorEnter,
            "app.PriceCache",
            18_000_000,
            &["app.PriceCache.price", "app.Handler.handle"],
        ));
        rec.events = evs;
        rec
    }

    #[test]
    fn the_report_puts_idle_waits_last_and_shares_the_contended_ones() {
        let rec = server();
        let text = report(&rec, 10);
        let lines: Vec<&str> = text.lines().collect();
        let at =
            |needle: &str| lines.iter().position(|l| l.contains(needle)).unwrap_or_else(|| panic!("{needle}: {text}"));
        assert!(
            text.contains("9 waits, 100.0 ms in all; 70.0 ms of them idle pool threads waiting for work"),
            "{text}"
        );
        // The contended monitor leads with its share of the contended 30 ms, the idle row comes last.
        assert!(lines[at("app.PriceCache (monitor)")].contains(" 60.0%"), "{text}");
        assert!(at("app.PriceCache (monitor)") < at("Semaphore$NonfairSync (park)"), "{text}");
        assert!(at("Semaphore$NonfairSync (park)") < at(IDLE_ROW), "{text}");
        assert!(lines[at(IDLE_ROW)].contains("70.0 ms      -        7"), "{text}");
        // By site too: the program's sites, then the idle row.
        assert!(lines[at("app.PriceCache.price:10")].contains("60.0%"), "{text}");
        assert!(at("app.PriceCache.price:10") < at("Semaphore.acquire:10"), "{text}");
        assert_eq!(lines.iter().filter(|l| l.contains(IDLE_ROW)).count(), 2, "{text}");
        assert!(!text.contains("idleJobPoll"), "the idle waits are one row: {text}");
    }

    #[test]
    fn no_idle_leaves_them_out_and_lock_samples_name_them() {
        let mut rec = server();
        assert_eq!(project(&mut rec, EventSel::Lock), 9);
        let idle_leaves = rec
            .samples
            .iter()
            .filter(|s| &*rec.method(s.stack[0].method).name == IDLE_ROW)
            .map(|s| s.weight)
            .sum::<u64>();
        assert_eq!(idle_leaves, 70_000_000);
        let mut rec = server();
        assert_eq!(leave_out(&mut rec), 7);
        let text = report(&rec, 10);
        assert!(text.contains("2 waits, 30.0 ms in all\n"), "{text}");
        assert!(!text.contains(IDLE_ROW), "{text}");
    }
}
