import java.io.FileOutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.zip.Deflater;

/**
 * Two threads whose CPU goes into libc (tests/tests/agent_native_names.rs):
 * - "libc-write" writes single bytes to /dev/null with FileOutputStream.write(int): each is a
 *   write(2) through libjava's handleWrite and libc's write;
 * - "libc-memset" calls Deflater.reset() over and over: zlib's deflateReset clears its 64 KB
 *   hash table with memset, which libc runs in one of its internal, CPU-specific functions
 *   (__memset_avx2_unaligned_erms, __memset_avx512_unaligned_erms...) that only libc's debug
 *   file names.
 *
 * Usage: java LibcCalls SECONDS. Each thread runs until it has used SECONDS of CPU time, so the
 * sample count does not depend on how loaded the machine is.
 */
public class LibcCalls {
    static volatile long sink;
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();

    static boolean budgetLeft(long budgetNs) {
        return MX.getCurrentThreadCpuTime() < budgetNs;
    }

    static void writes(long budgetNs) {
        try (FileOutputStream out = new FileOutputStream("/dev/null")) {
            while (budgetLeft(budgetNs)) {
                for (int i = 0; i < 1000; i++) {
                    out.write(i);
                }
            }
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    static void clears(long budgetNs) {
        Deflater d = new Deflater();
        long n = 0;
        while (budgetLeft(budgetNs)) {
            for (int i = 0; i < 100; i++) {
                d.reset();
                n++;
            }
        }
        d.end();
        sink += n;
    }

    public static void main(String[] args) throws Exception {
        long budgetNs = (long) (Double.parseDouble(args[0]) * 1e9);
        Thread w = new Thread(() -> writes(budgetNs), "libc-write");
        Thread c = new Thread(() -> clears(budgetNs), "libc-memset");
        w.start();
        c.start();
        w.join();
        c.join();
        System.out.println("done " + sink);
    }
}
