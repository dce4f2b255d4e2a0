import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;

/**
 * Allocation-heavy work with a live set that keeps the collector busy. Prints the GC time the
 * JVM measured: "gc ms=N wall ms=M".
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
        System.out.println("gc ms=" + gc + " wall ms=" + (System.nanoTime() - start) / 1_000_000 + " n=" + n);
    }
}
