import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * Virtual threads (JDK 21+) running two kinds of task, heavy and light, of CPU 3:1: each spins
 * in rounds and yields between them, so its carrier unmounts and remounts it and its frames
 * are frozen in and thawed from a stack chunk again and again.
 * Usage: VThreads TASKS_PER_KIND ROUNDS [SPIN]: ROUNDS times, TASKS_PER_KIND of each kind at
 * once; SPIN iterations per round (200,000 unless given). Compiled for Java 17 with the
 * other workloads: the virtual-thread executor is looked up reflectively, and on a JDK
 * without virtual threads the program says so and exits with status 3.
 */
public class VThreads {
    static volatile long sink;
    static long spinRounds = 200_000;

    static long spin(long n) {
        long x = 1;
        for (long i = 0; i < n; i++) x = x * 6364136223846793005L + 1442695040888963407L;
        return x;
    }

    static void heavy() {
        for (int r = 0; r < 30; r++) {
            sink += spin(spinRounds);
            Thread.yield();
        }
    }

    static void light() {
        for (int r = 0; r < 10; r++) {
            sink += spin(spinRounds);
            Thread.yield();
        }
    }

    public static void main(String[] a) throws Exception {
        int n = Integer.parseInt(a[0]);
        int rounds = Integer.parseInt(a[1]);
        if (a.length > 2) spinRounds = Long.parseLong(a[2]);
        java.lang.reflect.Method perTask;
        try {
            perTask = Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
        } catch (NoSuchMethodException e) {
            System.err.println("VThreads: this JDK has no virtual threads (JDK 21+ needed)");
            System.exit(3);
            return;
        }
        for (int k = 0; k < rounds; k++) {
            ExecutorService ex = (ExecutorService) perTask.invoke(null);
            for (int i = 0; i < n; i++) {
                ex.submit(VThreads::heavy);
                ex.submit(VThreads::light);
            }
            ex.shutdown();
            if (!ex.awaitTermination(10, TimeUnit.MINUTES)) throw new IllegalStateException("tasks did not finish");
        }
    }
}
