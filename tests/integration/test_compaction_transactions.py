"""tests/integration/test_compaction_transactions.py: the log cleaner and
transactions on the real broker (issue #13), driven by confluent-kafka-python
(librdkafka).

Usage: test_compaction_transactions.py --broker BIN --work DIR

An aborted transaction's records must never shadow committed ones when a
compacted log is cleaned: the cleaner removes them and keeps the committed
values. The broker runs its cleaner every tick (log.cleaner.backoff.ms=100),
with __consumer_offsets in one partition of 1 KiB segments.

1. Group offsets. A transactional producer commits offset 5 for group
   "eos" with send_offsets_to_transaction, then sends offset 9 the same way
   and aborts. Plain commits of other groups roll __consumer_offsets past
   both. Once the cleaner has removed an aborted batch
   (ciuic_log_cleaner_aborted_batches_removed_total) and made another pass,
   the broker is killed -9 and restarted, so the group coordinator reloads
   the cleaned log: the group's committed offset is 5. (Before the cleaner
   knew transactions, the aborted record shadowed the committed one, the
   cleaner removed the committed one and the load dropped the aborted one:
   the group had no offset at all.)
2. A compacted topic. A transaction commits "committed-i" for keys k0-k9,
   a second one writes "aborted-i" for the same keys and aborts; plain filler
   records with unique keys roll the segments; a third transaction stays open
   with "open-i" for k0-k4, and more filler follows. After cleaning passes: read_uncommitted reads each of
   k5-k9 exactly once, with its committed value, and no aborted value at
   all; k0-k4 keep their committed value below the open transaction (the
   cleaner stops at its first offset). read_committed reads the committed
   values. Then the open transaction aborts, more filler rolls the log, and
   after more passes k0-k4 too are read once each, committed.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

TIMEOUT = 30
TOPIC = "ctx"
KEYS = 10


def conf(b, **kw):
    c = {"bootstrap.servers": b.bootstrap, "broker.address.family": "v4", "socket.timeout.ms": 10000}
    c.update(kw)
    return c


def aborted_removed(b):
    return harness.scrape(b, "ciuic_log_cleaner_aborted_batches_removed_total") or 0


def passes(b):
    return harness.scrape(b, "ciuic_log_cleaner_passes_total") or 0


def wait_passes(b, n, what):
    """Waits for n more complete cleaner passes (each over every compacted log)."""
    start = passes(b)
    harness.wait_until(lambda: passes(b) >= start + n, 20, what)


def txn_producer(b, tid):
    p = Producer(conf(b, **{"transactional.id": tid, "linger.ms": 2}))
    p.init_transactions(TIMEOUT)
    return p


def committed_offset(b, group, tp):
    c = Consumer(conf(b, **{"group.id": group, "enable.auto.commit": False}))
    try:
        got = c.committed([tp], TIMEOUT)
        return got[0].offset
    finally:
        c.close()


def group_offsets(b):
    a = AdminClient(conf(b))
    for f in a.create_topics([NewTopic("src", 1, 1), NewTopic("sink", 1, 1)]).values():
        f.result(TIMEOUT)
    src = TopicPartition("src", 0)
    p = txn_producer(b, "eos-1")
    # The group's metadata, as a consume-transform-produce loop has it.
    c = Consumer(conf(b, **{"group.id": "eos", "enable.auto.commit": False}))
    meta = c.consumer_group_metadata()
    for offset, commit in ((5, True), (9, False)):
        p.begin_transaction()
        p.produce("sink", value=b"out-%d" % offset, partition=0)
        p.send_offsets_to_transaction([TopicPartition("src", 0, offset)], meta, TIMEOUT)
        if commit:
            p.commit_transaction(TIMEOUT)
        else:
            check(p.flush(TIMEOUT) == 0, "aborted record not sent")
            p.abort_transaction(TIMEOUT)
    c.close()
    check(committed_offset(b, "eos", src) == 5, "before cleaning the group's offset is not 5")
    # Plain commits of other groups roll __consumer_offsets (1 KiB segments)
    # well past the transactional records.
    for i in range(60):
        other = Consumer(conf(b, **{"group.id": "filler-%d" % i, "enable.auto.commit": False}))
        other.commit(offsets=[TopicPartition("src", 0, i)], asynchronous=False)
        other.close()
    harness.wait_until(lambda: aborted_removed(b) >= 1, 20,
                       "the cleaner to remove the aborted offset commit from __consumer_offsets")
    wait_passes(b, 1, "one more cleaner pass")
    check(committed_offset(b, "eos", src) == 5, "after cleaning the group's offset is not 5")
    b.kill()
    b.start()
    got = committed_offset(b, "eos", src)
    check(got == 5, "after cleaning and kill -9 the reloaded group's offset is %r, want 5" % got)
    print("[test] __consumer_offsets: aborted offset commit removed by the cleaner, committed offset 5 reloaded",
          flush=True)


def produce_filler(b, start, n):
    p = Producer(conf(b, **{"linger.ms": 0, "batch.num.messages": 5}))
    for i in range(start, start + n):
        p.produce(TOPIC, key=b"filler-%d" % i, value=b"f" * 200, partition=0)
        p.poll(0)
    check(p.flush(TIMEOUT) == 0, "filler not sent")


def read_all(b, isolation):
    """(key, value) of every record the partition serves at this isolation level."""
    c = Consumer(conf(b, **{"group.id": "reader-%s-%f" % (isolation, time.time()),
                            "isolation.level": isolation, "enable.partition.eof": True,
                            "enable.auto.commit": False}))
    c.assign([TopicPartition(TOPIC, 0, 0)])
    out = []
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191:  # _PARTITION_EOF
                break
            raise AssertionError("consumer error: %s" % m.error())
        out.append((m.key().decode(), m.value().decode()))
    else:
        raise AssertionError("no end of partition within %d s" % TIMEOUT)
    c.close()
    return out


def keyed(records, prefix="k"):
    """{key: [values in order]} of the k* keys."""
    got = {}
    for k, v in records:
        if k.startswith(prefix):
            got.setdefault(k, []).append(v)
    return got


def compacted_topic(b):
    a = AdminClient(conf(b))
    cfg = {"cleanup.policy": "compact", "segment.bytes": "4096", "min.cleanable.dirty.ratio": "0.01"}
    for f in a.create_topics([NewTopic(TOPIC, 1, 1, config=cfg)]).values():
        f.result(TIMEOUT)
    before = aborted_removed(b)
    p = txn_producer(b, "ctx-1")
    for tag, commit in (("committed", True), ("aborted", False)):
        p.begin_transaction()
        for i in range(KEYS):
            p.produce(TOPIC, key=b"k%d" % i, value=b"%s-%d" % (tag.encode(), i), partition=0)
        if commit:
            p.commit_transaction(TIMEOUT)
        else:
            check(p.flush(TIMEOUT) == 0, "aborted records not sent")
            p.abort_transaction(TIMEOUT)
    produce_filler(b, 0, 30)  # the two transactions' segments roll before the next one opens
    q = txn_producer(b, "ctx-open")
    q.begin_transaction()
    for i in range(KEYS // 2):
        q.produce(TOPIC, key=b"k%d" % i, value=b"open-%d" % i, partition=0)
    check(q.flush(TIMEOUT) == 0, "open transaction's records not sent")
    produce_filler(b, 30, 60)
    harness.wait_until(lambda: aborted_removed(b) > before, 20, "the cleaner to remove the aborted batch of ctx")
    wait_passes(b, 1, "one more cleaner pass")

    committed = {"k%d" % i: "committed-%d" % i for i in range(KEYS)}
    ru = keyed(read_all(b, "read_uncommitted"))
    for i in range(KEYS // 2, KEYS):
        k = "k%d" % i
        check(ru.get(k) == [committed[k]], "read_uncommitted %s: %r, want only %r" % (k, ru.get(k), committed[k]))
    for i in range(KEYS // 2):
        k = "k%d" % i
        check(ru.get(k) == [committed[k], "open-%d" % i],
              "read_uncommitted %s: %r, want its committed value, then the open one" % (k, ru.get(k)))
    check(not any(v.startswith("aborted") for vs in ru.values() for v in vs), "an aborted value is still served")
    # read_committed stops at the open transaction: the committed values only.
    rc = keyed(read_all(b, "read_committed"))
    check(rc == {k: [v] for k, v in committed.items()}, "read_committed: %r" % rc)

    before = aborted_removed(b)
    q.abort_transaction(TIMEOUT)
    produce_filler(b, 90, 60)
    harness.wait_until(lambda: aborted_removed(b) > before, 20,
                       "the cleaner to remove the transaction aborted after the open one blocked it")
    wait_passes(b, 1, "one more cleaner pass")
    for isolation in ("read_uncommitted", "read_committed"):
        got = keyed(read_all(b, isolation))
        check(got == {k: [v] for k, v in committed.items()}, "%s after the abort: %r" % (isolation, got))
    print("[test] compacted topic: aborted values removed, committed kept, cleaning held below an open "
          "transaction until it ended", flush=True)


def test(ctx):
    b = ctx.broker({"log.cleaner.backoff.ms": 100, "offsets.topic.num.partitions": 1,
                    "offsets.topic.segment.bytes": 1024})
    group_offsets(b)
    compacted_topic(b)


if __name__ == "__main__":
    harness.run_test(test, total_timeout=150)
