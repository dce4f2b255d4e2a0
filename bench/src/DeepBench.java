/**
 * deep (synthetic, no package): THREADS workers, each descending a recursion DEPTH frames deep
 * and working at its bottom: small methods called in a loop (returns at the top of the stack,
 * as real code makes), CALLS per iteration. A stack sampler that walks whole stacks pays for
 * DEPTH frames per sample; incremental stack tracing decodes the deep part once per retrieval.
 * The recursion is left and entered again every iteration.
 *
 *   java DeepBench ITERATIONS [THREADS] [DEPTH] [CALLS]
 */
public class DeepBench {
    static volatile long sink;

    static long leaf(long x, int i) { return x * 31 + i; }
    static long middle(long x, int i) { return leaf(x, i) ^ (x >>> 7); }

    static long work(int calls, long x) {
        for (int i = 0; i < calls; i++) {
            x = middle(x, i);
        }
        return x;
    }

    static long down(int depth, int calls, long x) {
        if (depth == 0) {
            return work(calls, x);
        }
        return down(depth - 1, calls, x + depth) + 1;
    }

    public static void main(String[] args) throws Exception {
        int threads = args.length > 1 ? Integer.parseInt(args[1]) : 2;
        int depth = args.length > 2 ? Integer.parseInt(args[2]) : 1000;
        int calls = args.length > 3 ? Integer.parseInt(args[3]) : 100_000_000;
        java.util.concurrent.ExecutorService pool = Harness.pool("deep", threads);
        Harness.iterate("deep", Harness.iterations(args, 20), i ->
            Harness.parallel(pool, threads, w -> sink += down(depth, calls, w)));
        pool.shutdown();
    }
}
