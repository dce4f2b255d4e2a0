package io.github.hpm.phases;

/**
 * Where a rewritten method gets its id: the agent ({@link Probe#register0}) in a real run, a
 * counter in the tests, which run without the agent.
 */
@FunctionalInterface
interface MethodIds {
    /**
     * The id the probes of this method pass.
     *
     * @param className the class name, dotted ({@code a.b.C$Inner})
     * @param methodName the method's name ({@code <init>} for a constructor)
     * @param descriptor the JVM descriptor ({@code (I)J})
     */
    int register(String className, String methodName, String descriptor);
}
