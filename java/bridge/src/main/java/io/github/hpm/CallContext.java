package io.github.hpm;

import java.util.List;

/**
 * A calling context of a call edge in the live profile: the path from the thread's root to
 * the caller.
 *
 * @param frames the methods from the outermost to the caller, {@code package.Class.method}
 * @param samples samples taken under the call in this context
 */
public record CallContext(List<String> frames, long samples) {
    /**
     * Makes an unmodifiable copy of {@code frames}.
     *
     * @param frames the methods from the outermost to the caller
     * @param samples samples taken under the call in this context
     */
    public CallContext {
        frames = List.copyOf(frames);
    }
}
