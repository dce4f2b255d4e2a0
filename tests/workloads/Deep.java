/**
 * Stacks of a known depth: THREADS threads each recurse DEPTH frames deep through
 * Deep.down, then spin in Deep.bottom until it has used SECONDS of CPU time (CpuClock). Every sample of a spinning thread
 * therefore has DEPTH frames of Deep.down between Deep.run and Deep.bottom.
 *
 * Usage: java Deep DEPTH SECONDS [THREADS]
 */
public class Deep {
    static volatile long sink;

    static long bottom(double seconds) {
        CpuClock clock = new CpuClock(seconds);
        long x = 1;
        while (!clock.done()) {
            for (int i = 0; i < 10_000; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
            }
        }
        return x;
    }

    static long down(int n, double seconds) {
        if (n == 0) {
            return bottom(seconds);
        }
        return down(n - 1, seconds) + 1;
    }

    static void run(int depth, double seconds) {
        sink = down(depth, seconds);
    }

    public static void main(String[] args) throws Exception {
        int depth = Integer.parseInt(args[0]);
        double seconds = Double.parseDouble(args[1]);
        int threads = args.length > 2 ? Integer.parseInt(args[2]) : 2;
        Thread[] ts = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            // A deep recursion needs a stack of its own (2,000 frames of down fit in 1 MB).
            ts[i] = new Thread(null, () -> run(depth, seconds), "deep-" + i, 64L << 20);
            ts[i].start();
        }
        for (Thread t : ts) {
            t.join();
        }
    }
}
