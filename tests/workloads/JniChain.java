/**
 * Java calling a native chain that calls back into Java (tests/native/jnichain.c):
 * {@code run -> nA (Java_JniChain_nA) -> nB -> nC -> callback}, each native level and the
 * callback doing CPU work of their own. Args: the library's path, and the CPU seconds the main
 * thread spends (its own CPU time, as the other workloads measure it). Prints "chain calls=N".
 */
public class JniChain {
    static volatile long sink;

    /** Native work rounds per level; the callback does about as much in Java. */
    static final int ROUNDS = 200_000;

    static native long nA(int rounds);

    /** Called back by nC: CPU work in Java. */
    static long callback(long x) {
        for (int i = 0; i < ROUNDS; i++) x = x * 31 + (x >>> 7) + i;
        return x;
    }

    static long run() {
        return nA(ROUNDS);
    }

    public static void main(String[] args) {
        System.load(args[0]);
        CpuClock clock = new CpuClock(Double.parseDouble(args[1]));
        long calls = 0;
        while (!clock.done()) {
            sink += run();
            calls++;
        }
        System.out.println("chain calls=" + calls);
    }
}
