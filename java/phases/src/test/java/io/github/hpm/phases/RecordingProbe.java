package io.github.hpm.phases;

import java.util.ArrayList;
import java.util.List;

/**
 * The tests' stand-in for {@link Probe}: rewritten fixture classes call these instead (the
 * rewriter's probe class is a seam), and each call is recorded as {@code "enter NAME"},
 * {@code "exit NAME"} or {@code "thrown NAME"}. It also hands out the method ids.
 */
public final class RecordingProbe {
    static final String OWNER = "io/github/hpm/phases/RecordingProbe";

    private static final List<String> NAMES = new ArrayList<>();
    private static final List<String> EVENTS = new ArrayList<>();

    private RecordingProbe() {}

    /** Ids as the agent gives them: one per registration, named {@code Class.method(desc)}. */
    static synchronized int register(String className, String methodName, String descriptor) {
        String simple = className.substring(className.lastIndexOf('.') + 1);
        NAMES.add(simple + "." + methodName + descriptor);
        return NAMES.size() - 1;
    }

    static synchronized List<String> names() {
        return List.copyOf(NAMES);
    }

    /** The events since the last call, and forgets them. */
    static synchronized List<String> take() {
        List<String> out = List.copyOf(EVENTS);
        EVENTS.clear();
        return out;
    }

    static synchronized void reset() {
        NAMES.clear();
        EVENTS.clear();
    }

    private static synchronized void record(String what, int id) {
        EVENTS.add(what + " " + NAMES.get(id));
    }

    public static void enter(int id) {
        record("enter", id);
    }

    public static void exit(int id) {
        record("exit", id);
    }

    public static void thrown(int id) {
        record("thrown", id);
    }
}
