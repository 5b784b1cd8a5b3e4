"""tests/integration/test_compaction.py: a compacted topic on the real broker,
written and read with confluent-kafka-python (librdkafka).

Usage: test_compaction.py --broker BIN --work DIR

The broker runs its cleaner every tick (log.cleaner.backoff.ms=100; the
broker ticks once a second), throttled to 4 MiB/s
(log.cleaner.io.max.bytes.per.second) and with at most 8 segment files open
(ciuic.log.max.open.files), fewer than the topic's segments, so reads and
cleaning go through the LRU's reopen path.

1. AdminClient creates a topic with cleanup.policy=compact,
   segment.bytes=4096 and min.cleanable.dirty.ratio=0.01.
2. A Producer (acks=all, one request in flight: offsets follow send order)
   writes KEYS keys x ROUNDS values; a few keys end with a tombstone, one key
   has a tombstone in the middle that a later value overrides. Delivery
   reports give every record's offset. Then FILLER records with unique keys,
   each sent alone, so the keyed data lies below the active segment (the
   cleaner never touches the active segment); the segment files on disk are
   checked to say so.
3. Polling with a deadline, a Consumer reads the partition from the
   beginning (assign(), no group) until each key appears once: the cleaner
   has compacted.
4. Asserted on that read: offsets strictly increase; each key's latest record
   (value, or a tombstone with a null value, whose delete.retention.ms has not
   passed) is present at its original offset, and none of its older values
   is; every filler record is there; the watermarks are (0, the log end
   offset the producer saw); the .log files hold fewer bytes than before,
   and none of the removed values' bytes.
5. kill -9, restart on the same data: the same read gives exactly the same
   records and watermarks, and again a few seconds later (after the cleaner
   has had passes on the restarted broker, which redo the clean because its
   checkpoint was not written before the kill).
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

TOPIC = "compacted"
KEYS = 40
ROUNDS = 25
TOMBSTONED = {"key-0", "key-1", "key-2"}  # their last record is a tombstone
REVIVED = "key-3"                         # a tombstone mid-way, then values again
FILLER = 24
TIMEOUT = 20
SEGMENT_BYTES = 4096


def conf(b, **kw):
    c = {"bootstrap.servers": b.bootstrap, "broker.address.family": "v4", "socket.timeout.ms": 10000}
    c.update(kw)
    return c


def produce(b):
    """Returns {offset: (key, value or None)} for every record, and the log end offset."""
    p = Producer(conf(b, **{"acks": "all", "max.in.flight.requests.per.connection": 1,
                            "linger.ms": 5, "batch.num.messages": 10,
                            "enable.idempotence": False}))
    sent = {}
    errors = []

    def report(err, msg):
        if err is not None:
            errors.append(err)
            return
        v = msg.value()
        sent[msg.offset()] = (msg.key().decode(), None if v is None else v.decode())

    for r in range(ROUNDS):
        for k in range(KEYS):
            key = "key-%d" % k
            tombstone = (key in TOMBSTONED and r == ROUNDS - 1) or (key == REVIVED and r == ROUNDS // 2)
            value = None if tombstone else "%s-round-%d-%s" % (key, r, "v" * 60)
            p.produce(TOPIC, key=key.encode(), value=None if value is None else value.encode(),
                      partition=0, on_delivery=report)
        p.poll(0)
    check(p.flush(TIMEOUT) == 0, "producer: keyed records not delivered within %ds" % TIMEOUT)
    last_keyed = max(sent)
    # Unique keys, one request each: the active segment moves past the keyed data.
    for i in range(FILLER):
        p.produce(TOPIC, key=("filler-%d" % i).encode(), value=("f" * 400).encode(), partition=0,
                  on_delivery=report)
        check(p.flush(TIMEOUT) == 0, "producer: filler %d not delivered" % i)
    check(not errors, "delivery errors: %r" % errors[:5])
    check(len(sent) == KEYS * ROUNDS + FILLER, "delivered %d records, want %d" % (len(sent), KEYS * ROUNDS + FILLER))
    check(sorted(sent) == list(range(len(sent))), "offsets are not 0..%d" % (len(sent) - 1))
    return sent, len(sent), last_keyed


def segment_files(b):
    d = os.path.join(b.data_dir, TOPIC + "-0")
    return {int(n[:-4]): os.path.getsize(os.path.join(d, n)) for n in os.listdir(d) if n.endswith(".log")}


def check_segment_bytes(b, sent, records):
    """The values the cleaner removed are gone from the segment files
    themselves (uncompressed batches), not just skipped by the reader."""
    d = os.path.join(b.data_dir, TOPIC + "-0")
    data = b"".join(open(os.path.join(d, n), "rb").read() for n in os.listdir(d) if n.endswith(".log"))
    kept = {o for o, _, _ in records}
    removed = [v for o, (k, v) in sent.items() if o not in kept and v is not None]
    check(removed, "nothing was removed")
    for v in removed:
        check(v.encode() not in data, "a removed value is still in a .log file: %s" % v[:30])
    for o, k, v in records:
        check(v is None or v.encode() in data, "a kept value is missing from the .log files: %s" % (v or "")[:30])


def watermarks(b):
    c = Consumer(conf(b, **{"group.id": "ck-it-compaction", "enable.auto.commit": False}))
    try:
        return c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=TIMEOUT)
    finally:
        c.close()


def read_all(b, leo, deadline_s=TIMEOUT):
    """Every record from the beginning up to leo - 1: [(offset, key, value)]."""
    c = Consumer(conf(b, **{"group.id": "ck-it-compaction", "enable.auto.commit": False,
                            "fetch.wait.max.ms": 100}))
    out = []
    try:
        c.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            m = c.poll(0.5)
            if m is None:
                continue
            check(m.error() is None, "consumer error %s" % m.error())
            v = m.value()
            out.append((m.offset(), m.key().decode(), None if v is None else v.decode()))
            if m.offset() >= leo - 1:
                return out
        raise harness.TestFailure("read %d records, none at offset %d within %ds" % (len(out), leo - 1, deadline_s))
    finally:
        c.close()


def compacted(records):
    keyed = [k for _, k, _ in records if k.startswith("key-")]
    return len(keyed) == KEYS


def check_compacted(records, sent, leo, what):
    offsets = [o for o, _, _ in records]
    check(all(a < b for a, b in zip(offsets, offsets[1:])), "%s: offsets do not strictly increase" % what)
    latest = {}
    for o, (k, v) in sorted(sent.items()):
        latest[k] = (o, v)
    got = {}
    for o, k, v in records:
        check(sent.get(o) == (k, v), "%s: offset %d holds %r, the producer wrote %r there" % (what, o, (k, v), sent.get(o)))
        if k in got:
            raise harness.TestFailure("%s: key %s appears at offsets %d and %d" % (what, k, got[k][0], o))
        got[k] = (o, v)
    for k, (o, v) in latest.items():
        check(got.get(k) == (o, v), "%s: key %s: read %r, want its latest %r" % (what, k, got.get(k), (o, v)))
    check(len(records) == len(latest), "%s: %d records, want one per key (%d)" % (what, len(records), len(latest)))
    for k in TOMBSTONED:
        check(got[k][1] is None, "%s: %s should end with its tombstone" % (what, k))
    check(got[REVIVED][1] is not None, "%s: %s was revived after its tombstone" % (what, REVIVED))
    lo, hi = watermarks_of[what]
    check((lo, hi) == (0, leo), "%s: watermarks %r, want (0, %d)" % (what, (lo, hi), leo))


watermarks_of = {}


def test(ctx):
    b = ctx.broker({"log.cleaner.backoff.ms": "100",
                    "log.cleaner.io.max.bytes.per.second": "4194304",
                    "ciuic.log.max.open.files": "8",
                    "log.flush.offset.checkpoint.interval.ms": "600000"})
    check("segment files: at most 8 open" in b.log_text(),
          "the broker did not report ciuic.log.max.open.files=8 at start-up")
    admin = AdminClient(conf(b))
    futures = admin.create_topics([NewTopic(TOPIC, 1, 1, config={
        "cleanup.policy": "compact", "segment.bytes": str(SEGMENT_BYTES),
        "min.cleanable.dirty.ratio": "0.01"})], operation_timeout=10)
    futures[TOPIC].result(timeout=TIMEOUT)
    del admin, futures  # its connection is not needed again
    harness.wait_until(lambda: b.leaders_ready(TOPIC, 1), 10, "leader of " + TOPIC)

    t0 = time.monotonic()
    sent, leo, last_keyed = produce(b)
    segs = segment_files(b)
    check(len(segs) > 8, "only %d segments: want more than ciuic.log.max.open.files" % len(segs))
    check(max(segs) > last_keyed, "the active segment (base %d) still holds keyed records (last at %d)" %
          (max(segs), last_keyed))
    print("produced %d records (%d keyed) in %.1fs, %d segments, %d bytes" %
          (leo, last_keyed + 1, time.monotonic() - t0, len(segs), sum(segs.values())), flush=True)

    # The cleaner runs on the broker's own schedule: poll until it has.
    t1 = time.monotonic()
    records = harness.wait_until(lambda: (lambda r: r if compacted(r) else None)(read_all(b, leo)),
                                 25, "the cleaner to leave each key once", interval=0.5)
    print("compacted after %.1fs: %d records left of %d" % (time.monotonic() - t1, len(records), leo), flush=True)
    watermarks_of["after compaction"] = watermarks(b)
    check_compacted(records, sent, leo, "after compaction")
    after = segment_files(b)
    # Against the bytes produced, not the segment files measured after the
    # produce: the cleaner runs while the records arrive (backoff 100 ms),
    # so on a slow machine those files were already partly cleaned.
    payload = sum(len(k) + len(v or "") for k, v in sent.values())
    check(sum(after.values()) < payload // 2,
          "segment bytes %d, want well below half the %d bytes of keys and values produced" %
          (sum(after.values()), payload))
    check_segment_bytes(b, sent, records)

    b.kill()
    b.start()
    again = read_all(b, leo)
    watermarks_of["after kill -9"] = watermarks(b)
    check(again == records, "after kill -9 and restart the records differ")
    check_compacted(again, sent, leo, "after kill -9")
    # The restarted cleaner's passes (its checkpoint predates the kill) change
    # nothing: wait until it has completed some (its pass counter), then read.
    harness.wait_until(lambda: (harness.scrape(b, "ciuic_log_cleaner_passes_total") or 0) >= 3, 15,
                       "three cleaner passes of the restarted broker", interval=0.1)
    later = read_all(b, leo)
    watermarks_of["after restart passes"] = watermarks(b)
    check(later == records, "after the restarted broker's cleaner passes the records differ")
    check_compacted(later, sent, leo, "after restart passes")


if __name__ == "__main__":
    harness.run_test(test, total_timeout=45)
