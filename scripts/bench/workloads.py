"""The third-party workloads of python3 scripts/bench suite: which Debian packages each needs,
which jars go on its class path, its driver in bench/src and the fixed arguments (iterations
first). Packages are fetched by bench/fetch.sh (apt-get download + dpkg -x, no install)."""
import glob
import os
import subprocess
import sys

from .common import ROOT, target_dir


class Workload:
    def __init__(self, name, packages, jars, main, args, threads, what, multithreaded=False, churn=False):
        self.name, self.packages, self.jars, self.main, self.args = name, packages, jars, main, args
        self.threads, self.what, self.multithreaded, self.churn = threads, what, multithreaded, churn

    def iterations(self):
        return int(self.args[0])


WORKLOADS = [
    Workload("sunflow", ["libsunflow-java"], ["sunflow"], "SunflowBench", ["10", "64", "4"],
             "4 render threads", "renders sunflow's benchmark scene (64x64) with org.sunflow.Benchmark, one frame per iteration",
             multithreaded=True),
    Workload("h2", ["libh2-java"], ["h2"], "H2Bench", ["10", "4", "1000"],
             "4 clients", "in-memory TPC-B-like schema (100,000 accounts); 4 JDBC clients x 1,000 transactions per iteration",
             multithreaded=True),
    Workload("lucene", ["liblucene8-java"], ["lucene-core", "lucene-analyzers-common"], "LuceneBench", ["8", "4", "2000", "300"],
             "1 indexer, 4 searchers", "indexes 2,000 generated documents in memory, then 4 threads run 300 term/boolean/phrase queries each",
             multithreaded=True),
    Workload("xalan", ["libxalan2-java"], ["xalan2", "serializer"], "XalanBench", ["12", "4", "2", "1000"],
             "4 transformers", "4 threads transform generated 1,000-item catalogues to HTML (keys, sorting, number formatting), 2 each per iteration",
             multithreaded=True),
    Workload("rhino", ["rhino"], ["js"], "RhinoBench", ["8", "16", "1"],
             "16 new threads per iteration (128 in all)", "each iteration starts 16 threads that compile and run a JavaScript program (word counts, sort, sieve, JSON) and end",
             multithreaded=True, churn=True),
    Workload("ecj", ["ecj"], ["eclipse-jdt-core"], "EcjBench", ["5", "20"],
             "1", "compiles a generated 20-class source tree (generics, lambdas, streams) with the Eclipse batch compiler in-process"),
]
# Synthetic workloads, run only when named (--workloads deep): not part of the suite's defaults.
SYNTHETIC = [
    Workload("deep", [], [], "DeepBench", ["20", "2", "1000", "400000000"],
             "2 workers", "each worker descends a recursion 1,000 frames deep and calls small methods 400 million "
             "times at its bottom, per iteration (stacks about 1,000 frames deep)", multithreaded=True),
    Workload("wall", [], [], "WallBench", ["30", "10", "1000", "40000"],
             "10 busy + 1,000 idle", "10 workers share 40,000 units of CPU work per iteration (4,096-int table mixes, no "
             "allocation) while 1,000 threads wait for good, half parked and half sleeping: a wall-clock profiler's "
             "cost with many idle threads", multithreaded=True),
]
BY_NAME = {w.name: w for w in WORKLOADS + SYNTHETIC}

# The iteration after which each program's compilers are quiet (at most 10% of the wall time
# over 10 iterations): the latest of bench-paired's --quiet-jit 10 warm-ups. Steady sessions
# (bench-cost --steady, bench-heap) start there.
STEADY_WARM = {"h2": 110, "lucene": 110, "sunflow": 40, "ecj": 135, "xalan": 175, "rhino": 150}


def cache_dir():
    return os.environ.get("HPM_BENCH_CACHE") or os.path.join(target_dir(), "bench-cache")


def fetch(workloads):
    """Fetches the workloads' packages (idempotent); returns the unpacked root."""
    pkgs = sorted({p for w in workloads for p in w.packages})
    if not pkgs:  # synthetic workloads only
        return os.path.join(cache_dir(), "root")
    r = subprocess.run(["bash", os.path.join(ROOT, "bench", "fetch.sh"), cache_dir()] + pkgs,
                       stdout=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"bench/fetch.sh failed for {' '.join(pkgs)} (see its messages above)")
    return r.stdout.strip().splitlines()[-1]


def jar(root, name):
    """ROOT/usr/share/java/NAME.jar or NAME-<version>.jar, with symlinks followed inside
    the unpacked tree (Debian's links may be absolute /usr/share/java paths)."""
    java_dir = os.path.join(root, "usr", "share", "java")
    cands = [os.path.join(java_dir, name + ".jar")] + sorted(glob.glob(os.path.join(java_dir, name + "-[0-9]*.jar")))
    for path in cands:
        for _ in range(8):
            if not os.path.islink(path):
                break
            t = os.readlink(path)
            path = os.path.join(root, t.lstrip("/")) if t.startswith("/") else os.path.join(os.path.dirname(path), t)
        if os.path.isfile(path):
            return os.path.normpath(path)
    sys.exit(f"bench: no {name}.jar under {java_dir}; delete {cache_dir()} and run again to fetch the packages afresh")


def versions(workloads):
    """Debian package version of each workload's first package, from the downloaded .deb."""
    out = {}
    for w in workloads:
        p = w.packages[0]
        debs = sorted(glob.glob(os.path.join(cache_dir(), "debs", f"{p}_*.deb")))
        out[w.name] = (p, debs[0].split("_")[1].replace("%3a", ":") if debs else "?")
    return out


def classes_dir():
    return os.path.join(target_dir(), "bench")


def compile_drivers(root, workloads):
    """javac of bench/src (drivers and the harness) and tests/workloads/Shares.java (with the
    CpuClock it uses) into target/bench; returns {workload: class path}."""
    paths = {w.name: [jar(root, j) for j in w.jars] for w in workloads}
    out = classes_dir()
    os.makedirs(out, exist_ok=True)
    src = os.path.join(ROOT, "bench", "src")
    # Toggle (paired runs) drives the agent through the Java bridge, compiled from its sources.
    bridge = sorted(glob.glob(os.path.join(ROOT, "java", "bridge", "src", "main", "java", "io", "github", "hpm", "*.java")))
    files = [os.path.join(src, "Harness.java"), os.path.join(src, "Toggle.java")] + bridge + \
        [os.path.join(src, w.main + ".java") for w in workloads]
    cp = ":".join(sorted({p for ps in paths.values() for p in ps}))
    r = subprocess.run(["javac", "--release", "17", "-nowarn", "-d", out, "-cp", cp] + files, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench: javac of the drivers failed:\n{r.stderr}")
    subprocess.run(["javac", "--release", "17", "-d", out] +
                   [os.path.join(ROOT, "tests", "workloads", f) for f in ("Shares.java", "CpuClock.java")], check=True)
    return {name: ":".join([out] + ps) for name, ps in paths.items()}


def programs(names, demo_runs):
    """The bundled demo once per argument list in `demo_runs` (label, args), then the suite's
    workloads named in the comma-separated `names`, fetched and compiled: (label, classpath,
    main class, args) each."""
    ws = [BY_NAME[n] for n in names.split(",") if n]
    cps = compile_drivers(fetch(ws), ws) if ws else {}
    demo = os.path.join(target_dir(), "demo")
    subprocess.run(["javac", "--release", "17", "-d", demo, os.path.join(ROOT, "java", "demo", "Demo.java")], check=True)
    return [(label, demo, "Demo", args) for label, args in demo_runs] + [(w.name, cps[w.name], w.main, w.args) for w in ws]
