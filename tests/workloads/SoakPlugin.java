/**
 * The class Soak loads again and again, each time through a new class loader that is then
 * dropped: its hot method gets JIT-compiled, and the code is freed when the class is unloaded.
 */
public class SoakPlugin {
    public static long work(long n) {
        long x = n;
        for (int i = 0; i < 2_000; i++) {
            x = x * 31 + (x >>> 7) + i;
        }
        return x;
    }
}
