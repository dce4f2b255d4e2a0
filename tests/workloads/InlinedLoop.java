import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Almost all CPU time in one small method, {@code mix}, whose loop the JIT inlines into the task
 * that calls it: the truth is that {@code mix} holds ~99% of the samples. Two pool threads run
 * tasks for the given seconds (default 5). docs/design.md, "Inlined loops and C2's debug
 * information between safepoints", profiles it with hpm, async-profiler and JFR.
 */
public class InlinedLoop {
    static long mix(long n) {
        long acc = 0;
        for (long i = 0; i < n; i++) {
            acc += (i * i) ^ (acc >>> 7);
        }
        return acc;
    }

    public static void main(String[] args) throws Exception {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 5;
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        ExecutorService pool = Executors.newFixedThreadPool(2);
        long total = 0;
        while (System.nanoTime() < end) {
            List<Future<Long>> batch = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                batch.add(pool.submit(() -> mix(200_000)));
            }
            for (Future<Long> f : batch) {
                total += f.get();
            }
        }
        pool.shutdown();
        System.out.println("done " + total);
    }
}
