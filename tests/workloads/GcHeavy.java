import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;

/**
 * Allocation-heavy work with a live set that keeps the collector busy. Prints the GC time the
 * JVM measured and the CPU time of its GC worker threads from /proc (which, unlike pause time,
 * does not grow when the machine is loaded): "gc ms=N wall ms=M n=K gc-cpu ms=C".
 */
public class GcHeavy {
    public static void main(String[] args) {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 4;
        long start = System.nanoTime();
        long deadline = start + (long) (seconds * 1e9);
        Object[] live = new Object[200_000];
        long n = 0;
        while (System.nanoTime() < deadline) {
            for (int i = 0; i < 10_000; i++, n++) {
                int[] a = new int[16 + (int) (n % 64)];
                a[0] = (int) n;
                live[(int) ((n * 7919) % live.length)] = (n % 3 == 0) ? a : new Object[] {a, null};
            }
        }
        long gc = 0;
        for (GarbageCollectorMXBean b : ManagementFactory.getGarbageCollectorMXBeans()) gc += b.getCollectionTime();
        System.out.println("gc ms=" + gc + " wall ms=" + (System.nanoTime() - start) / 1_000_000 + " n=" + n
            + " gc-cpu ms=" + gcThreadsCpuMs());
    }

    /** utime + stime of the threads named "GC Thread#..." (Parallel and G1 workers). */
    static long gcThreadsCpuMs() {
        long ticks = 0;
        java.io.File[] tasks = new java.io.File("/proc/self/task").listFiles();
        for (java.io.File t : tasks == null ? new java.io.File[0] : tasks) {
            try {
                String comm = java.nio.file.Files.readString(new java.io.File(t, "comm").toPath()).trim();
                if (!comm.startsWith("GC Thread")) continue;
                String stat = java.nio.file.Files.readString(new java.io.File(t, "stat").toPath());
                String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                ticks += Long.parseLong(f[11]) + Long.parseLong(f[12]); // utime, stime (fields 14, 15)
            } catch (java.io.IOException | RuntimeException e) {
                // the thread ended meanwhile
            }
        }
        return ticks * 10; // USER_HZ is 100 on Linux
    }
}
