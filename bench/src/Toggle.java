import io.github.hpm.Hpm;

/**
 * Paired measurement inside one JVM (scripts/bench-paired.py): after the warm-up iterations,
 * the harness runs the measured ones in the order off, on, on, off, ... (ABBA, so a slow drift
 * such as late JIT work weighs on both alike), starting an hpm session through the Java bridge
 * before each "on" iteration and stopping it after. Both kinds of iteration run the same
 * compiled code, so their difference is the cost of sampling itself, free of the run-to-run
 * noise of separate JVMs (JIT decisions, heap layout). Starting and stopping (writing the
 * session's file) happen outside the timed part.
 *
 * Enabled by -Dhpm.bench.toggle=AGENT_OPTIONS (with -Dhpm.agent.path=libhpm.so and
 * -Dhpm.bench.warmup=N); the bridge's classes are compiled with the drivers. With
 * -Dhpm.bench.async-profiler=LIB the options are async-profiler's (`start,event=cpu,...`), sent
 * through its Java API (one.profiler.AsyncProfiler from the same Maven Central jar, on the class
 * path; called by reflection so the drivers compile without it), and `stop` ends the session.
 */
final class Toggle {
    private final Hpm hpm;
    private final Object asyncProfiler;
    private final java.lang.reflect.Method apExecute;
    private final String options;
    private final int warmup;

    private Toggle(String options, int warmup, String apLib) {
        this.options = options;
        this.warmup = warmup;
        if (apLib == null || apLib.isEmpty()) {
            this.hpm = Hpm.getInstance();
            this.asyncProfiler = null;
            this.apExecute = null;
        } else {
            this.hpm = null;
            try {
                Class<?> c = Class.forName("one.profiler.AsyncProfiler");
                this.asyncProfiler = c.getMethod("getInstance", String.class).invoke(null, apLib);
                this.apExecute = c.getMethod("execute", String.class);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("async-profiler's Java API (one.profiler.AsyncProfiler) is not usable", e);
            }
        }
    }

    private void asyncProfiler(String command) {
        try {
            apExecute.invoke(asyncProfiler, command);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("async-profiler refused `" + command + "`", e);
        }
    }

    /** The toggle the system properties ask for, or null. */
    static Toggle fromProperties() {
        String options = System.getProperty("hpm.bench.toggle");
        if (options == null || options.isEmpty()) {
            return null;
        }
        return new Toggle(options, Integer.getInteger("hpm.bench.warmup", 10),
                System.getProperty("hpm.bench.async-profiler"));
    }

    /** Whether iteration i is sampled: none of the warm-up, then off, on, on, off, ... */
    boolean sampled(int i) {
        int k = i - warmup;
        return k >= 0 && (k % 4 == 1 || k % 4 == 2);
    }

    boolean measured(int i) {
        return i >= warmup;
    }

    void start() {
        if (hpm != null) {
            hpm.start(options);
        } else {
            asyncProfiler(options);
        }
    }

    void stop() {
        if (hpm != null) {
            hpm.stop();
        } else {
            asyncProfiler("stop");
        }
    }

    /** CPU time of the whole process (every thread, the agent's included), nanoseconds. */
    static long processCpuNs() {
        java.lang.management.OperatingSystemMXBean os = java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        return ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime();
    }
}
