import io.github.hpm.Hpm;

import java.io.File;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Stress for the agent's core: threads start and end all the time while
 * profiling sessions start and stop back to back through the Java bridge, sampling every
 * millisecond, the samplers alternating (asgct, asgct, jvmti). Two busy threads keep the
 * signal handler running on every CPU; a churner starts short threads one after another; the
 * main thread starts and stops sessions, each writing DIR/sN.collapsed.
 *
 * Usage: java -Dhpm.agent.path=libhpm.so -cp ... Churn SECONDS DIR
 * Prints "sessions N", "threads N" (short threads started), "agent-threads N" (hpm-* threads
 * alive at the end: must be 0), "fds-before N" and "fds-after N" (open descriptors before the
 * first session and after the last), then "done".
 */
public class Churn {
    static volatile boolean stop;
    static volatile long sink;

    static long burn(long n) {
        long x = n;
        for (long i = 0; i < n; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        return x;
    }

    static int fds() {
        String[] names = new File("/proc/self/fd").list();
        return names == null ? -1 : names.length;
    }

    public static void main(String[] args) throws Exception {
        double seconds = Double.parseDouble(args[0]);
        String dir = args[1];
        Hpm hpm = Hpm.getInstance();
        for (int i = 0; i < 2; i++) {
            Thread t = new Thread(() -> {
                while (!stop) {
                    sink += burn(100_000);
                }
            }, "busy-" + i);
            t.setDaemon(true);
            t.start();
        }
        AtomicLong started = new AtomicLong();
        Thread churner = new Thread(() -> {
            while (!stop) {
                Thread t = new Thread(() -> sink += burn(20_000), "short-" + started.get());
                t.start();
                started.incrementAndGet();
                try {
                    t.join();
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "churner");
        churner.start();
        int fdsBefore = fds();
        String[] samplers = {"asgct", "asgct", "jvmti"};
        long deadline = System.nanoTime() + (long) (seconds * 1e9);
        int sessions = 0;
        while (System.nanoTime() < deadline) {
            String file = dir + "/s" + sessions + ".collapsed";
            hpm.start("interval=1ms,quiet,sampler=" + samplers[sessions % samplers.length] + ",file=" + file);
            // 40 ms of this thread's CPU time (not wall time: on a busy machine a session still
            // gets its samples).
            CpuClock clock = new CpuClock(0.04);
            while (!clock.done()) {
                sink += burn(10_000);
            }
            hpm.stop();
            sessions++;
        }
        stop = true;
        churner.join();
        int agentThreads = 0;
        Set<Thread> all = Thread.getAllStackTraces().keySet();
        for (Thread t : all) {
            if (t.getName().startsWith("hpm-")) {
                agentThreads++;
            }
        }
        System.out.println("sessions " + sessions);
        System.out.println("threads " + started.get());
        System.out.println("agent-threads " + agentThreads);
        System.out.println("fds-before " + fdsBefore);
        System.out.println("fds-after " + fds());
        System.out.println("done");
    }
}
