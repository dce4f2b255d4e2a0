package io.github.hpm;

/**
 * A method of the live profile and its samples.
 *
 * @param name the method as profiles show it, {@code package.Class.method}
 * @param selfSamples samples that ended in the method (its own work)
 * @param totalSamples samples in which the method was on the stack (counted once per sample,
 *     even under recursion)
 */
public record HotMethod(String name, long selfSamples, long totalSamples) {}
