package io.github.hpm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Sessions started and stopped from Java, their JFR output, and queries on the live profile. */
class ControlTest {
    private static final String SPIN = "io.github.hpm.TestLib.spin";
    private static final String OUTER = "io.github.hpm.ControlTest.spinOuter";

    private final Hpm hpm = TestLib.load();

    @TempDir
    Path dir;

    @AfterEach
    void stopLeftOverSession() {
        if (hpm.status().contains("running")) {
            hpm.stop();
        }
    }

    static long spinOuter(long iterations) {
        return TestLib.spin(iterations);
    }

    @Test
    void aBadOptionThrowsAndLeavesNoSession() {
        HpmException e = assertThrows(HpmException.class, () -> hpm.start("interval=fast"));
        assertTrue(e.getMessage().contains("interval"), e.getMessage());
        e = assertThrows(HpmException.class, () -> hpm.execute("explode"));
        assertTrue(e.getMessage().contains("not a command"), e.getMessage());
        assertThrows(HpmException.class, hpm::stop);
        assertThrows(HpmException.class, () -> hpm.dump(""));
        assertThrows(HpmException.class, () -> hpm.execute(null));
    }

    @Test
    void aSessionWritesRegionsPhasesAndSamplesToJfr() throws Exception {
        Path jfr = dir.resolve("session.jfr");
        hpm.phase("before the session: not recorded");
        try (Region r = hpm.region("before the session: not recorded")) {
            TestLib.spin(1000);
        }
        String started = hpm.start("interval=1ms,file=" + jfr);
        assertTrue(started.contains(jfr.toString()), started);
        assertTrue(hpm.status().contains("running"), hpm.status());
        hpm.phase("warm-up");
        for (int i = 0; i < 3; i++) {
            hpm.iteration(i);
            try (Region r = hpm.region("work")) {
                spinOuter(30_000_000);
            }
        }
        hpm.stop();
        assertTrue(Files.size(jfr) > 0);

        List<RecordedEvent> events = RecordingFile.readAllEvents(jfr);
        List<RecordedEvent> regions = named(events, "hpm.Region");
        assertEquals(3, regions.size(), "regions in " + events.size() + " events");
        for (RecordedEvent r : regions) {
            assertEquals("work", r.getString("name"));
            assertTrue(r.getLong("taskClock") > 0, r.toString());
            assertTrue(r.getString("counters").contains("task-clock"), r.toString());
            assertTrue(r.getDuration().toNanos() > 0, r.toString());
            assertEquals(Thread.currentThread().getName(), r.getThread("eventThread").getJavaName());
        }
        List<RecordedEvent> phases = named(events, "hpm.Phase");
        assertEquals(List.of("warm-up", "iteration", "iteration", "iteration"),
                phases.stream().map(p -> p.getString("name")).collect(Collectors.toList()));
        assertEquals(List.of(-1L, 0L, 1L, 2L), phases.stream().map(p -> p.getLong("index")).collect(Collectors.toList()));
        // Each iteration's region starts after its marker.
        assertTrue(regions.get(0).getStartTime().compareTo(phases.get(1).getStartTime()) >= 0);
        assertFalse(named(events, "jdk.ExecutionSample").isEmpty());
    }

    @Test
    void dumpWritesTheProfileSoFarWithoutStopping() throws Exception {
        hpm.start("interval=1ms,file=" + dir.resolve("end.jfr"));
        hpm.iteration(0);
        spinOuter(30_000_000);
        Path dumped = dir.resolve("dump.jfr");
        hpm.dump(dumped.toString());
        assertTrue(hpm.status().contains("running"), hpm.status());
        List<RecordedEvent> events = RecordingFile.readAllEvents(dumped);
        assertEquals(1, named(events, "hpm.Phase").size());
        hpm.stop();
        assertEquals(1, named(RecordingFile.readAllEvents(dir.resolve("end.jfr")), "hpm.Phase").size());
    }

    @Test
    void queriesFindTheHotLoop() {
        hpm.start("interval=1ms,file=" + dir.resolve("q.jfr"));
        spinOuter(600_000_000);
        List<HotMethod> hot = hpm.hottestMethods(3);
        assertFalse(hot.isEmpty());
        assertEquals(SPIN, hot.get(0).name(), hot.toString());
        assertTrue(hot.get(0).selfSamples() > 0 && hot.get(0).totalSamples() >= hot.get(0).selfSamples());

        List<Callee> callees = hpm.hottestCallees(OUTER, 5);
        assertEquals(SPIN, callees.get(0).name(), callees.toString());
        assertTrue(hpm.hottestCallees("no.such.Method", 5).isEmpty());

        List<CallContext> contexts = hpm.callContexts(OUTER, SPIN, 5);
        assertFalse(contexts.isEmpty());
        List<String> frames = contexts.get(0).frames();
        assertEquals(OUTER, frames.get(frames.size() - 1), contexts.toString());
        assertTrue(frames.contains("io.github.hpm.ControlTest.queriesFindTheHotLoop"), frames.toString());
        hpm.stop();

        HpmException e = assertThrows(HpmException.class, () -> hpm.hottestMethods(3));
        assertTrue(e.getMessage().contains("no profiling session is running"), e.getMessage());
    }

    private static List<RecordedEvent> named(List<RecordedEvent> events, String name) {
        return events.stream().filter(e -> e.getEventType().getName().equals(name)).collect(Collectors.toList());
    }
}
