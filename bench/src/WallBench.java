import java.util.concurrent.ExecutorService;
import java.util.concurrent.locks.LockSupport;

/**
 * wall (synthetic, no package): the cost of a wall-clock profiler with many idle threads. IDLE
 * daemon threads wait for good (half parked, half sleeping: a signal wakes a sleeping thread,
 * which goes back to sleep) while BUSY workers share a fixed amount of CPU work per iteration,
 * UNITS units split evenly (one unit mixes a 4,096-int table once, no allocation: the
 * collector stays out of the iterations). The work is the same whatever the profiler does, so
 * an iteration's time measures the work per second the application keeps.
 *
 *   java WallBench ITERATIONS [BUSY] [IDLE] [UNITS]
 */
public class WallBench {
    static volatile long sink;

    static long unit(int[] table, long x) {
        for (int k = 0; k < table.length; k++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            int j = (int) (x & (table.length - 1));
            table[j] += table[k] ^ (int) x;
        }
        return x;
    }

    static long work(int units, long seed) {
        int[] table = new int[4096];
        long x = seed | 1;
        for (int u = 0; u < units; u++) {
            x = unit(table, x);
        }
        return x + table[(int) (x & 4095)];
    }

    public static void main(String[] args) throws Exception {
        int busy = args.length > 1 ? Integer.parseInt(args[1]) : 10;
        int idle = args.length > 2 ? Integer.parseInt(args[2]) : 1000;
        int units = args.length > 3 ? Integer.parseInt(args[3]) : 20_000;
        for (int i = 0; i < idle; i++) {
            boolean park = i % 2 == 0;
            Thread t = new Thread(null, park ? WallBench::parkForGood : WallBench::sleepForGood,
                    (park ? "idle-park-" : "idle-sleep-") + i, 256 * 1024);
            t.setDaemon(true);
            t.start();
        }
        ExecutorService pool = Harness.pool("wall-busy", busy);
        Harness.iterate("wall", Harness.iterations(args, 30), it ->
            Harness.parallel(pool, busy, w -> sink += work(units / busy, it * 1000L + w)));
        pool.shutdown();
    }

    static void parkForGood() {
        while (true) {
            LockSupport.park();
        }
    }

    static void sleepForGood() {
        while (true) {
            try {
                Thread.sleep(1_000_000);
            } catch (InterruptedException e) {
                return;
            }
        }
    }
}
