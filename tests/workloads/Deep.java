/**
 * Stacks of a known depth: THREADS threads each recurse DEPTH frames deep through
 * Deep.down, then spin in Deep.bottom for SECONDS seconds. Every sample of a spinning thread
 * therefore has DEPTH frames of Deep.down between Deep.run and Deep.bottom.
 *
 * Usage: java Deep DEPTH SECONDS [THREADS]
 */
public class Deep {
    static volatile long sink;

    static long bottom(long deadline) {
        long x = 1;
        while (System.nanoTime() < deadline) {
            for (int i = 0; i < 10_000; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
            }
        }
        return x;
    }

    static long down(int n, long deadline) {
        if (n == 0) {
            return bottom(deadline);
        }
        return down(n - 1, deadline) + 1;
    }

    static void run(int depth, long deadline) {
        sink = down(depth, deadline);
    }

    public static void main(String[] args) throws Exception {
        int depth = Integer.parseInt(args[0]);
        long deadline = System.nanoTime() + Long.parseLong(args[1]) * 1_000_000_000L;
        int threads = args.length > 2 ? Integer.parseInt(args[2]) : 2;
        Thread[] ts = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            // A deep recursion needs a stack of its own (2,000 frames of down fit in 1 MB).
            ts[i] = new Thread(null, () -> run(depth, deadline), "deep-" + i, 64L << 20);
            ts[i].start();
        }
        for (Thread t : ts) {
            t.join();
        }
    }
}
