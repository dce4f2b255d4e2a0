import java.util.concurrent.locks.LockSupport;

/**
 * Four threads in four states until "spin" has used SECONDS of CPU time (SECONDS of wall time
 * on an idle machine, longer on a busy one, so the wall sampler's ticks are not cut short):
 * "spin" runs Java code, "sleep" is in Thread.sleep, "blocked" waits to enter a monitor that
 * main holds throughout, "park" is parked (LockSupport.parkNanos). A wall-clock profile gives
 * each about a quarter of their samples, each with its state.
 *
 * Usage: java WallStates SECONDS
 */
public class WallStates {
    static final Object lock = new Object();
    static volatile boolean done;
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        double seconds = Double.parseDouble(args[0]);
        Thread spin = new Thread(() -> {
            long x = 1;
            while (!done) {
                x = x * 6364136223846793005L + 1442695040888963407L;
            }
            sink = x;
        }, "spin");
        Thread sleep = new Thread(() -> {
            while (!done) {
                try {
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "sleep");
        Thread blocked = new Thread(() -> {
            synchronized (lock) {
                sink++;
            }
        }, "blocked");
        Thread park = new Thread(() -> {
            while (!done) {
                LockSupport.parkNanos(50_000_000L);
            }
        }, "park");
        synchronized (lock) {
            for (Thread t : new Thread[] {spin, sleep, blocked, park}) {
                t.start();
            }
            CpuClock.awaitEach(new Thread[] {spin}, seconds);
            done = true;
        }
        for (Thread t : new Thread[] {spin, sleep, blocked, park}) {
            t.join();
        }
        System.out.println("done");
    }
}
