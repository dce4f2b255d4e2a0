import java.io.File;

/**
 * Busy until the file given as the first argument is non-empty (the agent flushed a JFR chunk),
 * then prints "flushed" and keeps spinning until killed.
 */
public class Linger {
    static volatile long sink;

    public static void main(String[] args) {
        File f = new File(args[0]);
        long deadline = System.nanoTime() + 60_000_000_000L;
        boolean said = false;
        while (System.nanoTime() < deadline) {
            for (int i = 0; i < 100_000; i++) sink = sink * 31 + i;
            if (!said && f.length() > 0) {
                System.out.println("flushed");
                System.out.flush();
                said = true;
            }
        }
    }
}
