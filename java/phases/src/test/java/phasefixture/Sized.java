package phasefixture;

/** An abstract method and a default method with a loop. */
public interface Sized {
    int sides();

    default int perimeter(int side) {
        int p = 0;
        for (int i = 0; i < sides(); i++) p += side;
        return p;
    }
}
