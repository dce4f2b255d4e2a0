package io.github.hpm.phases;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.Label;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;

/**
 * The first pass over a class: for each method with code, how many bytecode instructions it
 * has (labels, line numbers and frames do not count), whether it branches backward (a jump or
 * switch to an earlier offset), and whether probes can go into it at all: not into methods
 * without code (abstract, native), {@code <clinit>}, bridge methods, nor methods with
 * {@code jsr}/{@code ret} (old subroutines, which stack map frames cannot describe).
 */
final class MethodSurvey extends ClassVisitor {
    /** One method's shape. */
    record Shape(int instructions, boolean backwardBranch, boolean instrumentable) {}

    private static final int NEVER = Opcodes.ACC_ABSTRACT | Opcodes.ACC_NATIVE | Opcodes.ACC_BRIDGE;

    private final Map<String, Shape> shapes = new HashMap<>();

    private MethodSurvey() {
        super(Opcodes.ASM9);
    }

    /** The shapes of {@code reader}'s methods with code, keyed by {@code name + descriptor}. */
    static Map<String, Shape> of(ClassReader reader) {
        MethodSurvey survey = new MethodSurvey();
        reader.accept(survey, ClassReader.SKIP_DEBUG | ClassReader.SKIP_FRAMES);
        return survey.shapes;
    }

    @Override
    public MethodVisitor visitMethod(
            int access, String name, String descriptor, String signature, String[] exceptions) {
        boolean eligible = (access & NEVER) == 0 && !name.equals("<clinit>");
        return new Counter(name + descriptor, eligible);
    }

    private final class Counter extends MethodVisitor {
        private final String key;
        private final boolean eligible;
        private final Set<Label> seen = new HashSet<>();
        private int instructions;
        private boolean backward;
        private boolean subroutine;

        Counter(String key, boolean eligible) {
            super(Opcodes.ASM9);
            this.key = key;
            this.eligible = eligible;
        }

        private void target(Label label) {
            if (seen.contains(label)) backward = true;
        }

        @Override
        public void visitLabel(Label label) {
            seen.add(label);
        }

        @Override
        public void visitInsn(int opcode) {
            instructions++;
        }

        @Override
        public void visitIntInsn(int opcode, int operand) {
            instructions++;
        }

        @Override
        public void visitVarInsn(int opcode, int varIndex) {
            instructions++;
            if (opcode == Opcodes.RET) subroutine = true;
        }

        @Override
        public void visitTypeInsn(int opcode, String type) {
            instructions++;
        }

        @Override
        public void visitFieldInsn(int opcode, String owner, String name, String descriptor) {
            instructions++;
        }

        @Override
        public void visitMethodInsn(
                int opcode, String owner, String name, String descriptor, boolean isInterface) {
            instructions++;
        }

        @Override
        public void visitInvokeDynamicInsn(
                String name,
                String descriptor,
                org.objectweb.asm.Handle bootstrapMethodHandle,
                Object... bootstrapMethodArguments) {
            instructions++;
        }

        @Override
        public void visitJumpInsn(int opcode, Label label) {
            instructions++;
            if (opcode == Opcodes.JSR) subroutine = true;
            target(label);
        }

        @Override
        public void visitLdcInsn(Object value) {
            instructions++;
        }

        @Override
        public void visitIincInsn(int varIndex, int increment) {
            instructions++;
        }

        @Override
        public void visitTableSwitchInsn(int min, int max, Label dflt, Label... labels) {
            instructions++;
            target(dflt);
            for (Label label : labels) target(label);
        }

        @Override
        public void visitLookupSwitchInsn(Label dflt, int[] keys, Label[] labels) {
            instructions++;
            target(dflt);
            for (Label label : labels) target(label);
        }

        @Override
        public void visitMultiANewArrayInsn(String descriptor, int numDimensions) {
            instructions++;
        }

        @Override
        public void visitEnd() {
            shapes.put(key, new Shape(instructions, backward, eligible && !subroutine));
        }
    }
}
