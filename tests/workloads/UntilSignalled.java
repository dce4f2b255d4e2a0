import java.io.File;

/**
 * For `hpm run`'s signal tests: busy until the file given as the first argument is non-empty
 * (the agent flushed a JFR chunk: sampling is underway), then prints "ready PID" and keeps
 * spinning until a signal ends it (a 600 s bound in case none comes: longer than the tests'
 * watchdogs, so a JVM that ends by the bound is never taken for one a signal ended).
 */
public class UntilSignalled {
    static volatile long sink;

    public static void main(String[] args) {
        File f = new File(args[0]);
        long deadline = System.nanoTime() + 600_000_000_000L;
        boolean said = false;
        while (System.nanoTime() < deadline) {
            for (int i = 0; i < 100_000; i++) sink = sink * 31 + i;
            if (!said && f.length() > 0) {
                System.out.println("ready " + ProcessHandle.current().pid());
                System.out.flush();
                said = true;
            }
        }
    }
}
