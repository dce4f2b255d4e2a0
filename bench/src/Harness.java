import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.ArrayList;
import java.util.List;

/**
 * Runs a workload's iterations and prints one marker line per iteration on stdout:
 *
 *   hpm-bench iteration I START_EPOCH_MS DURATION_MS
 *
 * (and, in a paired run, `hpm-bench paired I on|off|CELL WALL_MS CPU_MS`, see Toggle)
 * so a reader can discard the warm-up iterations (python3 scripts/bench suite does). Every driver
 * takes the number of iterations as its first argument; inputs are generated from fixed seeds.
 */
final class Harness {
    interface Body { void run(int iteration) throws Exception; }
    interface Task { void run(int worker) throws Exception; }

    static int iterations(String[] args, int dflt) {
        return args.length > 0 ? Integer.parseInt(args[0]) : dflt;
    }

    static void iterate(String name, int iterations, Body body) throws Exception {
        System.out.println("hpm-bench start " + name + " iterations " + iterations
                + " cpus " + Runtime.getRuntime().availableProcessors());
        Toggle toggle = Toggle.fromProperties();
        // A paired run's warm-up may go on until the JIT is quiet (Toggle.afterIteration):
        // its measured iterations follow, as many as asked.
        int total = iterations;
        for (int i = 0; i < total; i++) {
            String cell = toggle != null ? toggle.cell(i) : null;
            if (toggle != null) toggle.collect(i);
            if (cell != null && toggle.opens(i)) toggle.start(cell);
            long cpu = toggle != null ? Toggle.processCpuNs() : 0;
            long epoch = System.currentTimeMillis();
            long start = System.nanoTime();
            body.run(i);
            double ms = (System.nanoTime() - start) / 1e6;
            double cpuMs = toggle != null ? (Toggle.processCpuNs() - cpu) / 1e6 : 0;
            if (cell != null && toggle.closes(i)) toggle.stop(cell);
            System.out.printf("hpm-bench iteration %d %d %.3f%n", i, epoch, ms);
            if (toggle != null && toggle.measured(i)) {
                System.out.printf("hpm-bench paired %d %s %.3f %.3f%n", i, cell != null ? cell : "off", ms, cpuMs);
            }
            if (toggle != null) {
                total = toggle.afterIteration(i, ms, iterations);
            }
        }
        System.out.println("hpm-bench end " + name);
        System.out.flush();
    }

    /** Runs task(0..workers-1) on a pool that lives for the whole run and waits for all. */
    static void parallel(ExecutorService pool, int workers, Task task) throws Exception {
        List<Future<?>> fs = new ArrayList<>();
        for (int w = 0; w < workers; w++) {
            final int id = w;
            fs.add(pool.submit(() -> { task.run(id); return null; }));
        }
        for (Future<?> f : fs) f.get();
    }

    static ExecutorService pool(String name, int threads) {
        return Executors.newFixedThreadPool(threads, r -> {
            Thread t = new Thread(r, name + "-worker");
            t.setDaemon(true);
            return t;
        });
    }

    /** Deterministic words with a skewed (Zipf-like) distribution, for text inputs. */
    static final class Words {
        private final java.util.Random random;
        private final String[] vocabulary;

        Words(long seed, int size) {
            random = new java.util.Random(seed);
            vocabulary = new String[size];
            java.util.Random v = new java.util.Random(42);
            for (int i = 0; i < size; i++) {
                StringBuilder b = new StringBuilder();
                int len = 3 + v.nextInt(8);
                for (int k = 0; k < len; k++) b.append((char) ('a' + v.nextInt(26)));
                vocabulary[i] = b.toString();
            }
        }

        String next() {
            double u = random.nextDouble();
            return vocabulary[(int) (vocabulary.length * u * u * u)];
        }

        int nextInt(int n) { return random.nextInt(n); }

        String sentence(int n) {
            StringBuilder b = new StringBuilder();
            for (int i = 0; i < n; i++) b.append(i == 0 ? "" : " ").append(next());
            return b.toString();
        }
    }
}
