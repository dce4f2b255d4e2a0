/**
 * Sleeps for the milliseconds given: what an agent's session costs when the program does
 * nothing (docs/design.md, "The processing thread's rounds"). Run as a single source file:
 * `java -agentpath:target/release/libhpm.so=interval=10ms,file=/tmp/i.jfr bench/src/Idle.java 20000`.
 */
public class Idle {
    public static void main(String[] args) throws InterruptedException {
        Thread.sleep(Long.parseLong(args[0]));
    }
}
