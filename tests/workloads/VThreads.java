import java.util.concurrent.*;
import java.util.*;

public class VThreads {
    static volatile long sink;
    static long spin(long n) { long x = 1; for (long i = 0; i < n; i++) x = x * 6364136223846793005L + 1442695040888963407L; return x; }
    static void heavy() { for (int r = 0; r < 30; r++) { sink += spin(200_000); Thread.yield(); } }
    static void light() { for (int r = 0; r < 10; r++) { sink += spin(200_000); Thread.yield(); } }
    public static void main(String[] a) throws Exception {
        int n = Integer.parseInt(a[0]);
        int rounds = Integer.parseInt(a[1]);
        for (int k = 0; k < rounds; k++) {
            try (var ex = Executors.newVirtualThreadPerTaskExecutor()) {
                for (int i = 0; i < n; i++) { ex.submit(VThreads::heavy); ex.submit(VThreads::light); }
            }
        }
    }
}
