"""A real OpenTelemetry Collector for the push benchmark (python3 scripts/bench push): the binary
scripts/otelcol/build.sh builds (cached by its manifest's hash), run on 127.0.0.1 only with the
profiles feature gate, an OTLP/HTTP receiver and two file exporters, one writing each request as
the collector received it (length-prefixed protobuf: its size is the request's uncompressed
size), one as JSON lines (read here to count samples). tests/src/collector.rs runs it the same
way. Readiness is the collector's "Everything is ready" log line; a stop is SIGTERM and a wait,
after which the exporters have written everything accepted."""
import gzip
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading

from .common import ROOT

READY = "Everything is ready"
# A message the file exporter wrote is at most this long: a period of one JVM is far smaller.
MAX_MESSAGE = 256 << 20


def collector_bin():
    """The collector: HPM_OTELCOL, else the last line scripts/otelcol/build.sh prints (it builds
    once, ~10 min on 2 cores, then prints the cached path)."""
    b = os.environ.get("HPM_OTELCOL")
    if b:
        return b
    r = subprocess.run(["bash", os.path.join(ROOT, "scripts", "otelcol", "build.sh")], capture_output=True, text=True)
    lines = r.stdout.strip().splitlines()
    if r.returncode != 0 or not lines or not os.path.isfile(lines[-1]):
        sys.exit(f"bench-push: scripts/otelcol/build.sh did not build the collector:\n{r.stderr[-2000:]}")
    return lines[-1]


def free_port():
    """A port on 127.0.0.1 free a moment ago (the kernel's choice for port 0)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Collector:
    """A running collector in `workdir`: OTLP/HTTP on 127.0.0.1:port, its exporters writing
    NAME.pb (protobuf) and NAME.jsonl there."""

    def __init__(self, binary, workdir, name="collector"):
        self.port = free_port()
        self.proto = os.path.join(workdir, f"{name}.pb")
        self.json = os.path.join(workdir, f"{name}.jsonl")
        config = os.path.join(workdir, f"{name}.yaml")
        with open(config, "w") as f:
            f.write(f"""receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:{self.port}
exporters:
  file/proto:
    path: {self.proto}
    format: proto
  file/json:
    path: {self.json}
    format: json
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [file/proto, file/json]
""")
        self.log_path = os.path.join(workdir, f"{name}.log")
        self._log = open(self.log_path, "w+")
        self.proc = subprocess.Popen([binary, "--feature-gates=service.profilesSupport", "--config", config],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for line in self.proc.stderr:
            self._log.write(line)
            if READY in line:
                break
        else:
            self.proc.wait()
            self._log.flush()
            sys.exit(f"bench-push: the collector exited before it was ready ({self.proc.returncode}); see {self.log_path}")
        # The rest of its log, drained so that a full pipe never blocks it.
        self._drain = threading.Thread(target=lambda: [self._log.write(x) for x in self.proc.stderr], daemon=True)
        self._drain.start()

    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def stop(self):
        """SIGTERM and wait: the file exporters flush what was accepted."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        self._drain.join()
        self._log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def proto_messages(path):
    """The messages of a file exporter's protobuf output: each a 4-byte big-endian length, then
    that many bytes (one export request as the collector received it)."""
    out = []
    with open(path, "rb") as f:
        data = f.read()
    at = 0
    while at + 4 <= len(data):
        (n,) = struct.unpack(">I", data[at:at + 4])
        if n > MAX_MESSAGE or at + 4 + n > len(data):
            sys.exit(f"bench-push: {path}: a message of {n} bytes at byte {at} runs past the file")
        out.append(data[at + 4:at + 4 + n])
        at += 4 + n
    return out


def gzip_size(message):
    """The message's size gzipped at level 6 (what an OTLP/HTTP client with gzip sends)."""
    return len(gzip.compress(message, compresslevel=6))


def json_requests(path):
    """The export requests of a file exporter's JSON output, one per line, as dicts."""
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def request_summary(req):
    """(service.name, {sample type: (Sample messages, sum of values)}, Sample messages with
    timestamps in the largest profile) of one JSON export request, sample types named
    `type/unit` from its dictionary's strings. The collector may write an attribute's key and
    string value as indices into those strings (`keyStrindex`, `stringValueStrindex`)."""
    strings = req.get("dictionary", {}).get("stringTable", [])

    def s(i):
        i = int(i or 0)
        return strings[i] if 0 <= i < len(strings) else "?"

    service, types, stamped = None, {}, {}
    for rp in req.get("resourceProfiles", []):
        for attr in rp.get("resource", {}).get("attributes", []):
            if (attr.get("key") or s(attr.get("keyStrindex"))) == "service.name":
                v = attr.get("value", {})
                service = v.get("stringValue") or s(v.get("stringValueStrindex"))
        for sp in rp.get("scopeProfiles", []):
            for p in sp.get("profiles", []):
                st = p.get("sampleType", {})
                name = f"{s(st.get('typeStrindex'))}/{s(st.get('unitStrindex'))}"
                n, total = types.get(name, (0, 0))
                for sample in p.get("samples", []):
                    vals = [int(v) for v in sample.get("values", [])]
                    stamps = sample.get("timestampsUnixNano", [])
                    stamped[name] = stamped.get(name, 0) + (1 if stamps else 0)
                    n += 1
                    # A sample without values counts once per timestamp (each an occurrence).
                    total += sum(vals) if vals else len(stamps)
                types[name] = (n, total)
    largest = max(types, key=lambda t: types[t][0], default=None)
    return service, types, stamped.get(largest, 0)
