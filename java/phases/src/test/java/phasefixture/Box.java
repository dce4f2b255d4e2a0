package phasefixture;

/** compareTo(Box) has a bridge compareTo(Object); an interface's default method with a loop. */
public class Box implements Comparable<Box>, Sized {
    final int size;

    public Box(int size) {
        this.size = size;
    }

    @Override
    public int compareTo(Box o) {
        return Integer.compare(size, o.size);
    }

    @Override
    public int sides() {
        return 4;
    }
}
