package io.github.hpm.phases;

import java.util.concurrent.atomic.AtomicLong;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.Opcodes;

/**
 * The agent's entry point for the rewrite: its ClassFileLoadHook hands each class file to
 * {@link #transform}, which returns the class with probes ({@link Probe}) in the methods
 * selected by {@link #configure}, or null to leave it unchanged. Any number of threads may
 * transform at once; the configuration is one immutable object swapped whole.
 *
 * <p>Left alone (and counted as skipped): classes of the bootstrap loader, of the platform's
 * and hpm's packages and of the JDK's named modules, class files older than version 50
 * (Java 6, the first with stack map frames) or newer than the bundled ASM reads.
 */
public final class Transformer {
    /** Lowest class file major version rewritten: Java 6, the first with stack map frames. */
    static final int MIN_VERSION = 50;
    /**
     * Newest major version known to be read by the bundled ASM (Java 25): a class file newer
     * than this that ASM refuses is skipped as unsupported, an older one counts as failed.
     */
    static final int KNOWN_VERSION = Opcodes.V25 & 0xFFFF;

    private static final AtomicLong SEEN = new AtomicLong();
    private static final AtomicLong INSTRUMENTED = new AtomicLong();
    private static final AtomicLong METHODS = new AtomicLong();
    private static final AtomicLong SKIPPED = new AtomicLong();
    private static final AtomicLong FAILED = new AtomicLong();

    private static volatile State state;

    /** What one configuration rewrites and how. */
    private record State(Exclusions exclusions, Selection selection, ClassRewriter rewriter) {}

    /** The agent's ids: the natives of {@link Probe}. */
    private static final class AgentIds implements MethodIds {
        @Override
        public int register(String className, String methodName, String descriptor) {
            return Probe.register0(className, methodName, descriptor);
        }
    }

    private Transformer() {}

    /**
     * Chooses the methods to instrument; the agent calls it once, before the first
     * {@link #transform}.
     *
     * @param selected null for the profiling run (methods of more than 50 bytes of
     *     bytecode or with a backward branch), else exactly these methods, named as the
     *     phase file names them ({@code pkg.Class.method(descriptor)})
     */
    public static void configure(String[] selected) {
        configure(selected, new AgentIds(), ClassRewriter.PROBE);
    }

    /** {@link #configure(String[])} with other ids and probe class: the tests' seam. */
    static void configure(String[] selected, MethodIds ids, String probeOwner) {
        Selection selection =
                selected == null ? Selection.heuristic() : Selection.exactly(selected);
        state = new State(
                Exclusions.ofBootLayer(), selection, new ClassRewriter(selection, ids, probeOwner));
    }

    /**
     * The class file with probes, or null to keep it unchanged. Never throws: a class that
     * cannot be rewritten is counted as failed and left as it was.
     *
     * @param loader the defining loader (null: the bootstrap loader, never rewritten)
     * @param internalName the class's name as JVMTI gives it ({@code a/b/C}); null to take it
     *     from the class file
     * @param classfile the class file's bytes
     * @return the new class file, or null
     */
    public static byte[] transform(ClassLoader loader, String internalName, byte[] classfile) {
        SEEN.incrementAndGet();
        try {
            State s = state;
            if (s == null) {
                configure(null);
                s = state;
            }
            if (loader == null || classfile == null) {
                SKIPPED.incrementAndGet();
                return null;
            }
            if (classfile.length < 8 || readInt(classfile, 0) != 0xCAFEBABE) {
                FAILED.incrementAndGet();
                return null;
            }
            // By name first, and only then parse: most classes of a measurement run stop here.
            int major = readInt(classfile, 4) & 0xFFFF;
            boolean named = internalName != null;
            if (major < MIN_VERSION || (named && s.exclusions().excludes(internalName))) {
                SKIPPED.incrementAndGet();
                return null;
            }
            if (named && !s.selection().mayWant(internalName.replace('/', '.'))) return null;
            ClassReader reader;
            try {
                reader = new ClassReader(classfile);
            } catch (IllegalArgumentException refused) {
                (major > KNOWN_VERSION ? SKIPPED : FAILED).incrementAndGet();
                return null;
            }
            if (!named) {
                String name = reader.getClassName();
                if (s.exclusions().excludes(name)) {
                    SKIPPED.incrementAndGet();
                    return null;
                }
                if (!s.selection().mayWant(name.replace('/', '.'))) return null;
            }
            ClassRewriter.Rewritten out = s.rewriter().rewrite(reader);
            if (out == null) return null;
            INSTRUMENTED.incrementAndGet();
            METHODS.addAndGet(out.methods());
            return out.classfile();
        } catch (Throwable t) {
            FAILED.incrementAndGet();
            return null;
        }
    }

    /**
     * The module that {@code module} must read for its classes to link to the probes, or null
     * when it needs nothing: {@link Probe}'s module (the bootstrap loader's unnamed module) for
     * an application's named module that does not read it yet; null for unnamed modules (they
     * read every module) and the JDK's own. The agent adds the read edge (JVMTI
     * AddModuleReads) for every module of the JVM when a session starts; modules defined
     * later, while the class file hook is on, get it from the JVM.
     *
     * @param module a module of the JVM
     * @return the module to read, or null
     */
    public static Module probeModuleFor(Module module) {
        Module probes = Probe.class.getModule();
        if (module == null || !module.isNamed() || Exclusions.isJdk(module) || module.canRead(probes)) {
            return null;
        }
        return probes;
    }

    private static int readInt(byte[] b, int at) {
        return (b[at] & 0xFF) << 24
                | (b[at + 1] & 0xFF) << 16
                | (b[at + 2] & 0xFF) << 8
                | (b[at + 3] & 0xFF);
    }

    /**
     * Counters for the agent's summary, since the JVM started.
     *
     * @return classes seen, classes instrumented, methods instrumented, classes skipped
     *     (excluded package, named module, old or unsupported version), classes failed
     */
    public static long[] stats() {
        return new long[] {
            SEEN.get(), INSTRUMENTED.get(), METHODS.get(), SKIPPED.get(), FAILED.get()
        };
    }
}
