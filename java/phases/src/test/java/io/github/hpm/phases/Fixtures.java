package io.github.hpm.phases;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.function.UnaryOperator;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.util.CheckClassAdapter;

/** Test helpers: fixture class files, a fresh loader of rewritten fixtures, checks. */
final class Fixtures {
    static final String PACKAGE = "phasefixture.";

    private Fixtures() {}

    /** The class file of a test class as compiled. */
    static byte[] bytes(String className) {
        String resource = className.replace('.', '/') + ".class";
        try (InputStream in = Fixtures.class.getClassLoader().getResourceAsStream(resource)) {
            if (in == null) throw new IllegalStateException("no " + resource);
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A rewriter calling {@link RecordingProbe}, which also gives the ids. */
    static ClassRewriter rewriter(Selection selection) {
        return new ClassRewriter(selection, RecordingProbe::register, RecordingProbe.OWNER);
    }

    /** The verifier's report on a class file (CheckClassAdapter's data-flow check); "" if none. */
    static String verify(byte[] classfile, ClassLoader loader) {
        StringWriter report = new StringWriter();
        PrintWriter out = new PrintWriter(report);
        CheckClassAdapter.verify(new ClassReader(classfile), loader, false, out);
        return report.toString();
    }

    /**
     * Asserts that every enter is closed by exactly one exit or thrown of the same method, in
     * nesting order, and that nothing is left open.
     */
    static void assertBalanced(List<String> events) {
        Deque<String> open = new ArrayDeque<>();
        for (String event : events) {
            int space = event.indexOf(' ');
            String kind = event.substring(0, space);
            String name = event.substring(space + 1);
            if (kind.equals("enter")) {
                open.push(name);
            } else {
                assertTrue(!open.isEmpty(), "a " + kind + " with no enter: " + events);
                assertEquals(open.pop(), name, "unbalanced: " + events);
            }
        }
        assertTrue(open.isEmpty(), "left open " + open + ": " + events);
    }

    /**
     * A loader of its own for the fixture package, defining each fixture class from what
     * {@code rewrite} makes of its class file (null: as compiled) and checking each with
     * CheckClassAdapter; the JVM verifies them too (the tests run with -Xverify:all).
     */
    static final class RewritingLoader extends ClassLoader {
        private final UnaryOperator<byte[]> rewrite;
        private int rewritten;

        RewritingLoader(UnaryOperator<byte[]> rewrite) {
            super(Fixtures.class.getClassLoader());
            this.rewrite = rewrite;
        }

        int rewritten() {
            return rewritten;
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (!name.startsWith(PACKAGE)) return super.loadClass(name, resolve);
            synchronized (getClassLoadingLock(name)) {
                Class<?> c = findLoadedClass(name);
                if (c == null) {
                    byte[] original = bytes(name);
                    byte[] out = rewrite.apply(original);
                    if (out != null) {
                        rewritten++;
                        assertEquals("", verify(out, this), name + " does not verify");
                    }
                    byte[] def = out != null ? out : original;
                    c = defineClass(name, def, 0, def.length);
                }
                if (resolve) resolveClass(c);
                return c;
            }
        }
    }
}
