import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Memory accesses with a known target, for the `data` option (tests/tests/agent_data.rs):
 *
 * - classes: a pointer chase through a cycle of 65,536 links, three quarters of class A and a
 *   quarter of class B (the same layout, shuffled): every step loads one link's fields, so of
 *   the samples on A or B three quarters are on A by construction. Objects of Cold1 and Cold2
 *   are allocated alongside and never read in the loop.
 * - chase: a pointer chase through an array of Node objects by index (Node.next, Node.val).
 * - subclass: a chase through Sub objects whose hot fields (Sub.next, Sub.w) are declared in
 *   the subclass; Base.v, inherited, is never read.
 * - array: a hot int[] of 16 MiB summed (a humongous object in G1, spanning regions).
 * - interpreted: gather reads a 64 MiB int[] at pseudo-random indexes (a cache miss each), for
 *   a run that keeps gather out of the compilers (-XX:CompileCommand=exclude,DataTargets::gather):
 *   the interpreter runs it, and its accesses are the array's elements and the interpreter's own
 *   (bytecode, dispatch table, locals, frame).
 * - gc: the classes chase while garbage is allocated fast enough for a young collection every
 *   few milliseconds, the links made young (no System.gc()) so the collector moves them.
 *
 * Elsewhere the long-lived objects are made before a System.gc(), which moves them into the
 * old space (every collector hpm reads: G1, Parallel, Serial).
 *
 * Usage: java DataTargets MODE SECONDS   (SECONDS of the main thread's CPU time, see CpuClock)
 */
public class DataTargets {
    abstract static class Link { Link next; long val; }
    static final class A extends Link { }
    static final class B extends Link { }
    static class Base { long v; }
    static final class Sub extends Base { Sub next; long w; }
    static final class Cold1 { long x; }
    static final class Cold2 { int[] y = new int[4]; }
    static final class Node { int next; long val; }

    static volatile Object sink;

    public static void main(String[] args) {
        String mode = args[0];
        CpuClock clock = new CpuClock(Double.parseDouble(args[1]));
        Random rnd = new Random(42);
        long s = 0;
        int n = 1 << 16;
        switch (mode) {
            case "classes":
            case "gc": {
                Link[] links = new Link[n];
                for (int i = 0; i < n; i++) links[i] = i < 3 * n / 4 ? new A() : new B();
                shuffle(links, rnd);
                for (int i = 0; i < n; i++) links[i].next = links[(i + 1) % n];
                Link p = links[0];
                links = null;
                boolean garbage = mode.equals("gc");
                if (!garbage) System.gc();
                List<Object> cold = new ArrayList<>();
                while (!clock.done()) {
                    for (int i = 0; i < 100_000; i++) { s += p.val; p = p.next; }
                    if (garbage) {
                        for (int i = 0; i < 2_000; i++) sink = new long[16];
                    } else if (cold.size() < 10_000) {
                        cold.add(new Cold1());
                        cold.add(new Cold2());
                    }
                }
                break;
            }
            case "chase": {
                Node[] nodes = new Node[4 * n];
                for (int i = 0; i < nodes.length; i++) nodes[i] = new Node();
                for (Node x : nodes) x.next = rnd.nextInt(nodes.length);
                System.gc();
                int i = 0;
                while (!clock.done()) {
                    for (int k = 0; k < 100_000; k++) { s += nodes[i].val; i = nodes[i].next; }
                }
                break;
            }
            case "subclass": {
                Sub[] subs = new Sub[n];
                for (int i = 0; i < n; i++) subs[i] = new Sub();
                shuffle(subs, rnd);
                for (int i = 0; i < n; i++) subs[i].next = subs[(i + 1) % n];
                Sub p = subs[0];
                subs = null;
                System.gc();
                while (!clock.done()) {
                    for (int i = 0; i < 100_000; i++) { s += p.w; p = p.next; }
                }
                break;
            }
            case "array": {
                int[] a = new int[64 * n]; // 16 MiB: humongous in G1 (several regions), zeroed
                // sumInts compiled before the big array is summed: run interpreted or in an
                // OSR'd loop first (slow on a loaded machine), its samples were mostly the
                // interpreter's accesses to its own frame (a CI run: 694 stack addresses, 210
                // in the array).
                int[] warm = new int[4096];
                for (int k = 0; k < 50_000; k++) s += sumInts(warm);
                System.gc();
                while (!clock.done()) s += sumInts(a);
                break;
            }
            case "interpreted": {
                int[] a = new int[256 * n];
                System.gc();
                while (!clock.done()) s += gather(a, 100_000);
                break;
            }
            default:
                throw new IllegalArgumentException(mode);
        }
        System.out.println(s);
    }

    static <T> void shuffle(T[] a, Random rnd) {
        for (int i = a.length - 1; i > 0; i--) {
            int j = rnd.nextInt(i + 1);
            T t = a[i]; a[i] = a[j]; a[j] = t;
        }
    }

    /** n elements of a at pseudo-random indexes (a.length a power of two). */
    static long gather(int[] a, int n) {
        long s = 0;
        int i = 0, mask = a.length - 1;
        for (int k = 0; k < n; k++) {
            i = (i * 1103515245 + 12345) & mask;
            s += a[i];
        }
        return s;
    }

    static long sumInts(int[] a) {
        long s = 0;
        for (int x : a) s += x;
        return s;
    }
}
