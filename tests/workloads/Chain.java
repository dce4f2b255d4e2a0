/**
 * A known call tree for sampler=chain: the same method, {@code leaf}, does equal work in four
 * contexts at different stack depths, chosen at random in known proportions: from {@code p1}
 * (one level below {@code work}, half of the calls), from {@code q1 -> q2} (a quarter), at
 * the end of a 40-method chain {@code d0 -> ... -> d39} (an eighth) and at the bottom of a
 * recursion 25 calls deep (an eighth). A profile that rebuilds contexts right shows leaf's
 * samples under each full path in those proportions.
 *
 * Usage: java Chain SECONDS
 */
public class Chain {
    static volatile long sink;
    static volatile int unit = 20_000; // read at run time so loop counts are not constants

    static long leaf(long x) {
        for (int i = 0; i < unit; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        return x;
    }

    static long p1(long x) { return leaf(x) + 1; }

    static long q1(long x) { return q2(x) + 1; }
    static long q2(long x) { return leaf(x) + 1; }

    static long rec(long x, int n) { return n == 0 ? leaf(x) : rec(x, n - 1) + 1; }

    static long d0(long x) { return d1(x) + 1; }
    static long d1(long x) { return d2(x) + 1; }
    static long d2(long x) { return d3(x) + 1; }
    static long d3(long x) { return d4(x) + 1; }
    static long d4(long x) { return d5(x) + 1; }
    static long d5(long x) { return d6(x) + 1; }
    static long d6(long x) { return d7(x) + 1; }
    static long d7(long x) { return d8(x) + 1; }
    static long d8(long x) { return d9(x) + 1; }
    static long d9(long x) { return d10(x) + 1; }
    static long d10(long x) { return d11(x) + 1; }
    static long d11(long x) { return d12(x) + 1; }
    static long d12(long x) { return d13(x) + 1; }
    static long d13(long x) { return d14(x) + 1; }
    static long d14(long x) { return d15(x) + 1; }
    static long d15(long x) { return d16(x) + 1; }
    static long d16(long x) { return d17(x) + 1; }
    static long d17(long x) { return d18(x) + 1; }
    static long d18(long x) { return d19(x) + 1; }
    static long d19(long x) { return d20(x) + 1; }
    static long d20(long x) { return d21(x) + 1; }
    static long d21(long x) { return d22(x) + 1; }
    static long d22(long x) { return d23(x) + 1; }
    static long d23(long x) { return d24(x) + 1; }
    static long d24(long x) { return d25(x) + 1; }
    static long d25(long x) { return d26(x) + 1; }
    static long d26(long x) { return d27(x) + 1; }
    static long d27(long x) { return d28(x) + 1; }
    static long d28(long x) { return d29(x) + 1; }
    static long d29(long x) { return d30(x) + 1; }
    static long d30(long x) { return d31(x) + 1; }
    static long d31(long x) { return d32(x) + 1; }
    static long d32(long x) { return d33(x) + 1; }
    static long d33(long x) { return d34(x) + 1; }
    static long d34(long x) { return d35(x) + 1; }
    static long d35(long x) { return d36(x) + 1; }
    static long d36(long x) { return d37(x) + 1; }
    static long d37(long x) { return d38(x) + 1; }
    static long d38(long x) { return d39(x) + 1; }
    static long d39(long x) { return leaf(x) + 1; }

    static long work(long x, CpuClock clock) {
        java.util.concurrent.ThreadLocalRandom r = java.util.concurrent.ThreadLocalRandom.current();
        while (!clock.done()) {
            int k = r.nextInt(8);
            if (k < 4) {
                x = p1(x);
            } else if (k < 6) {
                x = q1(x);
            } else if (k == 6) {
                x = d0(x);
            } else {
                x = rec(x, 24);
            }
        }
        return x;
    }

    public static void main(String[] args) {
        // SECONDS of the main thread's CPU time (CpuClock), however busy the machine.
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 3;
        sink = work(System.nanoTime(), new CpuClock(seconds));
        System.out.println("chain done");
    }
}
