package io.github.hpm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;

/**
 * Run by the pom's `agentpath` surefire execution, in a JVM started with
 * -agentpath:libhpm.so=file=...: the bridge uses that agent and its running session.
 */
class AgentPathTest {
    @Test
    void theAgentFromTheCommandLineIsUsed() throws Exception {
        assertTrue(Hpm.isLoaded(), "the JVM was not started with -agentpath");
        Hpm hpm = Hpm.getInstance("/not/used/when/already/loaded.so");
        assertTrue(hpm.status().contains("running"), hpm.status());
        hpm.iteration(7);
        try (Region r = hpm.region("agentpath")) {
            TestLib.spin(10_000_000);
        }
        hpm.stop();
        Path jfr = Path.of(System.getProperty("hpm.test.agentpath.jfr"));
        List<String> regions = RecordingFile.readAllEvents(jfr).stream()
                .filter(e -> e.getEventType().getName().equals("hpm.Region"))
                .map(e -> e.getString("name"))
                .toList();
        assertEquals(List.of("agentpath"), regions);
    }
}
