package io.github.hpm.phases;

import java.util.ArrayList;
import java.util.List;
import org.objectweb.asm.Handle;
import org.objectweb.asm.Label;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.commons.AdviceAdapter;

/**
 * Puts the probes into one method: {@code enter(id)} at entry (in a constructor, after its
 * {@code super(...)}/{@code this(...)} call, which {@link AdviceAdapter} finds), {@code exit(id)}
 * before every return instruction, and a catch-all handler that calls {@code thrown(id)} and
 * rethrows. The handler covers the body from just after the enter probe to the end, except the
 * exit probes and the returns themselves, so each enter has exactly one exit or thrown record;
 * its entries come last in the exception table, after the method's own handlers.
 *
 * <p>Frames are kept as the class has them (the reader expands them), and the handler's one
 * frame is written here: no locals (the verifier accepts an empty list from any frame) and the
 * Throwable on the stack. So nothing computes frames, and no class is loaded to merge types.
 */
final class ProbeInserter extends AdviceAdapter {
    private static final String PROBE_DESCRIPTOR = "(I)V";
    private static final Object[] NO_LOCALS = {};
    private static final Object[] THROWABLE = {"java/lang/Throwable"};

    private final Counting counted;
    private final String probeOwner;
    private final int id;
    /** Start and end labels of the handler's ranges, in pairs. */
    private final List<Label> ranges = new ArrayList<>();
    /** The open range's start, or null before the enter probe. */
    private Label start;
    private int instructionsAtStart;

    private ProbeInserter(
            Counting counted,
            int access,
            String name,
            String descriptor,
            String probeOwner,
            int id) {
        super(Opcodes.ASM9, counted, access, name, descriptor);
        this.counted = counted;
        this.probeOwner = probeOwner;
        this.id = id;
    }

    /** A visitor that writes {@code next}'s method with the probes of method {@code id}. */
    static MethodVisitor wrap(
            MethodVisitor next,
            int access,
            String name,
            String descriptor,
            String probeOwner,
            int id) {
        return new ProbeInserter(new Counting(next), access, name, descriptor, probeOwner, id);
    }

    private void probe(String method) {
        push(id);
        mv.visitMethodInsn(Opcodes.INVOKESTATIC, probeOwner, method, PROBE_DESCRIPTOR, false);
    }

    private void openRange() {
        start = new Label();
        mv.visitLabel(start);
        instructionsAtStart = counted.instructions;
    }

    private void closeRange() {
        Label end = new Label();
        mv.visitLabel(end);
        if (counted.instructions > instructionsAtStart) {
            ranges.add(start);
            ranges.add(end);
        }
    }

    @Override
    protected void onMethodEnter() {
        probe("enter");
        openRange();
    }

    @Override
    protected void onMethodExit(int opcode) {
        // A throw leaves through the catch-all; a return before the enter probe (a constructor
        // path AdviceAdapter could not follow) has nothing to close.
        if (opcode == ATHROW || start == null) return;
        closeRange();
        probe("exit");
    }

    @Override
    public void visitInsn(int opcode) {
        super.visitInsn(opcode);
        if (start != null && opcode >= IRETURN && opcode <= RETURN) openRange();
    }

    @Override
    public void visitMaxs(int maxStack, int maxLocals) {
        if (start != null) closeRange();
        if (!ranges.isEmpty()) {
            Label handler = new Label();
            for (int i = 0; i < ranges.size(); i += 2) {
                mv.visitTryCatchBlock(ranges.get(i), ranges.get(i + 1), handler, null);
            }
            mv.visitLabel(handler);
            mv.visitFrame(Opcodes.F_NEW, 0, NO_LOCALS, 1, THROWABLE);
            probe("thrown");
            mv.visitInsn(ATHROW);
        }
        super.visitMaxs(maxStack, maxLocals);
    }

    /** Counts the instructions written, so that an empty range is never put in the table. */
    private static final class Counting extends MethodVisitor {
        int instructions;

        Counting(MethodVisitor next) {
            super(Opcodes.ASM9, next);
        }

        @Override
        public void visitInsn(int opcode) {
            instructions++;
            super.visitInsn(opcode);
        }

        @Override
        public void visitIntInsn(int opcode, int operand) {
            instructions++;
            super.visitIntInsn(opcode, operand);
        }

        @Override
        public void visitVarInsn(int opcode, int varIndex) {
            instructions++;
            super.visitVarInsn(opcode, varIndex);
        }

        @Override
        public void visitTypeInsn(int opcode, String type) {
            instructions++;
            super.visitTypeInsn(opcode, type);
        }

        @Override
        public void visitFieldInsn(int opcode, String owner, String name, String descriptor) {
            instructions++;
            super.visitFieldInsn(opcode, owner, name, descriptor);
        }

        @Override
        public void visitMethodInsn(
                int opcode, String owner, String name, String descriptor, boolean isInterface) {
            instructions++;
            super.visitMethodInsn(opcode, owner, name, descriptor, isInterface);
        }

        @Override
        public void visitInvokeDynamicInsn(
                String name, String descriptor, Handle bootstrap, Object... arguments) {
            instructions++;
            super.visitInvokeDynamicInsn(name, descriptor, bootstrap, arguments);
        }

        @Override
        public void visitJumpInsn(int opcode, Label label) {
            instructions++;
            super.visitJumpInsn(opcode, label);
        }

        @Override
        public void visitLdcInsn(Object value) {
            instructions++;
            super.visitLdcInsn(value);
        }

        @Override
        public void visitIincInsn(int varIndex, int increment) {
            instructions++;
            super.visitIincInsn(varIndex, increment);
        }

        @Override
        public void visitTableSwitchInsn(int min, int max, Label dflt, Label... labels) {
            instructions++;
            super.visitTableSwitchInsn(min, max, dflt, labels);
        }

        @Override
        public void visitLookupSwitchInsn(Label dflt, int[] keys, Label[] labels) {
            instructions++;
            super.visitLookupSwitchInsn(dflt, keys, labels);
        }

        @Override
        public void visitMultiANewArrayInsn(String descriptor, int numDimensions) {
            instructions++;
            super.visitMultiANewArrayInsn(descriptor, numDimensions);
        }
    }
}
