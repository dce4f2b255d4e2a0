import io.github.hpm.Hpm;

import java.io.File;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The long-running-service case: for SECONDS, profiling sessions run for
 * ON seconds and pause for OFF seconds (through the Java bridge, file=DIR/soak.collapsed, no JFR
 * file), while threads start and end all the time, classes are loaded through throwaway class
 * loaders and unloaded again (their JIT-compiled code freed with them), and two threads stay busy.
 * Every PERIOD seconds it prints "sample T rss KB fds N heap KB" (its resident memory, open
 * descriptors, and the agent's own heap from `status`); at the end "threads N", "classes N", the agent's last status and "done".
 *
 * Usage: java -Dhpm.agent.path=libhpm.so -cp ... Soak SECONDS ON OFF PERIOD DIR (ON = 0: no session,
 * the control run)
 */
public class Soak {
    static volatile boolean stop;
    static volatile long sink;

    static long rssKb() throws Exception {
        for (String l : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (l.startsWith("VmRSS:")) {
                return Long.parseLong(l.replaceAll("[^0-9]", ""));
            }
        }
        return -1;
    }

    static int fds() {
        String[] names = new File("/proc/self/fd").list();
        return names == null ? -1 : names.length;
    }

    /** Defines SoakPlugin anew in a loader of its own. */
    static final class Throwaway extends ClassLoader {
        Throwaway(byte[] bytes) {
            super(null);
            defineClass("SoakPlugin", bytes, 0, bytes.length);
        }
    }

    public static void main(String[] args) throws Exception {
        double seconds = Double.parseDouble(args[0]);
        double on = Double.parseDouble(args[1]);
        double off = Double.parseDouble(args[2]);
        double period = Double.parseDouble(args[3]);
        String dir = args[4];
        byte[] plugin;
        try (InputStream in = Soak.class.getResourceAsStream("/SoakPlugin.class")) {
            plugin = in.readAllBytes();
        }
        Hpm hpm = Hpm.getInstance();
        for (int i = 0; i < 2; i++) {
            Thread t = new Thread(() -> {
                long x = 1;
                while (!stop) {
                    for (int k = 0; k < 1_000_000; k++) {
                        x = x * 6364136223846793005L + 1442695040888963407L;
                    }
                    sink += x;
                }
            }, "busy-" + i);
            t.setDaemon(true);
            t.start();
        }
        long[] threads = {0};
        Thread churner = new Thread(() -> {
            while (!stop) {
                Thread t = new Thread(() -> sink += SoakPlugin.work(System.nanoTime()), "short-" + threads[0]);
                t.start();
                threads[0]++;
                try {
                    t.join();
                    Thread.sleep(2);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "churner");
        churner.start();
        long[] classes = {0};
        Thread loader = new Thread(() -> {
            try {
                while (!stop) {
                    Method m = new Throwaway(plugin).loadClass("SoakPlugin").getMethod("work", long.class);
                    for (int k = 0; k < 3_000; k++) {
                        sink += (long) m.invoke(null, (long) k);
                    }
                    classes[0]++;
                    if (classes[0] % 50 == 0) {
                        System.gc();
                    }
                }
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }, "loader");
        loader.start();
        long t0 = System.nanoTime();
        long nextSample = t0;
        boolean running = false;
        long phaseEnd = t0;
        String status = "";
        while (System.nanoTime() - t0 < seconds * 1e9) {
            long now = System.nanoTime();
            if (on > 0 && now >= phaseEnd) {
                if (running) {
                    hpm.stop();
                    status = hpm.status().replace('\n', ';');
                    phaseEnd = now + (long) (off * 1e9);
                } else {
                    hpm.start("interval=1ms,quiet,file=" + dir + "/soak.collapsed");
                    phaseEnd = now + (long) (on * 1e9);
                }
                running = !running;
            }
            if (now >= nextSample) {
                String heap = "-1";
                for (String l : hpm.status().split("\n")) {
                    if (l.startsWith("agent heap: ")) {
                        heap = l.substring("agent heap: ".length()).split(" ")[0];
                    }
                }
                System.out.println("sample " + (now - t0) / 1_000_000_000 + " rss " + rssKb() + " fds " + fds() + " heap " + heap);
                nextSample += (long) (period * 1e9);
            }
            Thread.sleep(100);
        }
        if (running) {
            hpm.stop();
        }
        stop = true;
        churner.join();
        loader.join();
        System.out.println("threads " + threads[0]);
        System.out.println("classes " + classes[0]);
        System.out.println("status " + status);
        System.out.println("done");
    }
}
