"""tests/integration/test_transactions.py: transactions on one real broker,
driven by confluent-kafka-python (librdkafka 2.0.2, Debian's), issue #13.

Usage: test_transactions.py --broker BIN --work DIR

The broker runs with transaction.abort.timed.out.transaction.cleanup.interval.ms
=500 so that timeouts are found quickly. Scenarios, in order, on one broker:
1. commit and abort across 3 partitions: a read_committed consumer sees
   exactly the committed records, in order per partition; read_uncommitted
   sees every record that was sent (the aborted ones too).
2. an open transaction blocks read_committed at its first offset, also for
   a later non-transactional record; after the commit everything appears.
3. consume-transform-produce: offsets sent with send_offsets_to_transaction
   are invisible to committed() until the commit, and unchanged by an abort.
4. fencing: a second producer with the same transactional.id fences the
   first; the first one's commit fails and its open records stay invisible.
5. timeout: a transaction left open past transaction.timeout.ms is aborted
   by the broker (read_committed moves past it; its records stay invisible).
6. kill -9 with a transaction open: after the restart the committed data is
   all there, the earlier aborted data is still filtered, and the open
   transaction is aborted by its timeout.
Metrics on the way: the LSO lag of a partition with an open transaction,
and the coordinator's completed / timed-out counters.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

TIMEOUT = 30


def conf(b, **kw):
    c = {"bootstrap.servers": b.bootstrap, "broker.address.family": "v4", "socket.timeout.ms": 10000}
    c.update(kw)
    return c


def create(b, name, partitions):
    a = AdminClient(conf(b))
    for f in a.create_topics([NewTopic(name, partitions, 1)]).values():
        f.result(TIMEOUT)


def txn_producer(b, tid, **kw):
    p = Producer(conf(b, **{"transactional.id": tid, "linger.ms": 2}, **kw))
    p.init_transactions(TIMEOUT)
    return p


def read(b, topic, partitions, isolation, expect_at_least=None, settle=1.0):
    """Every record value of the topic (per partition, in order) readable at
    this isolation level: read until every partition reports EOF and, when
    expect_at_least is set, at least that many records arrived."""
    c = Consumer(conf(b, **{"group.id": "reader-%s-%s-%f" % (topic, isolation, time.time()),
                            "isolation.level": isolation, "enable.partition.eof": True,
                            "enable.auto.commit": False}))
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = {p: [] for p in range(partitions)}
    eof = set()
    deadline = time.monotonic() + TIMEOUT
    quiet_until = None
    while time.monotonic() < deadline:
        m = c.poll(0.2)
        n = sum(len(v) for v in got.values())
        done = len(eof) == partitions and (expect_at_least is None or n >= expect_at_least)
        if done:
            quiet_until = quiet_until or time.monotonic() + settle
            if time.monotonic() >= quiet_until:
                break
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191:  # _PARTITION_EOF
                eof.add(m.partition())
                continue
            raise AssertionError("consumer error: %s" % m.error())
        eof.discard(m.partition())
        quiet_until = None
        got[m.partition()].append(m.value().decode())
    c.close()
    return got


def metric(b, name, **labels):
    """The sample of family `name` whose labels include `labels` (None: absent)."""
    import re
    import urllib.request
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % b.metrics_port, timeout=5).read().decode()
    for line in text.splitlines():
        m = re.match(r'^%s(?:\{(.*)\})? (\S+)$' % re.escape(name), line)
        if not m:
            continue
        have = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1) or ""))
        if all(have.get(k) == str(v) for k, v in labels.items()):
            return float(m.group(2))
    return None


def flat(got):
    return sorted(v for vs in got.values() for v in vs)


def commit_and_abort(b):
    create(b, "tx-a", 3)
    p = txn_producer(b, "tx-a")
    committed = {0: [], 1: [], 2: []}
    for round_ in range(3):
        p.begin_transaction()
        for i in range(30):
            v = "r%d-c%d" % (round_, i)
            p.produce("tx-a", value=v.encode(), partition=i % 3)
            committed[i % 3].append(v)
        p.commit_transaction(TIMEOUT)
        p.begin_transaction()
        for i in range(20):
            p.produce("tx-a", value=("r%d-a%d" % (round_, i)).encode(), partition=i % 3)
        check(p.flush(TIMEOUT) == 0, "aborted records not sent")
        p.abort_transaction(TIMEOUT)
    rc = read(b, "tx-a", 3, "read_committed", expect_at_least=90)
    check(rc == committed, "read_committed saw %r, want the committed records in order %r" % (rc, committed))
    ru = read(b, "tx-a", 3, "read_uncommitted", expect_at_least=150)
    check(len(flat(ru)) == 150, "read_uncommitted saw %d records, want 150 (aborted ones too)" % len(flat(ru)))
    print("[test] commit/abort: read_committed %d records, read_uncommitted %d" % (len(flat(rc)), len(flat(ru))),
          flush=True)


def open_blocks(b):
    create(b, "tx-b", 1)
    p = txn_producer(b, "tx-b")
    plain = Producer(conf(b, **{"linger.ms": 0}))
    plain.produce("tx-b", value=b"before", partition=0)
    check(plain.flush(TIMEOUT) == 0, "plain record not sent")
    p.begin_transaction()
    p.produce("tx-b", value=b"in-txn", partition=0)
    check(p.flush(TIMEOUT) == 0, "transactional record not sent")
    plain.produce("tx-b", value=b"after", partition=0)
    check(plain.flush(TIMEOUT) == 0, "plain record not sent")
    rc = read(b, "tx-b", 1, "read_committed", expect_at_least=1)
    check(rc[0] == ["before"], "with the transaction open read_committed saw %r, want only 'before'" % rc[0])
    lag = metric(b, "kafka_cluster_partition_laststableoffsetlag", topic="tx-b", partition=0)
    check(lag == 2, "LSO lag with the transaction open: %r, want 2 (the open record and the one after)" % lag)
    p.commit_transaction(TIMEOUT)
    rc = read(b, "tx-b", 1, "read_committed", expect_at_least=3)
    check(rc[0] == ["before", "in-txn", "after"], "after the commit read_committed saw %r" % rc[0])
    print("[test] an open transaction held read_committed at its first offset", flush=True)


def consume_transform_produce(b):
    create(b, "tx-in", 1)
    create(b, "tx-out", 1)
    src = Producer(conf(b))
    for i in range(10):
        src.produce("tx-in", value=("in-%d" % i).encode(), partition=0)
    check(src.flush(TIMEOUT) == 0, "input not sent")
    group = "ctp-group"
    c = Consumer(conf(b, **{"group.id": group, "enable.auto.commit": False, "auto.offset.reset": "earliest",
                            "isolation.level": "read_committed"}))
    c.subscribe(["tx-in"])
    msgs = []
    deadline = time.monotonic() + TIMEOUT
    while len(msgs) < 10 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            msgs.append(m)
    check(len(msgs) == 10, "consumed %d input records, want 10" % len(msgs))
    p = txn_producer(b, "tx-ctp")

    def committed_offset():
        return c.committed([TopicPartition("tx-in", 0)], TIMEOUT)[0].offset

    # First an aborted attempt: offsets unchanged.
    p.begin_transaction()
    for m in msgs[:5]:
        p.produce("tx-out", value=m.value().upper(), partition=0)
    p.send_offsets_to_transaction([TopicPartition("tx-in", 0, msgs[4].offset() + 1)],
                                  c.consumer_group_metadata(), TIMEOUT)
    check(p.flush(TIMEOUT) == 0, "output not sent")
    p.abort_transaction(TIMEOUT)
    check(committed_offset() < 0, "after an abort the group's offset is %d, want none" % committed_offset())
    # Then the real one.
    p.begin_transaction()
    for m in msgs:
        p.produce("tx-out", value=m.value().upper(), partition=0)
    p.send_offsets_to_transaction([TopicPartition("tx-in", 0, msgs[-1].offset() + 1)],
                                  c.consumer_group_metadata(), TIMEOUT)
    check(p.flush(TIMEOUT) == 0, "output not sent")
    p.commit_transaction(TIMEOUT)
    off = harness.wait_until(lambda: (lambda o: o if o == 10 else None)(committed_offset()), 10,
                             "the transactional offset commit to become visible")
    check(off == 10, "committed offset %r, want 10" % off)
    out = read(b, "tx-out", 1, "read_committed", expect_at_least=10)
    check(out[0] == ["IN-%d" % i for i in range(10)], "output read_committed %r" % out[0])
    c.close()
    print("[test] consume-transform-produce: offsets visible only with the commit", flush=True)


def fencing(b):
    create(b, "tx-f", 1)
    old = txn_producer(b, "tx-fence")
    old.begin_transaction()
    old.produce("tx-f", value=b"zombie", partition=0)
    check(old.flush(TIMEOUT) == 0, "zombie record not sent")
    new = txn_producer(b, "tx-fence")  # fences the old one (its transaction is aborted)
    new.begin_transaction()
    new.produce("tx-f", value=b"successor", partition=0)
    new.commit_transaction(TIMEOUT)
    failed = None
    try:
        old.commit_transaction(10)
    except KafkaException as e:
        failed = e.args[0]
    check(failed is not None, "the fenced producer's commit succeeded")
    print("[test] fenced producer's commit failed: %s (fatal=%s)" % (failed.name(), failed.fatal()), flush=True)
    rc = read(b, "tx-f", 1, "read_committed", expect_at_least=1)
    check(rc[0] == ["successor"], "read_committed after fencing %r, want only the successor's record" % rc[0])


def timeout_abort(b):
    create(b, "tx-t", 1)
    p = txn_producer(b, "tx-timeout", **{"transaction.timeout.ms": 2000, "socket.timeout.ms": 2000})
    p.begin_transaction()
    p.produce("tx-t", value=b"abandoned", partition=0)
    check(p.flush(TIMEOUT) == 0, "record not sent")
    plain = Producer(conf(b))
    plain.produce("tx-t", value=b"later", partition=0)
    check(plain.flush(TIMEOUT) == 0, "plain record not sent")
    t0 = time.monotonic()
    rc = read(b, "tx-t", 1, "read_committed", expect_at_least=1, settle=0.2)  # returns once the abort unblocked it
    took = time.monotonic() - t0
    check(rc[0] == ["later"], "after the timeout read_committed saw %r, want only 'later'" % rc[0])
    check(took < 2 + 10, "the timed-out transaction was aborted after %.1fs" % took)
    check((metric(b, "kafka_coordinator_transactions_timed_out_total") or 0) >= 1, "no timed-out transaction counted")
    print("[test] a transaction open past its 2 s timeout was aborted (read_committed moved on after %.1fs)" % took,
          flush=True)


def counters(b):
    commits = metric(b, "kafka_coordinator_transactions_completed_total", result="commit")
    aborts = metric(b, "kafka_coordinator_transactions_completed_total", result="abort")
    markers = metric(b, "kafka_coordinator_transaction_markers_written_total")
    check(commits is not None and commits >= 5, "completed commits counted: %r" % commits)
    check(aborts is not None and aborts >= 4, "completed aborts counted: %r" % aborts)
    check(markers is not None and markers >= commits + aborts, "markers written: %r" % markers)
    print("[test] metrics: %d commits, %d aborts, %d markers" % (commits, aborts, markers), flush=True)


def kill_mid_transaction(b):
    create(b, "tx-k", 2)
    p = txn_producer(b, "tx-kill-1")
    p.begin_transaction()
    for i in range(20):
        p.produce("tx-k", value=("c%d" % i).encode(), partition=i % 2)
    p.commit_transaction(TIMEOUT)
    p.begin_transaction()
    for i in range(10):
        p.produce("tx-k", value=("a%d" % i).encode(), partition=i % 2)
    check(p.flush(TIMEOUT) == 0, "aborted records not sent")
    p.abort_transaction(TIMEOUT)
    q = txn_producer(b, "tx-kill-2", **{"transaction.timeout.ms": 3000, "socket.timeout.ms": 3000})
    q.begin_transaction()
    for i in range(10):
        q.produce("tx-k", value=("open%d" % i).encode(), partition=i % 2)
    check(q.flush(TIMEOUT) == 0, "open transaction's records not sent")
    b.kill()
    b.start()
    rc = read(b, "tx-k", 2, "read_committed", expect_at_least=20, settle=0.2)
    check(flat(rc) == sorted("c%d" % i for i in range(20)),
          "after kill -9 read_committed saw %r, want exactly the 20 committed records" % flat(rc))
    ru = read(b, "tx-k", 2, "read_uncommitted", expect_at_least=40)
    check(len(flat(ru)) == 40, "after kill -9 read_uncommitted saw %d records, want 40" % len(flat(ru)))
    # The restarted coordinator aborts the open transaction by its timeout:
    # a later plain record becomes readable under read_committed.
    plain = Producer(conf(b))
    plain.produce("tx-k", value=b"late", partition=0)
    check(plain.flush(TIMEOUT) == 0, "plain record not sent")
    rc = read(b, "tx-k", 2, "read_committed", expect_at_least=21, settle=0.2)
    check(flat(rc) == sorted(["late"] + ["c%d" % i for i in range(20)]),
          "after the open transaction's timeout read_committed saw %r" % flat(rc))
    print("[test] kill -9 with a transaction open: committed data intact, aborted and open data invisible", flush=True)


def test(ctx):
    b = ctx.broker({"transaction.abort.timed.out.transaction.cleanup.interval.ms": 500})
    commit_and_abort(b)
    open_blocks(b)
    consume_transform_produce(b)
    fencing(b)
    timeout_abort(b)
    counters(b)
    kill_mid_transaction(b)


if __name__ == "__main__":
    harness.run_test(test, total_timeout=240)
