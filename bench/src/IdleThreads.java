import java.lang.management.ManagementFactory;
import java.util.concurrent.locks.LockSupport;

/**
 * The wall-clock sampler's cost with many idle threads (docs/design.md, "Wall clock"): THREADS daemon
 * threads parked for good and one thread spinning for SECONDS; prints the process's CPU time
 * (ms) when the spinner is done. Run with and without event=wall and compare.
 *
 *   java [-agentpath:libhpm.so=event=wall,interval=10ms] -cp target/bench IdleThreads 2000 5
 */
public class IdleThreads {
    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        double seconds = Double.parseDouble(args[1]);
        for (int i = 0; i < n; i++) {
            Thread t = new Thread(LockSupport::park, "idle-" + i);
            t.setDaemon(true);
            t.start();
        }
        Thread spin = new Thread(() -> {
            long end = System.nanoTime() + (long) (seconds * 1e9);
            long x = 0;
            while (System.nanoTime() < end) {
                x = x * 31 + 7;
            }
            if (x == 42) {
                System.out.println(x);
            }
        }, "spin");
        long cpu0 = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
        spin.start();
        spin.join();
        long cpu1 = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
        System.out.println("cpu_ms " + (cpu1 - cpu0) / 1_000_000);
    }
}
