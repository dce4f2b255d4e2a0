import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.locks.LockSupport;

/**
 * Forty threads, as a small server has: 4 "spin-N" run Java code, 12 "sleep-N" sleep, 12
 * "park-N" park and 12 "wait-N" wait on a monitor, until each spinner has used SECONDS of CPU
 * time (longer in wall time on a busy machine: the run is sized by the work done, never by the
 * clock). A wall-clock profile at 1 ms samples every thread whatever its state: 16 stacks a
 * tick, about 16,000 a second, which is what the sample pool must keep up with.
 *
 * <p>Every thread is started before the spinners' clocks are read, and main joins them all
 * before it prints "done": each lives through the whole measured run.
 *
 * <p>With "serve" instead of SECONDS, to attach to: prints "ready PID" once the threads run, then
 * answers lines on stdin: "work MS" lets the spinners each use MS more milliseconds of CPU time
 * and prints "worked"; "exit" (or the end of input) ends the run as above.
 *
 * Usage: java WallPool SECONDS|serve
 */
public class WallPool {
    static final int GROUP = 12;
    static final Object monitor = new Object();
    static volatile boolean done;
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        Thread[] spin = new Thread[4];
        for (int i = 0; i < spin.length; i++) {
            spin[i] = new Thread(() -> {
                long x = 1;
                while (!done) {
                    x = x * 6364136223846793005L + 1442695040888963407L;
                }
                sink = x;
            }, "spin-" + i);
        }
        Thread[] idle = new Thread[3 * GROUP];
        for (int i = 0; i < GROUP; i++) {
            idle[i] = new Thread(() -> {
                while (!done) {
                    try {
                        Thread.sleep(20);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }, "sleep-" + i);
            idle[GROUP + i] = new Thread(() -> {
                while (!done) {
                    LockSupport.parkNanos(20_000_000L);
                }
            }, "park-" + i);
            idle[2 * GROUP + i] = new Thread(() -> {
                synchronized (monitor) {
                    while (!done) {
                        try {
                            monitor.wait(20);
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                }
            }, "wait-" + i);
        }
        for (Thread t : spin) {
            t.start();
        }
        for (Thread t : idle) {
            t.start();
        }
        if (args[0].equals("serve")) {
            System.out.println("ready " + ProcessHandle.current().pid());
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
            String line;
            while ((line = in.readLine()) != null && !line.equals("exit")) {
                if (line.startsWith("work ")) {
                    CpuClock.awaitEach(spin, Long.parseLong(line.substring(5).trim()) / 1e3);
                    System.out.println("worked");
                }
            }
        } else {
            CpuClock.awaitEach(spin, Double.parseDouble(args[0]));
        }
        done = true;
        for (Thread t : spin) {
            t.join();
        }
        for (Thread t : idle) {
            t.join();
        }
        System.out.println("done");
    }
}
