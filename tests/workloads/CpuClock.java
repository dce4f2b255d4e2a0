import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A run's length in the CPU time of the thread that does the work, not in wall time: on a busy
 * machine the run takes longer and gets the same number of cpu-clock samples, instead of
 * ending early with fewer. One per thread, made on the thread it measures.
 *
 * <p>{@link #done()} only reads a volatile flag. The thread's CPU clock is read by a watcher
 * thread ("cpu-clock-watcher", asleep but every 5 ms), never by the working thread itself: the
 * clock is a native call, and a thread that made one every millisecond showed it in the
 * profiles of samplers that stop threads where they leave Java code (partial safepoints), as
 * two fifths of a deep stack's samples.
 */
final class CpuClock {
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
    private static final CopyOnWriteArrayList<CpuClock> RUNNING = new CopyOnWriteArrayList<>();
    private static Thread watcher;

    private final Thread thread;
    private final long end;
    private volatile boolean done;

    /** The current thread may use {@code seconds} more seconds of CPU time. */
    CpuClock(double seconds) {
        thread = Thread.currentThread();
        end = MX.getCurrentThreadCpuTime() + (long) (seconds * 1e9);
        RUNNING.add(this);
        watch();
    }

    /** Whether the thread has used its CPU time (as of the watcher's last look). */
    boolean done() {
        return done;
    }

    private static synchronized void watch() {
        if (watcher != null) {
            return;
        }
        watcher = new Thread(() -> {
            while (true) {
                for (CpuClock c : RUNNING) {
                    long used = MX.getThreadCpuTime(c.thread.getId()); // -1 once the thread has ended
                    if (used < 0 || used >= c.end) {
                        c.done = true;
                        RUNNING.remove(c);
                    }
                }
                try {
                    Thread.sleep(5);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "cpu-clock-watcher");
        watcher.setDaemon(true);
        watcher.start();
    }

    /**
     * Waits, asleep, until each of {@code threads} has used {@code seconds} more seconds of CPU
     * time than when called (or has ended), reading their clocks every 10 ms.
     */
    static void awaitEach(Thread[] threads, double seconds) throws InterruptedException {
        long[] end = new long[threads.length];
        for (int i = 0; i < threads.length; i++) {
            end[i] = MX.getThreadCpuTime(threads[i].getId()) + (long) (seconds * 1e9);
        }
        for (int i = 0; i < threads.length; i++) {
            while (true) {
                long used = MX.getThreadCpuTime(threads[i].getId()); // -1 once the thread has ended
                if (used < 0 || used >= end[i]) {
                    break;
                }
                Thread.sleep(10);
            }
        }
    }
}
