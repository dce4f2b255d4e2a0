public class Busy {
    static long spin(long seed) {
        long x = seed;
        for (int i = 0; i < 1_000_000; i++) {
            x ^= x << 13; x ^= x >>> 7; x ^= x << 17;
        }
        return x;
    }
    public static void main(String[] args) {
        long millis = args.length > 0 ? Long.parseLong(args[0]) : 2000;
        long end = System.nanoTime() + millis * 1_000_000L;
        long acc = 1;
        while (System.nanoTime() < end) acc += spin(acc);
        System.out.println(acc);
    }
}
