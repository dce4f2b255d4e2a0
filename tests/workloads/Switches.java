import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A thread "switcher" that alternates about 1 ms of Java work with a 1 ms sleep until it has
 * used SECONDS of CPU time, then prints what the kernel counted of its context switches, from
 * /proc/thread-self/status: "switches switcher N" (voluntary + involuntary). A profile's
 * `context-switches` counter, summed over the thread's samples, is checked against it.
 *
 * Usage: java Switches SECONDS
 */
public class Switches {
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        long budget = (long) (Double.parseDouble(args[0]) * 1e9);
        Thread t = new Thread(() -> {
            ThreadMXBean mx = ManagementFactory.getThreadMXBean();
            long x = 1;
            try {
                while (mx.getCurrentThreadCpuTime() < budget) {
                    long until = System.nanoTime() + 1_000_000;
                    while (System.nanoTime() < until) {
                        x = x * 6364136223846793005L + 1442695040888963407L;
                    }
                    Thread.sleep(1);
                }
                long n = 0;
                for (String line : Files.readAllLines(Path.of("/proc/thread-self/status"))) {
                    if (line.startsWith("voluntary_ctxt_switches:") || line.startsWith("nonvoluntary_ctxt_switches:")) {
                        n += Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
                    }
                }
                System.out.println("switches switcher " + n);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
            sink = x;
        }, "switcher");
        t.start();
        t.join();
    }
}
