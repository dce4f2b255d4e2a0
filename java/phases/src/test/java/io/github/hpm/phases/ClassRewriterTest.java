package io.github.hpm.phases;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.tree.ClassNode;
import org.objectweb.asm.tree.MethodNode;
import org.objectweb.asm.tree.TryCatchBlockNode;

/**
 * The rewrite against its rules: fixture classes (package phasefixture) rewritten, checked by
 * CheckClassAdapter, loaded in a fresh loader under -Xverify:all and run; the recorded probe
 * calls must nest and balance, name exactly the methods the heuristic or the selection takes,
 * and the rewritten methods must compute what the originals do.
 */
class ClassRewriterTest {
    private static final String W = "Workload.";

    @BeforeEach
    void reset() {
        RecordingProbe.reset();
    }

    private static Fixtures.RewritingLoader loader(Selection selection) {
        ClassRewriter rewriter = Fixtures.rewriter(selection);
        return new Fixtures.RewritingLoader(b -> {
            ClassRewriter.Rewritten out = rewriter.rewrite(new ClassReader(b));
            return out == null ? null : out.classfile();
        });
    }

    private static Object call(Class<?> c, Object target, String name, Object... args)
            throws Exception {
        for (Method m : c.getMethods()) {
            if (m.getName().equals(name) && m.getParameterCount() == args.length) {
                return m.invoke(target, args);
            }
        }
        throw new NoSuchMethodException(name);
    }

    /** The constructor whose first parameter is boolean iff the first argument is. */
    private static Object construct(Class<?> c, Object... args) throws Exception {
        boolean flag = args.length > 0 && args[0] instanceof Boolean;
        for (var k : c.getConstructors()) {
            if (k.getParameterCount() == args.length
                    && (args.length == 0 || (k.getParameterTypes()[0] == boolean.class) == flag)) {
                return k.newInstance(args);
            }
        }
        throw new NoSuchMethodException("<init>");
    }

    @Test
    void heuristicTakesLoopsAndLargeMethodsOnly() throws Exception {
        Fixtures.RewritingLoader loader = loader(Selection.heuristic());
        Class.forName("phasefixture.Workload", true, loader);
        Class.forName("phasefixture.Box", true, loader);
        Set<String> expected = new TreeSet<>(List.of(
                W + "<init>(II)V",
                W + "<init>(ZI)V",
                W + "loop(I)J",
                W + "wide()I",
                W + "big(I)I",
                W + "throwsThrough(I)I",
                W + "callsThrower(I)I",
                W + "outerThrows(I)I",
                W + "longDouble(JDI)D",
                W + "switchy(I)I",
                W + "voidReturns([I)V",
                W + "recursive(I)I",
                W + "syncLoop(I)I",
                W + "lockedFinally(I)I",
                "Sized.perimeter(I)I"));
        assertEquals(expected, new TreeSet<>(RecordingProbe.names()));
    }

    @Test
    void methodSizesAreBytesOfBytecode() throws Exception {
        Map<String, Integer> bytes =
                MethodSurvey.codeLengths(new ClassReader(Fixtures.bytes("phasefixture.Workload")));
        assertEquals(4, bytes.get("small(I)I"));
        assertEquals(60, bytes.get("wide()I"));
        assertEquals(96 + 2, bytes.get("big(I)I"));
    }

    @Test
    void probesBalanceOnReturnsAndThrows() throws Exception {
        Class<?> c = Class.forName("phasefixture.Workload", true, loader(Selection.heuristic()));
        RecordingProbe.take();

        Object w = construct(c, 4, 2);
        assertEquals(List.of("enter " + W + "<init>(II)V", "exit " + W + "<init>(II)V"),
                RecordingProbe.take());

        assertEquals(2, call(c, null, "callsThrower", 2));
        String tt = W + "throwsThrough(I)I";
        assertEquals(List.of(
                "enter " + W + "callsThrower(I)I",
                "enter " + tt, "thrown " + tt,
                "enter " + tt, "thrown " + tt,
                "exit " + W + "callsThrower(I)I"), RecordingProbe.take());

        var e = assertThrows(InvocationTargetException.class,
                () -> call(c, null, "outerThrows", 3));
        assertInstanceOf(IllegalStateException.class, e.getCause());
        assertEquals(List.of(
                "enter " + W + "outerThrows(I)I",
                "enter " + tt, "thrown " + tt,
                "thrown " + W + "outerThrows(I)I"), RecordingProbe.take());

        call(c, null, "voidReturns", (Object) new int[] {1, -1, 2});
        call(c, null, "voidReturns", (Object) new int[] {1, 2});
        assertEquals(List.of(
                "enter " + W + "voidReturns([I)V", "exit " + W + "voidReturns([I)V",
                "enter " + W + "voidReturns([I)V", "exit " + W + "voidReturns([I)V"),
                RecordingProbe.take());

        construct(c, false, 3);
        assertEquals(List.of("enter " + W + "<init>(ZI)V", "exit " + W + "<init>(ZI)V"),
                RecordingProbe.take());

        assertEquals(-10, call(c, w, "lockedFinally", 5));
        e = assertThrows(InvocationTargetException.class, () -> call(c, w, "lockedFinally", 9));
        assertInstanceOf(IllegalStateException.class, e.getCause());
        String lf = W + "lockedFinally(I)I";
        assertEquals(List.of("enter " + lf, "exit " + lf, "enter " + lf, "thrown " + lf),
                RecordingProbe.take());

        call(c, null, "recursive", 3);
        call(c, w, "loop", 5);
        call(c, w, "syncLoop", 70);
        call(c, null, "switchy", 9);
        call(c, null, "longDouble", 7L, 0.5, 6);
        call(c, null, "big", 3);
        List<String> events = RecordingProbe.take();
        Fixtures.assertBalanced(events);
        assertEquals(8 + 2 + 2 + 2 + 2 + 2, events.size(), events.toString());
        // loop(I)J calls small(I)I, which has no probes.
        assertTrue(events.stream().noneMatch(s -> s.contains("small")), events.toString());
    }

    @Test
    void interfaceDefaultMethodGetsProbes() throws Exception {
        Class<?> c = Class.forName("phasefixture.Box", true, loader(Selection.heuristic()));
        assertEquals(12, call(c, construct(c, 1), "perimeter", 3));
        assertEquals(List.of("enter Sized.perimeter(I)I", "exit Sized.perimeter(I)I"),
                RecordingProbe.take());
    }

    @Test
    void constructorThatThrowsAfterSuperLeavesThroughTheHandler() throws Exception {
        Class<?> c = Class.forName("phasefixture.Failing", true, loader(Selection.heuristic()));
        var e = assertThrows(InvocationTargetException.class, () -> construct(c, 5));
        assertInstanceOf(IllegalArgumentException.class, e.getCause());
        assertEquals(List.of("enter Failing.<init>(I)V", "thrown Failing.<init>(I)V"),
                RecordingProbe.take());
    }

    @Test
    void rewrittenMethodsComputeWhatTheOriginalsDo() throws Exception {
        Class<?> mine = Class.forName("phasefixture.Workload", true, loader(Selection.heuristic()));
        Class<?> orig = Class.forName("phasefixture.Workload");
        Object a = construct(mine, 6, 3);
        Object b = construct(orig, 6, 3);
        assertEquals(call(orig, b, "value"), call(mine, a, "value"));
        assertEquals(call(orig, b, "loop", 40), call(mine, a, "loop", 40));
        assertEquals(call(orig, b, "syncLoop", 99), call(mine, a, "syncLoop", 99));
        assertEquals(call(orig, null, "big", 12), call(mine, null, "big", 12));
        assertEquals(call(orig, null, "switchy", 17), call(mine, null, "switchy", 17));
        assertEquals(call(orig, null, "lookup", 1000), call(mine, null, "lookup", 1000));
        assertEquals(call(orig, null, "longDouble", 1L << 40, 0.25, 9),
                call(mine, null, "longDouble", 1L << 40, 0.25, 9));
        assertEquals(call(orig, null, "recursive", 6), call(mine, null, "recursive", 6));
        assertEquals(call(orig, b, "lockedFinally", 4), call(mine, a, "lockedFinally", 4));
        assertEquals(call(orig, construct(orig, true, 5), "value"),
                call(mine, construct(mine, true, 5), "value"));
        int[] x = {1, 2, -3, 4};
        int[] y = x.clone();
        call(orig, null, "voidReturns", (Object) x);
        call(mine, null, "voidReturns", (Object) y);
        assertArrayEquals(x, y);
    }

    @Test
    void selectionTakesExactlyTheNamedMethodsWhateverTheirSize() throws Exception {
        Selection selection = Selection.exactly(new String[] {
            "# a phase file",
            "phasefixture.Workload.small(I)I",
            " phasefixture.Workload.<init>(I)V ",
            "phasefixture.Box.compareTo(Ljava/lang/Object;)I", // a bridge: never
            "phasefixture.Workload.<clinit>()V", // never
            "phasefixture.Workload.missing()V",
            "not a method",
        });
        Fixtures.RewritingLoader loader = loader(selection);
        Class<?> c = Class.forName("phasefixture.Workload", true, loader);
        Class.forName("phasefixture.Box", true, loader);
        assertEquals(List.of(W + "<init>(I)V", W + "small(I)I"),
                RecordingProbe.names().stream().sorted().toList());
        assertEquals(1, loader.rewritten());

        Object w = construct(c, 3);
        call(c, w, "loop", 3);
        assertEquals(List.of(
                "enter " + W + "<init>(I)V", "exit " + W + "<init>(I)V",
                "enter " + W + "small(I)I", "exit " + W + "small(I)I",
                "enter " + W + "small(I)I", "exit " + W + "small(I)I",
                "enter " + W + "small(I)I", "exit " + W + "small(I)I"), RecordingProbe.take());
    }

    @Test
    void catchAllComesLastInTheExceptionTable() {
        ClassRewriter.Rewritten out = Fixtures.rewriter(Selection.heuristic())
                .rewrite(new ClassReader(Fixtures.bytes("phasefixture.Workload")));
        ClassNode node = new ClassNode();
        new ClassReader(out.classfile()).accept(node, 0);
        MethodNode m = node.methods.stream()
                .filter(n -> n.name.equals("callsThrower")).findFirst().orElseThrow();
        List<TryCatchBlockNode> table = m.tryCatchBlocks;
        assertEquals("java/lang/IllegalStateException", table.get(0).type);
        assertNull(table.get(table.size() - 1).type);
        for (int i = 1; i < table.size(); i++) {
            assertNull(table.get(i).type, "only catch-all ranges follow the method's own");
        }
    }

    @Test
    void classWithNothingToTakeIsLeftAlone() {
        assertNull(Fixtures.rewriter(Selection.heuristic())
                .rewrite(new ClassReader(Fixtures.bytes("phasefixture.Base"))));
        assertNull(Fixtures.rewriter(Selection.exactly(new String[] {"phasefixture.Box.sides()I"}))
                .rewrite(new ClassReader(Fixtures.bytes("phasefixture.Sized"))));
        assertTrue(RecordingProbe.names().isEmpty());
    }
}
