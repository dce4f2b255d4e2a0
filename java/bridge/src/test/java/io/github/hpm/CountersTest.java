package io.github.hpm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** Counters of the current thread and regions, with the agent loaded by Hpm.getInstance(path). */
class CountersTest {
    private final Hpm hpm = TestLib.load();

    @Test
    void theInstanceIsOneAndLoaded() {
        assertTrue(Hpm.isLoaded());
        assertSame(hpm, Hpm.getInstance());
        assertSame(hpm, Hpm.getInstance("/ignored/once/loaded.so"));
    }

    @Test
    void everyCounterIsMeasuredOrReportedMissing() {
        Counters c = hpm.counters();
        List<String> all = new ArrayList<>(c.names());
        for (String line : hpm.unavailableCounters()) {
            all.add(line.substring(0, line.indexOf(':')));
        }
        all.sort(null);
        assertEquals(List.of("context-switches", "cycles", "instructions", "page-faults", "task-clock"), all);
        assertTrue(c.has("task-clock"), "software counters work without a PMU: " + hpm.unavailableCounters());
        assertEquals(-1, new Counters(0, List.of(), new long[0]).cycles());
    }

    @Test
    void taskClockGrowsWithWork() {
        Counters a = hpm.counters();
        TestLib.spin(20_000_000);
        Counters b = hpm.counters();
        Counters d = b.minus(a);
        assertTrue(d.taskClock() > 0, "task-clock delta " + d);
        assertTrue(d.time() > 0);
        for (String n : b.names()) {
            assertTrue(b.get(n) >= a.get(n), n + " went down: " + a + " -> " + b);
        }
    }

    @Test
    void aRegionMeasuresItsOwnWork() {
        Region outer;
        Region inner;
        try (Region o = hpm.region("outer")) {
            outer = o;
            TestLib.spin(10_000_000);
            try (Region i = hpm.region("inner")) {
                inner = i;
                TestLib.spin(10_000_000);
            }
        }
        assertEquals("outer", outer.name());
        assertTrue(inner.deltas().taskClock() > 0, inner.deltas().toString());
        assertTrue(outer.deltas().taskClock() > inner.deltas().taskClock(), outer.deltas() + " vs " + inner.deltas());
        assertTrue(outer.deltas().time() >= inner.deltas().time());
        outer.close(); // a second close does nothing
    }

    @Test
    void regionMisuseIsReported() throws Exception {
        Region open = hpm.region("open");
        assertThrows(IllegalStateException.class, open::deltas);
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                open.close();
            } catch (Throwable e) {
                thrown.set(e);
            }
        }, "other");
        t.start();
        t.join();
        assertTrue(thrown.get() instanceof HpmException, String.valueOf(thrown.get()));
        assertTrue(thrown.get().getMessage().contains("close it on the thread that opened it"));
        open.close();
        assertThrows(HpmException.class, () -> hpm.region(null));
        assertThrows(HpmException.class, () -> hpm.phase(null));
        assertThrows(HpmException.class, () -> hpm.iteration(-1));
    }
}
