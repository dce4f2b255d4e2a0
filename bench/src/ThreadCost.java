/**
 * What starting a thread costs (docs/benchmarks.md, "hpm against async-profiler in one JVM"):
 * starts and joins THREADS short threads, three rounds, and prints the process's CPU and wall
 * time per thread of each round. A profiler that sets up each new thread's sampling (a perf
 * event, its ring) adds to it.
 *
 *   java ThreadCost THREADS
 */
public class ThreadCost {
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        for (int round = 0; round < 3; round++) {
            long cpu = os.getProcessCpuTime(), wall = System.nanoTime();
            for (int i = 0; i < n; i++) {
                Thread t = new Thread(() -> {
                    long x = 0;
                    for (int k = 0; k < 20_000; k++) {
                        x += k * 31L;
                    }
                    sink = x;
                });
                t.start();
                t.join();
            }
            System.out.printf("round %d: %.1f us CPU, %.1f us wall per thread%n", round,
                    (os.getProcessCpuTime() - cpu) / 1e3 / n, (System.nanoTime() - wall) / 1e3 / n);
        }
    }
}
