package io.github.hpm.phases;

import java.util.HashSet;
import java.util.Set;

/**
 * Classes never rewritten, by name: the platform's and hpm's own packages, and the packages of
 * the JDK's own named modules of the boot layer (those of the bootstrap and platform loaders,
 * and any named {@code java.*} or {@code jdk.*}). An application's own named modules are
 * rewritten: the agent makes each of them read the bootstrap loader's unnamed module, where
 * {@link Probe} is ({@link Transformer#probeModuleFor}).
 */
final class Exclusions {
    private static final String[] PREFIXES = {
        "java/", "javax/", "jdk/", "sun/", "com/sun/", "io/github/hpm/"
    };

    /** Packages of the JDK's named modules, internal form ({@code org/w3c/dom}). */
    private final Set<String> modulePackages;

    private Exclusions(Set<String> modulePackages) {
        this.modulePackages = modulePackages;
    }

    /**
     * The exclusions of this JVM: the boot layer's JDK packages are collected once, here (none
     * while the module system is not yet up).
     */
    static Exclusions ofBootLayer() {
        Set<String> packages = new HashSet<>();
        ModuleLayer boot = ModuleLayer.boot();
        if (boot != null) {
            for (Module module : boot.modules()) {
                if (!isJdk(module)) continue;
                for (String pkg : module.getPackages()) packages.add(pkg.replace('.', '/'));
            }
        }
        return new Exclusions(Set.copyOf(packages));
    }

    /** Whether a named module is the JDK's own (never rewritten, never given read edges). */
    static boolean isJdk(Module module) {
        ClassLoader loader = module.getClassLoader();
        String name = module.getName();
        return loader == null
                || loader == ClassLoader.getPlatformClassLoader()
                || (name != null && (name.startsWith("java.") || name.startsWith("jdk.")));
    }

    /** Whether the class of this internal name ({@code a/b/C}) is left alone. */
    boolean excludes(String internalName) {
        for (String prefix : PREFIXES) {
            if (internalName.startsWith(prefix)) return true;
        }
        int slash = internalName.lastIndexOf('/');
        return slash > 0 && modulePackages.contains(internalName.substring(0, slash));
    }
}
