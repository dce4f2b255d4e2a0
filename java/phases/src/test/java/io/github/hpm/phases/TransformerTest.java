package io.github.hpm.phases;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The agent's entry point: what it skips, fails and instruments, as {@link Transformer#stats}
 * counts them (seen, instrumented, methods, skipped, failed), and that it never throws.
 */
class TransformerTest {
    private static final ClassLoader APP = TransformerTest.class.getClassLoader();
    private static final byte[] WORKLOAD = Fixtures.bytes("phasefixture.Workload");

    @BeforeEach
    void configure() {
        RecordingProbe.reset();
        Transformer.configure(null, RecordingProbe::register, RecordingProbe.OWNER);
    }

    @AfterAll
    static void restore() {
        Transformer.configure(null);
    }

    /** stats() after {@code run} minus before. */
    private static long[] delta(Runnable run) {
        long[] before = Transformer.stats();
        run.run();
        long[] after = Transformer.stats();
        for (int i = 0; i < after.length; i++) after[i] -= before[i];
        return after;
    }

    private static byte[] transform(String internalName, byte[] classfile) {
        return Transformer.transform(APP, internalName, classfile);
    }

    private static byte[] withVersion(byte[] classfile, int major) {
        byte[] b = classfile.clone();
        b[6] = (byte) (major >> 8);
        b[7] = (byte) major;
        return b;
    }

    @Test
    void instrumentsAnApplicationClass() {
        byte[][] out = new byte[1][];
        long[] d = delta(() -> out[0] = transform("phasefixture/Workload", WORKLOAD));
        assertNotNull(out[0]);
        assertArrayEquals(new long[] {1, 1, 14, 0, 0}, d);
        assertEquals("", Fixtures.verify(out[0], new Fixtures.RewritingLoader(b -> null)));
        // Without a name from JVMTI, the class file's own.
        assertNotNull(transform(null, WORKLOAD));
    }

    @Test
    void skipsWhatMustNotBeRewritten() {
        long[] d = delta(() -> {
            assertNull(Transformer.transform(null, "phasefixture/Workload", WORKLOAD));
            assertNull(Transformer.transform(APP, "java/lang/Workload", WORKLOAD));
            assertNull(Transformer.transform(APP, "io/github/hpm/Workload", WORKLOAD));
            // A package of java.xml, a named module of the JDK.
            assertNull(Transformer.transform(APP, "org/w3c/dom/Workload", WORKLOAD));
            assertNull(transform("phasefixture/Workload", withVersion(WORKLOAD, 49)));
            assertNull(transform("phasefixture/Workload", withVersion(WORKLOAD, 0x7FFF)));
        });
        assertArrayEquals(new long[] {6, 0, 0, 6, 0}, d);
    }

    @Test
    void onlyApplicationNamedModulesAreGivenTheProbesModule() {
        assertNull(Transformer.probeModuleFor(Object.class.getModule()), "java.base");
        assertNull(Transformer.probeModuleFor(org.w3c.dom.Node.class.getModule()), "java.xml");
        assertNull(Transformer.probeModuleFor(getClass().getModule()), "an unnamed module");
        ModuleLayer app = appLayer();
        Module named = app.findModule("phasemod").orElseThrow();
        assertEquals(Probe.class.getModule(), Transformer.probeModuleFor(named));
        assertTrue(Exclusions.ofBootLayer().excludes("org/w3c/dom/Node"));
    }

    /** A layer with one application module, {@code phasemod}, defined to a new loader. */
    private static ModuleLayer appLayer() {
        java.lang.module.ModuleDescriptor d =
                java.lang.module.ModuleDescriptor.newModule("phasemod").packages(Set.of("phasemodpkg")).build();
        java.lang.module.ModuleFinder finder = new java.lang.module.ModuleFinder() {
            @Override
            public java.util.Optional<java.lang.module.ModuleReference> find(String name) {
                return name.equals("phasemod") ? java.util.Optional.of(reference()) : java.util.Optional.empty();
            }

            @Override
            public Set<java.lang.module.ModuleReference> findAll() {
                return Set.of(reference());
            }

            private java.lang.module.ModuleReference reference() {
                return new java.lang.module.ModuleReference(d, null) {
                    @Override
                    public java.lang.module.ModuleReader open() {
                        throw new UnsupportedOperationException();
                    }
                };
            }
        };
        ModuleLayer boot = ModuleLayer.boot();
        java.lang.module.Configuration cf = boot.configuration()
                .resolve(finder, java.lang.module.ModuleFinder.of(), Set.of("phasemod"));
        return boot.defineModulesWithOneLoader(cf, ClassLoader.getSystemClassLoader());
    }

    @Test
    void countsBrokenClassFilesAsFailedWithoutThrowing() {
        byte[] truncated = Arrays.copyOf(WORKLOAD, WORKLOAD.length / 2);
        byte[] noMagic = WORKLOAD.clone();
        noMagic[0] = 0;
        long[] d = delta(() -> {
            assertNull(transform("phasefixture/Workload", truncated));
            assertNull(transform("phasefixture/Workload", noMagic));
            assertNull(transform("phasefixture/Workload", new byte[3]));
        });
        assertArrayEquals(new long[] {3, 0, 0, 0, 3}, d);
    }

    @Test
    void selectedRunLeavesOtherClassesUnreadAndUncounted() {
        Transformer.configure(new String[] {"phasefixture.Box.sides()I"}, RecordingProbe::register,
                RecordingProbe.OWNER);
        long[] d = delta(() -> {
            assertNull(transform("phasefixture/Workload", WORKLOAD));
            assertNotNull(transform("phasefixture/Box", Fixtures.bytes("phasefixture.Box")));
        });
        assertArrayEquals(new long[] {2, 1, 1, 0, 0}, d);
        assertEquals(List.of("Box.sides()I"), RecordingProbe.names());
    }

    @Test
    void threadsTransformAtOnceToTheSameClass() throws Exception {
        Transformer.configure(null, (c, m, desc) -> (c + m + desc).length(), RecordingProbe.OWNER);
        byte[] one = transform("phasefixture/Workload", WORKLOAD);
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<byte[]>> all = new ArrayList<>();
            for (int i = 0; i < 32; i++) {
                all.add(pool.submit(() -> transform("phasefixture/Workload", WORKLOAD)));
            }
            for (Future<byte[]> f : all) assertArrayEquals(one, f.get());
        } finally {
            pool.shutdown();
        }
    }

    @Test
    void probesCallTheNativesOnlyWhenOn() {
        Probe.enter(1);
        Probe.exit(1);
        Probe.thrown(1);
        Probe.on = true;
        try {
            // No agent here: the natives are not registered.
            assertThrows(UnsatisfiedLinkError.class, () -> Probe.enter(1));
        } finally {
            Probe.on = false;
        }
    }
}
