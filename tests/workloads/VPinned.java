import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.locks.LockSupport;

/**
 * Pinned and free parks of virtual threads. Arguments: the path of libvpinned.so
 * (tests/native/vpinned.c), N, and a park's length in ms. N "pinned" tasks each park once from
 * inside a JNI call back into Java (nPark -> pinnedPark), holding a PinLock: a virtual thread
 * cannot unmount there and parks its carrier. N "free" tasks each park once from a plain
 * virtual thread, which unmounts. On JDK 21+ the tasks run on virtual threads (found by
 * reflection: compiled for 17); on JDK 17 on platform threads, where nothing pins.
 */
public class VPinned {
    static class PinLock {}

    static native void nPark(long nanos);

    /** Called back from nPark. */
    static void pinnedPark(long nanos) {
        synchronized (new PinLock()) {
            parkFor(nanos);
        }
    }

    static void freePark(long nanos) {
        parkFor(nanos);
    }

    /** Parks until `nanos` have passed (again after an early, spurious return). */
    static void parkFor(long nanos) {
        long end = System.nanoTime() + nanos;
        for (long left = nanos; left > 0; left = end - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
    }

    public static void main(String[] args) throws Exception {
        System.load(args[0]);
        int n = Integer.parseInt(args[1]);
        long nanos = Long.parseLong(args[2]) * 1_000_000L;
        ExecutorService pool;
        try {
            pool = (ExecutorService) Executors.class.getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
            System.out.println("threads virtual");
        } catch (NoSuchMethodException e) {
            pool = Executors.newCachedThreadPool();
            System.out.println("threads platform");
        }
        List<Future<?>> tasks = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            tasks.add(pool.submit(() -> nPark(nanos)));
            tasks.add(pool.submit(() -> freePark(nanos)));
        }
        for (Future<?> f : tasks) {
            f.get();
        }
        pool.shutdown();
        System.out.println("parked pinned=" + n + " free=" + n);
    }
}
