import java.io.FileOutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Two threads that each use the same CPU time: "arith" in Java arithmetic (user mode), "writer"
 * in 1-byte writes to /dev/null (mostly in the kernel). Each stops once its own CPU time (user
 * + system) reaches SECONDS, then prints what the kernel says it used, from
 * /proc/thread-self/stat: "cpu NAME UTIME STIME" in clock ticks, the truth a profile's
 * per-thread and kernel shares are checked against.
 *
 * Usage: java KernelTime SECONDS
 */
public class KernelTime {
    static volatile long sink;

    static long arith(long budget) {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long x = System.nanoTime();
        while (mx.getCurrentThreadCpuTime() < budget) {
            for (int i = 0; i < 200_000; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
            }
        }
        return x;
    }

    static long write(long budget) throws Exception {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long n = 0;
        try (FileOutputStream out = new FileOutputStream("/dev/null")) {
            while (mx.getCurrentThreadCpuTime() < budget) {
                for (int i = 0; i < 2_000; i++) {
                    out.write(i);
                }
                n += 2_000;
            }
        }
        return n;
    }

    static void report(String name) throws Exception {
        String stat = Files.readString(Path.of("/proc/thread-self/stat"));
        // Fields after the parenthesised name: state is field 3, utime 14, stime 15.
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
        synchronized (KernelTime.class) {
            System.out.println("cpu " + name + " " + f[11] + " " + f[12]);
        }
    }

    public static void main(String[] args) throws Exception {
        long budget = (long) (Double.parseDouble(args[0]) * 1e9);
        Thread arith = new Thread(() -> {
            sink += arith(budget);
            try {
                report("arith");
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }, "arith");
        Thread writer = new Thread(() -> {
            try {
                sink += write(budget);
                report("writer");
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }, "writer");
        arith.start();
        writer.start();
        arith.join();
        writer.join();
        System.out.println("done " + sink);
    }
}
