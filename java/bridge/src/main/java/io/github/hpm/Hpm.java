package io.github.hpm;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Entry point of hpm's Java API, in the spirit of async-profiler's {@code AsyncProfiler}: get
 * the instance (loading the agent if needed), then control profiling sessions, read counters,
 * measure regions, mark phases and query the live profile.
 *
 * <pre>{@code
 * Hpm hpm = Hpm.getInstance();                  // -agentpath, hpm.agent.path, or the jar's copy
 * hpm.start("interval=1ms,file=profile.jfr");   // the agent's options
 * for (int i = 0; i < 10; i++) {
 *     hpm.iteration(i);                         // hpm.Phase event: cut warm-up later
 *     try (Region r = hpm.region("work")) {     // hpm.Region event with counter deltas
 *         work();
 *     }
 * }
 * System.out.println(hpm.hottestMethods(5));
 * hpm.stop();                                   // writes profile.jfr
 * }</pre>
 *
 * <p>Every method throws {@link HpmException} with a message saying what to do when it cannot
 * do its work (agent not loaded, bad option, no session running); none of them can crash the
 * JVM. The class is thread-safe.
 */
public final class Hpm {
    /** System property naming libhpm.so for {@link #getInstance()}: {@value}. */
    public static final String AGENT_PATH_PROPERTY = "hpm.agent.path";

    /** Where the jar carries its copy of libhpm.so, if it was built with one: {@value}. */
    public static final String BUNDLED_LIBRARY = "/io/github/hpm/native/linux-x86_64/libhpm.so";

    private static final String HOW_TO_LOAD = "start java with -agentpath:/path/to/libhpm.so, set -D"
            + AGENT_PATH_PROPERTY + "=/path/to/libhpm.so, or call Hpm.getInstance(\"/path/to/libhpm.so\")";

    private static Hpm instance;

    private Hpm() {}

    /**
     * Whether the hpm agent runs in this JVM (loaded by {@code -agentpath} or by an earlier
     * {@code getInstance}). Never throws and never loads anything.
     *
     * @return true if the other methods can be used
     */
    public static boolean isLoaded() {
        try {
            return Native.nativeLoaded();
        } catch (UnsatisfiedLinkError e) {
            return false;
        }
    }

    /**
     * The instance, loading the agent if it does not run yet: from the path in the system
     * property {@value #AGENT_PATH_PROPERTY}, else from the copy inside this jar (extracted to a
     * temporary file). An agent loaded by {@code -agentpath} is used as it is.
     *
     * @return the instance
     * @throws HpmException if the agent is not loaded and cannot be loaded
     */
    public static synchronized Hpm getInstance() {
        if (instance != null || isLoaded()) {
            return instanceOf();
        }
        String path = System.getProperty(AGENT_PATH_PROPERTY);
        if (path != null && !path.isEmpty()) {
            return getInstance(path);
        }
        Path extracted = extractBundled();
        if (extracted == null) {
            throw new HpmException("the hpm agent is not loaded and this jar carries no libhpm.so: " + HOW_TO_LOAD);
        }
        return load(extracted.toString());
    }

    /**
     * The instance, loading the agent from {@code libraryPath} if it does not run yet. If it
     * already runs (from {@code -agentpath} or an earlier load), the path is not used.
     *
     * @param libraryPath path of libhpm.so
     * @return the instance
     * @throws HpmException if the file cannot be loaded or the agent does not start
     */
    public static synchronized Hpm getInstance(String libraryPath) {
        if (instance != null || isLoaded()) {
            return instanceOf();
        }
        if (libraryPath == null || libraryPath.isEmpty()) {
            throw new HpmException("no path given for libhpm.so: " + HOW_TO_LOAD);
        }
        return load(libraryPath);
    }

    private static Hpm load(String path) {
        Path p = Path.of(path).toAbsolutePath();
        if (!Files.isReadable(p)) {
            throw new HpmException("cannot read " + p + ": build the agent (cargo build --release -p hpm-agent) or "
                    + "give the path of libhpm.so");
        }
        try {
            System.load(p.toString());
        } catch (UnsatisfiedLinkError e) {
            throw new HpmException("cannot load " + p + ": " + e.getMessage() + " (it must be libhpm.so built for this platform)", e);
        }
        if (!isLoaded()) {
            throw new HpmException("loaded " + p + " but the hpm agent did not start: see the 'hpm:' line on standard error");
        }
        return instanceOf();
    }

    private static Hpm instanceOf() {
        if (instance == null) {
            instance = new Hpm();
        }
        return instance;
    }

    private static Path extractBundled() {
        try (InputStream in = Hpm.class.getResourceAsStream(BUNDLED_LIBRARY)) {
            if (in == null) {
                return null;
            }
            Path tmp = Files.createTempFile("libhpm-", ".so");
            tmp.toFile().deleteOnExit();
            Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
            return tmp;
        } catch (IOException e) {
            throw new HpmException("cannot extract the bundled libhpm.so to a temporary file: " + e.getMessage()
                    + "; set -Djava.io.tmpdir to a writable directory or " + HOW_TO_LOAD, e);
        }
    }

    /**
     * Runs one control command, as {@code hpm attach PID COMMAND} does: {@code start[,options]},
     * {@code stop}, {@code dump,file=PATH} or {@code status}.
     *
     * @param command the command text
     * @return what the agent reports (a line or a few)
     * @throws HpmException if the command or an option is invalid or cannot be carried out
     */
    public String execute(String command) {
        if (command == null) {
            throw new HpmException("command must not be null: use start[,options], stop, dump,file=PATH or status");
        }
        return Native.nativeExecute(command);
    }

    /**
     * Starts a profiling session with the agent's options, as after {@code -agentpath:libhpm.so=}
     * (for example {@code event=cpu-clock,interval=1ms,file=profile.jfr}; {@code help} lists
     * them).
     *
     * @param options the option string, may be empty for the defaults
     * @return what the agent reports
     * @throws HpmException on a bad option, or if a session is already running
     */
    public String start(String options) {
        return execute(options == null || options.isEmpty() ? "start" : "start," + options);
    }

    /**
     * Stops the running session and writes its outputs.
     *
     * @return what the agent reports (files written)
     * @throws HpmException if no session is running
     */
    public String stop() {
        return execute("stop");
    }

    /**
     * Writes the profile so far (of the running session, or of the last one) to a file, in the
     * format its name says: {@code .jfr}, {@code .html}, {@code .svg}, {@code .collapsed} and
     * the other output formats of the agent.
     *
     * @param path the file to write
     * @return what the agent reports
     * @throws HpmException if there is no profile or the file cannot be written
     */
    public String dump(String path) {
        if (path == null || path.isEmpty()) {
            throw new HpmException("dump needs a file path, e.g. dump(\"profile.jfr\")");
        }
        return execute("dump,file=" + path);
    }

    /**
     * Whether a session runs, with what event, and how many samples so far.
     *
     * @return the agent's status text
     */
    public String status() {
        return execute("status");
    }

    /**
     * Reads the calling thread's counters. The first call on a thread opens its counters.
     *
     * @return a snapshot; subtract two with {@link Counters#minus}
     * @throws HpmException if the counters cannot be read
     */
    public Counters counters() {
        long[] raw = Native.nativeReadCounters();
        String[] names = Native.nativeCounterNames();
        return new Counters(raw[0], Arrays.asList(names), Arrays.copyOfRange(raw, 1, raw.length));
    }

    /**
     * Counters this machine cannot count for the calling thread, with why.
     *
     * @return lines such as {@code cycles: not available on this machine (no hardware PMU: ...)}
     */
    public List<String> unavailableCounters() {
        return List.of(Native.nativeCountersMissing());
    }

    /**
     * Opens a measured region on the calling thread; close it (try-with-resources) to record an
     * {@code hpm.Region} event.
     *
     * @param name the region's name in the profile
     * @return the open region
     * @throws HpmException if the name is null or the counters cannot be read
     */
    public Region region(String name) {
        if (name == null) {
            throw new HpmException("region name must not be null");
        }
        return new Region(this, name);
    }

    /**
     * Marks the start of a named phase on the calling thread (an {@code hpm.Phase} event with
     * index -1): samples after it, up to the next marker, belong to it. Markers are written
     * only while a profiling session runs.
     *
     * @param name the phase, e.g. {@code warm-up} or {@code steady}
     * @throws HpmException if the name is null
     */
    public void phase(String name) {
        if (name == null) {
            throw new HpmException("phase name must not be null");
        }
        Thread t = Thread.currentThread();
        Native.nativePhase(name, -1, t.getId(), t.getName());
    }

    /**
     * Marks the start of benchmark iteration {@code index} (an {@code hpm.Phase} event named
     * {@code iteration}), so warm-up iterations can be left out of the profile, as Hofer et al.
     * do. Written only while a profiling session runs.
     *
     * @param index the iteration number, 0 or more
     * @throws HpmException if the index is negative
     */
    public void iteration(long index) {
        if (index < 0) {
            throw new HpmException("iteration index must be 0 or more, got " + index);
        }
        Thread t = Thread.currentThread();
        Native.nativePhase("iteration", index, t.getId(), t.getName());
    }

    /**
     * The methods with the most samples of their own in the running session so far. Waits for
     * the agent's next processing round (at most about 50 ms; samples of the last 100 ms are
     * not in yet).
     *
     * @param n how many, at most
     * @return hottest first
     * @throws HpmException if no session is running
     */
    public List<HotMethod> hottestMethods(int n) {
        List<HotMethod> out = new ArrayList<>();
        for (String row : Native.nativeHottestMethods(n)) {
            String[] f = row.split("\t", 3);
            out.add(new HotMethod(f[2], Long.parseLong(f[0]), Long.parseLong(f[1])));
        }
        return List.copyOf(out);
    }

    /**
     * The methods {@code method} calls with the most samples under the call, over all its
     * calling contexts.
     *
     * @param method a method as profiles name it, {@code package.Class.method}
     * @param n how many, at most
     * @return hottest first; empty if the method is not in the profile
     * @throws HpmException if no session is running
     */
    public List<Callee> hottestCallees(String method, int n) {
        List<Callee> out = new ArrayList<>();
        for (String row : Native.nativeHottestCallees(method, n)) {
            String[] f = row.split("\t", 2);
            out.add(new Callee(f[1], Long.parseLong(f[0])));
        }
        return List.copyOf(out);
    }

    /**
     * The calling contexts in which {@code caller} calls {@code callee}, with the samples under
     * the call in each.
     *
     * @param caller the calling method, {@code package.Class.method}
     * @param callee the called method
     * @param n how many contexts, at most
     * @return hottest first; empty if the edge is not in the profile
     * @throws HpmException if no session is running
     */
    public List<CallContext> callContexts(String caller, String callee, int n) {
        List<CallContext> out = new ArrayList<>();
        for (String row : Native.nativeCallContexts(caller, callee, n)) {
            String[] f = row.split("\t");
            out.add(new CallContext(Arrays.asList(f).subList(1, f.length), Long.parseLong(f[0])));
        }
        return List.copyOf(out);
    }
}
