"""tests/integration/test_io_pool.py: creating and deleting topics does not
stall the network thread (issue #16, point 2: num.io.threads).

Usage: test_io_pool.py --broker BIN --work DIR

The broker runs on the in-memory file system of test builds with a disk
whose every file and directory sync takes 20 ms (CK_TEST_MEMFS=1,
CK_TEST_MEMFS_SYNC_US=20000) and one network thread. While a second client
on that thread sends ApiVersions in a loop, one client creates a topic of 20
partitions (CreateTopics), auto-creates one of 20 by asking Metadata for it,
adds 20 partitions to the first (CreatePartitions), then deletes the second
(DeleteTopics). Each step's directories, files and syncs take seconds on
this disk. A last step is CPU, not disk: one Produce of a single
uncompressed batch of 60 MB to a topic whose compression.type is gzip at
level 9, which the broker compresses anew (seconds of work). Done on the
network thread (as before this issue), each step would hold the prober for
as long; done on the I/O pool, the prober's round trips stay short. Checked:
every step succeeds (the produced records are all there, stored as gzip),
took long enough for the test to mean something (1 s or more), and no
ApiVersions round trip took as long as a third of the fastest step or 1 s.
A Fetch v2 of that topic (message format v1: the broker reads the batch
from disk, decompresses, converts and compresses it again) is the last.

First, validation alone: one raw Produce (acks=-1) of a gzip batch of
1,000,000 tiny records to a topic that keeps the producer's codec. The
broker decompresses it only to check every record, on the I/O pool (64 KiB
or more of compressed batches): no ApiVersions round trip meanwhile takes a
third of that Produce's round trip (which must take 0.3 s or more to mean
something). A second Produce, sent on the same connection before the first
is answered, lands right after the first's records: the connection held it
until the first had its offsets.
"""

import os
import random
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402
from kafka_wire import parse_produce_v3 as kw_parse_produce, produce_v3 as kw_produce  # noqa: E402

PARTITIONS = 20
# The recompressed produce: RECORDS records of about 1 KiB, in one batch.
RECORDS = 60000
# The validated produce: VALIDATED records of 8 bytes, in one gzip batch.
VALIDATED = 1000000


def main(ctx):
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
    b = ctx.broker({"num.network.threads": "1", "num.partitions": str(PARTITIONS), "num.io.threads": "2"},
                   env={"CK_TEST_MEMFS": "1", "CK_TEST_MEMFS_SYNC_US": "20000"})
    admin = AdminClient({"bootstrap.servers": b.bootstrap, "broker.address.family": "v4",
                         "socket.timeout.ms": 120000})
    steps = []

    def step(name, fn):
        t0 = time.monotonic()
        fn()
        steps.append((name, time.monotonic() - t0))

    def create():
        for f in admin.create_topics([NewTopic("made", PARTITIONS, 1)], operation_timeout=120).values():
            f.result(120)

    def auto_create():
        with b.conn(timeout=120) as c:
            md = c.metadata(["auto"])
        t = [t for t in md["topics"] if t["name"] == "auto"]
        check(t and t[0]["error"] == 0 and len(t[0]["partitions"]) == PARTITIONS,
              "Metadata did not auto-create topic auto with %d partitions: %r" % (PARTITIONS, t))

    def add_partitions():
        for f in admin.create_partitions([NewPartitions("made", PARTITIONS + 20)], operation_timeout=120).values():
            f.result(120)

    def delete():
        for f in admin.delete_topics(["auto"], operation_timeout=120).values():
            f.result(120)

    # Text-like records (words from a small vocabulary), so gzip at level 9
    # works hard for its ratio.
    rnd = random.Random(7)
    words = ["".join(rnd.choice("abcdefghijklmnop") for _ in range(rnd.randint(3, 9))) for _ in range(5000)]
    texts = [" ".join(rnd.choice(words) for _ in range(150)).encode()[:1000] for _ in range(4000)]
    for f in admin.create_topics([NewTopic("squeezed", 1, 1, config={
            "compression.type": "gzip", "compression.gzip.level": "9",
            "max.message.bytes": "200000000"})], operation_timeout=120).values():
        f.result(120)

    def produce_recompressed():
        from confluent_kafka import Producer
        p = Producer({"bootstrap.servers": b.bootstrap, "broker.address.family": "v4",
                      "compression.type": "none", "linger.ms": 60000, "batch.size": 200000000,
                      "batch.num.messages": 1000000, "message.max.bytes": 200000000, "acks": 1,
                      "queue.buffering.max.kbytes": 1048576, "socket.timeout.ms": 120000})
        errors = []
        for i in range(RECORDS):
            p.produce("squeezed", texts[i % len(texts)] + b" %d" % i,
                      on_delivery=lambda err, msg: err and errors.append(err))
        check(p.flush(120) == 0, "the producer did not flush its 60 MB batch")
        check(not errors, "produce to the gzip topic failed: %s" % errors[:3])

    def fetch_down_converted():
        # Fetch v2 reads message format v1: the 60 MB gzip batch is read from
        # disk, decompressed, converted and compressed again.
        from kafka_wire import array, i32, i64, string
        part = lambda p: i32(p[0]) + i64(p[1]) + i32(p[2])  # noqa: E731
        body = i32(-1) + i32(0) + i32(1) + array([("squeezed", [(0, 0, 100 << 20)])],
                                                 lambda t: string(t[0]) + array(t[1], part))
        with b.conn(timeout=120) as c:
            d = c.request(1, 2, body)
        d.i32()  # throttle
        check(d.i32() == 1 and d.string() == "squeezed" and d.i32() == 1, "Fetch v2: unexpected topics")
        d.i32()  # partition
        err, _hw, recs = d.i16(), d.i64(), d.nbytes()
        check(err == 0 and len(recs) > 17 and recs[16] == 1,
              "Fetch v2 of squeezed: error %d, %d bytes, not a v1 message set" % (err, len(recs)))

    # Validation only: a gzip batch of VALIDATED tiny records to a topic that keeps the producer's codec
    # (compression.type=producer). The broker decompresses and checks every record (Kafka's LogValidator),
    # on the I/O pool since it holds 64 KiB or more of compressed batches.
    from kafka_wire import record_batch
    for f in admin.create_topics([NewTopic("validated", 1, 1, config={"max.message.bytes": "200000000"})],
                                 operation_timeout=120).values():
        f.result(120)
    big = record_batch([(None, b"v%07d" % i) for i in range(VALIDATED)], gzip=True)
    small = record_batch([(None, b"after")])
    with b.conn(timeout=120) as c, harness.ApiVersionsProber(b) as vprober:
        # Both on one connection, the second sent before the first is answered: it is dispatched
        # once the first's records have offsets (not before: it must land after them).
        t0 = time.monotonic()
        first = c.send(0, 3, kw_produce(-1, 120000, [("validated", [(0, big)])]))
        second = c.send(0, 3, kw_produce(-1, 120000, [("validated", [(0, small)])]))
        r1 = kw_parse_produce(c.receive(first))[("validated", 0)]
        validate_rtt = time.monotonic() - t0
        r2 = kw_parse_produce(c.receive(second))[("validated", 0)]
        worst_validate = vprober.worst()
    check(r1[0] == 0 and r1[1] == 0, "the validated gzip produce: %r" % (r1,))
    check(r2[0] == 0 and r2[1] == VALIDATED,
          "the produce pipelined after it landed at %r, not right after its %d records" % (r2, VALIDATED))
    print("[test] validating %d gzip records (%d bytes compressed): %.2fs; ApiVersions meanwhile: slowest %.0f ms "
          "of %d" % (VALIDATED, len(big), validate_rtt, worst_validate * 1000, len(vprober.latencies)), flush=True)
    check(validate_rtt >= 0.3, "validating took %.2fs: too fast for the test to show anything" % validate_rtt)
    check(worst_validate < validate_rtt / 3,
          "an ApiVersions round trip took %.0f ms while the broker validated for %.2fs: the network thread was held"
          % (worst_validate * 1000, validate_rtt))

    with harness.ApiVersionsProber(b) as prober:
        step("CreateTopics", create)
        step("Metadata auto-create", auto_create)
        step("CreatePartitions", add_partitions)
        step("DeleteTopics", delete)
        step("Produce recompressed", produce_recompressed)
        step("Fetch v2 down-converted", fetch_down_converted)
    with b.conn(timeout=60) as c:
        err, _, end = c.list_offsets([("squeezed", [(0, -1)])])[("squeezed", 0)]
        check(err == 0 and end == RECORDS, "squeezed ends at %s (error %s), not %d" % (end, err, RECORDS))
        first = c.fetch([("squeezed", [(0, 0, 1)])])[("squeezed", 0)]["records"]
    check(len(first) > 61 and first[16] == 2, "no v2 batch at the start of squeezed")
    codec = struct.unpack(">h", first[21:23])[0] & 7
    check(codec == 1, "squeezed's first batch is stored with codec %d, not gzip (1)" % codec)
    worst = prober.worst()
    print("[test] %s; %d ApiVersions round trips meanwhile, slowest %.0f ms, median %.1f ms"
          % (", ".join("%s %.1fs" % s for s in steps), len(prober.latencies), worst * 1000,
             prober.median() * 1000), flush=True)
    fastest = min(s[1] for s in steps)
    check(fastest >= 1.0,
          "a step took %.2fs: neither the slow disk nor the work slowed it, so the test shows nothing" % fastest)
    check(worst < min(1.0, fastest / 3),
          "an ApiVersions round trip took %.0f ms while the steps ran (the fastest step took "
          "%.1fs): the network thread was held" % (worst * 1000, fastest))


if __name__ == "__main__":
    harness.run_test(main, total_timeout=240)
