import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A program that installs its own handler of a signal (sun.misc.Signal) while hpm samples it:
 * SIGPROF, or the signal hpm samples with. hpm must keep sampling (when another handler took
 * its signal: see that, and move to another one), and the program's handler must get the
 * program's own signals (`kill` from the test), and none of hpm's once hpm has moved.
 *
 * Usage: java -agentpath:libhpm.so=interval=1ms,... LateSigprof SECONDS SIGNAL (PROF, URG...)
 * A thread "busy" spins in before() until it has used SECONDS of CPU time; then the handler is
 * installed, "installed" printed, and busy spins in after(). Then, for each line on stdin:
 * "wait N" prints "got N" once the handler has seen N signals; "count" prints "count N", the
 * signals it has seen; "reset NAME" resets signal NAME to its default action (as a program that
 * restores a handler it replaced does) and prints "reset"; "stop" lets busy run until it has used SECONDS of CPU time in after(),
 * then prints "cpu BEFORE_NS AFTER_NS" (busy's CPU time in each) and "done N" (signals seen),
 * and ends.
 */
public class LateSigprof {
    static volatile long sink;
    static volatile boolean late;
    static volatile boolean done;

    static long spin(long x) {
        for (int i = 0; i < 100_000; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        return x;
    }

    static long before(long x) {
        while (!late) x = spin(x);
        return x;
    }

    static long after(long x) {
        while (!done) x = spin(x);
        return x;
    }

    public static void main(String[] args) throws Exception {
        long budget = (long) (Double.parseDouble(args[0]) * 1e9);
        Thread busy = new Thread(() -> sink = after(before(1)), "busy");
        busy.start();
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        // A few reads every 10 ms, asleep otherwise.
        while (mx.getThreadCpuTime(busy.getId()) < budget) Thread.sleep(10);
        AtomicInteger got = new AtomicInteger();
        Object lock = new Object();
        sun.misc.Signal.handle(new sun.misc.Signal(args[1]), s -> {
            got.incrementAndGet();
            synchronized (lock) {
                lock.notifyAll();
            }
        });
        long lateAt = mx.getThreadCpuTime(busy.getId());
        late = true;
        System.out.println("installed");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.startsWith("wait ")) {
                int n = Integer.parseInt(line.substring(5).trim());
                synchronized (lock) {
                    while (got.get() < n) lock.wait();
                }
                System.out.println("got " + got.get());
            } else if (line.startsWith("reset ")) {
                sun.misc.Signal.handle(new sun.misc.Signal(line.substring(6).trim()), sun.misc.SignalHandler.SIG_DFL);
                System.out.println("reset");
            } else if (line.equals("count")) {
                System.out.println("count " + got.get());
            } else if (line.equals("stop")) {
                while (mx.getThreadCpuTime(busy.getId()) - lateAt < budget) Thread.sleep(10);
                done = true;
                long end = mx.getThreadCpuTime(busy.getId());
                busy.join();
                System.out.println("cpu " + lateAt + " " + (end - lateAt));
                System.out.println("done " + got.get());
                return;
            }
        }
    }
}
