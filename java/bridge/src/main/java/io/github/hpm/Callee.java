package io.github.hpm;

/**
 * A method called by another one in the live profile.
 *
 * @param name the callee, {@code package.Class.method}
 * @param samples samples taken under the call, summed over every context of the caller
 */
public record Callee(String name, long samples) {}
