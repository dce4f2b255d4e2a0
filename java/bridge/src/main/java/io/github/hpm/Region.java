package io.github.hpm;

/**
 * A measured code region: the calling thread's counters are read when it is opened and when it
 * is closed, and the deltas are written to the profile as an {@code hpm.Region} JFR event
 * (start time, duration, thread, name, one field per counter). Use it with
 * try-with-resources on one thread:
 *
 * <pre>{@code
 * try (Region r = hpm.region("parse")) {
 *     parse(input);
 * }
 * }</pre>
 *
 * <p>Regions may nest. Like the JDK's own events, the event is written only while a profiling
 * session runs; without one, the deltas are still available from {@link #deltas()}.
 */
public final class Region implements AutoCloseable {
    private final Hpm hpm;
    private final String name;
    private final Thread thread;
    private final Counters start;
    private Counters deltas;

    Region(Hpm hpm, String name) {
        this.hpm = hpm;
        this.name = name;
        this.thread = Thread.currentThread();
        this.start = hpm.counters();
    }

    /**
     * The region's name, as recorded in the {@code name} field of the event.
     *
     * @return the name given to {@link Hpm#region(String)}
     */
    public String name() {
        return name;
    }

    /**
     * The counters when the region was opened.
     *
     * @return the start snapshot
     */
    public Counters start() {
        return start;
    }

    /**
     * Ends the region and records it. Closing again does nothing.
     *
     * @throws HpmException if called on another thread than the one that opened the region
     *     (counters are per thread, so the deltas would mean nothing)
     */
    @Override
    public void close() {
        if (deltas != null) {
            return;
        }
        if (Thread.currentThread() != thread) {
            throw new HpmException("region '" + name + "' was opened on thread '" + thread.getName()
                    + "' and closed on '" + Thread.currentThread().getName() + "': close it on the thread that opened it");
        }
        Counters end = hpm.counters();
        Native.nativeRegion(name, start.raw(), end.raw(), thread.getId(), thread.getName());
        deltas = end.minus(start);
    }

    /**
     * What the region measured.
     *
     * @return the counter deltas; {@link Counters#time()} is the region's duration in ns
     * @throws IllegalStateException if the region is still open
     */
    public Counters deltas() {
        if (deltas == null) {
            throw new IllegalStateException("region '" + name + "' is still open: close it first");
        }
        return deltas;
    }
}
