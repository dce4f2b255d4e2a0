package io.github.hpm;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** getInstance() with no path: the copy of libhpm.so the build put among the classes. */
class BundledTest {
    @Test
    void theBundledLibraryLoads() {
        assertTrue(Hpm.class.getResource(Hpm.BUNDLED_LIBRARY) != null, "the build did not bundle libhpm.so");
        assertFalse(Hpm.isLoaded());
        Hpm hpm = Hpm.getInstance();
        assertTrue(Hpm.isLoaded());
        assertTrue(hpm.status().contains("state"), hpm.status());
        assertTrue(hpm.counters().has("task-clock"));
    }
}
