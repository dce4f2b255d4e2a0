import io.github.hpm.Hpm;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A program with its own handler of a signal (sun.misc.Signal: SIGPROF, or SIGURG, the first
 * signal hpm would sample with), installed before a session starts through the Java bridge:
 * hpm must leave that signal to it and sample with another (tests/tests/agent_signals.rs), so any signal of
 * that kind (here `kill` from the test) reaches the program's handler, and none of hpm's does.
 *
 * Usage: java SigprofUser FILE [SIGNAL] (PROF by default).
 * Prints "ready PID" once the handler is installed and a session samples every millisecond;
 * then, for every line "wait N" on stdin, prints "got N" once its handler has seen N signals;
 * on "stop" stops the session and prints "done".
 */
public class SigprofUser {
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        AtomicInteger got = new AtomicInteger();
        Object lock = new Object();
        sun.misc.Signal.handle(new sun.misc.Signal(args.length > 1 ? args[1] : "PROF"), s -> {
            got.incrementAndGet();
            synchronized (lock) {
                lock.notifyAll();
            }
        });
        Hpm hpm = Hpm.getInstance();
        hpm.start("interval=1ms,quiet,file=" + args[0]);
        Thread busy = new Thread(() -> {
            long x = 1;
            while (true) {
                x = x * 6364136223846793005L + 1;
                sink = x;
            }
        }, "busy");
        busy.setDaemon(true);
        busy.start();
        System.out.println("ready " + ProcessHandle.current().pid());
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.startsWith("wait ")) {
                int n = Integer.parseInt(line.substring(5).trim());
                synchronized (lock) {
                    while (got.get() < n) {
                        lock.wait();
                    }
                }
                System.out.println("got " + got.get());
            } else if (line.equals("stop")) {
                hpm.stop();
                System.out.println("done " + got.get());
                return;
            }
        }
    }
}
