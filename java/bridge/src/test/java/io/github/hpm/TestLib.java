package io.github.hpm;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;

/** Shared by the tests: the agent built by cargo (path set by the pom), and busy work. */
final class TestLib {
    private TestLib() {}

    static Hpm load() {
        String lib = System.getProperty("hpm.test.lib");
        assertTrue(lib != null && Files.isReadable(Path.of(lib)), "libhpm.so not built at " + lib
                + ": run cargo build --release -p hpm-agent first");
        return Hpm.getInstance(lib);
    }

    static volatile long sink;

    /** CPU work: a fixed number of iterations of a small hash, not a fixed time. */
    static long spin(long iterations) {
        long x = 0x9E3779B97F4A7C15L;
        for (long i = 0; i < iterations; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
        }
        sink = x;
        return x;
    }
}
