#!/usr/bin/env python3
"""tests/bench/run_txn_bench.py: the transactions benchmark (issue #13).

Usage: run_txn_bench.py --broker BIN [--messages N] [--rounds R] [--work DIR] [--override k=v ...]

One broker (a Release build; default settings, so acks=all is fsynced:
ciuic.acks.all.fsync=true), one topic of 8 partitions, 1 KiB values,
confluent-kafka (Debian's librdkafka 2.0.2). Phases, alternating in each
round, medians over the rounds (default 3):
  idempotent     enable.idempotence=true, acks=all: N messages, flushed
  txn-100        the same N in transactions of 100 messages
  txn-1000       the same N in transactions of 1,000 messages
Each transactional producer first runs one untimed transaction (librdkafka
waits about a second on its own timers before registering the first
transaction's partitions). Each transactional phase also records every
commit_transaction() call's
latency (the EndTxn round trip, answered once PrepareCommit is durable;
librdkafka flushes the transaction's messages first, so the figure includes
that flush).
Then the data of the last transactional phase is read back by assign()ed
consumers at read_committed and read_uncommitted, alternating, R rounds.
Prints one table: messages/s per phase, ratios against idempotent, EndTxn
p50/p99, and read_committed / read_uncommitted throughput. A benchmark, not
a test: nothing is asserted about speed.
"""

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 8
VALUE = b"x" * 1024


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(binary, work, overrides=()):
    port, mport = free_port(), free_port()
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    log = open(os.path.join(work, "broker.log"), "w")
    proc = subprocess.Popen([binary, "--override", "log.dirs=" + data,
                             "--override", "listeners=PLAINTEXT://127.0.0.1:%d" % port,
                             "--override", "ciuic.metrics.listener=127.0.0.1:%d" % mport,
                             "--override", "log.level=WARN"] + [x for o in overrides for x in ("--override", o)],
                            stdout=log, stderr=subprocess.STDOUT)
    bs = "127.0.0.1:%d" % port
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            AdminClient({"bootstrap.servers": bs}).list_topics(timeout=1)
            return proc, bs
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(0.2)
    proc.kill()
    sys.exit("broker did not start; see %s" % os.path.join(work, "broker.log"))


def create(bs, name):
    admin = AdminClient({"bootstrap.servers": bs})  # kept alive until the futures complete
    for f in admin.create_topics([NewTopic(name, PARTITIONS, 1)]).values():
        f.result(30)


def conf(bs, **kw):
    c = {"bootstrap.servers": bs, "linger.ms": 5, "batch.size": 1 << 20, "queue.buffering.max.kbytes": 1 << 20}
    c.update(kw)
    return c


def idempotent(bs, topic, n):
    p = Producer(conf(bs, **{"enable.idempotence": True, "acks": "all"}))
    t0 = time.monotonic()
    for i in range(n):
        while True:
            try:
                p.produce(topic, VALUE, partition=i % PARTITIONS)
                break
            except BufferError:
                p.poll(0.01)
    left = p.flush(120)
    if left:
        sys.exit("idempotent: %d messages not delivered" % left)
    # (the read-back phase reads the last transactional topic: n + 1 records)
    return n / (time.monotonic() - t0), []


def transactional(bs, topic, n, per_txn, tid):
    p = Producer(conf(bs, **{"transactional.id": tid}))
    p.init_transactions(30)
    # One transaction first, not timed: librdkafka 2.0.2 waits about 1 s on
    # its own timers (coordinator query, then AddPartitionsToTxn) before the
    # first transaction's partitions are registered, whatever the broker.
    p.begin_transaction()
    p.produce(topic, VALUE, partition=0)
    p.commit_transaction(60)
    commits = []
    t0 = time.monotonic()
    sent = 0
    while sent < n:
        p.begin_transaction()
        for _ in range(min(per_txn, n - sent)):
            while True:
                try:
                    p.produce(topic, VALUE, partition=sent % PARTITIONS)
                    break
                except BufferError:
                    p.poll(0.01)
            sent += 1
        c0 = time.monotonic()
        p.commit_transaction(60)
        commits.append(time.monotonic() - c0)
    return n / (time.monotonic() - t0), commits


def consume(bs, topic, n, isolation):
    c = Consumer({"bootstrap.servers": bs, "group.id": "bench-%s-%f" % (isolation, time.time()),
                  "isolation.level": isolation, "enable.auto.commit": False,
                  "fetch.max.bytes": 50 << 20, "max.partition.fetch.bytes": 8 << 20})
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got = 0
    nbytes = 0
    t0 = time.monotonic()
    deadline = t0 + 120
    while got < n and time.monotonic() < deadline:
        for m in c.consume(10000, 0.5):
            if m.error():
                continue
            got += 1
            nbytes += len(m.value())
    elapsed = time.monotonic() - t0
    c.close()
    if got < n:
        sys.exit("%s: read %d of %d" % (isolation, got, n))
    return got / elapsed, nbytes / elapsed / 1e6


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--broker", required=True)
    ap.add_argument("--messages", type=int, default=50000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", default=None)
    ap.add_argument("--override", action="append", default=[], help="broker key=value (repeatable)")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="ck-txn-bench-")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    proc, bs = start(args.broker, work, args.override)
    try:
        rates = {"idempotent": [], "txn-100": [], "txn-1000": []}
        commits = {"txn-100": [], "txn-1000": []}
        last_topic = None
        for r in range(args.rounds):
            for phase in ("idempotent", "txn-100", "txn-1000"):
                topic = "bench-%s-%d" % (phase, r)
                create(bs, topic)
                if phase == "idempotent":
                    rate, lat = idempotent(bs, topic, args.messages)
                else:
                    rate, lat = transactional(bs, topic, args.messages, int(phase.split("-")[1]),
                                              "bench-%s-%d" % (phase, r))
                    commits[phase] += lat
                    last_topic = topic
                rates[phase].append(rate)
                print("round %d %-10s %9.0f msg/s" % (r + 1, phase, rate), flush=True)
        reads = {"read_committed": [], "read_uncommitted": []}
        for r in range(args.rounds):
            for iso in ("read_committed", "read_uncommitted"):
                reads[iso].append(consume(bs, last_topic, args.messages + 1, iso))
        base = statistics.median(rates["idempotent"])
        print()
        print("%d messages of 1 KiB, %d partitions, %d rounds (medians)" % (args.messages, PARTITIONS, args.rounds))
        print("%-22s %12s %10s %14s %14s" % ("phase", "msg/s", "vs idem", "EndTxn p50 ms", "EndTxn p99 ms"))
        for phase in ("idempotent", "txn-100", "txn-1000"):
            m = statistics.median(rates[phase])
            lat = commits.get(phase, [])
            print("%-22s %12.0f %9.1f%% %14s %14s" % (
                phase, m, 100 * m / base,
                "%.1f" % (1000 * pct(lat, 0.5)) if lat else "-", "%.1f" % (1000 * pct(lat, 0.99)) if lat else "-"))
        rc = statistics.median(x[0] for x in reads["read_committed"])
        ru = statistics.median(x[0] for x in reads["read_uncommitted"])
        rc_mb = statistics.median(x[1] for x in reads["read_committed"])
        ru_mb = statistics.median(x[1] for x in reads["read_uncommitted"])
        print("%-22s %12.0f msg/s %8.1f MB/s" % ("read_committed", rc, rc_mb))
        print("%-22s %12.0f msg/s %8.1f MB/s" % ("read_uncommitted", ru, ru_mb))
        print("read_committed / read_uncommitted: %.1f%%" % (100 * rc / ru))
    finally:
        proc.terminate()
        proc.wait(30)
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
