import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * The bundled demo for hpm: a small multi-threaded "shop" that parses order lines, prices them
 * with BigDecimal, aggregates per customer, sorts reports, and multiplies a matrix for its
 * "recommendations" — enough different work (string handling, allocation and GC, hash maps,
 * sorting, floating point) for a profile with some shape.
 *
 * Usage: java Demo [SECONDS] [BATCHES] [WORKERS]: WORKERS threads (default 4) run for SECONDS
 * (default 8), or, when BATCHES is given, until each has processed BATCHES order batches (fixed
 * work, for benchmarks).
 */
public class Demo {
    static final String[] PRODUCTS = {"apple", "bread", "cheese", "dates", "eggs", "flour", "grapes", "honey"};

    static List<String> makeOrders(Random r, int n) {
        List<String> lines = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            lines.add("c" + r.nextInt(500) + "," + PRODUCTS[r.nextInt(PRODUCTS.length)] + "," + (1 + r.nextInt(9)) + "," + (100 + r.nextInt(9900)) / 100.0);
        }
        return lines;
    }

    static Map<String, BigDecimal> price(List<String> lines) {
        Map<String, BigDecimal> totals = new HashMap<>();
        for (String line : lines) {
            String[] f = line.split(",");
            BigDecimal amount = new BigDecimal(f[3]).multiply(BigDecimal.valueOf(Integer.parseInt(f[2])));
            BigDecimal taxed = amount.multiply(new BigDecimal("1.19")).setScale(2, RoundingMode.HALF_EVEN);
            totals.merge(f[0], taxed, BigDecimal::add);
        }
        return totals;
    }

    static String[] report(Map<String, BigDecimal> totals) {
        String[] rows = totals.entrySet().stream().map(e -> e.getValue().toPlainString() + " " + e.getKey()).toArray(String[]::new);
        Arrays.sort(rows);
        return rows;
    }

    static double recommend(double[][] a, double[][] b) {
        int n = a.length;
        double trace = 0;
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++) {
                double s = 0;
                for (int k = 0; k < n; k++) s += a[i][k] * b[k][j];
                if (i == j) trace += s;
            }
        }
        return trace;
    }

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 8;
        long fixedBatches = args.length > 1 ? Long.parseLong(args[1]) : -1;
        long deadline = fixedBatches > 0 ? Long.MAX_VALUE : System.nanoTime() + (long) (seconds * 1e9);
        int workers = args.length > 2 ? Integer.parseInt(args[2]) : 4;
        ExecutorService pool = Executors.newFixedThreadPool(workers, r -> new Thread(r, "shop-worker"));
        List<Future<Long>> results = new ArrayList<>();
        for (int w = 0; w < workers; w++) {
            final int seed = w;
            results.add(pool.submit(() -> {
                Random r = new Random(seed);
                double[][] m = new double[120][120];
                for (double[] row : m) for (int j = 0; j < row.length; j++) row[j] = r.nextDouble();
                long batches = 0;
                while (System.nanoTime() < deadline && (fixedBatches < 0 || batches < fixedBatches)) {
                    String[] rows = report(price(makeOrders(r, 2000)));
                    if (batches++ % 4 == 0) recommend(m, m);
                    if (rows.length == 0) throw new IllegalStateException();
                }
                return batches;
            }));
        }
        long total = 0;
        for (Future<Long> f : results) total += f.get();
        pool.shutdown();
        System.out.println("demo: processed " + total + " order batches");
    }
}
