import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.channels.Pipe;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * Seven threads, each in one kind of wait (or none) for ROUNDS rounds of WAIT_MS each, while a
 * wall-clock profiler signals them: "spin" runs Java code, "sleep" is in Thread.sleep,
 * "blocked" waits to enter a monitor main holds throughout, "park" is parked
 * (LockSupport.park, unparked once at the end), "socket" is in a blocking read on a connected
 * socket whose peer writes only after WAIT_MS, "process" waits for `sleep` to exit
 * (Process.waitFor), "select" is in Selector.select(WAIT_MS) (epoll_wait, which SA_RESTART
 * does not restart: the JDK retries it) on a pipe nobody writes to. Each checks that its waits
 * ended as they should: no exception, no early return (sleep, read, waitFor and select took at
 * least their time; read got its byte; select found nothing ready; park returned only once,
 * when unparked; waitFor gave `sleep`'s exit code 0). Prints "ok KIND MS" (MS: how
 * long the thread lived) for each that held, "FAIL KIND: why" for one that did not, then "done"; exits 1 on a failure.
 *
 * Usage: java WallMix ROUNDS WAIT_MS
 */
public class WallMix {
    static final Object lock = new Object();
    static volatile boolean done;
    static volatile long sink;
    static final AtomicInteger failures = new AtomicInteger();

    interface Body {
        String run() throws Exception;
    }

    static Thread kind(String name, Body body) {
        return new Thread(() -> {
            String why;
            long start = System.nanoTime();
            try {
                why = body.run();
            } catch (Throwable e) {
                why = e.toString();
            }
            if (why == null) {
                System.out.println("ok " + name + " " + (System.nanoTime() - start) / 1_000_000);
            } else {
                failures.incrementAndGet();
                System.out.println("FAIL " + name + ": " + why);
            }
        }, name);
    }

    public static void main(String[] args) throws Exception {
        int rounds = Integer.parseInt(args[0]);
        long waitMs = Long.parseLong(args[1]);
        long waitNs = waitMs * 1_000_000L;
        ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        Thread peer = new Thread(() -> {
            try (Socket s = server.accept(); OutputStream out = s.getOutputStream()) {
                for (int i = 0; i < rounds; i++) {
                    Thread.sleep(waitMs);
                    out.write(i + 1);
                    out.flush();
                }
            } catch (Exception e) {
                System.out.println("FAIL peer: " + e);
                failures.incrementAndGet();
            }
        }, "peer");
        Thread spin = kind("spin", () -> {
            long x = 1;
            while (!done) {
                x = x * 6364136223846793005L + 1442695040888963407L;
            }
            sink = x;
            return null;
        });
        Thread sleep = kind("sleep", () -> {
            for (int i = 0; i < rounds; i++) {
                long t = System.nanoTime();
                Thread.sleep(waitMs);
                if (System.nanoTime() - t < waitNs) {
                    return "Thread.sleep returned early";
                }
            }
            return null;
        });
        Thread blocked = kind("blocked", () -> {
            synchronized (lock) {
                sink++;
            }
            return done ? null : "entered the monitor while main held it";
        });
        Thread[] parkRef = new Thread[1];
        Thread park = kind("park", () -> {
            int returns = 0;
            while (!done) {
                LockSupport.park();
                returns++;
            }
            return returns == 1 ? null : "LockSupport.park returned " + returns + " times for one unpark";
        });
        parkRef[0] = park;
        Thread socket = kind("socket", () -> {
            try (Socket s = new Socket(server.getInetAddress(), server.getLocalPort());
                    InputStream in = s.getInputStream()) {
                for (int i = 0; i < rounds; i++) {
                    long t = System.nanoTime();
                    int b = in.read();
                    if (b != i + 1) {
                        return "read gave " + b + ", not " + (i + 1);
                    }
                    // The peer slept waitMs before writing; its clock started before ours.
                    if (i > 0 && System.nanoTime() - t < waitNs / 2) {
                        return "read returned early";
                    }
                }
            }
            return null;
        });
        Thread process = kind("process", () -> {
            for (int i = 0; i < rounds; i++) {
                long t = System.nanoTime();
                Process p = new ProcessBuilder("sleep", String.valueOf(waitMs / 1000.0)).start();
                int code = p.waitFor();
                if (code != 0) {
                    return "waitFor gave " + code;
                }
                if (System.nanoTime() - t < waitNs) {
                    return "waitFor returned early";
                }
            }
            return null;
        });
        Thread select = kind("select", () -> {
            Pipe pipe = Pipe.open();
            try (Selector selector = Selector.open()) {
                pipe.source().configureBlocking(false);
                pipe.source().register(selector, SelectionKey.OP_READ);
                for (int i = 0; i < rounds; i++) {
                    long t = System.nanoTime();
                    int ready = selector.select(waitMs);
                    if (ready != 0) {
                        return "select found " + ready + " ready on a pipe nobody writes to";
                    }
                    if (System.nanoTime() - t < waitNs) {
                        return "Selector.select returned early";
                    }
                }
            } finally {
                pipe.source().close();
                pipe.sink().close();
            }
            return null;
        });
        Thread[] timed = {sleep, socket, process, select};
        synchronized (lock) {
            peer.start();
            for (Thread t : new Thread[] {spin, sleep, blocked, park, socket, process, select}) {
                t.start();
            }
            for (Thread t : timed) {
                t.join();
            }
            done = true;
        }
        LockSupport.unpark(parkRef[0]);
        for (Thread t : new Thread[] {spin, blocked, park, peer}) {
            t.join();
        }
        server.close();
        System.out.println("done");
        System.exit(failures.get() == 0 ? 0 : 1);
    }
}
