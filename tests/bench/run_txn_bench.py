#!/usr/bin/env python3
"""tests/bench/run_txn_bench.py: the transactions benchmark (issue #13).

Usage: run_txn_bench.py --broker BIN [--cluster | --vs-kafka] [--messages N] [--rounds R] [--work DIR]
                        [--override k=v ...]

One broker (a Release build; default settings, so acks=all is fsynced:
ciuic.acks.all.fsync=true), one topic of 8 partitions, 1 KiB values,
confluent-kafka (Debian's librdkafka 2.0.2). With --cluster: Debian's
ZooKeeper and three brokers on this machine, every topic replication
factor 3 with min.insync.replicas 2 (__transaction_state as Kafka makes it:
RF 3, min ISR 2), so each partition's leader, the transaction coordinator
and the markers (WriteTxnMarkers to the other leaders) are spread over the
three, and KIP-890 verification goes to a coordinator on another broker for
two thirds of the partitions. With --vs-kafka: Apache Kafka 3.9 beside it
(KRaft, single node, Kafka's defaults but the single-node replication
factors; tests/differential/kafka_server.py, jars from build/java), each
round run on ours then on Kafka, and the ratios printed. Phases, alternating in each
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
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPLICAS = 1  # 3 with --cluster


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


def start_cluster(binary, work, overrides=()):
    """ZooKeeper and three brokers; returns (stop function, bootstrap)."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
    import harness  # noqa: E402
    import zookeeper  # noqa: E402
    zk = zookeeper.ZooKeeper(work).start()
    brokers = []
    try:
        for i in (1, 2, 3):
            o = {"node.id": str(i), "zookeeper.connect": zk.connect + "/ck-txn-bench", "log.level": "WARN"}
            o.update(dict(x.split("=", 1) for x in overrides))
            b = harness.Broker(binary, work, o, name="broker%d" % i)
            b.start()
            brokers.append(b)
        bs = ",".join(b.bootstrap for b in brokers)
        harness.wait_until(lambda: len(AdminClient({"bootstrap.servers": bs}).list_topics(timeout=5).brokers) == 3,
                           30, "3 brokers in the metadata")
    except BaseException:
        for b in brokers:
            b.kill()
        zk.stop()
        raise

    def stop():
        for b in brokers:
            b.stop()
        zk.stop()
    return stop, bs


def create(bs, name):
    admin = AdminClient({"bootstrap.servers": bs})  # kept alive until the futures complete
    configs = {"min.insync.replicas": "2"} if REPLICAS == 3 else {}
    for f in admin.create_topics([NewTopic(name, PARTITIONS, REPLICAS, config=configs)]).values():
        f.result(30)
    # Every partition led before the phase's clock starts.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        t = admin.list_topics(name, timeout=5).topics.get(name)
        if t is not None and t.error is None and len(t.partitions) == PARTITIONS and \
                all(p.leader >= 0 and len(p.isrs) == REPLICAS for p in t.partitions.values()):
            return
        time.sleep(0.1)
    sys.exit("%s: partitions not led with a full ISR after 30 s" % name)


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


def start_kafka(work):
    """Apache Kafka (KRaft, single node, its default settings but the
    single-node replication factors) from build/java; (stop, bootstrap)."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
    sys.path.insert(0, os.path.join(ROOT, "tests", "differential"))
    import kafka_server  # noqa: E402
    k = kafka_server.KafkaBroker(work, start_timeout=180.0).start()
    return k.stop, k.bootstrap


PHASES = ("idempotent", "txn-100", "txn-1000")


def one_round(bs, r, messages, tag, res):
    for phase in PHASES:
        topic = "bench-%s-%d" % (phase, r)
        create(bs, topic)
        if phase == "idempotent":
            rate, lat = idempotent(bs, topic, messages)
        else:
            rate, lat = transactional(bs, topic, messages, int(phase.split("-")[1]), "bench-%s-%d" % (phase, r))
            res["commits"].setdefault(phase, []).extend(lat)
            res["last_topic"] = topic
        res["rates"].setdefault(phase, []).append(rate)
        print("round %d %-10s %-10s %9.0f msg/s" % (r + 1, tag, phase, rate), flush=True)


def report(tag, res, messages, rounds, layout):
    base = statistics.median(res["rates"]["idempotent"])
    print()
    print("%s: %d messages of 1 KiB, %d partitions, %s, %d rounds (medians)" % (
        tag, messages, PARTITIONS, layout, rounds))
    print("%-22s %12s %10s %14s %14s" % ("phase", "msg/s", "vs idem", "EndTxn p50 ms", "EndTxn p99 ms"))
    for phase in PHASES:
        m = statistics.median(res["rates"][phase])
        lat = res["commits"].get(phase, [])
        print("%-22s %12.0f %9.1f%% %14s %14s" % (
            phase, m, 100 * m / base,
            "%.1f" % (1000 * pct(lat, 0.5)) if lat else "-", "%.1f" % (1000 * pct(lat, 0.99)) if lat else "-"))
    rc = statistics.median(x[0] for x in res["reads"]["read_committed"])
    ru = statistics.median(x[0] for x in res["reads"]["read_uncommitted"])
    rc_mb = statistics.median(x[1] for x in res["reads"]["read_committed"])
    ru_mb = statistics.median(x[1] for x in res["reads"]["read_uncommitted"])
    print("%-22s %12.0f msg/s %8.1f MB/s" % ("read_committed", rc, rc_mb))
    print("%-22s %12.0f msg/s %8.1f MB/s" % ("read_uncommitted", ru, ru_mb))
    print("read_committed / read_uncommitted: %.1f%%" % (100 * rc / ru))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--broker", required=True)
    ap.add_argument("--cluster", action="store_true", help="ZooKeeper and three brokers, replication factor 3")
    ap.add_argument("--vs-kafka", action="store_true",
                    help="also Apache Kafka 3.9 (single node, KRaft), rounds alternating with ours")
    ap.add_argument("--messages", type=int, default=50000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", default=None)
    ap.add_argument("--override", action="append", default=[], help="broker key=value (repeatable)")
    args = ap.parse_args()
    if args.cluster and args.vs_kafka:
        sys.exit("--vs-kafka runs single-node brokers only")
    work = args.work or tempfile.mkdtemp(prefix="ck-txn-bench-")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    global REPLICAS
    targets = []  # (tag, bootstrap)
    stops = []
    try:
        if args.cluster:
            REPLICAS = 3
            stop, bs = start_cluster(os.path.abspath(args.broker), work, args.override)
        else:
            proc, bs = start(args.broker, work, args.override)

            def stop():
                proc.terminate()
                proc.wait(30)
        stops.append(stop)
        targets.append(("ciuickafka", bs))
        if args.vs_kafka:
            kstop, kbs = start_kafka(os.path.join(work, "apache-kafka"))
            stops.append(kstop)
            targets.append(("kafka", kbs))
        results = {tag: {"rates": {}, "commits": {}, "reads": {"read_committed": [], "read_uncommitted": []},
                         "last_topic": None} for tag, _ in targets}
        for r in range(args.rounds):
            for tag, b in targets:
                one_round(b, r, args.messages, tag, results[tag])
        for r in range(args.rounds):
            for tag, b in targets:
                for iso in ("read_committed", "read_uncommitted"):
                    results[tag]["reads"][iso].append(consume(b, results[tag]["last_topic"], args.messages + 1, iso))
        layout = "3 brokers, replication factor 3, min ISR 2" if args.cluster else "1 broker"
        for tag, _ in targets:
            report(tag, results[tag], args.messages, args.rounds, layout)
        if args.vs_kafka:
            print()
            print("ours / Kafka's (msg/s): " + ", ".join(
                "%s %.2fx" % (phase, statistics.median(results["ciuickafka"]["rates"][phase]) /
                              statistics.median(results["kafka"]["rates"][phase])) for phase in PHASES))
            print("ours / Kafka's EndTxn p50: " + ", ".join(
                "%s %.2fx" % (phase, pct(results["ciuickafka"]["commits"][phase], 0.5) /
                              pct(results["kafka"]["commits"][phase], 0.5)) for phase in PHASES[1:]))
            print("(Kafka does not fsync by default; ours fsyncs acks=all writes unless "
                  "--override ciuic.acks.all.fsync=false)")
    finally:
        for stop in reversed(stops):
            stop()
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
