package io.github.hpm.phases;

/**
 * The calls that instrumented methods make: {@link #enter} at entry, {@link #exit} before each
 * return, {@link #thrown} when an exception leaves the method. Each reads the calling thread's
 * counters and appends one record to the thread's buffer, in the agent (libhpm.so), which
 * registers the natives and then sets {@link #on}. Until then, and after the agent turns it off,
 * a probe is one static read: the rewritten classes run, record nothing, and never reach an
 * unlinked native.
 *
 * <p>This class is loaded by the bootstrap class loader (the agent appends hpm-phases.jar to
 * its search path), so instrumented classes of every loader link to the same one.
 */
public final class Probe {
    /** Whether the probes record; set by the agent once the natives are registered. */
    public static volatile boolean on;

    private Probe() {}

    /**
     * An instrumented method was entered.
     *
     * @param id the method's id from {@link #register0}
     */
    public static void enter(int id) {
        if (on) enter0(id);
    }

    /**
     * An instrumented method returns normally.
     *
     * @param id the method's id
     */
    public static void exit(int id) {
        if (on) exit0(id);
    }

    /**
     * An exception leaves an instrumented method (its own throw or a callee's).
     *
     * @param id the method's id
     */
    public static void thrown(int id) {
        if (on) thrown0(id);
    }

    private static native void enter0(int id);

    private static native void exit0(int id);

    private static native void thrown0(int id);

    /**
     * Names a method for the trace; the agent records {@code className + "." + methodName +
     * descriptor} and returns the id the probes pass.
     */
    static native int register0(String className, String methodName, String descriptor);
}
