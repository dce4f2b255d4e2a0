import java.io.File;
import java.io.RandomAccessFile;
import java.lang.management.ManagementFactory;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;

/**
 * Where page faults happen, known by construction (tests/tests/agent_counters.rs): one thread
 * "alternator" alternates, in short turns, FaultsOrMath.faults, which stores one byte per page
 * of a mapped sparse file whose pages were just taken away (the file is cut to nothing and grown
 * again, as in MappedTouches), so every store is a page fault; and FaultsOrMath.math, pure
 * arithmetic on registers, which touches no new page. Each turn of math is sized to take about
 * as long as one of faults (measured by the thread's CPU clock at start), so a counter charged
 * by the interval (the delta since the previous sample goes to the next sample's stack) gives
 * math a large share of the faults, and one charged by its own overflows gives it none.
 * Runs until the thread has used SECONDS of CPU time, then prints its pages touched:
 * "touched N".
 *
 * Usage: java FaultsOrMath SECONDS [PAGES_PER_TURN]
 */
public class FaultsOrMath {
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        long budget = (long) (Double.parseDouble(args[0]) * 1e9);
        int pages = args.length > 1 ? Integer.parseInt(args[1]) : 256;
        long size = (long) pages << 12;
        File f = File.createTempFile("hpm-faults", ".bin");
        f.deleteOnExit();
        Thread t = new Thread(() -> {
            try (RandomAccessFile file = new RandomAccessFile(f, "rw"); FileChannel ch = file.getChannel()) {
                file.setLength(size);
                MappedByteBuffer buf = ch.map(FileChannel.MapMode.READ_WRITE, 0, size);
                var mx = ManagementFactory.getThreadMXBean();
                long touched = 0, x = 1, iters = 1 << 16;
                byte v = 0;
                while (mx.getCurrentThreadCpuTime() < budget) {
                    long t0 = mx.getCurrentThreadCpuTime();
                    touched += faults(buf, (int) size, v++);
                    file.setLength(0);
                    file.setLength(size);
                    long t1 = mx.getCurrentThreadCpuTime();
                    x = math(x, iters);
                    long t2 = mx.getCurrentThreadCpuTime();
                    // Keep math's turn about as long as the last turn of faults.
                    long want = t1 - t0, took = Math.max(1, t2 - t1);
                    iters = Math.max(1 << 10, Math.min(1L << 26, iters * want / took));
                }
                sink = x;
                System.out.println("touched " + touched);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }, "alternator");
        t.start();
        t.join();
        f.delete();
    }

    static long faults(MappedByteBuffer buf, int size, byte v) {
        long n = 0;
        for (int i = 0; i < size; i += 4096) {
            buf.put(i, v);
            n++;
        }
        return n;
    }

    static long math(long x, long iters) {
        for (long i = 0; i < iters; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            x ^= x >>> 29;
        }
        return x;
    }
}
