package phasefixture;

/** A superclass whose constructor takes arguments, so subclasses call super(...) with some. */
public abstract class Base {
    protected final int base;
    protected final String label;

    protected Base(int base, String label) {
        this.base = base;
        this.label = label;
    }

    public abstract int value();
}
