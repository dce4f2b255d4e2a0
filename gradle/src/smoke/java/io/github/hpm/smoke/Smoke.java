package io.github.hpm.smoke;

import io.github.hpm.Hpm;
import io.github.hpm.Region;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;

/**
 * The Gradle build's check: runs with -agentpath (hpm-agent.gradle), so the agent's session is
 * running from the start; marks iterations and regions, stops the session and reads back the
 * JFR file it wrote. Exits non-zero on any mismatch.
 */
public final class Smoke {
    private Smoke() {}

    static volatile long sink;

    /**
     * Runs the check.
     *
     * @param args the JFR file the agent writes (its file= option)
     * @throws Exception on any failure
     */
    public static void main(String[] args) throws Exception {
        check(Hpm.isLoaded(), "the agent is not loaded: -agentpath missing from the task's JVM arguments");
        Hpm hpm = Hpm.getInstance();
        check(hpm.status().contains("running"), "no session running: " + hpm.status());
        for (int i = 0; i < 3; i++) {
            hpm.iteration(i);
            try (Region r = hpm.region("work")) {
                long x = 1;
                for (long k = 0; k < 20_000_000L; k++) {
                    x = x * 6364136223846793005L + 1442695040888963407L;
                }
                sink = x;
            }
        }
        System.out.println(hpm.stop());
        List<RecordedEvent> events = RecordingFile.readAllEvents(Path.of(args[0]));
        List<String> names = events.stream().map(e -> e.getEventType().getName()).collect(Collectors.toList());
        long regions = names.stream().filter("hpm.Region"::equals).count();
        long phases = names.stream().filter("hpm.Phase"::equals).count();
        check(regions == 3 && phases == 3, "expected 3 hpm.Region and 3 hpm.Phase events, found " + regions + " and " + phases);
        System.out.println("bridgeSmoke: OK (" + events.size() + " events, " + regions + " regions, " + phases + " phases)");
    }

    private static void check(boolean ok, String message) {
        if (!ok) {
            throw new AssertionError("bridgeSmoke: " + message);
        }
    }
}
