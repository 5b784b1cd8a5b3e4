"""tests/integration/test_state_load.py: the first idempotent write to a
partition loads its producer state on the I/O pool, not on the network
thread (issue #16 point 2; issue #14: a partition without a producer
snapshot is scanned whole).

Usage: test_state_load.py --broker BIN --work DIR

The broker (test build) runs on the in-memory file system with a disk that
reads at 0.5 MB/s (CK_TEST_MEMFS=1, CK_TEST_MEMFS_READ_BPS) and one network
thread. Plain Produce requests (no producer id, acks=1) write 24 MB in 48
batches to a partition, so it has no producer snapshot. Then, while a
second client on that thread sends ApiVersions in a loop, a confluent-kafka
idempotent producer writes one record: the broker loads the partition's
producer state first, scanning the whole log (a 16 KiB header window per
batch, about 0.8 MB: seconds on this disk). Done on the network thread (as
before this change), the scan would hold the prober for as long.
Checked: the record lands right after the plain ones; the broker logged
the load as a scan of the whole log without a snapshot that took 1 s or
more (else the test shows nothing); no ApiVersions round trip took as long
as a third of it or 1 s; a second record from the same producer is written
without a second load; and a pipelined pair of raw idempotent batches on
one connection (another partition, also unloaded) lands in the order sent.
"""

import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402
import kafka_wire as kw  # noqa: E402

TOPIC = "plain"
REQUESTS = 48         # plain Produce requests of one batch (Produce v3+) each
RECORDS = 500         # per batch, 1,000 bytes each: 0.5 MB
READ_BPS = 500000     # the in-memory disk reads at 0.5 MB/s (the load reads a 16 KiB window per batch)
LOADED = re.compile(r"(\S+): producer state loaded, offsets (\d+) to (\d+) scanned \((no snapshot|after a snapshot)\) "
                    r"in (\d+) ms")


def loads(b, partition):
    return [m for m in LOADED.finditer(b.log_text()) if m.group(1).endswith("%s-%d" % (TOPIC, partition))]


def write_plain(b, partition):
    value = b"x" * 1000
    with b.conn(timeout=60) as c:
        for r in range(REQUESTS):
            records = kw.record_batch([(None, value)] * RECORDS)
            res = kw.parse_produce_v3(c.request(0, 3, kw.produce_v3(1, 30000, [(TOPIC, [(partition, records)])])))
            err, base = res[(TOPIC, partition)][:2]
            check(err == 0 and base == r * RECORDS, "plain produce %d to %s-%d: error %d at offset %d"
                  % (r, TOPIC, partition, err, base))
    return REQUESTS * RECORDS


def main(ctx):
    from confluent_kafka import Producer
    b = ctx.broker({"num.network.threads": "1", "num.io.threads": "2"},
                   env={"CK_TEST_MEMFS": "1", "CK_TEST_MEMFS_READ_BPS": str(READ_BPS)})
    b.create_topic(TOPIC, 2)
    plain = write_plain(b, 0)
    write_plain(b, 1)
    check(not loads(b, 0), "a producer state was loaded before any idempotent write")

    p = Producer({"bootstrap.servers": b.bootstrap, "broker.address.family": "v4", "enable.idempotence": True,
                  "acks": "all", "linger.ms": 0, "message.timeout.ms": 60000})
    delivered = []
    with harness.ApiVersionsProber(b) as prober:
        t0 = time.monotonic()
        p.produce(TOPIC, b"first", partition=0, on_delivery=lambda err, msg: delivered.append((err, msg.offset())))
        check(p.flush(60) == 0, "the idempotent record was not delivered in 60 s")
        first_rtt = time.monotonic() - t0
        worst = prober.worst()
        rounds = len(prober.latencies)
    check(delivered[0][0] is None and delivered[0][1] == plain,
          "the idempotent record: %r, not offset %d" % (delivered[0], plain))
    found = loads(b, 0)
    check(len(found) == 1, "expected one producer state load of %s-0 in the log, found %d" % (TOPIC, len(found)))
    m = found[0]
    load_ms = int(m.group(5))
    print("[test] first idempotent write: %.2f s; the broker's load: offsets %s to %s (%s) in %d ms; "
          "ApiVersions meanwhile: %d round trips, slowest %.0f ms"
          % (first_rtt, m.group(2), m.group(3), m.group(4), load_ms, rounds, worst * 1000), flush=True)
    check(m.group(2) == "0" and int(m.group(3)) == plain and m.group(4) == "no snapshot",
          "the load did not scan the whole log without a snapshot: %s" % m.group(0))
    check(load_ms >= 1000, "the load took %d ms: the slow disk did not slow it, so the test shows nothing" % load_ms)
    check(worst < min(1.0, load_ms / 3000.0),
          "an ApiVersions round trip took %.0f ms while the broker loaded the producer state for %d ms: "
          "the network thread was held" % (worst * 1000, load_ms))

    p.produce(TOPIC, b"second", partition=0, on_delivery=lambda err, msg: delivered.append((err, msg.offset())))
    check(p.flush(60) == 0, "the second idempotent record was not delivered")
    check(delivered[1] == (None, plain + 1), "the second idempotent record: %r, not offset %d" % (delivered[1], plain + 1))
    check(len(loads(b, 0)) == 1, "the second record loaded the producer state again")

    # Partition 1, also unloaded: two idempotent batches sent back to back on one connection. The
    # first goes to the pool for the load; the second must wait for it (its sequence follows).
    with b.conn(timeout=60) as c:
        pid_resp = c.request(22, 0, kw.string(None) + kw.i32(60000))
        pid_resp.i32()  # throttle
        check(pid_resp.i16() == 0, "InitProducerId failed")
        pid, epoch = pid_resp.i64(), pid_resp.i16()
        one = kw.record_batch([(None, b"one")], producer_id=pid, producer_epoch=epoch, base_sequence=0)
        two = kw.record_batch([(None, b"two")], producer_id=pid, producer_epoch=epoch, base_sequence=1)
        s1 = c.send(0, 3, kw.produce_v3(-1, 30000, [(TOPIC, [(1, one)])]))
        s2 = c.send(0, 3, kw.produce_v3(-1, 30000, [(TOPIC, [(1, two)])]))
        r1 = kw.parse_produce_v3(c.receive(s1))[(TOPIC, 1)]
        r2 = kw.parse_produce_v3(c.receive(s2))[(TOPIC, 1)]
    check(r1[0] == 0 and r1[1] == plain and r2[0] == 0 and r2[1] == plain + 1,
          "pipelined idempotent batches on partition 1: %r then %r, not offsets %d and %d" % (r1, r2, plain, plain + 1))
    check(len(loads(b, 1)) == 1, "partition 1's producer state was not loaded once: %d loads" % len(loads(b, 1)))
    print("[test] pipelined idempotent batches after a load: offsets %d and %d, in order" % (r1[1], r2[1]), flush=True)


if __name__ == "__main__":
    harness.run_test(main, total_timeout=180)
