#!/usr/bin/python3
"""tests/bench/run_vs_mock.py: one librdkafka consumer reading from our broker and from librdkafka's mock cluster (issue #14).

    tests/bench/run_vs_mock.py [--rounds 7] [--partitions 32] [--msgs-100 1200000] [--msgs-1k 144000]

Not a test: it prints figures, nothing is asserted. Issue #14 asks that
librdkafka's consumer read from us at least as fast as from librdkafka's
own in-memory mock broker "in the same run". Two brokers on 127.0.0.1: our
Release broker (--broker, default build/release/bin/ciuickafka, or
BUILD_DIR) with its defaults, and the mock cluster of one broker served by
`broker_bench mock` in a process of its own. For 100 B and 1 KiB records:
one topic of --partitions partitions on each, filled by `broker_bench produce` (acks=1,
round-robin over the partitions); then, --rounds times, one `broker_bench
fetch` consumer reads every partition from offset 0 to its end from each
broker, the order alternating per round: once with the consumer's
max.partition.fetch.bytes at librdkafka's default (1 MiB), once at the
8 MiB broker_bench uses in run_vs_kafka.py. The rate runs from the first
records to the last (the consumer's start-up left out, as in
run_vs_kafka.py); the broker's CPU is the process's utime+stime over the
whole read, per GB; medians over the rounds; ratio = ours / mock.

The mock keeps at most 5 MiB per partition and drops older batches (a bound
in librdkafka itself), so the data is spread thin: 1,200,000 x 100 B and
144,000 x 1 KiB over 32 partitions, under 5 MiB each (about 150 MB a
topic). A read takes a fraction of a second, and librdkafka starts its
partitions one by one (a partition whose leader it does not know yet waits
for a 500 ms offset-query timer), which fewer partitions or records make a
larger share of the window: the rounds are many and the medians are what to
read. A read that gets fewer records than were produced (the mock dropped
some) is an error, not a figure.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_vs_kafka import ROOT, Runner, _import_launchers, add_binary_args, create_topic, measure  # noqa: E402
from vs_kafka_report import PHASES, Phase, fmt, median  # noqa: E402

# The readers' max.partition.fetch.bytes: librdkafka's default, and the 8 MiB
# broker_bench uses elsewhere (run_vs_kafka.py). The mock answers each
# partition with one record batch whatever the setting; ours sends up to it.
PARTITION_MAX_BYTES = (1048576, 8388608)
PMB_LABEL = {1048576: "1 MiB (librdkafka's default)", 8388608: "8 MiB (broker_bench's)"}


def start_mock(bench, topics, partitions):
    cmd = [bench, "mock"]
    for t in topics:
        cmd += ["--topic", "%s:%d" % (t, partitions)]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    line = p.stdout.readline().decode()
    if not line:
        p.wait(10)
        sys.exit("run_vs_mock: broker_bench mock exited %s before serving" % p.returncode)
    return p, json.loads(line)["bootstrap"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_binary_args(ap)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--msgs-100", type=int, default=1_200_000)
    ap.add_argument("--msgs-1k", type=int, default=144_000)
    ap.add_argument("--partitions", type=int, default=32, help="of each topic (the mock keeps 5 MiB of each)")
    ap.add_argument("--secs", type=int, default=15, help="time bound of a produce run (a read gets 3x)")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "vs-mock"))
    a = ap.parse_args()
    for path in (a.broker, a.bench):
        if not os.path.exists(path):
            sys.exit("run_vs_mock: %s missing (see README, Benchmarks)" % path)
    harness, kafka_server = _import_launchers()
    import kafka_wire  # tests/integration, on the path from here
    work = tempfile.mkdtemp(prefix="vs-mock.", dir=os.path.join(ROOT, "build"))
    runner = Runner(a, None, None, work)
    phases = [(next(p for p in PHASES if p.slug == c), next(p for p in PHASES if p.slug == s))
              for c, s in (("c100", "p100-a1"), ("c1k", "p1k-a1"))]
    topics = {c.slug: "vs-mock-" + c.slug for c, _ in phases}
    ours = harness.Broker(a.broker, work, dict(kafka_server.SHARED_OVERRIDES), name="ours", stop_timeout=60.0)
    mock, mock_bootstrap = None, None
    rows = []
    try:
        ours.start()
        mock, mock_bootstrap = start_mock(a.bench, topics.values(), a.partitions)
        targets = {"ours": (ours.bootstrap, ours.proc.pid), "mock": (mock_bootstrap, mock.pid)}
        print("== ours on %s, the mock on %s; %d rounds" % (ours.bootstrap, mock_bootstrap, a.rounds), flush=True)
        for consume, source in phases:
            topic = topics[consume.slug]
            create_topic(kafka_wire, ours.port, topic, a.partitions)
            fill = Phase(source.name, source.slug, "produce", source.size, partitions=a.partitions)
            produced = {}
            for t, (bootstrap, _) in targets.items():
                s = runner.produce("rdkafka", bootstrap, fill, topic)
                if not s.ok:
                    sys.exit("run_vs_mock: filling %s on %s: %s" % (topic, t, s.error))
                produced[t] = s.records
            for pmb in PARTITION_MAX_BYTES:
                samples = {"ours": [], "mock": []}
                label = "%s, max.partition.fetch.bytes %s" % (consume.name, PMB_LABEL[pmb])
                for rnd in range(a.rounds):
                    order = ("ours", "mock") if rnd % 2 == 0 else ("mock", "ours")
                    for t in order:
                        bootstrap, pid = targets[t]
                        s = measure(pid, lambda: runner.consume(
                            "rdkafka", bootstrap, consume, topic, a.partitions, produced[t],
                            fetch_args=("--partition-max-bytes", str(pmb))))
                        samples[t].append(s)
                        print("  %-52s %-5s %9s rec/s %6s CPU-s/GB%s" % (
                            label, t, fmt(s.rate, 0), fmt(s.cpu_per_gb, 2),
                            "  ERROR " + s.error if s.error else ""), flush=True)
                ok = {t: [s for s in v if s.ok] for t, v in samples.items()}
                rate = {t: median([s.rate for s in v]) if v else None for t, v in ok.items()}
                cpu = {t: median([s.cpu_per_gb for s in v if s.cpu_per_gb is not None]) if v else None
                       for t, v in ok.items()}
                span = {t: "%.0f-%.0f k" % (min(s.rate for s in v) / 1e3, max(s.rate for s in v) / 1e3)
                        if v else "-" for t, v in ok.items()}
                rows.append((label, produced["ours"], rate["ours"], rate["mock"],
                             rate["ours"] / rate["mock"] if rate["ours"] and rate["mock"] else None,
                             cpu["ours"], cpu["mock"], span["ours"], span["mock"], len(ok["ours"]),
                             len(ok["mock"]), a.rounds))
    finally:
        if mock is not None:
            mock.stdin.close()
            mock.wait(30)
        ours.stop()
        shutil.rmtree(work, ignore_errors=True)
    table = ["| phase | records | ours rec/s | mock rec/s | ratio | ours CPU-s/GB | mock CPU-s/GB | "
             "ours, each run | mock, each run | runs ours/mock |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, n, r_ours, r_mock, ratio, c_ours, c_mock, s_ours, s_mock, n_ours, n_mock, rounds in rows:
        table.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %d/%d of %d |" % (
            name, n, fmt(r_ours, 0), fmt(r_mock, 0), fmt(ratio, 2), fmt(c_ours, 2), fmt(c_mock, 2),
            s_ours, s_mock, n_ours, n_mock, rounds))
    text = "\n".join(table) + "\n"
    print("\n" + text)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "vs_mock.md"), "w") as f:
        f.write(text)
    print("wrote %s" % os.path.join(a.out, "vs_mock.md"))


if __name__ == "__main__":
    main()
