import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Virtual threads for a wall-clock profile (JDK 21+): N virtual threads sleep for S seconds
 * (unmounted all that time) while two spin for the same time (mounted whenever a carrier runs
 * them). Compiled for Java 17 with the other workloads: the virtual-thread executor is found by
 * reflection. Args: N S.
 */
public class VThreadsWall {
    static volatile long sink;
    static long ms;

    public static void main(String[] a) throws Exception {
        int sleepers = Integer.parseInt(a[0]);
        ms = Long.parseLong(a[1]) * 1000;
        ExecutorService ex = (ExecutorService) Executors.class.getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
        for (int i = 0; i < sleepers; i++) {
            ex.submit(() -> {
                Thread.sleep(ms);
                return null;
            });
        }
        for (int i = 0; i < 2; i++) {
            ex.submit(VThreadsWall::vspin);
        }
        ex.shutdown();
        ex.awaitTermination(ms + 60_000, java.util.concurrent.TimeUnit.MILLISECONDS);
    }

    static void vspin() {
        long end = System.nanoTime() + ms * 1_000_000;
        long x = 1;
        while (System.nanoTime() < end) {
            x = x * 31 + 7;
        }
        sink += x;
    }
}
