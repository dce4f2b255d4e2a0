import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * A run's length in the CPU time of the thread that does the work, not in wall time: on a busy
 * machine the run takes longer and gets the same number of cpu-clock samples, instead of
 * ending early with fewer. One per thread, made on the thread it measures.
 *
 * <p>{@link #done()} reads the thread's CPU clock (a system call) at most once per millisecond
 * of wall time and otherwise only {@code System.nanoTime()} (vDSO, tens of ns), so the check
 * adds nothing a profile would see.
 */
final class CpuClock {
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();

    private final long end;
    private long nextRead;
    private boolean done;

    /** The current thread may use {@code seconds} more seconds of CPU time. */
    CpuClock(double seconds) {
        end = MX.getCurrentThreadCpuTime() + (long) (seconds * 1e9);
    }

    /** Whether the current thread has used its CPU time. */
    boolean done() {
        if (done) {
            return true;
        }
        long now = System.nanoTime();
        if (now < nextRead) {
            return false;
        }
        nextRead = now + 1_000_000L;
        done = MX.getCurrentThreadCpuTime() >= end;
        return done;
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
