import java.util.concurrent.ThreadLocalRandom;

/**
 * Threads that spend known shares of their CPU time in three methods: a 50%, b 30%, c 20%.
 * Each method runs the same loop for 5, 3 or 2 units of work, called in a random order so the
 * sampling period cannot lock onto the work cycle.
 *
 * Usage: java Shares THREADS SECONDS [cpu]
 * With "cpu", each thread runs until it has used SECONDS of CPU time rather than wall time, so a
 * cpu-clock profile gets the same number of samples however loaded the machine is; the threads'
 * CPU time, all told, is printed at the end ("cpu NS").
 * Run with -XX:CompileCommand=dontinline,Shares::* to keep a, b and c as separate compiled
 * frames; by default the JIT inlines them into run().
 */
public class Shares {
    static volatile long sink;
    static volatile int unit = 20_000; // read at run time so loop counts are not constants

    static long spin(long x, int n) {
        for (int i = 0; i < n; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        return x;
    }

    static long a(long x) { return spin(x, 5 * unit); }
    static long b(long x) { return spin(x, 3 * unit); }
    static long c(long x) { return spin(x, 2 * unit); }

    // When the run ends (System.nanoTime()); in "cpu" mode main moves it once every thread
    // has used its CPU budget.
    static volatile long stopAt;
    // The CPU time the threads used, each adding its own as it ends.
    static final java.util.concurrent.atomic.AtomicLong cpuNs = new java.util.concurrent.atomic.AtomicLong();

    static void run() {
        ThreadLocalRandom r = ThreadLocalRandom.current();
        long x = r.nextLong();
        while (System.nanoTime() < stopAt) {
            switch (r.nextInt(6)) {
                case 0: x = a(x); x = b(x); x = c(x); break;
                case 1: x = a(x); x = c(x); x = b(x); break;
                case 2: x = b(x); x = a(x); x = c(x); break;
                case 3: x = b(x); x = c(x); x = a(x); break;
                case 4: x = c(x); x = a(x); x = b(x); break;
                default: x = c(x); x = b(x); x = a(x); break;
            }
        }
        sink += x;
        cpuNs.addAndGet(java.lang.management.ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime());
    }

    public static void main(String[] args) throws Exception {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 2;
        double seconds = args.length > 1 ? Double.parseDouble(args[1]) : 5;
        boolean cpu = args.length > 2 && args[2].equals("cpu");
        stopAt = cpu ? Long.MAX_VALUE : System.nanoTime() + (long) (seconds * 1e9);
        Thread[] ts = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            ts[i] = new Thread(Shares::run, "shares-" + i);
            ts[i].start();
        }
        if (cpu) {
            // The workers' loop stays as in wall-clock mode; this thread watches their CPU time
            // (a few reads every 10 ms, asleep otherwise) and ends the run.
            CpuClock.awaitEach(ts, seconds);
            stopAt = 0;
        }
        for (Thread t : ts) t.join();
        if (cpu) System.out.println("cpu " + cpuNs.get());
        System.out.println("done " + sink);
    }
}
