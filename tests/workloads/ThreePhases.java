import java.io.File;
import java.io.FileOutputStream;
import java.io.RandomAccessFile;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.util.concurrent.locks.LockSupport;

/**
 * Three method-level phases of distinct behaviour, known by construction
 * (tests/tests/agent_phases.rs):
 * - ThreePhases.compute: arithmetic on registers (CPU-bound: no page fault, no context switch),
 *   with, once a turn, an exception thrown through instrumented frames (ThreePhases.deep) and
 *   caught;
 * - ThreePhases.fault: one store per page of a mapped sparse file whose pages were just taken
 *   away (the file cut to nothing and grown again), so every store is a page fault;
 * - ThreePhases.syscalls: small writes to /dev/null (system calls) and a short park every few of
 *   them (a futex wait: a voluntary context switch each).
 * main calls each twice (through `round`) in straight-line code, so main and round are small and
 * have no loop: the phase heuristic (more than 50 bytes of bytecode or a backward branch) leaves
 * them alone, and
 * the three phase methods are the run's only long invocations. Each call runs until the thread
 * has used its share of SECONDS of the thread's CPU clock (compute and fault 0.2 of it each
 * call, syscalls 0.1), whatever the machine's load. (The kernel's task-clock, which the trace and
 * the samples both follow, gives the system-call phase less than the CPU clock does: about
 * 43/43/13 here.)
 * Prints "phases done" at the end.
 *
 * Usage: java ThreePhases SECONDS [wait|restore|deep]   ("wait": print "ready" and wait for a
 * line on stdin before the phases, for a late attach; "restore": the same, then once more after
 * the phases, and last print "sites before=B during=D after=A": where site()'s call to the stack
 * walker is in the code running before the first wait, between the two, and after the second.
 * A phases session instruments site() (it has a loop): its probe at entry moves the call, so the
 * three tell whether a session attached at the first wait and stopped at the second left the
 * class instrumented; "deep": first overflow the stack ten times in instrumented recursion on a
 * thread of its own, catching each StackOverflowError, which leaves the trace with lost exit
 * records; the phases are the same)
 */
public class ThreePhases {
    static volatile long sink;
    static int siteBefore = -1, siteDuring = -1;
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();

    public static void main(String[] args) throws Exception {
        long budget = setUp(args);
        File f = tempFile();
        round(budget, f);
        round(budget, f);
        tearDown(args);
        f.delete();
        System.out.println("phases done");
    }

    /** Each phase once: compute and fault a fifth of the budget each, syscalls a tenth. */
    static void round(long budget, File f) {
        compute(budget / 5);
        fault(budget / 5, f);
        syscalls(budget / 10);
    }

    static long setUp(String[] args) throws Exception {
        boolean restore = args.length > 1 && args[1].equals("restore");
        if (restore) {
            siteBefore = site();
        }
        if (restore || args.length > 1 && args[1].equals("wait")) {
            waitForLine();
        }
        if (restore) {
            siteDuring = site();
        }
        if (args.length > 1 && args[1].equals("deep")) {
            overflow();
        }
        return (long) (Double.parseDouble(args[0]) * 1e9);
    }

    static void tearDown(String[] args) throws Exception {
        if (args.length > 1 && args[1].equals("restore")) {
            waitForLine();
            System.out.println("sites before=" + siteBefore + " during=" + siteDuring + " after=" + site());
        }
    }

    /** Prints "ready" and reads stdin up to a newline. */
    static void waitForLine() throws Exception {
        System.out.println("ready");
        System.out.flush();
        int c;
        do {
            c = System.in.read();
        } while (c >= 0 && c != '\n');
    }

    /** The bytecode index of the call to the stack walker in the running code of this method. */
    static int site() {
        int bci = -1;
        for (int i = 0; i < 1; i++) {
            bci = StackWalker.getInstance().walk(s -> s.findFirst().get().getByteCodeIndex());
        }
        return bci;
    }

    /** The "deep" mode, on a thread with a small stack so each overflow is short. */
    static void overflow() throws InterruptedException {
        Thread t = new Thread(null, ThreePhases::overflowTenTimes, "deep", 256 * 1024);
        t.start();
        t.join();
    }

    static void overflowTenTimes() {
        for (int i = 0; i < 10; i++) {
            try {
                sink += recurse(0);
            } catch (StackOverflowError e) {
                sink++;
            }
        }
    }

    /** Unbounded recursion, instrumented (a backward branch). */
    static long recurse(int n) {
        long s = 0;
        for (int i = 0; i < 2; i++) {
            s += i + n;
        }
        return s + recurse(n + 1);
    }

    static File tempFile() throws Exception {
        File f = File.createTempFile("hpm-phases", ".bin");
        f.deleteOnExit();
        return f;
    }

    static long cpu() {
        return MX.getCurrentThreadCpuTime();
    }

    /** CPU-bound, until the thread has used `ns` more CPU time. */
    static void compute(long ns) {
        long end = cpu() + ns, x = 1, caught = 0;
        while (cpu() < end) {
            x = math(x, 1 << 18);
            try {
                deep(3);
            } catch (IllegalStateException e) {
                caught++;
            }
        }
        sink = x + caught;
    }

    static long math(long x, long iters) {
        for (long i = 0; i < iters; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            x ^= x >>> 29;
        }
        return x;
    }

    /** Recurses n deep and throws from the bottom: every frame leaves by the exception. */
    static long deep(int n) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            s += i;
        }
        if (n == 0) {
            throw new IllegalStateException("bottom");
        }
        return s + deep(n - 1);
    }

    /** Page-fault-heavy, until the thread has used `ns` more CPU time. */
    static void fault(long ns, File f) {
        int size = 256 << 12;
        long end = cpu() + ns, touched = 0;
        try (RandomAccessFile file = new RandomAccessFile(f, "rw"); FileChannel ch = file.getChannel()) {
            file.setLength(size);
            MappedByteBuffer buf = ch.map(FileChannel.MapMode.READ_WRITE, 0, size);
            byte v = 0;
            while (cpu() < end) {
                touched += touch(buf, size, v++);
                file.setLength(0);
                file.setLength(size);
            }
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
        sink = touched;
    }

    static long touch(MappedByteBuffer buf, int size, byte v) {
        long n = 0;
        for (int i = 0; i < size; i += 4096) {
            buf.put(i, v);
            n++;
        }
        return n;
    }

    /** System-call-heavy, until the thread has used `ns` more CPU time. */
    static void syscalls(long ns) {
        long end = cpu() + ns, n = 0;
        try (FileOutputStream out = new FileOutputStream("/dev/null")) {
            while (cpu() < end) {
                n += writes(out, 20);
                LockSupport.parkNanos(20_000);
            }
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
        sink = n;
    }

    static long writes(FileOutputStream out, int n) throws java.io.IOException {
        for (int i = 0; i < n; i++) {
            out.write(i);
        }
        return n;
    }
}
