/**
 * sunflow (Debian `libsunflow-java`): renders sunflow's built-in benchmark scene with
 * org.sunflow.Benchmark (its scene-file parser is removed in Debian), one frame per iteration,
 * on THREADS render threads. sunflow writes each frame to resources/golden_XXXX.png under the
 * working directory (the Debian jar has no reference frames, so the frame is not checked).
 *
 *   java SunflowBench ITERATIONS [RESOLUTION] [THREADS]
 */
public class SunflowBench {
    public static void main(String[] args) throws Exception {
        int resolution = args.length > 1 ? Integer.parseInt(args[1]) : 128;
        int threads = args.length > 2 ? Integer.parseInt(args[2]) : 4;
        new java.io.File("resources").mkdirs();
        org.sunflow.Benchmark b = new org.sunflow.Benchmark(resolution, false, false, true, threads, false);
        Harness.iterate("sunflow", Harness.iterations(args, 10), i -> {
            b.kernelBegin();
            b.kernelMain(); // kernelEnd only compares with a reference frame Debian does not ship
        });
    }
}
