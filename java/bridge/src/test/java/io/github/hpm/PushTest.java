package io.github.hpm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A session started from Java with {@code push=} delivers its profile to a backend: here an
 * HTTP server on 127.0.0.1 inside the test, answering 200 as an OpenTelemetry Collector does.
 * Checked against what it received: OTLP posts, gzipped, naming the service given.
 */
class PushTest {
    private static final String SERVICE = "bridge-test";
    /** The most a request body is read here: a period of this test is far smaller. */
    private static final int MAX_BODY = 64 << 20;

    private final Hpm hpm = TestLib.load();
    private final List<Post> posts = new CopyOnWriteArrayList<>();
    private HttpServer server;

    @TempDir
    Path dir;

    /** One request received. */
    private static final class Post {
        final String method;
        final String path;
        final String encoding;
        final byte[] body;

        Post(String method, String path, String encoding, byte[] body) {
            this.method = method;
            this.path = path;
            this.encoding = encoding;
            this.body = body;
        }
    }

    @BeforeEach
    void startBackend() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/", this::receive);
        server.start();
    }

    @AfterEach
    void stopAll() {
        if (hpm.status().contains("running")) {
            hpm.stop();
        }
        server.stop(0);
    }

    private void receive(HttpExchange ex) throws IOException {
        try {
            byte[] body = ex.getRequestBody().readNBytes(MAX_BODY);
            posts.add(new Post(ex.getRequestMethod(), ex.getRequestURI().getPath(),
                    ex.getRequestHeaders().getFirst("Content-Encoding"), body));
            ex.sendResponseHeaders(200, -1);
        } finally {
            ex.close();
        }
    }

    /** Spins until this thread has used {@code nanos} of CPU time (not wall time). */
    private static void spinForCpu(long nanos) {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long until = mx.getCurrentThreadCpuTime() + nanos;
        while (mx.getCurrentThreadCpuTime() < until) {
            TestLib.spin(1_000_000);
        }
    }

    private static byte[] gunzip(byte[] gz) throws IOException {
        try (InputStream in = new GZIPInputStream(new ByteArrayInputStream(gz))) {
            return in.readNBytes(MAX_BODY);
        }
    }

    private static boolean contains(byte[] haystack, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= haystack.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (haystack[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return true;
        }
        return false;
    }

    @Test
    void aSessionPushesItsProfileToTheBackend() throws Exception {
        String url = "http://127.0.0.1:" + server.getAddress().getPort();
        String started = hpm.start("push=" + url + ",chunk=1s,service=" + SERVICE + ",file=" + dir.resolve("p.jfr"));
        assertTrue(started.contains("started"), started);
        // 1.5 s of CPU time: at least one period of 1 s ends while the session runs.
        spinForCpu(1_500_000_000L);
        String status = hpm.execute("status");
        assertTrue(status.lines().anyMatch(l -> l.startsWith("push: push to " + url + "/v1development/profiles")),
                status);
        hpm.stop();
        assertFalse(hpm.status().contains("running"), hpm.status());

        // Stopping delivered the last period: what the backend has now is all it gets.
        assertFalse(posts.isEmpty(), "nothing was pushed");
        byte[] service = SERVICE.getBytes(StandardCharsets.UTF_8);
        for (Post p : posts) {
            assertEquals("POST", p.method);
            assertEquals("/v1development/profiles", p.path);
            assertEquals("gzip", p.encoding);
            byte[] request = gunzip(p.body);
            assertTrue(request.length > 0, "an empty request");
            // The resource's service.name: no protobuf decoding needed to find its bytes.
            assertTrue(contains(request, service), "no " + SERVICE + " in a request of " + request.length + " bytes");
        }
    }
}
