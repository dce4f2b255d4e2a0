package io.github.hpm;

/**
 * Thrown when hpm cannot do what was asked: the agent is not loaded, an option string or
 * command is invalid, a counter cannot be read, no profiling session is running for a query.
 * The message says what to do. Unchecked, like {@link IllegalStateException}: misuse is a
 * programming error, and nothing in the bridge leaves the JVM in a bad state when it is thrown.
 */
public class HpmException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates an exception with the given message.
     *
     * @param message what went wrong and what to do about it
     */
    public HpmException(String message) {
        super(message);
    }

    /**
     * Creates an exception with the given message and cause.
     *
     * @param message what went wrong and what to do about it
     * @param cause the underlying error
     */
    public HpmException(String message, Throwable cause) {
        super(message, cause);
    }
}
