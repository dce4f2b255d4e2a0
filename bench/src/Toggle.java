import io.github.hpm.Hpm;

/**
 * Paired measurement inside one JVM (python3 scripts/bench paired): after the warm-up iterations,
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
 *
 * With -Dhpm.bench.rotate=NAME=KIND:OPTIONS|... (KIND hpm, ap or perf) several profilers take
 * turns in the same JVM: the measured iterations run in blocks off, P1, ..., Pn, Pn, ..., P1, off
 * (a palindrome, so a slow drift weighs on every cell alike; the order of P1..Pn shuffled per block
 * with -Dhpm.bench.seed, so no cell always follows the same one), each Pk's session started before its
 * iteration and stopped after it, and each iteration is printed with its cell's NAME. Then two
 * profilers are compared on the same compiled code and heap, iteration against iteration, not
 * only each against its own JVM's unsampled iterations: the difference between JVMs, larger
 * than the difference between the profilers here, drops out of their ratio.
 *
 * With -Dhpm.bench.span=K every turn (off or a cell) lasts K iterations, and a cell's session
 * is started before the first of them and stopped after the last: a session then lives long
 * enough for what happens on a timer inside it (a push every `chunk=` period) to fall into
 * timed iterations, not only into the stop outside them. In an hpm cell's options `%n` is the
 * number of sessions the cell started before (0, 1, ...): each turn's files apart.
 */
final class Toggle {
    private final Hpm hpm;
    private final Object asyncProfiler;
    private final java.lang.reflect.Method apExecute;
    private final String options;
    /** The warm-up's least length (hpm.bench.warmup). */
    private final int warmup;
    /** With hpm.bench.quiet-jit, the first measured iteration once the warm-up ended (see
     *  afterIteration); see first(). */
    private int quietStart = -1;
    /** hpm.bench.quiet-jit=PCT: the warm-up goes on past `warmup` until the JIT compilers'
     *  time over the last QUIET_WINDOW iterations is at most PCT% of their wall time (at most
     *  hpm.bench.max-warmup iterations in all); 0: the warm-up is `warmup` iterations. */
    private final double quietJit = Double.parseDouble(System.getProperty("hpm.bench.quiet-jit", "0")) / 100;
    private final int maxWarmup = Integer.getInteger("hpm.bench.max-warmup", 400);
    private static final int QUIET_WINDOW = 10;
    private java.io.OutputStream perfCtl;
    private java.io.InputStream perfAck;
    /** hpm.bench.span: iterations per turn (1: a session per iteration). */
    private final int span = Math.max(1, Integer.getInteger("hpm.bench.span", 1));
    /** hpm.bench.rotate: the cells, in block order; null otherwise. */
    private final Toggle[] cells;
    private final String[] names;
    /** hpm.bench.seed: the rotation's shuffles (bench-paired gives each run its own). */
    private final java.util.Random random = new java.util.Random(Long.getLong("hpm.bench.seed", 0));
    /** The blocks' orders drawn so far (the harness's one thread asks). */
    private final java.util.List<int[]> orders = new java.util.ArrayList<>();

    /** The rotation: each cell a Toggle of its own kind (the async-profiler and hpm instances are
     *  shared by the JVM, so building several is cheap). */
    private static Toggle rotation(String rotate, int warmup, String apLib, String perfControl) {
        String[] specs = rotate.split("\\|");
        Toggle[] cells = new Toggle[specs.length];
        String[] names = new String[specs.length];
        for (int k = 0; k < specs.length; k++) {
            int eq = specs[k].indexOf('='), colon = specs[k].indexOf(':', eq + 1);
            if (eq <= 0 || colon < 0) {
                throw new IllegalArgumentException("hpm.bench.rotate: `" + specs[k] + "` is not NAME=KIND:OPTIONS");
            }
            names[k] = specs[k].substring(0, eq);
            String kind = specs[k].substring(eq + 1, colon), opts = specs[k].substring(colon + 1);
            switch (kind) {
                case "hpm": cells[k] = new Toggle(opts, warmup, null, null); break;
                case "ap": cells[k] = new Toggle(opts, warmup, apLib, null); break;
                case "perf": cells[k] = new Toggle(opts, warmup, null, perfControl); break;
                default: throw new IllegalArgumentException("hpm.bench.rotate: kind `" + kind + "` is not hpm, ap or perf");
            }
        }
        return new Toggle(names, cells, warmup);
    }

    private Toggle(String[] names, Toggle[] cells, int warmup) {
        this.options = null;
        this.warmup = warmup;
        this.hpm = null;
        this.asyncProfiler = null;
        this.apExecute = null;
        this.cells = cells;
        this.names = names;
    }

    private Toggle(String options, int warmup, String apLib, String perfControl) {
        this.options = options;
        this.warmup = warmup;
        this.cells = null;
        this.names = null;
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
        String rotate = System.getProperty("hpm.bench.rotate");
        if (rotate != null && !rotate.isEmpty()) {
            return rotation(rotate, Integer.getInteger("hpm.bench.warmup", 10),
                    System.getProperty("hpm.bench.async-profiler"), System.getProperty("hpm.bench.perf-control"));
        }
        String options = System.getProperty("hpm.bench.toggle");
        if (options == null || options.isEmpty()) {
            return null;
        }
        return new Toggle(options, Integer.getInteger("hpm.bench.warmup", 10),
                System.getProperty("hpm.bench.async-profiler"), System.getProperty("hpm.bench.perf-control"));
    }

    /** After iteration i (its wall time `ms`): the number of iterations the run now has in
     *  all, `iterations` asked for (warm-up included) with the measured ones after the warm-up
     *  as it turned out. Without hpm.bench.quiet-jit the warm-up is `warmup` iterations; with
     *  it, it ends once the JIT compilers are quiet: in the suite's programs they work for
     *  100-200 iterations (ecj's took 266 ms of each ~270 ms iteration at iterations 25-50 and
     *  still 30 ms at 125-150), and an iteration that meets a burst of compilation is slower
     *  on 2 cores whichever cell it is, noise far above what a profiler at 10 ms costs. */
    int afterIteration(int i, double ms, int iterations) {
        int measured = iterations - warmup;
        if (first() >= 0) {
            return first() + measured;
        }
        // The window: iterations i - W + 1 .. i, and the compilers' time since iteration i - W.
        int at = i % QUIET_WINDOW;
        long jit = jitMs();
        long windowJit = jit - jitAfter[at];
        jitAfter[at] = jit;
        wallOf[at] = ms;
        double wall = 0;
        for (double w : wallOf) {
            wall += w;
        }
        boolean quiet = i >= QUIET_WINDOW && i + 1 >= warmup && windowJit <= quietJit * wall;
        if (quiet || i + 1 >= maxWarmup) {
            quietStart = i + 1;
            System.out.printf("hpm-bench warmed-up %d jit %d ms of %.0f ms over the last %d iterations%n",
                    quietStart, windowJit, wall, QUIET_WINDOW);
            return quietStart + measured;
        }
        return i + 2 + measured;
    }

    /** The compilers' total time (ms) after each of the last QUIET_WINDOW iterations, and
     *  those iterations' wall times (ms), by iteration modulo the window. */
    private final long[] jitAfter = new long[QUIET_WINDOW];
    private final double[] wallOf = new double[QUIET_WINDOW];

    /** The first measured iteration: `warmup`, or with hpm.bench.quiet-jit where the warm-up
     *  ended (-1 while it goes on). */
    private int first() {
        return quietJit > 0 ? quietStart : warmup;
    }

    private static long jitMs() {
        java.lang.management.CompilationMXBean c = java.lang.management.ManagementFactory.getCompilationMXBean();
        return c != null && c.isCompilationTimeMonitoringSupported() ? c.getTotalCompilationTime() : 0;
    }

    /** Iteration i's cell: null for none (the warm-up, and "off"); "on" in the classic order
     *  off, on, on, off, ...; with a rotation, the name of the profiler whose turn it is. */
    String cell(int i) {
        if (first() < 0 || i < first()) {
            return null;
        }
        int k = (i - first()) / span;
        if (cells == null) {
            return (k % 4 == 1 || k % 4 == 2) ? "on" : null;
        }
        int n = cells.length, at = k % (2 * n + 2);
        if (at == 0 || at == 2 * n + 1) {
            return null;
        }
        return names[blockOrder(k / (2 * n + 2))[at <= n ? at - 1 : 2 * n - at]];
    }

    /** The cells' order in block b: shuffled by the run's seed and the block, so that no cell
     *  always follows the same one (what one session leaves behind, such as work a stop
     *  defers or code it deoptimized, weighs on each cell alike over the blocks and runs). */
    private int[] blockOrder(int b) {
        // Drawn in sequence from one generator for the run: generators seeded with neighbouring
        // values (seed + b) give nearly the same first draws, and left the middle cell of every
        // block of a run the same.
        while (orders.size() <= b) {
            int[] order = new int[cells.length];
            for (int j = 0; j < order.length; j++) {
                order[j] = j;
            }
            for (int j = order.length - 1; j > 0; j--) {
                int r = random.nextInt(j + 1), t = order[j];
                order[j] = order[r];
                order[r] = t;
            }
            orders.add(order);
        }
        return orders.get(b);
    }

    private Toggle of(String cell) {
        if (cells == null) {
            return this;
        }
        for (int k = 0; k < cells.length; k++) {
            if (names[k].equals(cell)) {
                return cells[k];
            }
        }
        throw new IllegalArgumentException("no cell " + cell);
    }

    /** Whether iteration i's session starts before it (the first iteration of its turn). */
    boolean opens(int i) {
        return measured(i) && (i - first()) % span == 0;
    }

    /** Whether iteration i's session stops after it (the last iteration of its turn). */
    boolean closes(int i) {
        return measured(i) && (i - first()) % span == span - 1;
    }

    boolean measured(int i) {
        return first() >= 0 && i >= first();
    }

    /** Before measured iteration i (outside its timed part): a full collection, unless
     *  -Dhpm.bench.gc=false. Each measured iteration then starts with an empty young
     *  generation, so the collections it meets are those of its own allocation. Without it, a
     *  young collection every k iterations falls on the same positions of every block when k
     *  divides the block's length: on h2 (one 40 ms collection every 3 iterations, blocks of
     *  6) every collection fell on a profiler's iteration and none on an unsampled one, and
     *  the shuffle gave each collection to whichever profiler came first in its block. */
    void collect(int i) {
        if (measured(i) && GC) {
            System.gc();
        }
    }

    private static final boolean GC = !"false".equals(System.getProperty("hpm.bench.gc"));

    void start(String cell) {
        of(cell).start();
    }

    void stop(String cell) {
        of(cell).stop();
    }

    /** Sessions this cell started so far: `%n` in its options (hpm's) becomes this number, so
     *  each turn writes its own files (the agent's `%t` changes only once a second). */
    private int sessions;

    private void start() {
        if (perfCtl != null) {
            perf("enable");
        } else if (hpm != null) {
            hpm.start(options.replace("%n", Integer.toString(sessions++)));
        } else {
            asyncProfiler(options);
        }
    }

    private void stop() {
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
