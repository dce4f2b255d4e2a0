package io.github.hpm.phases;

import java.util.Map;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;

/**
 * Rewrites one class: a survey of its methods ({@link MethodSurvey}), then, when the
 * {@link Selection} takes any of those that can have probes, a copy in which those get them
 * ({@link ProbeInserter}). Holds no state between classes, so threads share one.
 */
final class ClassRewriter {
    /** The probes' class, as instrumented code names it. */
    static final String PROBE = "io/github/hpm/phases/Probe";

    /** A rewritten class file and how many of its methods got probes. */
    record Rewritten(byte[] classfile, int methods) {}

    private final Selection selection;
    private final MethodIds ids;
    private final String probeOwner;

    /**
     * @param probeOwner the internal name of the class whose static {@code enter}, {@code
     *     exit} and {@code thrown} ({@code (I)V}) the probes call: {@link #PROBE}, or a
     *     recording stand-in in the tests
     */
    ClassRewriter(Selection selection, MethodIds ids, String probeOwner) {
        this.selection = selection;
        this.ids = ids;
        this.probeOwner = probeOwner;
    }

    /** The class with probes, or null when no method of it is taken. */
    Rewritten rewrite(ClassReader reader) {
        Map<String, MethodSurvey.Shape> shapes = MethodSurvey.of(reader);
        String className = reader.getClassName().replace('/', '.');
        boolean any = false;
        for (Map.Entry<String, MethodSurvey.Shape> e : shapes.entrySet()) {
            String key = e.getKey();
            int paren = key.indexOf('(');
            any |= wanted(className, key.substring(0, paren), key.substring(paren), e.getValue());
        }
        if (!any) return null;
        ClassWriter writer = new NoLoadingWriter(reader);
        Instrumenter instrumenter = new Instrumenter(writer, className, shapes);
        reader.accept(instrumenter, ClassReader.EXPAND_FRAMES);
        if (instrumenter.methods == 0) return null;
        return new Rewritten(writer.toByteArray(), instrumenter.methods);
    }

    private boolean wanted(
            String className, String name, String descriptor, MethodSurvey.Shape shape) {
        return shape != null
                && shape.instrumentable()
                && selection.wants(className, name, descriptor, shape);
    }

    private final class Instrumenter extends ClassVisitor {
        private final String className;
        private final Map<String, MethodSurvey.Shape> shapes;
        int methods;

        Instrumenter(ClassVisitor next, String className, Map<String, MethodSurvey.Shape> shapes) {
            super(Opcodes.ASM9, next);
            this.className = className;
            this.shapes = shapes;
        }

        @Override
        public MethodVisitor visitMethod(
                int access, String name, String descriptor, String signature, String[] exceptions) {
            MethodVisitor next = super.visitMethod(access, name, descriptor, signature, exceptions);
            MethodSurvey.Shape shape = shapes.get(name + descriptor);
            if (next == null || !wanted(className, name, descriptor, shape)) return next;
            int id = ids.register(className, name, descriptor);
            methods++;
            return ProbeInserter.wrap(next, access, name, descriptor, probeOwner, id);
        }
    }

    /**
     * A writer that keeps the class's constant pool and copies untouched methods as they are,
     * computes only max stack and locals, and would fail rather than load a class to merge
     * types (it never does without COMPUTE_FRAMES; class loading inside the class-file hook
     * could deadlock).
     */
    private static final class NoLoadingWriter extends ClassWriter {
        NoLoadingWriter(ClassReader reader) {
            super(reader, ClassWriter.COMPUTE_MAXS);
        }

        @Override
        protected String getCommonSuperClass(String type1, String type2) {
            throw new IllegalStateException("frames are never computed");
        }
    }
}
