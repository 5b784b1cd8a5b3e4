"""tests/integration/harness.py: runs the real ciuickafka binary for one integration test.

Every integration test is a small script that starts the broker through
`Broker`, drives it with a real client (or raw sockets, see kafka_wire.py),
and asserts. The harness:

  * picks free 127.0.0.1 ports for the Kafka listener and the metrics
    endpoint, makes a data directory under the test's work directory and a
    server.properties naming them;
  * starts `ciuickafka --config FILE --override k=v ...` with stderr/stdout
    captured to a file, and waits until the port accepts and an ApiVersions
    v0 round trip succeeds;
  * stops it with SIGTERM (asserting exit status 0) or SIGKILL on demand,
    and restarts it on the same data directory and ports;
  * on any failure prints the tail of the broker's log, and keeps the work
    directory for inspection.

`run_test(fn)` is the entry point of a test script: it parses the common
arguments (--broker BINARY --work DIR), puts a hard wall-clock bound on the
whole test (SIGALRM), calls fn(ctx) and turns the outcome into an exit code.

Standard library only; run with /usr/bin/python3 (Debian's, which also has
the client libraries some tests import).
"""

import argparse
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kafka_wire  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CLIENTS = os.path.join(REPO, "tests", "clients")
PYTHON = "/usr/bin/python3"


def _reexec_under_client_python():
    """--client-python PY: re-executes the test script under PY (a venv with
    a newer client) before the script imports its client library, once. A
    missing interpreter is a failure, never a skip (deploy/install-deps.sh
    makes the venv)."""
    argv = sys.argv
    py = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--client-python"), None)
    if py is None or os.environ.get("CK_IT_CLIENT_PYTHON") == py:
        return
    if not os.access(py, os.X_OK):
        print("FAIL: client python %s not found (run deploy/install-deps.sh)" % py, flush=True)
        sys.exit(1)
    os.environ["CK_IT_CLIENT_PYTHON"] = py
    os.execv(py, [py] + argv)


if __name__ != "__main__":
    _reexec_under_client_python()


class TestFailure(AssertionError):
    pass


# Third-party leaks the sanitizer build's brokers may report at exit
# (tests/lsan.supp says which and why).
LSAN_SUPPRESSIONS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lsan.supp")


def check(cond, message):
    if not cond:
        raise TestFailure(message)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(b, name):
    """The value of the first sample of metric `name` on broker b's /metrics
    (None when the family is absent)."""
    import urllib.request
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % b.metrics_port, timeout=5).read().decode()
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    return None


REQUESTS_METRIC = "kafka_network_requestmetrics_requests_total"


def request_versions(b):
    """{api: {version: count}} of the requests broker b has counted since it
    started (kafka_network_requestmetrics_requests_total{request,version})."""
    import re
    import urllib.request
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % b.metrics_port, timeout=5).read().decode()
    out = {}
    for line in text.splitlines():
        if not line.startswith(REQUESTS_METRIC + "{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}", 1)[0]))
        count = float(line.rsplit(" ", 1)[1])
        if count > 0 and "request" in labels and "version" in labels:
            per = out.setdefault(labels["request"], {})
            per[int(labels["version"])] = per.get(int(labels["version"]), 0) + count
    return out


def check_versions(brokers, expect):
    """Prints every API version the live brokers counted, and fails unless
    each `Api>=N` in expect was sent at a version of at least N (the proof
    that a client negotiated the flexible versions, not an assumption)."""
    seen = {}
    for b in brokers:
        if b.proc is None or b.proc.poll() is not None:
            continue
        for api, per in request_versions(b).items():
            for v, n in per.items():
                seen.setdefault(api, {})[v] = seen.setdefault(api, {}).get(v, 0) + n
    print("[harness] request versions seen: %s" % ", ".join(
        "%s v%s" % (api, "/".join(str(v) for v in sorted(per))) for api, per in sorted(seen.items())),
        flush=True)
    for item in expect:
        api, least = item.split(">=")
        got = max(seen.get(api, {0: 0}).keys()) if api in seen else None
        check(got is not None and got >= int(least),
              "expected %s at version >= %s, the broker counted %s" % (
                  api, least, sorted(seen[api]) if api in seen else "none"))


def closed_within(sock, seconds):
    """True if the peer closes (EOF/RST) within `seconds`; reads and discards data."""
    sock.settimeout(0.1)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            if not sock.recv(65536):
                return True
        except socket.timeout:
            continue
        except OSError:
            return True
    return False


def wait_until(pred, timeout, what, interval=0.05):
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        try:
            v = pred()
            if v:
                return v
        except Exception as e:  # noqa: BLE001 - reported on timeout
            last = e
        time.sleep(interval)
    raise TestFailure("timed out after %.1fs waiting for %s%s" %
                      (timeout, what, "" if last is None else " (last error: %r)" % last))


class ApiVersionsProber:
    """ApiVersions round trips in a loop on one connection to broker b, from
    a thread: what another client on the same network thread sees while a
    test makes the broker do something slow. Use as a context manager; the
    latencies (seconds) are in .latencies, .worst() after the block."""

    def __init__(self, b, timeout=60):
        import threading
        self.b = b
        self.timeout = timeout
        self.latencies = []
        self.errors = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        try:
            with self.b.conn(timeout=self.timeout) as c:
                while not self._stop.is_set():
                    t0 = time.monotonic()
                    err, _ = c.api_versions()
                    self.latencies.append(time.monotonic() - t0)
                    if err != 0:
                        self.errors.append(err)
        except Exception as e:  # noqa: BLE001 - reported by __exit__
            self.errors.append(repr(e))

    def __enter__(self):
        self._thread.start()
        wait_until(lambda: len(self.latencies) > 10 or self.errors, 30, "the prober's first round trips")
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(30)
        if exc[0] is None:
            check(not self.errors, "ApiVersions prober errors: %s" % self.errors[:3])
        return False

    def worst(self):
        return max(self.latencies)

    def median(self):
        return sorted(self.latencies)[len(self.latencies) // 2]


class Broker:
    """One broker process on its own ports and data directory."""

    def __init__(self, binary, workdir, overrides=None, name="broker",
                 start_timeout=30.0, stop_timeout=20.0, env=None):
        self.binary = binary
        self.env = dict(env or {})  # added to the broker's environment
        self.name = name
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.data_dir = os.path.join(self.dir, "data")
        os.makedirs(self.data_dir, exist_ok=True)
        self.port = free_port()
        self.metrics_port = free_port()
        self.overrides = dict(overrides or {})
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.proc = None
        self.starts = 0
        self.ever_started = False
        self.log_path = None
        self.config_path = os.path.join(self.dir, "server.properties")
        self._write_config()

    def _write_config(self):
        with open(self.config_path, "w") as f:
            f.write("# written by tests/integration/harness.py\n")
            f.write("node.id=0\n")
            f.write("listeners=PLAINTEXT://127.0.0.1:%d\n" % self.port)
            f.write("log.dirs=%s\n" % self.data_dir)
            f.write("ciuic.metrics.listener=127.0.0.1:%d\n" % self.metrics_port)

    @property
    def bootstrap(self):
        return "127.0.0.1:%d" % self.port

    def command(self):
        cmd = [self.binary, "--config", self.config_path]
        for k, v in self.overrides.items():
            cmd += ["--override", "%s=%s" % (k, v)]
        return cmd

    def start(self):
        check(self.proc is None, "broker already running")
        # A port free_port() handed out can be taken by another test's
        # process before the broker binds it (tests run in parallel): on the
        # first start only (later ones must keep their ports), a broker that
        # exits because its address is in use gets fresh ports, twice at most.
        first = not self.ever_started
        for attempt in range(3):
            self.starts += 1
            self.log_path = os.path.join(self.dir, "broker.%d.log" % self.starts)
            log = open(self.log_path, "wb")
            print("[harness] start #%d: %s" % (self.starts, " ".join(self.command())), flush=True)
            env = dict(os.environ)
            env.setdefault("LSAN_OPTIONS", "suppressions=" + LSAN_SUPPRESSIONS)
            env.update(self.env)
            self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, cwd=self.dir, env=env)
            log.close()
            try:
                self._wait_ready()
                self.ever_started = True
                return self
            except TestFailure:
                if first and attempt < 2 and self.proc.poll() is not None and self._address_in_use():
                    print("[harness] port %d or %d was taken meanwhile: new ports" % (self.port, self.metrics_port),
                          flush=True)
                    self.proc = None
                    self.port, self.metrics_port = free_port(), free_port()
                    self._write_config()
                    continue
                self.dump_log()
                self.kill()
                raise
            except BaseException:
                self.dump_log()
                self.kill()
                raise
        return self

    def _address_in_use(self):
        with open(self.log_path, "rb") as f:
            return b"Address already in use" in f.read()

    def _ours_listening(self):
        """Whether the process holds the listening socket on self.port (not
        another test's broker that took the port first)."""
        inodes = set()
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                with open(table) as f:
                    for line in f.readlines()[1:]:
                        parts = line.split()
                        if parts[3] == "0A" and parts[1].endswith(":%04X" % self.port):
                            inodes.add(parts[9])
            except OSError:
                continue
        fd_dir = "/proc/%d/fd" % self.proc.pid
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            return False
        for fd in fds:
            try:
                link = os.readlink(os.path.join(fd_dir, fd))
            except OSError:
                continue
            if link.startswith("socket:[") and link[8:-1] in inodes:
                return True
        return False

    def _wait_ready(self):
        end = time.monotonic() + self.start_timeout
        last = None
        while time.monotonic() < end:
            rc = self.proc.poll()
            if rc is not None:
                raise TestFailure("broker exited with status %d during start-up" % rc)
            try:
                with kafka_wire.Conn(self.port, timeout=2.0) as c:
                    err, apis = c.api_versions()
                    if err == 0 and apis and self._ours_listening():
                        return
                    last = "ApiVersions error %d, %d apis" % (err, len(apis)) if err != 0 or not apis else \
                        "port %d answered by another process" % self.port
            except (OSError, kafka_wire.ConnectionClosed, ValueError, kafka_wire.Truncated) as e:
                last = repr(e)
            time.sleep(0.05)
        raise TestFailure("broker not ready within %.0fs (last: %s)" % (self.start_timeout, last))

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        """SIGTERM; the broker must exit 0 within stop_timeout."""
        if self.proc is None:
            return
        proc = self.proc
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(self.stop_timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
            self.proc = None
            self.dump_log()
            raise TestFailure("broker did not exit within %.0fs of SIGTERM" % self.stop_timeout)
        self.proc = None
        if rc != 0:
            self.dump_log()
            raise TestFailure("broker exited with status %d after SIGTERM (want 0)" % rc)
        print("[harness] stopped cleanly (exit 0)", flush=True)

    def kill(self):
        """SIGKILL, as a crash would."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
        self.proc = None
        print("[harness] killed -9", flush=True)

    def restart(self, clean=True):
        if clean:
            self.stop()
        else:
            self.kill()
        return self.start()

    def log_text(self):
        if not self.log_path or not os.path.exists(self.log_path):
            return ""
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def dump_log(self, lines=80):
        text = self.log_text().splitlines()
        print("[harness] ---- %s (last %d of %d lines) ----" %
              (self.log_path, min(lines, len(text)), len(text)), flush=True)
        for line in text[-lines:]:
            print("  | " + line)
        print("[harness] ---- end of broker log ----", flush=True)

    def conn(self, timeout=10.0):
        return kafka_wire.Conn(self.port, timeout=timeout)

    def create_topic(self, name, partitions=1):
        """CreateTopics v2 over a raw connection; asserts success."""
        with self.conn() as c:
            res = c.create_topics([(name, partitions, 1)])
        err, msg = res.get(name, (None, None))
        check(err == 0, "CreateTopics v2 %s (%d partitions): error %s %s" % (name, partitions, err, msg))
        wait_until(lambda: self.leaders_ready(name, partitions), 10, "leaders of " + name)

    def leaders_ready(self, name, partitions):
        with self.conn() as c:
            md = c.metadata([name])
        t = [t for t in md["topics"] if t["name"] == name]
        return (t and t[0]["error"] == 0 and len(t[0]["partitions"]) == partitions
                and all(p["leader"] >= 0 for p in t[0]["partitions"]))


class Context:
    """What a test function gets: the binary, a work dir, and broker factory."""

    def __init__(self, args):
        self.binary = args.broker
        self.work = args.work
        self.args = args.rest
        self.brokers = []
        self.against_kafka = args.against_kafka

    def broker(self, overrides=None, name=None, start=True, **kw):
        if self.against_kafka:
            # Apache Kafka 3.9.1 in our broker's place (tests/differential/
            # kafka_server.py): the scenario's checks judged on the reference.
            sys.path.insert(0, os.path.join(REPO, "tests", "differential"))
            import kafka_server
            check(not kw, "--against-kafka: Broker options %s have no Kafka equivalent" % sorted(kw))
            b = kafka_server.HarnessKafka(self.work, overrides, name=name or "kafka%d" % len(self.brokers))
            self.brokers.append(b)
            if start:
                b.start()
            return b
        b = Broker(self.binary, self.work, overrides,
                   name=name or "broker%d" % len(self.brokers), **kw)
        self.brokers.append(b)
        if start:
            b.start()
        return b

    def run(self, cmd, timeout, env=None, cwd=None, check_rc=True, input_bytes=None):
        """Runs a client program; on failure shows its output. Returns CompletedProcess."""
        print("[harness] run: %s" % " ".join(cmd), flush=True)
        e = dict(os.environ)
        e.update(env or {})
        try:
            p = subprocess.run(cmd, capture_output=True, timeout=timeout, env=e, cwd=cwd,
                               input=input_bytes)
        except subprocess.TimeoutExpired as te:
            out = (te.stdout or b"")[-4000:].decode("utf-8", "replace")
            err = (te.stderr or b"")[-4000:].decode("utf-8", "replace")
            raise TestFailure("%s timed out after %ds\nstdout:\n%s\nstderr:\n%s" % (cmd[0], timeout, out, err))
        if check_rc and p.returncode != 0:
            raise TestFailure("%s exited %d\nstdout (tail):\n%s\nstderr (tail):\n%s" % (
                " ".join(cmd), p.returncode,
                p.stdout[-6000:].decode("utf-8", "replace"),
                p.stderr[-6000:].decode("utf-8", "replace")))
        return p


def go_cache(go, root):
    """The build cache of the go on PATH as this environment has it (where
    deploy/install-deps.sh's module builds left the standard library
    compiled): a build of tests/clients/sarama_it with it took 4 CPU-s, and
    31 CPU-s with an empty one. <root>/gocache when go names none."""
    try:
        p = subprocess.run([go, "env", "GOCACHE"], capture_output=True, timeout=30)
        cache = p.stdout.decode().strip()
        if p.returncode == 0 and os.path.isabs(cache):
            return cache
    except (OSError, subprocess.TimeoutExpired):
        pass
    return os.path.join(root, "gocache")


def go_build(ctx, client, exe_name):
    """Builds the Go client tests/clients/<client> offline (Debian's sources:
    GOPATH=/usr/share/gocode, GO111MODULE=off) into the work root, once: a
    file lock serialises parallel tests, and it is rebuilt when main.go is
    newer. Returns the executable's path."""
    go = shutil.which("go")
    check(go is not None, "go not on PATH (apt-get install golang-go golang-github-shopify-sarama-dev)")
    src_dir = os.path.join(CLIENTS, client)
    root = os.path.dirname(ctx.work)
    out = os.path.join(root, exe_name)
    with open(os.path.join(root, exe_name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        src = os.path.join(src_dir, "main.go")
        if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(src):
            env = {"GOPATH": "/usr/share/gocode", "GO111MODULE": "off", "GOFLAGS": "",
                   "GOCACHE": go_cache(go, root)}
            ctx.run([go, "build", "-o", out + ".tmp", "."], timeout=240, env=env, cwd=src_dir)
            os.replace(out + ".tmp", out)
    return out


def rdkafka_debug_conf():
    """librdkafka's debug contexts from CK_RDKAFKA_DEBUG, for a client config ({} when unset)."""
    contexts = os.environ.get("CK_RDKAFKA_DEBUG")
    return {"debug": contexts} if contexts else {}


def run_test(fn, total_timeout=120):
    """Entry point for a test script. Exit 0 = passed, 1 = failed."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--broker", required=True, help="path of the ciuickafka binary")
    ap.add_argument("--work", required=True, help="scratch directory (kept on failure)")
    ap.add_argument("--timeout", type=int, default=total_timeout)
    ap.add_argument("--client-python", default=None,
                    help="run the test (and the client programs it starts) with this python")
    ap.add_argument("--client", action="append", default=[],
                    help="DIST==VERSION that interpreter must have installed")
    ap.add_argument("--expect-versions", default="",
                    help="space-separated Api>=N: request versions the client must have sent")
    ap.add_argument("--against-kafka", action="store_true",
                    help="run the scenario against Apache Kafka 3.9.1 instead of our broker (where the "
                         "test supports it: only single-broker scenarios that read no broker internals)")
    ap.add_argument("rest", nargs="*")
    args = ap.parse_args()
    if args.client_python:  # already re-executed under it (_reexec_under_client_python)
        global PYTHON
        PYTHON = args.client_python
    for want in args.client:
        import importlib.metadata
        dist, version = want.split("==")
        try:
            have = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            have = None
        if have != version:
            print("FAIL: %s %s wanted, %s has %s (run deploy/install-deps.sh)" % (
                dist, version, sys.executable, have or "none"))
            sys.exit(1)
        print("[harness] client %s %s (%s)" % (dist, have, sys.executable), flush=True)
    name = os.path.splitext(os.path.basename(sys.argv[0]))[0]
    if args.rest:
        name += "_" + "_".join(args.rest)
    for want in args.client:  # its own work dir beside the Debian client's run
        name += "_" + want.replace("==", "-")
    if os.environ.get("CK_TRAINING_CLIENT"):  # the training tests' pinned-client runs, likewise
        name += "_confluent-kafka-" + os.environ["CK_TRAINING_CLIENT"]
    if args.against_kafka:
        name += "_kafka"
    args.work = os.path.join(os.path.abspath(args.work), name)
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    if not os.access(args.broker, os.X_OK):
        print("FAIL: broker binary %s not found or not executable" % args.broker)
        sys.exit(1)

    def on_alarm(signum, frame):
        raise TestFailure("test exceeded its %ds wall-clock bound" % args.timeout)
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(args.timeout)

    ctx = Context(args)
    ok = False
    t0 = time.monotonic()
    try:
        fn(ctx)
        if (args.expect_versions or args.client) and not args.against_kafka:
            check_versions(ctx.brokers, args.expect_versions.split())
        for b in ctx.brokers:
            if b.proc is not None:
                check(b.alive(), "broker %s died (exit %s)" % (b.name, b.proc.poll()))
                b.stop()
        ok = True
    except BaseException as e:  # noqa: BLE001 - every failure is reported the same way
        signal.alarm(0)
        print("FAIL: %s" % e, flush=True)
        traceback.print_exc()
        for b in ctx.brokers:
            if b.proc is not None and b.proc.poll() is not None:
                print("[harness] broker %s had exited with status %d" % (b.name, b.proc.returncode))
            b.dump_log()
    finally:
        signal.alarm(0)
        for b in ctx.brokers:
            if b.proc is not None:
                b.kill()
    if ok:
        print("PASS (%.1fs)" % (time.monotonic() - t0), flush=True)
        if not os.environ.get("CK_KEEP_WORK"):
            shutil.rmtree(args.work, ignore_errors=True)
        sys.exit(0)
    print("work directory kept: %s" % args.work, flush=True)
    sys.exit(1)
