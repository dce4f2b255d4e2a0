import java.io.File;
import java.util.ArrayList;
import java.util.List;

/**
 * busy N SECONDS: N threads spinning until each has used SECONDS of CPU time, then "thread NAME
 * id=ID" for each; churn COUNT: COUNT
 * short-lived threads (50 at a time), printing the process's descriptors before and after the
 * churn: "fds before=A after=B perf-before=C perf-after=D tasks-after=E" (perf = perf_event
 * descriptors, tasks = live kernel threads of the process).
 */
public class Threads {
    static volatile long sink;

    static long spin(long deadline) {
        long x = 1;
        while (System.nanoTime() < deadline) {
            for (int i = 0; i < 10_000; i++) x = x * 31 + i;
        }
        return x;
    }

    static long spin(CpuClock clock) {
        long x = 1;
        while (!clock.done()) {
            for (int i = 0; i < 10_000; i++) x = x * 31 + i;
        }
        return x;
    }

    static int openFds() {
        String[] fds = new File("/proc/self/fd").list();
        return fds == null ? -1 : fds.length;
    }

    static int perfFds() throws Exception {
        int n = 0;
        File[] fds = new File("/proc/self/fd").listFiles();
        if (fds == null) return -1;
        for (File f : fds) {
            try {
                if (java.nio.file.Files.readSymbolicLink(f.toPath()).toString().contains("perf_event")) n++;
            } catch (Exception e) {
                // closed meanwhile
            }
        }
        return n;
    }

    static int tasks() {
        String[] t = new File("/proc/self/task").list();
        return t == null ? -1 : t.length;
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        if (mode.equals("busy")) {
            int n = Integer.parseInt(args[1]);
            double seconds = Double.parseDouble(args[2]);
            List<Thread> ts = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                Thread t = new Thread(() -> sink += spin(new CpuClock(seconds)), "busy-" + i);
                ts.add(t);
                t.start();
            }
            for (Thread t : ts) t.join();
            // Each thread's Java id, as the JVM gives it: the profile's threads must carry it.
            for (Thread t : ts) System.out.println("thread " + t.getName() + " id=" + t.getId());
        } else {
            int count = Integer.parseInt(args[1]);
            // Let the VM's own threads start first so they are not counted as a leak.
            sink += spin(System.nanoTime() + 300_000_000L);
            int before = openFds();
            int perfBefore = perfFds();
            for (int done = 0; done < count; ) {
                List<Thread> batch = new ArrayList<>();
                for (int i = 0; i < 50 && done < count; i++, done++) {
                    Thread t = new Thread(() -> sink += spin(System.nanoTime() + 200_000L), "short-" + done);
                    batch.add(t);
                    t.start();
                }
                for (Thread t : batch) t.join();
            }
            System.out.println("fds before=" + before + " after=" + openFds() + " perf-before=" + perfBefore
                    + " perf-after=" + perfFds() + " tasks-after=" + tasks());
        }
    }
}
