package phasefixture;

/** A constructor that throws after its super(...) call. */
public class Failing extends Base {
    public Failing(int n) {
        super(n, "failing");
        int s = 0;
        for (int i = 0; i < n; i++) s += i;
        if (s >= 0) throw new IllegalArgumentException("no " + s);
    }

    @Override
    public int value() {
        return base;
    }
}
