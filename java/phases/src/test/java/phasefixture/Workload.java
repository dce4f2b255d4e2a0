package phasefixture;

/**
 * The rewriter's test subject: methods on both sides of the size heuristic, loops, a
 * constructor calling super with arguments, throws through and caught inside, long and double
 * locals, switches, early returns, recursion, a synchronized method and a static initializer.
 */
public class Workload extends Base {
    static final int[] TABLE;

    static {
        TABLE = new int[64];
        for (int i = 0; i < TABLE.length; i++) TABLE[i] = i * i;
    }

    private final int scale;

    public Workload(int a, int b) {
        super(a + b, "w" + a);
        int s = 0;
        for (int i = 0; i < a; i++) s += i * b;
        scale = s;
    }

    public Workload(int a) {
        this(a, 1);
    }

    /** Branches before the super call: frames with an uninitialized this. */
    public Workload(boolean flag, int a) {
        super(flag ? a : -a, flag ? "t" : "f");
        int s = 0;
        for (int i = 0; i < a; i++) s += i;
        scale = s;
    }

    @Override
    public int value() {
        return base + scale;
    }

    public static int small(int x) {
        return x + 1;
    }

    /** 60 bytes of bytecode in 36 instructions: over the heuristic by its size in bytes. */
    public int wide() {
        return scale + scale + scale + scale + scale + scale
                + scale + scale + scale + scale + scale + scale;
    }

    public long loop(int n) {
        long s = 0;
        for (int i = 0; i < n; i++) s += small(i);
        return s;
    }

    public static int big(int x) {
        x = x * 31 + 7;
        x = x * 31 + 11;
        x = x * 31 + 13;
        x = x * 31 + 17;
        x = x * 31 + 19;
        x = x * 31 + 23;
        x = x * 31 + 29;
        x = x * 31 + 37;
        x = x * 31 + 41;
        x = x * 31 + 43;
        x = x * 31 + 47;
        x = x * 31 + 53;
        return x;
    }

    public static int throwsThrough(int n) {
        int s = 0;
        for (int i = 0; i < n; i++) {
            s += i;
            if (i == 3) throw new IllegalStateException("out at " + s);
        }
        return s;
    }

    public static int callsThrower(int n) {
        int caught = 0;
        for (int i = 0; i < n; i++) {
            try {
                throwsThrough(5);
            } catch (IllegalStateException e) {
                caught++;
            }
        }
        return caught;
    }

    public static int outerThrows(int n) {
        int s = 0;
        for (int i = 0; i < n; i++) s += throwsThrough(10);
        return s;
    }

    public static double longDouble(long a, double b, int n) {
        long l = a;
        double d = b;
        for (int i = 0; i < n; i++) {
            l += i;
            d *= 1.5;
        }
        return l + d;
    }

    public static int switchy(int n) {
        int s = 0;
        for (int i = 0; i < n; i++) {
            switch (i % 4) {
                case 0:
                    s += 1;
                    break;
                case 1:
                    s += 10;
                    break;
                case 2:
                    s += 100;
                    break;
                default:
                    s += 1000;
            }
        }
        return s;
    }

    public static String lookup(int k) {
        switch (k) {
            case 1:
                return "a";
            case 1000:
                return "b";
            case 50000:
                return "c";
            default:
                return "d";
        }
    }

    public static void voidReturns(int[] values) {
        for (int i = 0; i < values.length; i++) {
            if (values[i] < 0) return;
            values[i]++;
        }
    }

    public static int recursive(int n) {
        if (n <= 0) return 0;
        int s = 0;
        for (int i = 0; i < n; i++) s += i;
        return s + recursive(n - 1);
    }

    public int lockedFinally(int n) {
        int s = 0;
        synchronized (this) {
            try {
                for (int i = 0; i < n; i++) {
                    if (i == 5) throw new IllegalStateException("five");
                    s += i;
                }
            } finally {
                s = -s;
            }
        }
        return s;
    }

    public synchronized int syncLoop(int n) {
        int s = scale;
        for (int i = 0; i < n; i++) s ^= TABLE[i % TABLE.length];
        return s;
    }
}
