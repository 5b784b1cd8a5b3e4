#!/usr/bin/python3
"""tests/bench/run_cold_vs_kafka.py: the cold-replay phase (issue #14) on CiuicKafka and Apache Kafka 3.9.1.

    tests/bench/run_cold_vs_kafka.py [--rounds 2] [--scale 1] [--broker BIN] [--bench BIN] [--kafka-tools DIR]

Not a test: it prints figures, nothing is asserted. Each round starts a
fresh single-node broker of each kind on 127.0.0.1 (ours with its defaults;
Kafka by run_vs_kafka.py's launcher, KRaft, Kafka's defaults and JVM
options), data on the same disk (a fresh cold-vs-kafka.* directory under
--work), and runs `broker_bench run --only cold` against it: the bench
fills bench-hot (1 GB) and bench-cold (2 GB) with 1 KiB records, then
measures 8 readers of bench-hot for one window each: alone, beside one
reader replaying bench-cold from the page cache, and beside the same
replay after the bench dropped bench-cold's files from the page cache
(fsync, POSIX_FADV_DONTNEED, checked with RWF_NOWAIT probes). The order of
the brokers alternates by round. The table gives, per broker, the hot
readers' MB/s in each row (medians over the rounds), the share the cold
replay leaves them (issue #14: >= 90 % of alone), and the replay's own MB/s.
With --scale F the counts and windows are F times the above. This
machine's virtual disk serves cold reads near page-cache speed; with
--read-limit "MAJ:MIN BYTES_PER_S" (root, cgroup v1 blkio, as
run_broker_bench.sh's BENCH_READ_LIMIT) the disk reads of the broker (the
whole JVM for Kafka) and of broker_bench are limited to that rate, a
slower disk.
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "bench"))

from run_vs_kafka import (KAFKA_VERSION, _import_launchers, add_binary_args, loadavg, make_kafka,  # noqa: E402
                          stop_quietly)

ROWS = [("alone", "8 hot readers, alone"),
        ("cached", "8 hot + replay 2 GB from page cache"),
        ("cold", "8 hot + replay 2 GB from disk")]
REPLAY = re.compile(r"replay ([0-9.]+) MB/s")


def parse_rows(out):
    """{key: (hot MB/s, replay MB/s or None)} from broker_bench's table."""
    found = {}
    for line in out.splitlines():
        for key, name in ROWS:
            if line.startswith(name + " ") and len(line) > 36:
                fields = line[36:].split()
                try:
                    mbps = float(fields[1])
                except (IndexError, ValueError):
                    continue
                m = REPLAY.search(line)
                found[key] = (mbps, float(m.group(1)) if m else None)
    return found


def run_bench(a, bootstrap, pid, data_dir):
    cmd = [a.bench, "run", "--brokers", bootstrap, "--pid", str(pid), "--data-dir", data_dir,
           "--only", "cold", "--scale", str(a.scale)]
    cgroup = None
    if a.read_limit:
        cgroup = "/sys/fs/cgroup/blkio/ck-cold-vs-kafka.%d" % os.getpid()
        os.makedirs(cgroup, exist_ok=True)
        with open(os.path.join(cgroup, "blkio.throttle.read_bps_device"), "w") as f:
            f.write(a.read_limit)
        with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
            f.write(str(pid))
        # broker_bench joins the cgroup before it starts.
        cmd = ["bash", "-c", 'echo $$ >"$1/cgroup.procs"; shift; exec "$@"', "_", cgroup] + cmd
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                           timeout=600)
    finally:
        if cgroup:
            try:
                with open(os.path.join(cgroup, "cgroup.procs")) as f:
                    left = f.read().split()
                with open("/sys/fs/cgroup/blkio/cgroup.procs", "w") as f:
                    for q in left:
                        try:
                            f.write(q + "\n")
                            f.flush()
                        except OSError:
                            pass
                os.rmdir(cgroup)
            except OSError:
                pass
    out = p.stdout.decode("utf-8", "replace")
    return p.returncode, out


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(v, prec=1):
    return "-" if v is None else "%.*f" % (prec, v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_binary_args(ap)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--read-limit", default="", help='"MAJ:MIN BYTES_PER_S": cgroup v1 blkio read limit')
    ap.add_argument("--work", default=os.path.join(ROOT, "build"),
                    help="the brokers' data go to a fresh cold-vs-kafka.* directory in here (same disk for both)")
    a = ap.parse_args()
    a.broker, a.bench, a.kafka_tools, a.work = (os.path.abspath(x) for x in (a.broker, a.bench, a.kafka_tools,
                                                                          a.work))
    java = shutil.which("java")
    for path, what in ((a.broker, "our broker"), (a.bench, "broker_bench (needs librdkafka-dev)"),
                       (os.path.join(a.kafka_tools, "kafka-tools-%s.jar" % KAFKA_VERSION),
                        "Kafka's tools (deploy/install-deps.sh builds them)"), (java, "java")):
        if not path or not os.path.exists(path):
            sys.exit("run_cold_vs_kafka: %s missing: %s" % (what, path))
    harness, kafka_server = _import_launchers()
    os.makedirs(a.work, exist_ok=True)
    base = tempfile.mkdtemp(prefix="cold-vs-kafka.", dir=a.work)
    print("== %s on %d cores; load average %s; scale %g; disk reads %s" % (
        time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), os.cpu_count(), loadavg(), a.scale,
        "limited to '%s' (MAJ:MIN bytes/s)" % a.read_limit if a.read_limit else "not limited"), flush=True)
    results = {"ours": [], "kafka": []}
    try:
        for rnd in range(a.rounds):
            order = ["ours", "kafka"] if rnd % 2 == 0 else ["kafka", "ours"]
            for who in order:
                work = os.path.join(base, "round%d-%s" % (rnd, who))
                os.makedirs(work)
                if who == "ours":
                    b = harness.Broker(a.broker, work, dict(kafka_server.SHARED_OVERRIDES), name="ours",
                                       stop_timeout=60.0)
                else:
                    b = make_kafka(kafka_server, work, a.kafka_tools, java)
                b.start()
                try:
                    print("\n== round %d of %d: %s (load average %s)" % (rnd + 1, a.rounds, who, loadavg()),
                          flush=True)
                    rc, out = run_bench(a, b.bootstrap, b.proc.pid, b.data_dir)
                    print(out, flush=True)
                    rows = parse_rows(out)
                    if rc != 0 or len(rows) != len(ROWS):
                        print("== %s: broker_bench exit %d, %d of %d rows" % (who, rc, len(rows), len(ROWS)),
                              flush=True)
                    else:
                        results[who].append(rows)
                finally:
                    stop_quietly(b)
                shutil.rmtree(work, ignore_errors=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)

    print("\n| broker | runs | 8 hot alone MB/s | beside cached replay | beside cold replay | cold / alone "
          "| cold / cached | replay MB/s cached | replay MB/s cold |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for who in ("ours", "kafka"):
        runs = results[who]
        alone = med([r["alone"][0] for r in runs])
        cached = med([r["cached"][0] for r in runs])
        cold = med([r["cold"][0] for r in runs])
        share = med([r["cold"][0] / r["alone"][0] for r in runs if r["alone"][0] > 0])
        vs_cached = med([r["cold"][0] / r["cached"][0] for r in runs if r["cached"][0] > 0])
        print("| %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
            "CiuicKafka" if who == "ours" else "Kafka " + KAFKA_VERSION, len(runs), fmt(alone), fmt(cached),
            fmt(cold), fmt(share, 2), fmt(vs_cached, 2), fmt(med([r["cached"][1] for r in runs])),
            fmt(med([r["cold"][1] for r in runs]))))
    return 0 if results["ours"] and results["kafka"] else 1


if __name__ == "__main__":
    sys.exit(main())
