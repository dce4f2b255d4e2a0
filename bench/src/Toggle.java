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
 * With -Dhpm.bench.perf-control=CTL,ACK the JVM runs under `perf record -D -1 --control
 * fifo:CTL,ACK` (the kernel floor): a session is perf's events enabled, each command
 * acknowledged by perf before the iteration starts.
 */
final class Toggle {
    private final Hpm hpm;
    private final Object asyncProfiler;
    private final java.lang.reflect.Method apExecute;
    private final String options;
    private final int warmup;
    private java.io.OutputStream perfCtl;
    private java.io.InputStream perfAck;

    private Toggle(String options, int warmup, String apLib, String perfControl) {
        this.options = options;
        this.warmup = warmup;
        if (perfControl != null && !perfControl.isEmpty()) {
            this.hpm = null;
            this.asyncProfiler = null;
            this.apExecute = null;
            String[] fifos = perfControl.split(",");
            try {
                // perf opens its ends at start: these opens do not block for long.
                perfCtl = new java.io.FileOutputStream(fifos[0]);
                perfAck = new java.io.FileInputStream(fifos[1]);
            } catch (java.io.IOException e) {
                throw new IllegalStateException("perf's control FIFOs " + perfControl + " cannot be opened", e);
            }
        } else if (apLib == null || apLib.isEmpty()) {
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

    /** Sends `enable` or `disable` to perf and waits for its `ack`. */
    private void perf(String command) {
        try {
            perfCtl.write((command + "\n").getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            perfCtl.flush();
            byte[] ack = new byte[4]; // "ack\n"
            int n = 0;
            while (n < ack.length) {
                int k = perfAck.read(ack, n, ack.length - n);
                if (k < 0) {
                    throw new IllegalStateException("perf closed its ack FIFO after `" + command + "`");
                }
                n += k;
            }
        } catch (java.io.IOException e) {
            throw new IllegalStateException("perf control `" + command + "` failed", e);
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
                System.getProperty("hpm.bench.async-profiler"), System.getProperty("hpm.bench.perf-control"));
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
        if (perfCtl != null) {
            perf("enable");
        } else if (hpm != null) {
            hpm.start(options);
        } else {
            asyncProfiler(options);
        }
    }

    void stop() {
        if (perfCtl != null) {
            perf("disable");
        } else if (hpm != null) {
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
