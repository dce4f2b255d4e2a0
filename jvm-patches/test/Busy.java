import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Workload for the smoke test: busy threads (compiled and inlined code), sleeping threads, a thread
 * blocked on a monitor and one blocked in native (accept on a loopback socket). Prints the work
 * done per second so that runs with and without sampling can be compared.
 * Usage: java Busy.java [busyThreads=4] [seconds=3]
 */
public class Busy {
    static final AtomicLong work = new AtomicLong();
    static final Object lock = new Object();

    static long leaf(long x) { return x * 6364136223846793005L + 1442695040888963407L; }
    static long middle(long x, int n) { for (int i = 0; i < n; i++) x = leaf(x) ^ (x >>> 7); return x; }
    static long top(long x, int depth) { return depth == 0 ? middle(x, 1000) : top(x + depth, depth - 1); }

    public static void main(String[] args) throws Exception {
        int busy = args.length > 0 ? Integer.parseInt(args[0]) : 4;
        int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        for (int i = 0; i < busy; i++) {
            Thread t = new Thread(() -> {
                long x = Thread.currentThread().getId(), n = 0;
                while (System.nanoTime() < end) { x = top(x, 10); n++; }
                work.addAndGet(n);
                if (x == 42) System.out.println();
            }, "busy-" + i);
            t.start();
        }
        for (int i = 0; i < 2; i++) {
            Thread t = new Thread(() -> {
                try { Thread.sleep(1_000_000); } catch (InterruptedException e) { }
            }, "sleeper-" + i);
            t.setDaemon(true);
            t.start();
        }
        synchronized (lock) {
            Thread blocked = new Thread(() -> { synchronized (lock) { } }, "blocked");
            blocked.setDaemon(true);
            blocked.start();
            ServerSocket ss = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
            Thread inNative = new Thread(() -> { try { ss.accept(); } catch (Exception e) { } }, "accepting");
            inNative.setDaemon(true);
            inNative.start();
            Thread.sleep((end - System.nanoTime()) / 1_000_000 + 200);
        }
        System.out.printf("busy: %d threads, %.1f M calls/s%n", busy, work.get() / (seconds * 1e6));
        System.exit(0);
    }
}
