import java.io.File;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * ecj, the Eclipse Java compiler (Debian `ecj`): per iteration, compiles a generated source
 * tree of CLASSES classes (fixed seed: generics, lambdas, inner classes, switch, string
 * building) with the batch compiler in-process, writing class files to a temporary directory.
 * Single-threaded, as a compile of one module is.
 *
 *   java EcjBench ITERATIONS [CLASSES]
 */
public class EcjBench {
    public static void main(String[] args) throws Exception {
        int classes = args.length > 1 ? Integer.parseInt(args[1]) : 300;
        Path work = Files.createTempDirectory("hpm-bench-ecj");
        // The benchmarks end most runs with SIGTERM: removed then too, not only after the last
        // iteration (every run left its sources in the temp directory). The hook waits for the
        // compile in flight, which would otherwise write its class files into the directory
        // after it was removed (it left one a run), and no compile starts after it.
        Object compiling = new Object();
        boolean[] ending = {false};
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            synchronized (compiling) {
                ending[0] = true;
                delete(work.toFile());
            }
        }));
        Path src = work.resolve("src");
        generate(src, classes);
        Harness.iterate("ecj", Harness.iterations(args, 10), it -> {
            synchronized (compiling) {
                if (ending[0]) Thread.sleep(Long.MAX_VALUE); // the JVM halts once the hooks are done
                compile(work, src, it);
            }
        });
    }

    static void compile(Path work, Path src, int it) throws Exception {
        Path out = work.resolve("out" + it);
        StringWriter log = new StringWriter();
        boolean ok = org.eclipse.jdt.core.compiler.batch.BatchCompiler.compile(
                new String[] {"-17", "-nowarn", "-proc:none", "-proceedOnError", "-d", out.toString(), src.toString()},
                new PrintWriter(log), new PrintWriter(log), null);
        if (!ok) throw new IllegalStateException("ecj failed:\n" + log);
        delete(out.toFile());
    }

    static void generate(Path src, int classes) throws Exception {
        Path pkg = src.resolve("gen");
        Files.createDirectories(pkg);
        java.util.Random r = new java.util.Random(11);
        for (int c = 0; c < classes; c++) {
            StringBuilder b = new StringBuilder("package gen;\nimport java.util.*;\nimport java.util.function.*;\nimport java.util.stream.*;\n");
            b.append("public class C").append(c).append(" {\n");
            b.append("  private final Map<String, List<Integer>> data = new HashMap<>();\n");
            for (int m = 0; m < 12; m++) {
                int dep = r.nextInt(Math.max(1, c));
                b.append("  public <T extends Comparable<T>> List<T> m").append(m).append("(List<T> in, Function<T, String> f) {\n")
                 .append("    List<T> out = in.stream().filter(x -> f.apply(x).length() > ").append(r.nextInt(5)).append(")")
                 .append(".sorted(Comparator.reverseOrder()).collect(Collectors.toList());\n")
                 .append("    StringBuilder sb = new StringBuilder();\n")
                 .append("    for (int i = 0; i < out.size(); i++) { switch (i % 3) { case 0: sb.append(i); break; case 1: sb.append(f.apply(out.get(i))); break; default: sb.append('-'); } }\n")
                 .append("    data.computeIfAbsent(sb.toString(), k -> new ArrayList<>()).add(").append(m).append(");\n");
                if (c > 0) b.append("    new C").append(dep).append("().m").append(r.nextInt(12)).append("(new ArrayList<String>(), s -> s);\n");
                b.append("    return out;\n  }\n");
            }
            b.append("  static class Inner implements Runnable { int x; public void run() { x += ").append(c).append("; } }\n");
            b.append("  public int total() { return data.values().stream().mapToInt(List::size).sum(); }\n}\n");
            Files.writeString(pkg.resolve("C" + c + ".java"), b.toString());
        }
    }

    static void delete(File f) {
        File[] children = f.listFiles();
        if (children != null) for (File c : children) delete(c);
        f.delete();
    }
}
