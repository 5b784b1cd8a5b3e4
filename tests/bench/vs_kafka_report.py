"""tests/bench/vs_kafka_report.py: the pure parts of run_vs_kafka.py (issue #14).

Parsing of what the load generators print (kafka-producer-perf-test's
summary line, kafka-consumer-perf-test's header and values, broker_bench's
JSON line) and of /proc/PID/stat and status; the phase plan; medians over
rounds and the ours/Kafka ratios; the text, Markdown and CSV tables and the
chart. Nothing here starts a process; `self_test()` checks it all and is
what `run_vs_kafka.py --self-test` (ctest: bench_vs_kafka_self_test) runs.
Standard library only, but for matplotlib in write_chart (imported there).
"""

import csv
import io
import json
import re
import statistics
import time

KAFKA_VERSION = "3.9.1"

# ProducerPerformance's closing summary; its periodic window lines lack the
# percentiles, so "50th" tells them apart.
_PRODUCER_TOTAL = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th")


def parse_producer_perf(text):
    """The summary of kafka-producer-perf-test's output: records, records/s,
    MB/s (its MB: 2^20 bytes), latency avg/max/p50/p99 in ms."""
    found = None
    for line in text.splitlines():
        m = _PRODUCER_TOTAL.search(line)
        if m:
            found = m
    if found is None:
        raise ValueError("no ProducerPerformance summary line in: %r" % text[-500:])
    g = found.groups()
    return {"records": int(g[0]), "rate": float(g[1]), "mib_s": float(g[2]), "avg_ms": float(g[3]),
            "max_ms": float(g[4]), "p50_ms": int(g[5]), "p95_ms": int(g[6]), "p99_ms": int(g[7])}


def _perf_time(stamp):
    """ConsumerPerformance's default date format, yyyy-MM-dd HH:mm:ss:SSS, as seconds."""
    day, clock = stamp.split(" ")
    h, m, sec, ms = (int(x) for x in clock.split(":"))
    return time.mktime(time.strptime(day, "%Y-%m-%d")) + h * 3600 + m * 60 + sec + ms / 1000.0


def parse_consumer_perf(text):
    """kafka-consumer-perf-test's header and value line as a dict: records,
    elapsed_s (whole run), join_ms (group join), fetch_s (the rest), and
    rate = records / fetch_s (records / elapsed_s when fetch time is 0)."""
    lines = [ln.strip() for ln in text.splitlines()]
    for i, ln in enumerate(lines):
        if not ln.startswith("start.time,"):
            continue
        keys = [k.strip() for k in ln.split(",")]
        for vl in lines[i + 1:]:
            vals = [v.strip() for v in vl.split(",")]
            if len(vals) != len(keys):
                continue
            row = dict(zip(keys, vals))
            records = int(row["data.consumed.in.nMsg"])
            mb = float(row["data.consumed.in.MB"])
            elapsed = _perf_time(row["end.time"]) - _perf_time(row["start.time"])
            join_ms = int(row.get("rebalance.time.ms", "0"))
            fetch_ms = int(row.get("fetch.time.ms", "0"))
            fetch_s = fetch_ms / 1000.0 if fetch_ms > 0 else elapsed
            return {"records": records, "mib": mb, "elapsed_s": elapsed, "join_ms": join_ms,
                    "fetch_s": fetch_s, "rate": records / fetch_s if fetch_s > 0 else 0.0}
    raise ValueError("no ConsumerPerformance result in: %r" % text[-500:])


def parse_bench_json(text):
    """broker_bench produce/fetch print one JSON object on their last line."""
    lines = [ln for ln in text.strip().splitlines() if ln.startswith("{")]
    if not lines:
        raise ValueError("no JSON line from broker_bench in: %r" % text[-500:])
    return json.loads(lines[-1])


def proc_cpu_seconds(stat_text, clk_tck):
    """utime + stime from a /proc/PID/stat line (the command name may hold
    spaces and parentheses: fields are counted after the last ')')."""
    fields = stat_text.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / float(clk_tck)


def proc_rss_kib(status_text):
    for line in status_text.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def median(values):
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def ratio(ours, kafka):
    if ours is None or kafka is None or kafka <= 0:
        return None
    return ours / kafka


def per_gb(cpu_s, nbytes):
    if cpu_s is None or not nbytes:
        return None
    return cpu_s / (nbytes / 1e9)


class Phase:
    """kind: produce, consume (one consumer of source's topic), fanout (`readers` consumers of
    source's one-partition topic at once), writers (a produce like source's, with `readers`
    consumers tailing its topic; its rate is compared with source's) or e2e (produce-to-consume
    latency at `rate` msgs/s). fanout, writers and e2e are librdkafka (broker_bench) phases only."""

    def __init__(self, name, slug, kind, size, acks=1, partitions=1, source=None, readers=1, rate=0, linger_ms=5):
        self.name, self.slug, self.kind, self.size = name, slug, kind, size
        self.acks, self.partitions, self.source = acks, partitions, source
        self.readers, self.rate, self.linger_ms = readers, rate, linger_ms

    def runs_with(self, generator):
        return generator == "rdkafka" or self.kind in ("produce", "consume")

    @property
    def variants(self):
        """Our broker configurations measured in this phase: fsync matters only to acks=all."""
        return ("ours", "ours-nofsync") if self.kind == "produce" and self.acks == -1 else ("ours",)


PHASES = [
    Phase("produce 100 B, acks=1", "p100-a1", "produce", 100),
    Phase("produce 1 KiB, acks=1", "p1k-a1", "produce", 1024),
    Phase("produce 100 B, acks=all", "p100-aall", "produce", 100, acks=-1),
    Phase("produce 1 KiB, acks=all", "p1k-aall", "produce", 1024, acks=-1),
    Phase("produce 1 KiB, acks=1, 8 partitions", "p1k-8p", "produce", 1024, partitions=8),
    Phase("produce 1 KiB, acks=1, 64 partitions", "p1k-64p", "produce", 1024, partitions=64),
    Phase("consume 100 B", "c100", "consume", 100, source="p100-a1"),
    Phase("consume 1 KiB", "c1k", "consume", 1024, source="p1k-a1"),
    Phase("fan-out 1 KiB, 8 readers of one partition", "f8", "fanout", 1024, source="p1k-a1", readers=8),
    Phase("fan-out 1 KiB, 64 readers of one partition", "f64", "fanout", 1024, source="p1k-a1", readers=64),
    Phase("produce 1 KiB, acks=1, 8 readers tailing", "w8", "writers", 1024, source="p1k-a1", readers=8),
    Phase("produce 1 KiB, acks=1, 64 readers tailing", "w64", "writers", 1024, source="p1k-a1", readers=64),
    # linger.ms 5 is librdkafka's default; with 0 (the Java client's default in 3.9) every message
    # may go in a request of its own, and Kafka answers one request per connection at a time.
    Phase("latency 1 KiB at 20,000 msgs/s, linger.ms 5", "e2e-20k", "e2e", 1024, rate=20000),
    Phase("latency 1 KiB at 20,000 msgs/s, linger.ms 0", "e2e-20k-l0", "e2e", 1024, rate=20000, linger_ms=0),
    Phase("latency 1 KiB at 100,000 msgs/s, linger.ms 5", "e2e-100k", "e2e", 1024, rate=100000),
]
GENERATORS = {"rdkafka": "librdkafka (broker_bench)", "java": "Kafka perf-test (Java)"}
VARIANT_LABEL = {"ours": " [ours: fsync on]", "ours-nofsync": " [ours: fsync off]"}


class Sample:
    """One run of one phase against one broker."""

    def __init__(self, records=0, nbytes=0, secs=0.0, cpu_s=None, rss_kib=0, error="", extra=None,
                 cpu_bytes=None):
        self.records, self.bytes, self.secs = records, nbytes, secs
        # The broker's CPU is taken over the whole run: where the rate covers only part of it (a
        # consumer's stream without its start-up), cpu_bytes is everything the run moved.
        self.cpu_bytes = nbytes if cpu_bytes is None else cpu_bytes
        self.cpu_s, self.rss_kib, self.error = cpu_s, rss_kib, error
        self.extra = dict(extra or {})  # fanout: fairness; e2e: p50_ms, p99_ms, p999_ms, max_ms

    @property
    def ok(self):
        return not self.error and self.records > 0 and self.secs > 0

    @property
    def rate(self):
        return self.records / self.secs if self.ok else None

    @property
    def cpu_per_gb(self):
        return per_gb(self.cpu_s, self.cpu_bytes) if self.ok else None

    @property
    def rss_mib(self):
        return self.rss_kib / 1024.0 if self.ok and self.rss_kib else None


def summarize(results, phases=PHASES, generators=("rdkafka", "java")):
    """results: {(phase slug, generator, target): [Sample]}, target being
    'kafka', 'ours' or 'ours-nofsync'. One row per phase, generator and our
    variant, medians over the good samples."""
    rows = []
    for gen in generators:
        for ph in phases:
            if ph.kind in ("e2e", "writers"):  # their own table (readers_latency_rows)
                continue
            k = results.get((ph.slug, gen, "kafka"), [])
            for var in ph.variants:
                o = results.get((ph.slug, gen, var), [])
                if not o and not k:
                    continue
                row = {"phase": ph.name + (VARIANT_LABEL[var] if len(ph.variants) > 1 else ""), "generator": GENERATORS[gen], "size": ph.size,
                       "ours_runs": sum(1 for s in o if s.ok), "kafka_runs": sum(1 for s in k if s.ok),
                       "errors": "; ".join(sorted({s.error for s in o + k if s.error}))}
                for who, samples in (("ours", o), ("kafka", k)):
                    row[who + "_rate"] = median([s.rate for s in samples])
                    row[who + "_cpu_gb"] = median([s.cpu_per_gb for s in samples])
                    row[who + "_rss_mib"] = median([s.rss_mib for s in samples])
                    row[who + "_mb_s"] = None if row[who + "_rate"] is None else row[who + "_rate"] * ph.size / 1e6
                row["ratio"] = ratio(row["ours_rate"], row["kafka_rate"])
                row["cpu_ratio"] = ratio(row["ours_cpu_gb"], row["kafka_cpu_gb"])
                rows.append(row)
    return rows


def readers_latency_rows(results, phases=PHASES):
    """The fan-out and latency phases (librdkafka only): medians over the good runs of the
    aggregate MB/s and fairness (slowest reader / fastest), or of the latency percentiles."""
    rows = []
    for ph in phases:
        if ph.kind not in ("fanout", "e2e", "writers"):
            continue
        o = [x for x in results.get((ph.slug, "rdkafka", "ours"), []) if x.ok]
        k = [x for x in results.get((ph.slug, "rdkafka", "kafka"), []) if x.ok]
        if not o and not k:
            continue
        row = {"phase": ph.name, "kind": ph.kind, "ours_runs": len(o), "kafka_runs": len(k)}
        for who, samples in (("ours", o), ("kafka", k)):
            if ph.kind == "fanout":
                rate = median([x.rate for x in samples])
                row[who + "_mb_s"] = None if rate is None else rate * ph.size / 1e6
                row[who + "_fairness"] = median([x.extra.get("fairness") for x in samples])
            elif ph.kind == "writers":
                row[who + "_rate"] = median([x.rate for x in samples])
                target = "ours" if who == "ours" else "kafka"
                alone = median([x.rate for x in results.get((ph.source, "rdkafka", target), []) if x.ok])
                row[who + "_share"] = ratio(row[who + "_rate"], alone)
            else:
                for q in ("p50_ms", "p99_ms", "max_ms"):
                    row[who + "_" + q] = median([x.extra.get(q) for x in samples])
            row[who + "_cpu_gb"] = median([x.cpu_per_gb for x in samples])
        if ph.kind == "fanout":
            row["ratio"] = ratio(row["ours_mb_s"], row["kafka_mb_s"])
        elif ph.kind == "writers":
            row["ratio"] = ratio(row["ours_rate"], row["kafka_rate"])
        else:
            row["ratio"] = ratio(row["ours_p99_ms"], row["kafka_p99_ms"])
        rows.append(row)
    return rows


# Per kind of readers_latency_rows row: its table's columns, (header, key, precision).
READERS_LATENCY_COLUMNS = [
    ("fanout", [("ours MB/s", "ours_mb_s", 1), ("Kafka MB/s", "kafka_mb_s", 1), ("ratio", "ratio", 2),
                ("ours fairness", "ours_fairness", 2), ("Kafka fairness", "kafka_fairness", 2),
                ("ours CPU-s/GB", "ours_cpu_gb", 2), ("Kafka CPU-s/GB", "kafka_cpu_gb", 2)]),
    ("writers", [("ours rec/s", "ours_rate", 0), ("Kafka rec/s", "kafka_rate", 0), ("ratio", "ratio", 2),
                 ("ours share of its rate alone", "ours_share", 2),
                 ("Kafka share of its rate alone", "kafka_share", 2),
                 ("ours CPU-s/GB", "ours_cpu_gb", 2), ("Kafka CPU-s/GB", "kafka_cpu_gb", 2)]),
    ("e2e", [("ours p50 ms", "ours_p50_ms", 2), ("Kafka p50 ms", "kafka_p50_ms", 2),
             ("ours p99 ms", "ours_p99_ms", 2), ("Kafka p99 ms", "kafka_p99_ms", 2),
             ("p99 ours / Kafka", "ratio", 2), ("ours max ms", "ours_max_ms", 1),
             ("Kafka max ms", "kafka_max_ms", 1)]),
]


def readers_latency_markdown(rows):
    """One small table per kind: fan-out (ratio = ours / Kafka MB/s), writer with readers (ratio = ours /
    Kafka rec/s; share = the rate with readers / the same broker's rate alone) and latency (ratio = ours /
    Kafka p99: below 1, ours lower)."""
    out = []
    for kind, cols in READERS_LATENCY_COLUMNS:
        mine = [r for r in rows if r["kind"] == kind]
        if not mine:
            continue
        out.append("| phase | " + " | ".join(h for h, _, _ in cols) + " | runs ours/Kafka |")
        out.append("|---|" + "---:|" * (len(cols) + 1))
        for r in mine:
            out.append("| %s | %s | %d/%d |" % (r["phase"], " | ".join(fmt(r[k], p) for _, k, p in cols),
                                                 r["ours_runs"], r["kafka_runs"]))
        out.append("")
    return "\n".join(out)


def fmt(v, prec):
    """v with prec decimals; '-' for a missing figure."""
    return "-" if v is None else "%.*f" % (prec, v)


COLUMNS = [  # (header, key, precision)
    ("phase", "phase", None), ("load generator", "generator", None),
    ("ours rec/s", "ours_rate", 0), ("Kafka rec/s", "kafka_rate", 0), ("ratio", "ratio", 2),
    ("ours MB/s", "ours_mb_s", 1), ("Kafka MB/s", "kafka_mb_s", 1),
    ("ours CPU-s/GB", "ours_cpu_gb", 2), ("Kafka CPU-s/GB", "kafka_cpu_gb", 2),
    ("ours peak RSS MiB", "ours_rss_mib", 0), ("Kafka peak RSS MiB", "kafka_rss_mib", 0),
    ("runs ours/Kafka", None, None),
]


def _cell(row, key, prec):
    if key is None:
        return "%d/%d" % (row["ours_runs"], row["kafka_runs"])
    return row[key] if prec is None else fmt(row[key], prec)


def markdown_table(rows):
    out = ["| " + " | ".join(h for h, _, _ in COLUMNS) + " |",
           "|" + "|".join("---" if p is None and k is not None else "---:" for _, k, p in COLUMNS) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(_cell(r, k, p)) for _, k, p in COLUMNS) + " |")
    return "\n".join(out) + "\n"


def text_table(rows):
    cells = [[h for h, _, _ in COLUMNS]] + [[str(_cell(r, k, p)) for _, k, p in COLUMNS] for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(COLUMNS))]
    lines = []
    for n, c in enumerate(cells):
        lines.append("  ".join(c[i].ljust(widths[i]) if i < 2 else c[i].rjust(widths[i]) for i in range(len(c))))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"


CSV_KEYS = ["phase", "generator", "size", "ours_rate", "kafka_rate", "ratio", "ours_mb_s", "kafka_mb_s",
            "ours_cpu_gb", "kafka_cpu_gb", "cpu_ratio", "ours_rss_mib", "kafka_rss_mib", "ours_runs",
            "kafka_runs", "errors"]


def csv_text(rows):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_KEYS)
    for r in rows:
        w.writerow(["" if r[k] is None else ("%.4f" % r[k] if isinstance(r[k], float) else r[k]) for k in CSV_KEYS])
    return buf.getvalue()


def write_chart(rows, path, title):
    """A horizontal bar per row: ours / Kafka records/s. False when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rows = [r for r in rows if r["ratio"] is not None]
    labels = ["%s (%s)" % (r["phase"], "rdkafka" if r["generator"].startswith("librdkafka") else "Java perf-test")
              for r in rows]
    vals = [r["ratio"] for r in rows]
    fig, ax = plt.subplots(figsize=(10, 0.42 * len(rows) + 1.6))
    colors = ["#2a7ab0" if v >= 1 else "#c0504d" for v in vals]
    y = list(range(len(rows)))[::-1]
    ax.barh(y, vals, color=colors)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=8)
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_xlim(0, max(vals + [1.0]) * 1.15)
    for yy, v in zip(y, vals):
        ax.text(v, yy, " %.2f" % v, va="center", fontsize=7)
    ax.set_xlabel("records/s, CiuicKafka / Apache Kafka %s (median of rounds; > 1: ours faster)" % KAFKA_VERSION)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# ---- self-test (no broker, no Kafka, no matplotlib) -------------------------

_PRODUCER_SAMPLE = """\
123401 records sent, 24675.3 records/sec (2.35 MB/sec), 1021.4 ms avg latency, 1530.0 ms max latency.
200000 records sent, 33322.225925 records/sec (3.18 MB/sec), 800.51 ms avg latency, 1530.00 ms max latency, \
813 ms 50th, 1377 ms 95th, 1490 ms 99th, 1523 ms 99.9th.
"""
_CONSUMER_SAMPLE = """\
start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, \
fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
2026-12-03 06:30:01:123, 2026-12-03 06:30:05:123, 97.6562, 24.4141, 100000, 25000.0000, 2000, 2000, \
48.8281, 50000.0000
"""


def self_test():
    def eq(a, b, what):
        if a != b:
            raise AssertionError("%s: %r != %r" % (what, a, b))

    def near(a, b, what):
        if a is None or abs(a - b) > 1e-6 * max(1.0, abs(b)):
            raise AssertionError("%s: %r !~ %r" % (what, a, b))

    p = parse_producer_perf(_PRODUCER_SAMPLE)
    eq(p["records"], 200000, "producer records (the summary, not the window line)")
    near(p["rate"], 33322.225925, "producer rate")
    eq((p["p50_ms"], p["p99_ms"]), (813, 1490), "producer percentiles")
    try:
        parse_producer_perf(_PRODUCER_SAMPLE.splitlines()[0])
        raise AssertionError("a window line alone was taken for the summary")
    except ValueError:
        pass
    c = parse_consumer_perf("WARN something\n" + _CONSUMER_SAMPLE)
    eq(c["records"], 100000, "consumer records")
    near(c["rate"], 50000.0, "consumer rate over fetch time, group join excluded")
    near(c["elapsed_s"], 4.0, "consumer elapsed")
    eq(c["join_ms"], 2000, "consumer join time")
    no_fetch = _CONSUMER_SAMPLE.replace(", 2000, 2000,", ", 0, 0,")
    near(parse_consumer_perf(no_fetch)["rate"], 25000.0, "consumer rate falls back to elapsed time")
    for bad in ("", "start.time, end.time\n", "nothing here"):
        try:
            parse_consumer_perf(bad)
            raise AssertionError("parsed garbage %r" % bad)
        except (ValueError, KeyError):
            pass
    j = parse_bench_json("%3|rdkafka noise\n{\"sent\":10,\"delivered\":10,\"failed\":0,\"bytes\":1000,"
                         "\"secs\":0.5,\"error\":\"\"}\n")
    eq(j["delivered"], 10, "broker_bench JSON")
    stat = "4242 (ciuic kafka) (x)) S 1 2 3 4 5 6 7 8 9 10 250 150 0 0 20 0 9 0 100 0 0"
    near(proc_cpu_seconds(stat, 100), 4.0, "utime+stime after the last ')'")
    eq(proc_rss_kib("Name:\tx\nVmHWM:\t999 kB\nVmRSS:\t  5120 kB\n"), 5120, "VmRSS")
    eq(median([3.0, None, 1.0, 2.0]), 2.0, "median skips missing runs")
    eq(median([None]), None, "median of nothing")
    near(median([1.0, 2.0]), 1.5, "even median")
    near(ratio(3.0, 2.0), 1.5, "ratio")
    eq(ratio(1.0, 0.0), None, "ratio over zero")
    eq(ratio(None, 2.0), None, "ratio of missing")
    near(per_gb(2.0, 500_000_000), 4.0, "CPU-s per GB")
    # A stream's rate over part of a run, its CPU per GB over all that the run moved.
    st = Sample(900, 900_000_000, 1.0, 2.0, extra={}, cpu_bytes=1_000_000_000)
    near(st.rate, 900.0, "stream rate from the stream's records")
    near(st.cpu_per_gb, 2.0, "CPU per GB over the whole run's bytes")
    near(Sample(900, 500_000_000, 1.0, 2.0).cpu_per_gb, 4.0, "CPU per GB over the rate's bytes by default")

    # summarize: acks=all rows twice (fsync on, off), each against the same Kafka runs.
    s = Sample
    res = {("p100-aall", "java", "kafka"): [s(100, 10000, 1.0, 0.5, 2048), s(300, 30000, 1.0, 0.3, 4096),
                                            s(200, 20000, 1.0, 0.2, 1024)],
           ("p100-aall", "java", "ours"): [s(100, 10000, 1.0, 0.1, 1024), s(0, 0, 0, None, 0, "boom"),
                                           s(300, 30000, 1.0, 0.1, 1024)],
           ("p100-aall", "java", "ours-nofsync"): [s(400, 40000, 1.0, 0.4, 1024)]}
    rows = summarize(res, phases=[PHASES[2]], generators=("java",))
    eq(len(rows), 2, "two acks=all rows")
    r0, r1 = rows
    near(r0["kafka_rate"], 200.0, "Kafka median rate")
    near(r0["ours_rate"], 200.0, "ours median rate, the failed run left out")
    near(r0["ratio"], 1.0, "ratio of medians")
    eq((r0["ours_runs"], r0["kafka_runs"]), (2, 3), "good runs counted")
    eq(r0["errors"], "boom", "errors kept")
    near(r0["kafka_cpu_gb"], 10000.0, "Kafka CPU-s/GB median of 0.5 s / 10 kB, 0.3 s / 30 kB, 0.2 s / 20 kB")
    near(r0["kafka_rss_mib"], 2.0, "Kafka RSS median")
    near(r0["kafka_mb_s"], 0.02, "MB/s from records/s and size")
    eq(r1["phase"], "produce 100 B, acks=all [ours: fsync off]", "fsync-off row label")
    near(r1["ratio"], 2.0, "fsync-off ratio against the same Kafka runs")
    md = markdown_table(rows)
    eq(md.count("\n"), 4, "markdown: header, rule, two rows")
    if "| produce 100 B, acks=all [ours: fsync on] | Kafka perf-test (Java) | 200 | 200 | 1.00 |" not in md:
        raise AssertionError("markdown row: %s" % md)
    parsed = list(csv.DictReader(io.StringIO(csv_text(rows))))
    eq(len(parsed), 2, "csv rows")
    eq(parsed[1]["ratio"], "2.0000", "csv ratio")
    eq(parsed[0]["ours_runs"], "2", "csv run count")
    if "ratio" not in text_table(rows).splitlines()[0]:
        raise AssertionError("text table header")
    # Fan-out and latency: their own table, medians of the good runs; ratio = ours / Kafka.
    f8 = next(ph for ph in PHASES if ph.slug == "f8")
    e20 = next(ph for ph in PHASES if ph.slug == "e2e-20k")
    res = {("f8", "rdkafka", "ours"): [s(1000, 1024000, 1.0, extra={"fairness": 0.9}),
                                       s(3000, 3072000, 1.0, extra={"fairness": 0.7}), s(error="x")],
           ("f8", "rdkafka", "kafka"): [s(1000, 1024000, 2.0, extra={"fairness": 0.5})],
           ("e2e-20k", "rdkafka", "ours"): [s(10, 10240, 1.0, extra={"p50_ms": 1.0, "p99_ms": 2.0, "max_ms": 3.0})],
           ("e2e-20k", "rdkafka", "kafka"): [s(10, 10240, 1.0, extra={"p50_ms": 2.0, "p99_ms": 8.0, "max_ms": 9.0}),
                                             s(10, 10240, 1.0, extra={"p50_ms": 4.0, "p99_ms": 4.0, "max_ms": 5.0})]}
    rl = readers_latency_rows(res, phases=[f8, e20])
    eq([r["kind"] for r in rl], ["fanout", "e2e"], "one row per phase, in order")
    near(rl[0]["ours_mb_s"], 2.048, "fan-out median records/s x size")
    near(rl[0]["ratio"], 4.0, "fan-out ratio of MB/s")
    near(rl[0]["ours_fairness"], 0.8, "fairness median")
    eq((rl[0]["ours_runs"], rl[0]["kafka_runs"]), (2, 1), "failed runs left out")
    near(rl[1]["kafka_p99_ms"], 6.0, "p99 median")
    near(rl[1]["ratio"], 2.0 / 6.0, "latency ratio = ours p99 / Kafka p99")
    md2 = readers_latency_markdown(rl)
    if "| fan-out 1 KiB, 8 readers of one partition | 2.0 | 0.5 | 4.00 | 0.80 | 0.50 |" not in md2 or \
            "| latency 1 KiB at 20,000 msgs/s, linger.ms 5 | 1.00 | 3.00 | 2.00 | 6.00 | 0.33 |" not in md2:
        raise AssertionError("readers/latency markdown: %s" % md2)
    eq(summarize(res, phases=[f8, e20], generators=("rdkafka",))[0]["phase"], f8.name,
       "fan-out rows in the main table, latency rows not")
    eq(len(summarize(res, phases=[f8, e20], generators=("rdkafka",))), 1, "no latency row in the main table")
    w8 = next(ph for ph in PHASES if ph.slug == "w8")
    res = {("w8", "rdkafka", "ours"): [s(500, 512000, 1.0)], ("w8", "rdkafka", "kafka"): [s(100, 102400, 1.0)],
           ("p1k-a1", "rdkafka", "ours"): [s(1000, 1024000, 1.0)], ("p1k-a1", "rdkafka", "kafka"): [s(400, 409600, 1.0)]}
    (w,) = readers_latency_rows(res, phases=[w8])
    near(w["ratio"], 5.0, "writer ratio ours / Kafka")
    near(w["ours_share"], 0.5, "ours: rate with readers / rate alone")
    near(w["kafka_share"], 0.25, "Kafka: rate with readers / rate alone")
    # The plan: every consume phase reads a produce phase's topic; only acks=all has the fsync variant.
    slugs = {ph.slug for ph in PHASES}
    for ph in PHASES:
        if ph.kind in ("consume", "fanout", "writers") and ph.source not in slugs:
            raise AssertionError("%s reads unknown topic %s" % (ph.slug, ph.source))
        eq(len(ph.variants), 2 if ph.acks == -1 else 1, "variants of " + ph.slug)
    print("run_vs_kafka self-test: ok")
    return 0
