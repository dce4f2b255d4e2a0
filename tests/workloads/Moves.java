/**
 * A program whose hot method depends on its argument, for `hpm diff`: with "alpha" it spends
 * half its CPU time in alpha() and half in common(); with "beta", four fifths in beta() and one
 * fifth in common(). Between a run of each, beta grows by about 80 points of the samples,
 * alpha shrinks by about 50 and common by about 30. Each method runs its own loop, so the
 * samples end in it (self), not in a shared helper.
 *
 * Usage: java Moves alpha|beta CPU_SECONDS
 * The main thread works until it has used CPU_SECONDS of CPU time, so a cpu-clock profile gets
 * the same number of samples however loaded the machine is.
 */
public class Moves {
    static volatile long sink;
    static volatile int unit = 20_000; // read at run time so loop counts are not constants

    static long alpha(long x, int n) {
        for (int i = 0; i < n; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        return x;
    }

    static long beta(long x, int n) {
        for (int i = 0; i < n; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        return x;
    }

    static long common(long x, int n) {
        for (int i = 0; i < n; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        return x;
    }

    public static void main(String[] args) {
        boolean beta = args[0].equals("beta");
        long budget = (long) (Double.parseDouble(args[1]) * 1e9);
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        long x = System.nanoTime();
        while (mx.getCurrentThreadCpuTime() < budget) {
            if (beta) {
                x = beta(x, 4 * unit);
                x = common(x, unit);
            } else {
                x = alpha(x, 2 * unit);
                x = common(x, 2 * unit);
            }
        }
        sink = x;
        System.out.println("done " + args[0]);
    }
}
