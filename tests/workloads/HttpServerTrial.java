import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.io.Writer;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The trial program (a contended server, as a first user would try hpm on), with the JDK alone: an embedded HTTP server
 * (com.sun.net.httpserver) whose handlers run on a {@link ThreadPoolExecutor} of {@value
 * #WORKERS} threads ("price-worker-N"), loaded by {@value #REQUESTERS} requester threads of an
 * {@link HttpClient} in the same JVM.
 *
 * <p>Each request asks {@link PriceCache#price} for a price: a synchronized method that computes
 * (16,384 steps of arithmetic, near a millisecond) and allocates the quote's history (a {@code
 * double[1024]}, 8 KiB) while it holds the cache's monitor, so the requests contend on it. The
 * handler then writes a {@code String.format} summary as the response and an audit line to a
 * file, sleeping a millisecond every 32 lines. The pool has more threads than there are
 * requesters, so most of its threads are idle, parked in the pool's queue
 * (ThreadPoolExecutor.getTask), as a real server's pool mostly is.
 *
 * <p>{@code HttpServerTrial SECONDS [AUDIT_FILE]}: runs until the pool's threads have used
 * SECONDS of CPU time in all (read every 10 ms), not wall time: a busy machine makes the run
 * longer, with the same work. Prints {@code requests N} and {@code cpu NS} at the end.
 */
public class HttpServerTrial {
    static final int WORKERS = 48;
    static final int REQUESTERS = 12;

    /** Prices by symbol, computed and cached under the cache's monitor. */
    static final class PriceCache {
        private final Map<Integer, Quote> quotes = new HashMap<>();

        synchronized Quote price(int symbol) {
            Quote q = quotes.get(symbol);
            double[] history = new double[1024];
            double p = q == null ? 100.0 + symbol : q.price;
            for (int round = 0; round < 16; round++) {
                for (int i = 0; i < history.length; i++) {
                    p = p * (1.0 + 1e-4 * Math.sin(p + i)) + 1e-3 * Math.cos(i * p);
                    history[i] = p;
                }
            }
            q = new Quote(symbol, p, history);
            quotes.put(symbol, q);
            return q;
        }
    }

    static final class Quote {
        final int symbol;
        final double price;
        final double[] history;

        Quote(int symbol, double price, double[] history) {
            this.symbol = symbol;
            this.price = price;
            this.history = history;
        }
    }

    /** Audit lines to a file; a short sleep every 32 lines (a slow disk's flush). */
    static final class Audit {
        private final Writer out;
        private final AtomicLong lines = new AtomicLong();

        Audit(Path file) throws IOException {
            out = Files.newBufferedWriter(file, StandardCharsets.UTF_8);
        }

        void record(String line) throws IOException {
            synchronized (out) {
                out.write(line);
                out.write('\n');
            }
            if (lines.incrementAndGet() % 32 == 0) {
                try {
                    Thread.sleep(1);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }

        void close() throws IOException {
            synchronized (out) {
                out.close();
            }
        }
    }

    public static void main(String[] args) throws Exception {
        double seconds = Double.parseDouble(args[0]);
        // Responses leave at once, headers and body: with Nagle's algorithm each waited for the
        // client's delayed acknowledgement (40 ms), and the requesters mostly slept.
        System.setProperty("sun.net.httpserver.nodelay", "true");
        Path auditFile = args.length > 1 ? Path.of(args[1]) : Files.createTempFile("audit", ".log");
        PriceCache cache = new PriceCache();
        Audit audit = new Audit(auditFile);
        List<Thread> workers = new ArrayList<>();
        AtomicInteger made = new AtomicInteger();
        ThreadPoolExecutor pool = new ThreadPoolExecutor(WORKERS, WORKERS, 60, TimeUnit.SECONDS,
                new LinkedBlockingQueue<>(), r -> {
                    Thread t = new Thread(r, "price-worker-" + made.getAndIncrement());
                    synchronized (workers) {
                        workers.add(t);
                    }
                    return t;
                });
        pool.prestartAllCoreThreads();
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 64);
        server.setExecutor(pool);
        server.createContext("/price", exchange -> {
            String query = exchange.getRequestURI().getQuery();
            int symbol = Integer.parseInt(query.substring(query.indexOf('=') + 1));
            Quote q = cache.price(symbol);
            String body = String.format("symbol %d price %.4f low %.4f high %.4f", q.symbol, q.price,
                    q.history[0], q.history[q.history.length - 1]);
            audit.record(String.format("%s %d %s", exchange.getRemoteAddress(), symbol, body));
            byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, bytes.length);
            try (OutputStream os = exchange.getResponseBody()) {
                os.write(bytes);
            }
        });
        server.start();
        int port = server.getAddress().getPort();

        HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        AtomicLong requests = new AtomicLong();
        Thread[] requesters = new Thread[REQUESTERS];
        java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        for (int r = 0; r < REQUESTERS; r++) {
            final int me = r;
            requesters[r] = new Thread(() -> {
                int i = 0;
                while (!stop.get()) {
                    int symbol = (me * 7 + i++) % 16;
                    HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/price?sym=" + symbol)).build();
                    try {
                        HttpResponse<String> resp = client.send(req, HttpResponse.BodyHandlers.ofString());
                        if (resp.statusCode() != 200) {
                            throw new IllegalStateException("status " + resp.statusCode());
                        }
                    } catch (IOException | InterruptedException e) {
                        throw new RuntimeException(e);
                    }
                    requests.incrementAndGet();
                }
            }, "requester-" + r);
            requesters[r].start();
        }
        // The pool's threads' CPU time in all, read every 10 ms, asleep.
        long cpu = 0;
        long end = (long) (seconds * 1e9);
        Thread[] ws;
        synchronized (workers) {
            ws = workers.toArray(new Thread[0]);
        }
        long[] start = new long[ws.length];
        for (int i = 0; i < ws.length; i++) {
            start[i] = CpuClock.MX.getThreadCpuTime(ws[i].getId());
        }
        while (cpu < end) {
            Thread.sleep(10);
            cpu = 0;
            for (int i = 0; i < ws.length; i++) {
                cpu += Math.max(0, CpuClock.MX.getThreadCpuTime(ws[i].getId()) - start[i]);
            }
        }
        stop.set(true);
        for (Thread t : requesters) {
            t.join();
        }
        server.stop(0);
        pool.shutdown();
        audit.close();
        System.out.println("requests " + requests.get());
        System.out.println("cpu " + cpu);
    }
}
