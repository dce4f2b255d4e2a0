package io.github.hpm;

import java.util.Arrays;
import java.util.List;

/**
 * The calling thread's performance counters at one moment (a snapshot), or the difference of
 * two snapshots ({@link #minus}). This is the "HPM API" of Georges et al.: read the counting
 * group of the current thread, run some code, read it again.
 *
 * <p>Counters are counted for the thread that read them, in user space. The set is
 * {@code cycles}, {@code instructions}, {@code task-clock} (ns of CPU time), {@code page-faults}
 * and {@code context-switches}; counters the machine cannot count (the hardware ones without
 * a PMU, as in most virtual machines) are left out of {@link #names()} and listed with the
 * reason by {@link Hpm#unavailableCounters()}.
 */
public final class Counters {
    private final long time;
    private final List<String> names;
    private final long[] values;

    Counters(long time, List<String> names, long[] values) {
        this.time = time;
        this.names = List.copyOf(names);
        this.values = values.clone();
    }

    /**
     * When the snapshot was taken, in nanoseconds of the monotonic clock the profile uses
     * (comparable with {@link System#nanoTime()} on Linux); for a difference, the elapsed time.
     *
     * @return nanoseconds
     */
    public long time() {
        return time;
    }

    /**
     * The counters measured, in a stable order.
     *
     * @return unmodifiable list of perf event names such as {@code task-clock}
     */
    public List<String> names() {
        return names;
    }

    /**
     * Whether the counter is measured on this machine.
     *
     * @param name a perf event name such as {@code cycles}
     * @return true if {@link #get} returns a value for it
     */
    public boolean has(String name) {
        return names.contains(name);
    }

    /**
     * The value of one counter.
     *
     * @param name a perf event name such as {@code task-clock}
     * @return the value, or -1 if the counter is not measured on this machine
     */
    public long get(String name) {
        int i = names.indexOf(name);
        return i < 0 ? -1 : values[i];
    }

    /**
     * CPU cycles in user space.
     *
     * @return the count, or -1 without a hardware PMU
     */
    public long cycles() {
        return get("cycles");
    }

    /**
     * Instructions retired in user space.
     *
     * @return the count, or -1 without a hardware PMU
     */
    public long instructions() {
        return get("instructions");
    }

    /**
     * CPU time of the thread.
     *
     * @return nanoseconds, or -1 if not measured
     */
    public long taskClock() {
        return get("task-clock");
    }

    /**
     * Page faults of the thread.
     *
     * @return the count, or -1 if not measured
     */
    public long pageFaults() {
        return get("page-faults");
    }

    /**
     * Context switches of the thread.
     *
     * @return the count, or -1 if not measured
     */
    public long contextSwitches() {
        return get("context-switches");
    }

    /**
     * The difference {@code this - earlier}, counter by counter: what happened between two
     * snapshots of the same thread.
     *
     * @param earlier a snapshot taken before this one on the same thread
     * @return the deltas; {@link #time()} is the elapsed nanoseconds
     * @throws IllegalArgumentException if the two snapshots measure different counters
     */
    public Counters minus(Counters earlier) {
        if (!names.equals(earlier.names)) {
            throw new IllegalArgumentException("snapshots measure different counters: " + names + " vs " + earlier.names);
        }
        long[] d = new long[values.length];
        for (int i = 0; i < d.length; i++) {
            d[i] = values[i] - earlier.values[i];
        }
        return new Counters(time - earlier.time, names, d);
    }

    long[] raw() {
        long[] r = new long[values.length + 1];
        r[0] = time;
        System.arraycopy(values, 0, r, 1, values.length);
        return r;
    }

    /**
     * The counters as {@code name=value} pairs.
     *
     * @return for example {@code task-clock=1204467 page-faults=3 context-switches=0}
     */
    @Override
    public String toString() {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < values.length; i++) {
            b.append(i == 0 ? "" : " ").append(names.get(i)).append('=').append(values[i]);
        }
        return b.toString();
    }

    /**
     * Snapshots are equal when they hold the same time, counters and values.
     *
     * @param o another object
     * @return whether it is an equal snapshot
     */
    @Override
    public boolean equals(Object o) {
        return o instanceof Counters c && c.time == time && c.names.equals(names) && Arrays.equals(c.values, values);
    }

    /**
     * A hash consistent with {@link #equals}.
     *
     * @return the hash code
     */
    @Override
    public int hashCode() {
        return Long.hashCode(time) * 31 + Arrays.hashCode(values);
    }
}
