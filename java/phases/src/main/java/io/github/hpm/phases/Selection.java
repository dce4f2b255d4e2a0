package io.github.hpm.phases;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * Which methods get probes. The profiling run (step 1 of Georges et al.) takes every method
 * above the paper's size heuristic (section 3.1.2): a body of more than {@link #MIN_CODE_BYTES}
 * bytes of bytecode (the Code attribute's {@code code_length}), or a backward branch (a loop). The measurement run (step 3) takes exactly the methods named
 * in the phase file, whatever their size. Immutable, so any number of class-loading threads
 * read one.
 */
final class Selection {
    /** A method with more bytes of bytecode than this is instrumented in the profiling run. */
    static final int MIN_CODE_BYTES = 50;
    /** Longest method name taken from the phase file; longer ones cannot name a method. */
    static final int MAX_NAME = 65_535;

    /** Dotted class name → {@code name + descriptor} of its selected methods; null: heuristic. */
    private final Map<String, Set<String>> byClass;

    private Selection(Map<String, Set<String>> byClass) {
        this.byClass = byClass;
    }

    /** The profiling run's selection: the size heuristic. */
    static Selection heuristic() {
        return new Selection(null);
    }

    /**
     * Exactly the named methods, named as the trace and the phase file name them:
     * {@code pkg.Class.method(descriptor)}. Blank entries, {@code #} comments and names that
     * cannot be a method's are ignored.
     */
    static Selection exactly(String[] names) {
        Map<String, Set<String>> byClass = new HashMap<>();
        for (String raw : names) {
            if (raw == null) continue;
            String name = raw.strip();
            if (name.isEmpty() || name.startsWith("#") || name.length() > MAX_NAME) continue;
            int paren = name.indexOf('(');
            int dot = paren < 0 ? -1 : name.lastIndexOf('.', paren);
            if (dot <= 0 || dot + 1 == paren) continue;
            byClass.computeIfAbsent(name.substring(0, dot), k -> new HashSet<>())
                    .add(name.substring(dot + 1));
        }
        return new Selection(byClass);
    }

    /** Whether this is the measurement run's exact list. */
    boolean exact() {
        return byClass != null;
    }

    /** Whether any method of this class (dotted name) can be selected: false skips it unread. */
    boolean mayWant(String className) {
        return byClass == null || byClass.containsKey(className);
    }

    /** Whether this method gets probes; {@code shape} is its survey (used by the heuristic). */
    boolean wants(String className, String name, String descriptor, MethodSurvey.Shape shape) {
        if (byClass != null) {
            Set<String> methods = byClass.get(className);
            return methods != null && methods.contains(name + descriptor);
        }
        return shape.codeBytes() > MIN_CODE_BYTES || shape.backwardBranch();
    }
}
