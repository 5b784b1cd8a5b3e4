"""tests/integration/test_cold_reads.py: a fetch whose read would wait for
the disk is read on the I/O pool, not on the network thread (issue #14: a
reader replaying old data must not hold that thread's other connections).

Usage: test_cold_reads.py --broker BIN --work DIR

The broker (real files, 16 MiB segments) takes 48 MB in topic "old" from a
confluent-kafka producer (acks=all, not idempotent). The test then drops
those segment files' pages from the page cache (fsync, POSIX_FADV_DONTNEED)
and checks with fincore(1) that they are gone: otherwise
nothing below would mean anything. Then, each time reading
every record back once, in order, with its value:
- a read_uncommitted consumer: ciuic_fetch_cold_reads_total and
  ciuic_fetch_cold_read_bytes_total grow (the broker saw bytes not in the
  page cache and read them on the I/O pool);
- a second read_uncommitted consumer, the pages now cached: the counters do
  not move (the probes do not call cached bytes cold);
- the broker is killed (-9) and restarted, so the partition's producer
  state is not loaded (no idempotent producer wrote it); a read_committed
  consumer (librdkafka's default) then makes the broker load it, which
  scans the log from the newest producer snapshot, so its first fetch is
  read on the pool too. The broker logs that load: it starts at a snapshot
  in the last segment, which the broker wrote after its last roll, as Kafka
  does (before that, the first load after a crash scanned the whole log);
- a second read_committed consumer: the state is loaded, nothing moves.

No timing is checked: on a fast disk a cold read takes milliseconds, and
the benchmark (tests/bench/run_broker_bench.sh, phase "cold") measures what
it costs the other readers.
"""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition  # noqa: E402

TOPIC = "old"
COUNT = 4800
VALUE_SIZE = 10240  # 48 MB in all, three 16 MiB segments and part of a fourth


def value(i):
    return (b"%08d" % i) * (VALUE_SIZE // 8)


def segment_files(b):
    d = os.path.join(b.data_dir, TOPIC + "-0")
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".log"))


def resident_bytes(path):
    """Bytes of path in the page cache, by fincore(1) (util-linux; mincore,
    which unlike a probing read starts no readahead)."""
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", path],
                         capture_output=True, text=True, check=True).stdout
    return int(out.split()[0])


def drop_from_page_cache(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)  # dirty pages cannot be dropped
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def read_all(b, group, isolation):
    c = Consumer({"bootstrap.servers": b.bootstrap, "broker.address.family": "v4", "group.id": group,
                  "enable.auto.commit": False, "enable.partition.eof": True, "socket.timeout.ms": 20000,
                  "isolation.level": isolation})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    got = []
    try:
        while True:
            m = c.poll(30)
            check(m is not None, "%s: no message for 30 s after %d records" % (group, len(got)))
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    break
                raise harness.TestFailure("%s: %s" % (group, m.error()))
            got.append((m.offset(), m.value()))
    finally:
        c.close()
    check(len(got) == COUNT, "%s read %d records, not %d" % (group, len(got), COUNT))
    for i, (off, v) in enumerate(got):
        check(off == i and v == value(i), "%s: record %d is offset %d with value %r..." % (group, i, off, v[:16]))


LOADED = re.compile(r"(\S+): producer state loaded, offsets (\d+) to (\d+) scanned \((no snapshot|after a snapshot)\)")


def counters(b):
    return (harness.scrape(b, "ciuic_fetch_cold_reads_total") or 0,
            harness.scrape(b, "ciuic_fetch_cold_read_bytes_total") or 0)


def main(ctx):
    b = ctx.broker({"log.segment.bytes": str(16 << 20), "num.network.threads": "1"})
    p = Producer({"bootstrap.servers": b.bootstrap, "broker.address.family": "v4", "acks": "all",
                  "linger.ms": 5})
    failed = []
    for i in range(COUNT):
        p.produce(TOPIC, value(i), on_delivery=lambda err, m: err and failed.append(err))
        p.poll(0)
    check(p.flush(60) == 0, "producer did not deliver everything within 60 s")
    check(not failed, "deliveries failed: %s" % failed[:3])

    files = segment_files(b)
    check(len(files) >= 3, "topic %s has %d segment files, want 3 or more: %s" % (TOPIC, len(files), files))
    for f in files:
        drop_from_page_cache(f)
    resident = sum(resident_bytes(f) for f in files)
    total = sum(os.path.getsize(f) for f in files)
    print("[test] %d segment files, %d bytes; %d in the page cache after dropping them" % (len(files), total, resident),
          flush=True)
    check(resident <= total // 4,
          "%d of %d bytes are still in the page cache: this machine keeps them (tmpfs?), so the test would "
          "show nothing" % (resident, total))

    reads0, bytes0 = counters(b)
    read_all(b, "replay-cold", "read_uncommitted")
    reads1, bytes1 = counters(b)
    print("[test] cold replay: %d fetches read on the pool, %d bytes" % (reads1 - reads0, bytes1 - bytes0),
          flush=True)
    check(reads1 > reads0 and bytes1 > bytes0,
          "no fetch of the dropped records was read on the I/O pool (ciuic_fetch_cold_reads_total %s -> %s, "
          "bytes %s -> %s)" % (reads0, reads1, bytes0, bytes1))

    read_all(b, "replay-hot", "read_uncommitted")
    reads2, bytes2 = counters(b)
    print("[test] cached replay: %d fetches read on the pool" % (reads2 - reads1), flush=True)
    check(reads2 == reads1 and bytes2 == bytes1,
          "cached records were read on the pool (%s -> %s fetches)" % (reads1, reads2))

    last_base = int(os.path.basename(files[-1])[:20])
    b.restart(clean=False)
    reads2, _ = counters(b)
    read_all(b, "committed-first", "read_committed")
    reads3, _ = counters(b)
    loads = [m for m in LOADED.finditer(b.log_text()) if m.group(1).endswith("/%s-0" % TOPIC)]
    check(len(loads) == 1, "expected one producer state load of %s-0 after the restart, found %d" % (TOPIC, len(loads)))
    m = loads[0]
    print("[test] after kill -9, the producer state load scanned offsets %s to %s (%s); last segment at %d"
          % (m.group(2), m.group(3), m.group(4), last_base), flush=True)
    check(m.group(4) == "after a snapshot" and int(m.group(2)) >= last_base,
          "the load after the crash did not start at a snapshot in the last segment (base %d): %s"
          % (last_base, m.group(0)))
    print("[test] first read_committed replay: %d fetches read on the pool" % (reads3 - reads2), flush=True)
    check(reads3 > reads2, "the producer state's load was not left to the I/O pool (%s -> %s fetches)"
          % (reads2, reads3))

    read_all(b, "committed-again", "read_committed")
    reads4, _ = counters(b)
    check(reads4 == reads3, "a read_committed replay with the state loaded and the pages cached was read on "
          "the pool (%s -> %s fetches)" % (reads3, reads4))

if __name__ == "__main__":
    harness.run_test(main, total_timeout=120)
