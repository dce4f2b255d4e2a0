package io.github.hpm;

/** The natives implemented by libhpm.so (agent/jvm/src/bridge). Not part of the API. */
final class Native {
    private Native() {}

    static native boolean nativeLoaded();

    static native String nativeExecute(String command);

    static native String[] nativeCounterNames();

    static native String[] nativeCountersMissing();

    /** {@code [ticks, value...]} of the calling thread's counters. */
    static native long[] nativeReadCounters();

    static native void nativeRegion(String name, long[] start, long[] end, long javaThreadId, String threadName);

    static native void nativePhase(String name, long index, long javaThreadId, String threadName);

    static native String[] nativeHottestMethods(int n);

    static native String[] nativeHottestCallees(String method, int n);

    static native String[] nativeCallContexts(String caller, String callee, int n);
}
