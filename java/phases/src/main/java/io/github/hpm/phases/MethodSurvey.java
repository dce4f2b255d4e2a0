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
 * The first pass over a class: for each method with code, its size in bytes of bytecode (the
 * Code attribute's {@code code_length}, the paper's unit), whether it branches backward (a
 * jump or switch to an earlier offset), and whether probes can go into it at all: not into methods
 * without code (abstract, native), {@code <clinit>}, bridge methods, nor methods with
 * {@code jsr}/{@code ret} (old subroutines, which stack map frames cannot describe).
 */
final class MethodSurvey extends ClassVisitor {
    /** One method's shape. */
    record Shape(int codeBytes, boolean backwardBranch, boolean instrumentable) {}

    private static final int NEVER = Opcodes.ACC_ABSTRACT | Opcodes.ACC_NATIVE | Opcodes.ACC_BRIDGE;

    private final Map<String, Shape> shapes = new HashMap<>();
    private final Map<String, Integer> codeBytes;

    private MethodSurvey(Map<String, Integer> codeBytes) {
        super(Opcodes.ASM9);
        this.codeBytes = codeBytes;
    }

    /** The shapes of {@code reader}'s methods with code, keyed by {@code name + descriptor}. */
    static Map<String, Shape> of(ClassReader reader) {
        MethodSurvey survey = new MethodSurvey(codeLengths(reader));
        reader.accept(survey, ClassReader.SKIP_DEBUG | ClassReader.SKIP_FRAMES);
        return survey.shapes;
    }

    /**
     * Each method's {@code code_length} in bytes, keyed by {@code name + descriptor}, read
     * from the class file's method table (ASM's visitors see instructions, not their sizes).
     * The class file was parsed by ASM already, so its structure is sound.
     */
    static Map<String, Integer> codeLengths(ClassReader reader) {
        char[] buf = new char[reader.getMaxStringLength()];
        int at = reader.header + 6;
        at += 2 + 2 * reader.readUnsignedShort(at);
        int fields = reader.readUnsignedShort(at);
        at += 2;
        for (int i = 0; i < fields; i++) at = skipAttributes(reader, at + 6);
        int methods = reader.readUnsignedShort(at);
        at += 2;
        Map<String, Integer> out = new HashMap<>();
        for (int i = 0; i < methods; i++) {
            String key = reader.readUTF8(at + 2, buf) + reader.readUTF8(at + 4, buf);
            int attributes = reader.readUnsignedShort(at + 6);
            at += 8;
            for (int a = 0; a < attributes; a++) {
                int length = reader.readInt(at + 2);
                if ("Code".equals(reader.readUTF8(at, buf))) out.put(key, reader.readInt(at + 10));
                at += 6 + length;
            }
        }
        return out;
    }

    private static int skipAttributes(ClassReader reader, int at) {
        int attributes = reader.readUnsignedShort(at);
        at += 2;
        for (int a = 0; a < attributes; a++) at += 6 + reader.readInt(at + 2);
        return at;
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
        public void visitVarInsn(int opcode, int varIndex) {
            if (opcode == Opcodes.RET) subroutine = true;
        }

        @Override
        public void visitJumpInsn(int opcode, Label label) {
            if (opcode == Opcodes.JSR) subroutine = true;
            target(label);
        }

        @Override
        public void visitTableSwitchInsn(int min, int max, Label dflt, Label... labels) {
            target(dflt);
            for (Label label : labels) target(label);
        }

        @Override
        public void visitLookupSwitchInsn(Label dflt, int[] keys, Label[] labels) {
            target(dflt);
            for (Label label : labels) target(label);
        }

        @Override
        public void visitEnd() {
            int bytes = codeBytes.getOrDefault(key, 0);
            shapes.put(key, new Shape(bytes, backward, eligible && !subroutine));
        }
    }
}
