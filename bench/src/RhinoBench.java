import org.mozilla.javascript.Context;
import org.mozilla.javascript.Script;
import org.mozilla.javascript.Scriptable;

/**
 * Rhino (Debian `rhino`): creates and ends many threads. Per iteration, THREADS new threads
 * are started, each runs the JavaScript program below (compiled to bytecode by Rhino, in its own
 * Context and scope: object churn, string building, closures, a small sort and a prime sieve),
 * and ends; the iteration waits for all of them. ITERATIONS x THREADS threads in all.
 *
 *   java RhinoBench ITERATIONS [THREADS] [ROUNDS]
 */
public class RhinoBench {
    static final String JS = String.join("\n",
        "function sieve(n) { var p = []; var c = new Array(n + 1);",
        "  for (var i = 2; i <= n; i++) { if (!c[i]) { p.push(i); for (var j = i * i; j <= n; j += i) c[j] = true; } }",
        "  return p.length; }",
        "function words(seed, n) { var out = []; var x = seed;",
        "  for (var i = 0; i < n; i++) { x = (x * 1103515245 + 12345) % 2147483648;",
        "    var w = ''; for (var k = 0; k < 3 + x % 7; k++) w += String.fromCharCode(97 + (x >> k) % 26); out.push(w); }",
        "  return out; }",
        "function run(seed) { var total = 0;",
        "  for (var r = 0; r < rounds; r++) {",
        "    var ws = words(seed + r, 2000); var counts = {};",
        "    ws.forEach(function (w) { counts[w] = (counts[w] || 0) + 1; });",
        "    var keys = Object.keys(counts).sort(function (a, b) { return counts[b] - counts[a] || (a < b ? -1 : 1); });",
        "    total += keys.length + sieve(20000) + JSON.stringify(keys.slice(0, 50)).length; }",
        "  return total; }",
        "run(seed);");

    public static void main(String[] args) throws Exception {
        int threads = args.length > 1 ? Integer.parseInt(args[1]) : 8;
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 10;
        Harness.iterate("rhino", Harness.iterations(args, 20), it -> {
            Thread[] ts = new Thread[threads];
            Throwable[] failure = new Throwable[1];
            for (int t = 0; t < threads; t++) {
                final int seed = it * threads + t;
                ts[t] = new Thread(() -> {
                    Context cx = Context.enter();
                    try {
                        cx.setLanguageVersion(Context.VERSION_ES6);
                        Scriptable scope = cx.initStandardObjects();
                        scope.put("rounds", scope, rounds);
                        scope.put("seed", scope, seed);
                        Script s = cx.compileString(JS, "bench.js", 1, null);
                        Context.toNumber(s.exec(cx, scope));
                    } catch (Throwable e) {
                        synchronized (failure) { failure[0] = e; }
                    } finally {
                        Context.exit();
                    }
                }, "rhino-" + seed);
                ts[t].start();
            }
            for (Thread t : ts) t.join();
            if (failure[0] != null) throw new RuntimeException(failure[0]);
        });
    }
}
