import java.io.BufferedReader;
import java.io.InputStreamReader;

/**
 * A long-running program to attach to: THREADS threads run Shares' a/b/c mix (50/30/20% of
 * their CPU) until told to exit. Driven by lines on stdin, answered on stdout:
 *   (start)      prints "ready PID" once the worker threads run
 *   "work MS"    lets the workers run until each has used MS more milliseconds of CPU time (not
 *                wall time: a busy machine makes it slower, never shorter), then prints "worked"
 *   "spin MS"    the main thread itself runs the mix for MS milliseconds of its CPU time, then
 *                prints "spun"
 *   "exit"       stops the workers, prints "done", exits 0 (also at end of input)
 *
 * Usage: java Attachee THREADS [NAME_PREFIX]   (the workers are NAME_PREFIX0, ...; default attachee-)
 */
public class Attachee {
    static volatile boolean stop;
    static volatile long sink;

    static void work() {
        long x = System.nanoTime();
        java.util.concurrent.ThreadLocalRandom r = java.util.concurrent.ThreadLocalRandom.current();
        while (!stop) {
            switch (r.nextInt(6)) {
                case 0: x = Shares.a(x); x = Shares.b(x); x = Shares.c(x); break;
                case 1: x = Shares.a(x); x = Shares.c(x); x = Shares.b(x); break;
                case 2: x = Shares.b(x); x = Shares.a(x); x = Shares.c(x); break;
                case 3: x = Shares.b(x); x = Shares.c(x); x = Shares.a(x); break;
                case 4: x = Shares.c(x); x = Shares.a(x); x = Shares.b(x); break;
                default: x = Shares.c(x); x = Shares.b(x); x = Shares.a(x); break;
            }
        }
        sink += x;
    }

    /** The mix on the calling thread (the launcher's main thread, whose OS name is "java"). */
    static long spin(long ms) {
        CpuClock clock = new CpuClock(ms / 1e3);
        long x = System.nanoTime();
        while (!clock.done()) {
            x = Shares.a(x);
            x = Shares.b(x);
        }
        return x;
    }

    public static void main(String[] args) throws Exception {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 2;
        String prefix = args.length > 1 ? args[1] : "attachee-";
        Thread[] ts = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            ts[i] = new Thread(Attachee::work, prefix + i);
            ts[i].start();
        }
        System.out.println("ready " + ProcessHandle.current().pid());
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null && !line.equals("exit")) {
            if (line.startsWith("work ")) {
                CpuClock.awaitEach(ts, Long.parseLong(line.substring(5).trim()) / 1e3);
                System.out.println("worked");
            } else if (line.startsWith("spin ")) {
                sink += spin(Long.parseLong(line.substring(5).trim()));
                System.out.println("spun");
            }
        }
        stop = true;
        for (Thread t : ts) t.join();
        System.out.println("done " + (sink != 0 ? 1 : 0));
    }
}
