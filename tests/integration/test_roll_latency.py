"""tests/integration/test_roll_latency.py: a segment roll does not stall the
network thread (issue #16, point 2).

Usage: test_roll_latency.py --broker BIN --work DIR

The broker runs on the in-memory file system of test builds with a slow
disk (CK_TEST_MEMFS=1, CK_TEST_MEMFS_SYNC_BPS=524288: an fdatasync takes
the bytes it syncs / 512 KiB seconds, so syncing a 1 MiB segment takes 2 s),
one network thread, 1 MiB segments. A producer (acks=1, so no request of
its own waits for an fsync) writes 5 MiB to one partition: 4 rolls or more.
Meanwhile a second client on the same network thread sends ApiVersions in a
loop. A roll that fsynced the old segment on the network thread (as before
this issue) holds every connection of that thread for 2 s; a roll that
leaves the fsync to group commit's thread holds it for the time of an empty
marker file and a directory sync. The test checks the rolls happened and
that no ApiVersions round trip took 1 s or more, and prints the slowest.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402

TOPIC = "rolls"
SEGMENT = 1 << 20
TOTAL = 5 << 20


def segments_of(b, topic):
    """kafka_log_log_numlogsegments of partition 0 of topic, from /metrics."""
    import urllib.request
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % b.metrics_port, timeout=5).read().decode()
    for line in text.splitlines():
        if line.startswith("kafka_log_log_numlogsegments{") and 'topic="%s"' % topic in line and \
                'partition="0"' in line:
            return float(line.rsplit(" ", 1)[1])
    return None


def main(ctx):
    from confluent_kafka import Producer
    b = ctx.broker({"num.network.threads": "1", "log.segment.bytes": str(SEGMENT), "num.partitions": "1"},
                   env={"CK_TEST_MEMFS": "1", "CK_TEST_MEMFS_SYNC_BPS": str(512 * 1024)})
    b.create_topic(TOPIC, 1)

    p = Producer({"bootstrap.servers": b.bootstrap, "broker.address.family": "v4", "acks": "1",
                  "linger.ms": 5, "batch.size": 256 * 1024, "compression.type": "none"})
    value = b"x" * 1024
    acked = []
    with harness.ApiVersionsProber(b, timeout=30) as prober:
        t0 = time.monotonic()
        for _ in range(TOTAL // len(value)):
            while True:
                try:
                    p.produce(TOPIC, value=value, partition=0, on_delivery=lambda e, m: acked.append(e is None))
                    break
                except BufferError:
                    p.poll(0.05)
        p.flush(120)
        produce_s = time.monotonic() - t0
    check(len(acked) == TOTAL // len(value) and all(acked), "%d of %d acknowledged" % (sum(acked), len(acked)))
    segments = segments_of(b, TOPIC)
    check(segments is not None and segments >= 5, "%s segments: want 5 or more (4 rolls)" % segments)
    worst = prober.worst()
    print("[test] %d MiB in %.1fs, %d segments; %d ApiVersions round trips meanwhile, slowest %.0f ms, "
          "median %.1f ms" % (TOTAL >> 20, produce_s, segments, len(prober.latencies), worst * 1000,
                              prober.median() * 1000), flush=True)
    check(worst < 1.0, "an ApiVersions round trip took %.0f ms: a roll stalled the network thread "
                       "(a roll's fsync of a 1 MiB segment takes 2 s on this disk)" % (worst * 1000))

if __name__ == "__main__":
    harness.run_test(main, total_timeout=150)
