#!/usr/bin/env python3
"""tests/bench/run_validate_bench.py: what checking every record of compressed
batches costs the broker (issue #16, point 3: ciuic.produce.validate.compressed).

Usage: run_validate_bench.py --broker BIN [--messages N] [--rounds R] [--work DIR]

A broker (a Release build) with compression.type=producer topics stores
compressed batches as the producer sent them. With
ciuic.produce.validate.compressed=true (the default) it first decompresses
each batch and checks every record, as Kafka's LogValidator does; with false
it checks only the batch header. For each codec (lz4, zstd) and each setting,
alternating in every round (default 3; each run on a fresh broker), one
confluent-kafka producer (Debian's librdkafka 2.0.2, acks=1, 8 partitions)
sends N (default 300,000) 1 KiB values that compress about 2:1. Figures per
run: messages/s at the producer (after an untimed message per partition),
and the broker's CPU seconds (utime+stime from /proc) per GB of values
produced. Prints medians and the ratio
validate/no-validate. A benchmark, not a test: nothing is asserted.
"""

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_txn_bench import PARTITIONS, conf, create, start  # noqa: E402

from confluent_kafka import Producer  # noqa: E402


def values(count=256):
    """1 KiB values, half random bytes and half a repeated pattern (about 2:1 under lz4)."""
    rnd = random.Random(16)
    return [bytes(rnd.getrandbits(8) for _ in range(512)) + b"token " * 85 + b"xx" for _ in range(count)]


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_run(binary, work, codec, validate, n, vals):
    proc, bs = start(binary, work, ["ciuic.produce.validate.compressed=" + ("true" if validate else "false")])
    try:
        create(bs, "v")
        p = Producer(conf(bs, **{"acks": 1, "compression.codec": codec}))
        # Untimed: one message per partition, so that the producer knows
        # every leader before the clock starts (else a run may include
        # librdkafka's metadata retry wait of about a second).
        for part in range(PARTITIONS):
            p.produce("v", vals[0], partition=part)
        if p.flush(30):
            sys.exit("%s: warm-up messages not delivered" % codec)
        cpu0 = cpu_seconds(proc.pid)
        t0 = time.monotonic()
        for i in range(n):
            while True:
                try:
                    p.produce("v", vals[i % len(vals)], partition=i % PARTITIONS)
                    break
                except BufferError:
                    p.poll(0.01)
        if p.flush(120):
            sys.exit("%s: messages not delivered" % codec)
        secs = time.monotonic() - t0
        cpu = cpu_seconds(proc.pid) - cpu0
        gb = n * len(vals[0]) / 1e9
        return n / secs, cpu / gb
    finally:
        proc.terminate()
        proc.wait(30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--broker", required=True)
    ap.add_argument("--messages", type=int, default=300_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work")
    a = ap.parse_args()
    vals = values()
    base = a.work or tempfile.mkdtemp(prefix="ck-validate-bench-")
    print("== %s on %d cores, load average %s" % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                                os.cpu_count(), open("/proc/loadavg").read().split()[:3]))
    results = {}
    try:
        for r in range(a.rounds):
            for codec in ("lz4", "zstd"):
                for validate in ((True, False) if r % 2 == 0 else (False, True)):
                    work = os.path.join(base, "%s-%s-%d" % (codec, validate, r))
                    os.makedirs(work)
                    rate, cpu_gb = one_run(a.broker, work, codec, validate, a.messages, vals)
                    results.setdefault((codec, validate), []).append((rate, cpu_gb))
                    print("round %d %-4s validate=%-5s %9.0f msgs/s  %.2f broker CPU-s/GB" %
                          (r + 1, codec, validate, rate, cpu_gb), flush=True)
                    shutil.rmtree(work, ignore_errors=True)
    finally:
        if not a.work:
            shutil.rmtree(base, ignore_errors=True)
    print("\n| codec | validate msgs/s | no-validate msgs/s | ratio | validate CPU-s/GB | no-validate CPU-s/GB | ratio |")
    print("|---|---|---|---|---|---|---|")
    for codec in ("lz4", "zstd"):
        on = results[(codec, True)]
        off = results[(codec, False)]
        r_on, r_off = statistics.median(x[0] for x in on), statistics.median(x[0] for x in off)
        c_on, c_off = statistics.median(x[1] for x in on), statistics.median(x[1] for x in off)
        print("| %s | %.0f | %.0f | %.2f | %.2f | %.2f | %.2f |" % (codec, r_on, r_off, r_on / r_off, c_on, c_off,
                                                                  c_on / c_off))


if __name__ == "__main__":
    main()
