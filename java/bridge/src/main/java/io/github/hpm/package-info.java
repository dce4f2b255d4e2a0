/**
 * Java API of the hpm profiler: control a profiling session from inside the JVM (start, stop,
 * dump, status), read the calling thread's performance counters, measure code regions and
 * mark phases (both written to the JFR output as {@code hpm.Region} and {@code hpm.Phase}
 * events), and query the live profile (hottest methods, callees, calling contexts).
 *
 * <p>Start with {@link io.github.hpm.Hpm#getInstance()}. Every failure is an
 * {@link io.github.hpm.HpmException} whose message says what to do.
 */
package io.github.hpm;
