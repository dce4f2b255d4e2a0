import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Stress workload for the smoke test: threads that start and end all the time, allocation-heavy
 * threads (frequent GCs, so samples race with collections and stack processing), monitor
 * contention, deep recursion (truncated stacks) and exceptions (frames unwound while sampled).
 * Usage: java Stress.java [seconds=3]
 */
public class Stress {
    static final AtomicLong started = new AtomicLong();
    static final Object lock = new Object();
    static volatile Object sink;
    static long counter;

    static int deep(int n) { return n == 0 ? allocate(100) : deep(n - 1) + 1; }
    static int allocate(int n) {
        List<int[]> l = new ArrayList<>();
        for (int i = 0; i < n; i++) l.add(new int[64 + i]);
        sink = l;
        return l.size();
    }
    static void thrower(int n) { if (n == 0) throw new IllegalStateException(); thrower(n - 1); }

    public static void main(String[] args) throws Exception {
        int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 3;
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        List<Thread> all = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            all.add(new Thread(() -> { while (System.nanoTime() < end) deep(300); }, "alloc-" + i));
        }
        all.add(new Thread(() -> {
            while (System.nanoTime() < end) {
                try { thrower(50); } catch (IllegalStateException e) { }
            }
        }, "thrower"));
        for (int i = 0; i < 2; i++) {
            all.add(new Thread(() -> {
                while (System.nanoTime() < end) synchronized (lock) { counter++; allocate(10); }
            }, "contender-" + i));
        }
        all.add(new Thread(() -> {
            while (System.nanoTime() < end) {
                Thread t = new Thread(() -> { allocate(50); started.incrementAndGet(); });
                t.start();
                try { t.join(); } catch (InterruptedException e) { }
            }
        }, "spawner"));
        for (Thread t : all) t.start();
        for (Thread t : all) t.join();
        System.out.printf("stress: %d short-lived threads%n", started.get());
    }
}
