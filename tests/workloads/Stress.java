import java.io.PipedInputStream;
import java.io.PipedOutputStream;
import java.util.ArrayList;
import java.util.List;

/**
 * Hard cases for stack samplers, all at once for SECONDS: busy threads, threads blocked in
 * I/O, in Object.wait(), in native code (Thread.sleep), threads starting and ending all the
 * time, deep recursion, exception-heavy code, and deoptimisation (a call site that turns
 * megamorphic after the JIT specialised it).
 */
public class Stress {
    static volatile long sink;
    static volatile boolean done;

    interface Shape { long area(long x); }
    static final class Square implements Shape { public long area(long x) { return x * x; } }
    static final class Circle implements Shape { public long area(long x) { return 3 * x * x; } }
    static final class Tri implements Shape { public long area(long x) { return x * x / 2; } }

    static long recurse(int depth, long x) {
        if (depth == 0) {
            for (int i = 0; i < 2000; i++) x = x * 31 + i;
            return x;
        }
        return recurse(depth - 1, x + depth);
    }

    static long throwing(int i) {
        try {
            if (i % 3 == 0) throw new IllegalStateException("x" + i);
            return i;
        } catch (IllegalStateException e) {
            return e.getMessage().length();
        }
    }

    static long shapes(Shape[] s, int n) {
        long a = 0;
        for (int i = 0; i < n; i++) a += s[i % s.length].area(i);
        return a;
    }

    static Thread daemon(String name, Runnable r) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 4;
        long deadline = System.nanoTime() + (long) (seconds * 1e9);
        Object lock = new Object();
        PipedInputStream in = new PipedInputStream();
        PipedOutputStream out = new PipedOutputStream(in);
        daemon("blocked-io", () -> { try { while (in.read() >= 0) { } } catch (Exception e) { } });
        daemon("waiting", () -> { synchronized (lock) { try { while (!done) lock.wait(); } catch (InterruptedException e) { } } });
        daemon("sleeping", () -> { try { while (!done) Thread.sleep(5); } catch (InterruptedException e) { } });
        List<Thread> busy = new ArrayList<>();
        busy.add(daemon("recursion", () -> { while (!done) sink += recurse(2000, 1); }));
        busy.add(daemon("exceptions", () -> { int i = 0; while (!done) sink += throwing(i++); }));
        busy.add(daemon("deopt", () -> {
            Shape[] mono = {new Square()};
            Shape[] mega = {new Square(), new Circle(), new Tri()};
            while (!done) { sink += shapes(mono, 200_000); sink += shapes(mega, 200_000); }
        }));
        long churned = 0;
        while (System.nanoTime() < deadline) {
            Thread t = new Thread(() -> sink += recurse(50, 7), "churn");
            t.start();
            t.join();
            churned++;
            out.write(1);
        }
        done = true;
        synchronized (lock) { lock.notifyAll(); }
        out.close();
        for (Thread t : busy) t.join();
        System.out.println("stress done, " + churned + " short threads");
    }
}
