#!/usr/bin/python3
"""tests/bench/run_vs_kafka.py: CiuicKafka and Apache Kafka 3.9.1 side by side (issue #14, part 1).

    tests/bench/run_vs_kafka.py [--rounds 3] [--out build/vs-kafka] [--quick] [--self-test]

Not a test: it prints figures, nothing is asserted. Both brokers run on this
machine, on 127.0.0.1, single node, data on the same disk (a fresh
vs-kafka.* directory under --work, default build/; each round's data is
removed after it):

  * Apache Kafka 3.9.1 (KRaft combined mode, one log dir), started by
    tests/differential/kafka_server.py's launcher from the jars
    deploy/install-deps.sh builds (build/java/tools-3.9.1), with Kafka's
    default configuration (only what a single KRaft node needs is set) and
    the JVM options Kafka's own start script uses (-Xmx1g -Xms1g, G1);
  * our Release broker (--broker, default build/release/bin/ciuickafka) with
    its defaults, and a second one with ciuic.acks.all.fsync=false for the
    acks=all rows.

Both get group.initial.rebalance.delay.ms=0 (the differential run's shared
setting). Two load generators, each run against both brokers with the same
settings: our librdkafka one (`broker_bench produce` / `broker_bench fetch`,
--bench, default build/release/bin/broker_bench) and Kafka's own
kafka-producer-perf-test / kafka-consumer-perf-test (ProducerPerformance and
ConsumerPerformance from the kafka-tools jar, with their default client
settings, on this machine's Java 17).

Phases: produce 100 B and 1 KiB with acks=1 and acks=all, 1 KiB to 8 and 64
partitions, consume 100 B and 1 KiB (the acks=1 topics, one consumer, from
offset 0 to the end). With the librdkafka generator only (Kafka's perf tools
have no equivalent run at load): fan-out, 8 and 64 consumers at once of the
1 KiB acks=1 topic (one partition), each from offset 0 for --fanout-mb MB
(default 64) or to the end (aggregate rate from the first records any
reader got to the last record, the readers' start-up left out as in the
consume rows; fairness = the slowest consumer's rate / the fastest's, each
from the readers' creation to its last record); and produce-to-consume latency, 1 KiB
acks=1 at 20,000 msgs/s (producer linger.ms 5, librdkafka's default, and
0, the Java client's default in 3.9) and at 100,000 msgs/s (linger.ms 5),
for --e2e-secs (default 5) on a fresh topic (`broker_bench e2e`: each
message carries its send time, one consumer notes its arrival; the first
second is not counted), p50/p99/max; and one writer with readers, the 1 KiB
acks=1 produce again with 8 and with 64 consumers tailing its topic
(`broker_bench writers`; the readers start at the end before the writer
starts and must read all it wrote): its rate, and its share of the same
broker's rate alone in that round. These
rows go in a second table (ratio: fan-out ours / Kafka MB/s; latency ours /
Kafka p99, below 1 ours lower). Kafka's acks=all on one node never fsyncs (it leaves
flushing to the OS); ours fsyncs before answering unless
ciuic.acks.all.fsync=false, so the acks=all rows are printed twice: ours
with fsync on and with fsync off, each against the same Kafka figures.

Every phase runs --rounds times (default 3) on fresh brokers per round; in
each round the order of the brokers alternates (ours first in even rounds,
Kafka first in odd ones). A row's figures are medians over the rounds; the
ratio is median(ours) / median(Kafka) (above 1: ours is faster, or for
CPU-s/GB, uses more). Per run: records/s at the client, the broker's CPU
seconds (utime+stime from /proc/PID/stat, the delta over the run, client
start-up included) per GB of payload, and the broker's peak VmRSS during the
run (sampled every 50 ms). Every run is bounded by a record count and a
wall-clock limit, and the whole benchmark by --max-minutes.

Output: the table on stdout, and in --out a CSV (vs_kafka.csv), a Markdown
table (vs_kafka.md) and a chart of the ratios (vs_kafka.png, needs
python3-matplotlib). `--quick` is a check that the script works (small
counts, one round); its figures mean nothing. `--self-test` checks the pure
parts (perf-tool output parsing, /proc parsing, medians and ratios, the
table writers, all in vs_kafka_report.py) without starting anything; ctest
runs it (bench_vs_kafka_self_test, label unit).

Every broker and client is stopped, and the work directory removed, on exit,
on failure and on Ctrl-C / SIGTERM.
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vs_kafka_report import (KAFKA_VERSION, PHASES, Sample, csv_text, fmt,  # noqa: E402
                             markdown_table, parse_bench_json, parse_consumer_perf, parse_producer_perf,
                             proc_cpu_seconds, proc_rss_kib, readers_latency_markdown, readers_latency_rows,
                             self_test, summarize, text_table, write_chart)


def _import_launchers():
    sys.path.insert(0, os.path.join(ROOT, "tests", "differential"))
    sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
    import harness  # noqa: F401
    import kafka_server
    return harness, kafka_server


# The JVM options of Kafka's own bin/kafka-server-start.sh and
# bin/kafka-run-class.sh (heap 1 GiB, G1 with a 20 ms pause goal), so that
# the reference runs as Kafka's scripts would run it, not with the
# start-up-oriented flags the differential launcher uses.
KAFKA_JVM_OPTS = ["-Xmx1g", "-Xms1g", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                  "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                  "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true"]
# The perf tools as kafka-run-class.sh starts them (its default heap is 256 MiB; 512 for headroom).
TOOL_JVM_OPTS = ["-Xmx512m", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                 "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                 "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true", "-Duser.language=en"]


def make_kafka(kafka_server, work, tools, java):
    class KafkaReference(kafka_server.KafkaBroker):
        """The differential run's KRaft launcher, with Kafka's own JVM options and --kafka-tools."""

        def _java_cmd(self, main, *args):
            return [java] + KAFKA_JVM_OPTS + ["-Dlog4j.configuration=file:" + self.log4j,
                                              "-cp", os.path.join(tools, "*"), main] + list(args)

    return KafkaReference(work, start_timeout=180.0)


class RssSampler:
    """Peak VmRSS of one process, sampled every 50 ms while running."""

    def __init__(self, pid):
        self.pid, self.peak = pid, 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._loop, daemon=True)
        self._t.start()

    def _read(self):
        try:
            with open("/proc/%d/status" % self.pid) as f:
                self.peak = max(self.peak, proc_rss_kib(f.read()))
        except OSError:
            pass

    def _loop(self):
        while not self._stop.is_set():
            self._read()
            self._stop.wait(0.05)

    def finish(self):
        self._stop.set()
        self._t.join()
        self._read()
        return self.peak


def cpu_of(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return proc_cpu_seconds(f.read(), os.sysconf("SC_CLK_TCK"))
    except OSError:
        return None


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def uptime_line():
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "load average " + loadavg()


class Runner:
    """Runs one phase against one broker with one load generator."""

    def __init__(self, a, java, tools, work):
        self.a, self.java, self.tools = a, java, tools
        self.log4j = os.path.join(work, "tools-log4j.properties")
        with open(self.log4j, "w") as f:
            f.write("log4j.rootLogger=WARN, stderr\n"
                    "log4j.appender.stderr=org.apache.log4j.ConsoleAppender\n"
                    "log4j.appender.stderr.Target=System.err\n"
                    "log4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n"
                    "log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n\n")

    def _tool(self, main, args):
        return [self.java] + TOOL_JVM_OPTS + ["-Dlog4j.configuration=file:" + self.log4j,
                                              "-cp", os.path.join(self.tools, "*"), main] + args

    def _run(self, cmd, timeout):
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                           timeout=timeout)
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")

    def records_for(self, ph):
        return self.a.msgs_100 if ph.size == 100 else self.a.msgs_1k

    def produce(self, gen, bootstrap, ph, topic):
        n = self.records_for(ph)
        if gen == "rdkafka":
            rc, out, err = self._run([self.a.bench, "produce", "--brokers", bootstrap, "--topic", topic,
                                      "--acks", str(ph.acks), "--size", str(ph.size), "--msgs", str(n),
                                      "--secs", str(self.a.secs), "--partitions", str(ph.partitions)],
                                     self.a.secs + 60)
            r = parse_bench_json(out)
            error = r["error"] or ("%d failed" % r["failed"] if r["failed"] else "")
            return Sample(r["delivered"], r["delivered"] * ph.size, r["secs"], error=error)
        rc, out, err = self._run(self._tool("org.apache.kafka.tools.ProducerPerformance", [
            "--topic", topic, "--num-records", str(n), "--record-size", str(ph.size), "--throughput", "-1",
            "--producer-props", "bootstrap.servers=" + bootstrap, "acks=" + ("all" if ph.acks == -1 else "1")]),
            self.a.secs * 6 + 60)
        if rc != 0:
            return Sample(error="ProducerPerformance exit %d: %s" % (rc, err.strip()[-300:]))
        r = parse_producer_perf(out)
        return Sample(r["records"], r["records"] * ph.size, r["records"] / r["rate"] if r["rate"] > 0 else 0)

    def fanout(self, bootstrap, ph, topic, expect):
        budget = min(expect * ph.size / 1e6, float(self.a.fanout_mb))
        rc, out, err = self._run([self.a.bench, "fetch", "--brokers", bootstrap, "--topic", topic,
                                  "--partitions", "1", "--consumers", str(ph.readers), "--max-mb", str(budget),
                                  "--secs", str(self.a.secs * 4)], self.a.secs * 4 + 60)
        r = parse_bench_json(out)
        error = r["error"] or ("" if r["finished"] == ph.readers else
                               "%d of %d readers finished" % (r["finished"], ph.readers))
        # Fairness: each reader's records over the time from the readers' creation to its last
        # record (the start-up is about the same for every reader). stream_fairness, printed per
        # run: the same over each reader's own stream, from its first records.
        fair = r["slowest"] / r["fastest"] if r.get("fastest") else None
        extra = {"fairness": fair}
        if r["stream_fastest"] > 0:
            extra["stream_fairness"] = r["stream_slowest"] / r["stream_fastest"]
        # As in consume, the aggregate rate runs from the first records any reader got to the last
        # record, so the readers' start-up (about 0.5 s, the same with both brokers) is not
        # counted as the broker's time.
        if r["stream_msgs"] > 0 and r["stream_secs"] > 0:
            extra["first_record_s"] = r["first_record_s"]
            return Sample(r["stream_msgs"], r["stream_bytes"], r["stream_secs"], error=error, extra=extra,
                          cpu_bytes=r["bytes"])
        return Sample(r["msgs"], r["bytes"], r["secs"], error=error, extra=extra)

    def writers(self, bootstrap, ph, topic):
        n = self.records_for(ph)
        rc, out, err = self._run([self.a.bench, "writers", "--brokers", bootstrap, "--topic", topic,
                                  "--readers", str(ph.readers), "--size", str(ph.size), "--msgs", str(n),
                                  "--secs", str(self.a.secs * 2), "--acks", str(ph.acks)], self.a.secs * 2 + 90)
        r = parse_bench_json(out)
        error = r["error"] or ("%d failed" % r["failed"] if r["failed"] else "")
        return Sample(r["delivered"], r["delivered"] * ph.size, r["secs"], error=error,
                      extra={"read": r["read"], "fairness": r["slowest"] / r["fastest"] if r["fastest"] else None})

    def e2e(self, bootstrap, ph, topic):
        rc, out, err = self._run([self.a.bench, "e2e", "--brokers", bootstrap, "--topic", topic, "--rate",
                                  str(ph.rate), "--secs", str(self.a.e2e_secs), "--size", str(ph.size),
                                  "--linger", str(ph.linger_ms)],
                                 self.a.e2e_secs + 90)
        r = parse_bench_json(out)
        return Sample(r["counted"], r["counted"] * ph.size, r["secs"], error=r["error"],
                      extra={q: r[q] for q in ("p50_ms", "p99_ms", "p999_ms", "max_ms")})

    def consume(self, gen, bootstrap, ph, topic, partitions, expect, fetch_args=()):
        """fetch_args: more options of `broker_bench fetch` (librdkafka only)."""
        if gen == "rdkafka":
            rc, out, err = self._run([self.a.bench, "fetch", "--brokers", bootstrap, "--topic", topic,
                                      "--partitions", str(partitions), "--secs", str(self.a.secs * 3)] +
                                     list(fetch_args), self.a.secs * 3 + 60)
            r = parse_bench_json(out)
            error = r["error"] or ("" if r["finished"] and r["msgs"] == expect else
                                   "read %d of %d records" % (r["msgs"], expect))
            # The rate of the stream itself, from the first records to the last, as the Java tool's
            # fetch time: librdkafka's consumer start-up (about 0.5 s here, the same against both
            # brokers) would otherwise be half of a 1 M x 100 B run and pull every ratio to 1.
            if r["stream_msgs"] > 0 and r["stream_secs"] > 0:
                return Sample(r["stream_msgs"], r["stream_bytes"], r["stream_secs"], error=error,
                              extra={"first_record_s": r["first_record_s"]}, cpu_bytes=r["bytes"])
            # Everything came in the first call (a --quick run): only the whole run can be timed.
            return Sample(r["msgs"], r["bytes"], r["secs"], error=error)
        rc, out, err = self._run(self._tool("org.apache.kafka.tools.ConsumerPerformance", [
            "--bootstrap-server", bootstrap, "--topic", topic, "--messages", str(expect),
            "--timeout", "20000", "--group", "vs-kafka-" + topic]), self.a.secs * 6 + 60)
        if rc != 0:
            return Sample(error="ConsumerPerformance exit %d: %s" % (rc, err.strip()[-300:]))
        r = parse_consumer_perf(out)
        error = "" if r["records"] == expect else "read %d of %d records" % (r["records"], expect)
        return Sample(r["records"], r["records"] * ph.size, r["fetch_s"], error=error)


def create_topic(kafka_wire, port, name, partitions, timeout=30.0):
    """CreateTopics v2 over a raw connection (both brokers speak it), then
    wait until Metadata names a leader for every partition."""
    with kafka_wire.Conn(port, timeout=10.0) as c:
        res = c.create_topics([(name, partitions, 1)])
    err = res.get(name, (None, None))[0]
    if err not in (0, 36):  # 36: TOPIC_ALREADY_EXISTS
        raise RuntimeError("CreateTopics %s: error %s" % (name, res.get(name)))
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with kafka_wire.Conn(port, timeout=10.0) as c:
            md = c.metadata([name])
        t = [t for t in md["topics"] if t["name"] == name]
        if t and t[0]["error"] == 0 and len(t[0]["partitions"]) == partitions and \
                all(p["leader"] >= 0 for p in t[0]["partitions"]):
            return
        time.sleep(0.1)
    raise RuntimeError("no leaders for %s within %.0fs" % (name, timeout))


class Interrupted(BaseException):
    pass


def _on_signal(signum, frame):
    raise Interrupted("signal %d" % signum)


def measure(pid, fn):
    sampler = RssSampler(pid)
    cpu0 = cpu_of(pid)
    try:
        s = fn()
    except (ValueError, KeyError, RuntimeError, OSError, subprocess.SubprocessError) as e:
        s = Sample(error="%s: %s" % (type(e).__name__, str(e)[:300]))
    cpu1 = cpu_of(pid)
    s.rss_kib = sampler.finish()
    s.cpu_s = cpu1 - cpu0 if cpu0 is not None and cpu1 is not None else None
    if cpu1 is None:
        s.error = (s.error + "; " if s.error else "") + "BROKER GONE"
    return s


def run(a):
    harness, kafka_server = _import_launchers()
    import kafka_wire
    java = shutil.which("java")
    for path, what in ((a.broker, "our broker (build it: see README, Benchmarks)"),
                       (a.bench, "broker_bench (needs librdkafka-dev)"),
                       (os.path.join(a.kafka_tools, "kafka-tools-%s.jar" % KAFKA_VERSION),
                        "Kafka's tools (deploy/install-deps.sh builds them)"),
                       (java, "java (openjdk-17-jdk-headless)")):
        if not path or not os.path.exists(path):
            sys.exit("run_vs_kafka: %s missing: %s" % (what, path))
    generators = [g for g in ("rdkafka", "java") if g in a.generators.split(",")]
    want = set(a.only.split(",")) if a.only else {ph.slug for ph in PHASES}
    want |= {ph.source for ph in PHASES if ph.slug in want and ph.source}  # a consume phase needs its topic
    phases = [ph for ph in PHASES if ph.slug in want]
    os.makedirs(a.out, exist_ok=True)
    os.makedirs(a.work, exist_ok=True)
    base = tempfile.mkdtemp(prefix="vs-kafka.", dir=a.work)
    live = []
    results = {}
    started = time.monotonic()
    deadline = started + a.max_minutes * 60
    load_before = uptime_line()
    print("== %s on %d cores; %s" % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), os.cpu_count(),
                                     load_before), flush=True)
    print("== Kafka's acks=all on one node never fsyncs (it leaves flushing to the OS); ours fsyncs unless "
          "ciuic.acks.all.fsync=false: acks=all rows are given with ours fsync on and off.", flush=True)
    old = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    rounds_done = 0
    stopped_early = ""
    try:
        runner = Runner(a, java, a.kafka_tools, base)
        for rnd in range(a.rounds):
            if time.monotonic() > deadline:
                stopped_early = "stopped after %d of %d rounds: --max-minutes %g reached" % (
                    rounds_done, a.rounds, a.max_minutes)
                break
            work = os.path.join(base, "round%d" % rnd)
            os.makedirs(work)
            shared = dict(kafka_server.SHARED_OVERRIDES)
            ours = harness.Broker(a.broker, work, dict(shared), name="ours", stop_timeout=60.0)
            brokers = {"ours": ours}
            if any(ph.acks == -1 for ph in phases):
                brokers["ours-nofsync"] = harness.Broker(a.broker, work, dict(shared, **{
                    "ciuic.acks.all.fsync": "false"}), name="ours-nofsync", stop_timeout=60.0)
            brokers["kafka"] = make_kafka(kafka_server, work, a.kafka_tools, java)
            for name, b in brokers.items():
                live.append(b)
                b.start()
            pids = {name: b.proc.pid for name, b in brokers.items()}
            order = ["ours", "kafka"] if rnd % 2 == 0 else ["kafka", "ours"]
            print("\n== round %d of %d (%s first); load average %s" % (rnd + 1, a.rounds, order[0], loadavg()),
                  flush=True)
            produced = {}
            for gen in generators:
                for ph in phases:
                    if not ph.runs_with(gen):
                        continue
                    targets = []
                    for t in order:
                        targets += list(ph.variants) if t == "ours" else [t]
                    for t in targets:
                        if time.monotonic() > deadline:
                            raise TimeoutError("--max-minutes %g reached in round %d" % (a.max_minutes, rnd + 1))
                        b = brokers[t]
                        topic = "%s-%s" % (ph.slug, gen)
                        if ph.kind in ("produce", "e2e", "writers"):
                            try:
                                create_topic(kafka_wire, b.port, topic, ph.partitions)
                                if ph.kind == "produce":
                                    s = measure(pids[t], lambda: runner.produce(gen, b.bootstrap, ph, topic))
                                elif ph.kind == "writers":
                                    s = measure(pids[t], lambda: runner.writers(b.bootstrap, ph, topic))
                                else:
                                    s = measure(pids[t], lambda: runner.e2e(b.bootstrap, ph, topic))
                            except (OSError, RuntimeError, ValueError, kafka_wire.ConnectionClosed,
                                    kafka_wire.Truncated) as e:
                                s = Sample(error="creating %s: %r" % (topic, e))
                            if s.ok and ph.kind == "produce":
                                produced[(t, gen, ph.slug)] = s.records
                        else:
                            src = "%s-%s" % (ph.source, gen)
                            n = produced.get((t, gen, ph.source))
                            if not n:
                                s = Sample(error="nothing produced to %s" % src)
                            elif ph.kind == "fanout":
                                s = measure(pids[t], lambda: runner.fanout(b.bootstrap, ph, src, n))
                            else:
                                src_parts = next(p.partitions for p in PHASES if p.slug == ph.source)
                                s = measure(pids[t], lambda: runner.consume(gen, b.bootstrap, ph, src, src_parts, n))
                        results.setdefault((ph.slug, gen, t), []).append(s)
                        more = ""
                        if ph.kind in ("fanout", "writers"):
                            more = " fairness %s" % fmt(s.extra.get("fairness"), 2)
                            if "stream_fairness" in s.extra:
                                more += " (over each reader's stream %s, first records after %s s)" % (
                                    fmt(s.extra["stream_fairness"], 2), fmt(s.extra.get("first_record_s"), 3))
                        elif ph.kind == "consume" and "first_record_s" in s.extra:
                            more = " first records after %s s" % fmt(s.extra["first_record_s"], 3)
                        elif ph.kind == "e2e":
                            more = " p50 %s p99 %s max %s ms" % tuple(fmt(s.extra.get(q), 2) for q in (
                                "p50_ms", "p99_ms", "max_ms"))
                        print("  %-40s %-8s %-13s %10s rec/s %8s CPU-s/GB %6s MiB RSS%s %s" % (
                            ph.name, gen, t, fmt(s.rate, 0), fmt(s.cpu_per_gb, 2), fmt(s.rss_mib, 0), more,
                            s.error), flush=True)
            for b in brokers.values():
                stop_quietly(b)
                live.remove(b)
            shutil.rmtree(work, ignore_errors=True)
            rounds_done += 1
    except TimeoutError as e:
        stopped_early = str(e)
    except Interrupted as e:
        stopped_early = "interrupted (%s)" % e
        print("\n== %s: stopping everything" % stopped_early, flush=True)
    except Exception as e:  # noqa: BLE001 - a broker that fails to start: report what was measured
        traceback.print_exc()
        stopped_early = "failed: %s" % (str(e)[:300] or type(e).__name__)
    finally:
        for b in live:
            stop_quietly(b)
        for s, h in old.items():
            signal.signal(s, h)
        if not a.keep:
            shutil.rmtree(base, ignore_errors=True)
    load_after = uptime_line()
    report(a, results, phases, generators, load_before, load_after, rounds_done, stopped_early,
           time.monotonic() - started)
    return 1 if stopped_early.startswith(("interrupted", "failed")) else 0


def stop_quietly(b):
    try:
        b.stop()
    except BaseException as e:  # noqa: BLE001 - cleanup must reach every broker
        print("== stopping %s: %s; killing it" % (getattr(b, "dir", b), e), flush=True)
        try:
            b.kill()
        except BaseException:  # noqa: BLE001
            pass


def report(a, results, phases, generators, load_before, load_after, rounds_done, stopped_early, secs):
    rows = summarize(results, phases, generators)
    extra = readers_latency_markdown(readers_latency_rows(results, phases))
    if not rows and not extra:
        print("no results")
        return
    head = ("CiuicKafka vs Apache Kafka %s, single node on 127.0.0.1, %d round(s)%s, %.0f s; %d cores; "
            "load before: %s; after: %s" % (KAFKA_VERSION, rounds_done, " (QUICK: figures meaningless)"
                                            if a.quick else "", secs, os.cpu_count(), load_before, load_after))
    notes = [
        "Medians over rounds; ratio = ours / Kafka records/s (> 1: ours faster). CPU-s/GB: the broker "
        "process's utime+stime over the run per 10^9 payload bytes; peak RSS: the broker's VmRSS, "
        "sampled every 50 ms during the run.",
        "Kafka's acks=all on one node never fsyncs; ours does (ciuic.acks.all.fsync=true, the default) "
        "unless the row says fsync off.",
        "Consume rows: one consumer from offset 0 to the end of the acks=1 topic; the Java tool's rate is "
        "over its fetch time (group join excluded), librdkafka's from its first records to its last "
        "(client start-up excluded); the fan-out rows' aggregate rate likewise, from the first records any "
        "reader got to the last.",
        "Client and broker share this machine's cores; figures from a loaded machine are indicative only.",
    ]
    if stopped_early:
        notes.append("INCOMPLETE: " + stopped_early)
    if extra:
        notes.append("Fan-out and latency (librdkafka, broker_bench): fan-out ratio = ours / Kafka aggregate MB/s, "
                     "fairness = slowest reader's rate / fastest's; latency = produce-to-consume, 1 KiB acks=1 at "
                     "a fixed rate on a fresh topic, the first second not counted; its ratio = ours / Kafka p99 "
                     "(below 1: ours lower).")
    print("\n" + head)
    print(text_table(rows))
    if extra:
        print(extra)
    for n in notes:
        print("  * " + n)
    with open(os.path.join(a.out, "vs_kafka.csv"), "w") as f:
        f.write(csv_text(rows))
    with open(os.path.join(a.out, "vs_kafka.md"), "w") as f:
        f.write("# " + head + "\n\n" + markdown_table(rows) + "\n" + (extra + "\n" if extra else "") +
                "".join("* %s\n" % n for n in notes))
    chart = os.path.join(a.out, "vs_kafka.png")
    if write_chart(rows, chart, "CiuicKafka / Apache Kafka %s, %d round(s); load %s -> %s" % (
            KAFKA_VERSION, rounds_done, load_before.split("load average:")[-1].strip(),
            load_after.split("load average:")[-1].strip())):
        print("wrote %s, vs_kafka.md, vs_kafka.csv" % chart)
    else:
        print("wrote vs_kafka.md and vs_kafka.csv in %s (no chart: apt-get install python3-matplotlib)" % a.out)


def add_binary_args(ap):
    """--broker, --bench and --kafka-tools, with their defaults (BUILD_DIR, else build/release)."""
    build = os.environ.get("BUILD_DIR", os.path.join(ROOT, "build", "release"))
    ap.add_argument("--broker", default=os.path.join(build, "bin", "ciuickafka"))
    ap.add_argument("--bench", default=os.path.join(build, "bin", "broker_bench"))
    ap.add_argument("--kafka-tools", default=os.path.join(ROOT, "build", "java", "tools-" + KAFKA_VERSION))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_binary_args(ap)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--msgs-100", type=int, default=1_000_000, help="records per 100 B run")
    ap.add_argument("--msgs-1k", type=int, default=250_000, help="records per 1 KiB run")
    ap.add_argument("--secs", type=int, default=15, help="time bound of a librdkafka produce run")
    ap.add_argument("--fanout-mb", type=int, default=64, help="MB each fan-out reader reads (at most the topic)")
    ap.add_argument("--e2e-secs", type=int, default=5, help="sending time of a latency run")
    ap.add_argument("--max-minutes", type=float, default=45)
    ap.add_argument("--generators", default="rdkafka,java", help="rdkafka,java or one of them")
    ap.add_argument("--only", default="", help="phase slugs, comma-separated (%s); a consume phase brings "
                    "the produce phase that fills its topic" %
                    ",".join(ph.slug for ph in PHASES))
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "vs-kafka"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build"),
                    help="the brokers' data go to a fresh vs-kafka.* directory in here (same disk for both)")
    ap.add_argument("--keep", action="store_true", help="keep the data directory")
    ap.add_argument("--quick", action="store_true", help="small counts, one round: checks the script works")
    ap.add_argument("--self-test", action="store_true", help="check the pure parts and exit")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if a.quick:
        a.rounds, a.msgs_100, a.msgs_1k, a.secs, a.e2e_secs, a.fanout_mb = 1, 20_000, 5_000, 5, 2, 2
        a.max_minutes = min(a.max_minutes, 10)
    return run(a)


if __name__ == "__main__":
    sys.exit(main())
