import java.util.concurrent.locks.ReentrantLock;

/**
 * Allocation and lock profiles with a truth known by construction.
 *
 * <p>{@code alloc SECONDS}: three sites allocate arrays whose sizes do not depend on the JVM's
 * object layout (a 16-byte array header with compressed class pointers, JDK 17 and 25):
 * {@code allocLarge} one long[1022] (8,192 bytes), {@code allocSmall} 64 byte[48] (64 bytes
 * each: 4,096), {@code allocInts} 57 int[14] (72 bytes each: 4,104) per round; the bytes of each
 * site are printed at the end. Shares: 49.9%, 25.0%, 25.1%.
 *
 * <p>{@code mixed SECONDS}: the same three sites, called in random order (each call one of the
 * three, uniformly), so the bytes keep about those shares while no allocation pattern repeats:
 * a sampler whose sampling points follow the program's own layout (the JDK's TLAB events: a new
 * TLAB starts with the object that ended the last one) sees each class by its bytes only here.
 *
 * <p>{@code lock SECONDS}: four threads take turns on one {@code HotLock} monitor holding it
 * 2 ms, two on one {@code ColdLock} monitor holding it 0.5 ms, none doing anything outside: each
 * monitor is always held, by one thread, while the others wait; so {@code HotLock} is waited
 * on three times as long as {@code ColdLock} (75% / 25% of the monitor wait time). Two more
 * threads take turns on a {@link ReentrantLock} (parks). {@code both SECONDS}: the lockers, and
 * the main thread allocating as in {@code alloc} meanwhile.
 *
 * <p>{@code handoff ROUNDS}: two threads on a {@code HotLock} monitor and two on a {@code
 * ColdLock} one take turns, ROUNDS entries each; a thread inside waits until its partner is
 * blocked on the monitor before it leaves, so every entry but the first of each pair is a
 * contended one by construction (2 * ROUNDS - 1 per monitor), however loaded the machine.
 *
 * <p>SECONDS are wall time for the lockers (their waits are the profile) and the main thread's
 * CPU time for the allocation ({@link CpuClock}).
 */
public class AllocLocks {
    static final Object[] SINK = new Object[1024];
    static long large, small, ints;

    static void allocLarge(int i) {
        SINK[i & 1023] = new long[1022];
        large += 8192;
    }

    static void allocSmall(int i) {
        for (int k = 0; k < 64; k++) {
            SINK[(i + k) & 1023] = new byte[48];
        }
        small += 64 * 64;
    }

    static void allocInts(int i) {
        for (int k = 0; k < 57; k++) {
            SINK[(i + k * 7) & 1023] = new int[14];
        }
        ints += 57 * 72;
    }

    static final class HotLock {}

    static final class ColdLock {}

    static void hold(Object lock, long nanos, long end) {
        while (System.nanoTime() < end) {
            synchronized (lock) {
                sleepNanos(nanos);
            }
        }
    }

    static void sleepNanos(long nanos) {
        try {
            Thread.sleep(nanos / 1_000_000, (int) (nanos % 1_000_000));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static void parkOn(ReentrantLock lock, long end) {
        while (System.nanoTime() < end) {
            lock.lock();
            try {
                sleepNanos(1_000_000);
            } finally {
                lock.unlock();
            }
        }
    }

    static void allocate(double seconds) {
        CpuClock clock = new CpuClock(seconds);
        int i = 0;
        while (!clock.done()) {
            for (int r = 0; r < 1000; r++, i++) {
                allocLarge(i);
                allocSmall(i);
                allocInts(i);
            }
        }
        System.out.println("truth bytes allocLarge=" + large + " allocSmall=" + small + " allocInts=" + ints);
    }

    static void allocateMixed(double seconds) {
        CpuClock clock = new CpuClock(seconds);
        java.util.concurrent.ThreadLocalRandom random = java.util.concurrent.ThreadLocalRandom.current();
        int i = 0;
        while (!clock.done()) {
            for (int r = 0; r < 3000; r++, i++) {
                switch (random.nextInt(3)) {
                    case 0 -> allocLarge(i);
                    case 1 -> allocSmall(i);
                    default -> allocInts(i);
                }
            }
        }
        System.out.println("truth bytes allocLarge=" + large + " allocSmall=" + small + " allocInts=" + ints);
    }

    /** Two threads taking turns on one monitor ({@code handoff}). */
    static final class Pair {
        final Object lock;
        final Thread[] threads = new Thread[2];
        final java.util.concurrent.CountDownLatch started = new java.util.concurrent.CountDownLatch(2);
        /** Which thread entered last. */
        volatile int holder = -1;

        Pair(Object lock) {
            this.lock = lock;
        }
    }

    static void handoffs(int rounds) throws InterruptedException {
        Pair[] pairs = {new Pair(new HotLock()), new Pair(new ColdLock())};
        for (int k = 0; k < pairs.length; k++) {
            Pair pair = pairs[k];
            for (int me = 0; me < 2; me++) {
                int i = me;
                pair.threads[i] = new Thread(() -> handoff(pair, i, rounds), "handoff-" + (2 * k + i));
            }
        }
        for (Pair pair : pairs) for (Thread t : pair.threads) t.start();
        for (Pair pair : pairs) for (Thread t : pair.threads) t.join();
        System.out.println("truth contended enters per monitor >= " + (2 * rounds - 1));
    }

    /** Thread {@code me} of {@code pair}: enters ROUNDS times. Inside, it waits until its
     * partner is blocked on the monitor; outside, until the partner has been in since: so the
     * partner always holds the monitor when this thread enters again (a stale BLOCKED state of a
     * partner still waking up cannot let this one barge in uncontended). */
    static void handoff(Pair pair, int me, int rounds) {
        Thread partner = pair.threads[1 - me];
        pair.started.countDown();
        try {
            pair.started.await(); // both run: a partner not yet started is not alive either
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
        for (int r = 0; r < rounds; r++) {
            synchronized (pair.lock) {
                pair.holder = me;
                while (partner.isAlive() && partner.getState() != Thread.State.BLOCKED) {
                    Thread.yield();
                }
                // A millisecond more: the enters come at most ~1,000 a second per monitor.
                sleepNanos(1_000_000);
            }
            while (partner.isAlive() && pair.holder == me) {
                Thread.yield();
            }
        }
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        if (mode.equals("handoff")) {
            handoffs(Integer.parseInt(args[1]));
            return;
        }
        double seconds = Double.parseDouble(args[1]);
        if (mode.equals("alloc")) {
            allocate(seconds);
            return;
        }
        if (mode.equals("mixed")) {
            allocateMixed(seconds);
            return;
        }
        long end = System.nanoTime() + (long) (seconds * 1e9);
        HotLock hot = new HotLock();
        ColdLock cold = new ColdLock();
        ReentrantLock rl = new ReentrantLock();
        Thread[] ts = new Thread[8];
        for (int t = 0; t < ts.length; t++) {
            final int n = t;
            ts[t] = new Thread(() -> {
                if (n < 4) {
                    hold(hot, 2_000_000, end);
                } else if (n < 6) {
                    hold(cold, 500_000, end);
                } else {
                    parkOn(rl, end);
                }
            }, "locker-" + t);
            ts[t].start();
        }
        if (mode.equals("both")) {
            allocate(seconds);
        }
        for (Thread t : ts) {
            t.join();
        }
        System.out.println("truth monitor wait shares HotLock=75 ColdLock=25");
    }
}
