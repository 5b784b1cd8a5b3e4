"""tests/integration/test_power_cut.py: acks=all survives a power cut, not just kill -9.

Usage: test_power_cut.py --broker BIN --work DIR {fsync|torn|nofsync} [SEED]

kill -9 (test_durability.py) leaves the page cache alone, so it passes even
when the broker never fsyncs. Here the broker (a test build: CK_TEST_HOOKS)
runs with CK_TEST_MEMFS=1: its log dirs live on the in-memory crash-model
file system (storage/io/mem_file.h), and SIGUSR2 cuts the power: the file
system keeps only what a completed sync covered, the listeners and
connections drop as a dead machine's, and a new broker starts in the same
process, on the same port, recovering from what survived (broker/main.cc,
broker/test_hooks.h). It logs "power cut N: restarted ..." once listening.

A confluent-kafka producer (acks=all, at most 200 records outstanding,
retries on) writes numbered records to the two partitions of a topic and
notes the (partition, offset) of each acknowledged one. Three times, once
ACKED_BEFORE_CUT more records are acknowledged and while more are in
flight, the power is cut; the producer carries on across each restart.
Then every record is read back from each partition with a Consumer:

  fsync   (ciuic.acks.all.fsync=true): every acknowledged record is present
          at exactly the offset its acknowledgement gave, and no offset was
          acknowledged twice. Must pass.
  nofsync (ciuic.acks.all.fsync=false, flush.messages/flush.ms at their
          "never" defaults): nothing is synced, so each cut drops every
          acknowledged record since the topic was made; the same check must
          find acknowledged records lost (or their offsets reused). This
          proves the check can fail: the power cut really drops data.
  torn    (fsync off again) and each cut keeps a pseudo-random prefix of
          every file's unsynced tail (CK_TEST_MEMFS_TORN=SEED; SEED from
          the command line, else from the clock, printed to repeat a run),
          as a disk that wrote part of its cache back on its own would: the
          logs end in torn batches, which recovery must cut (the broker's
          recovery lines must report truncated bytes), leaving whole
          records only: every record read back is intact, one that was
          produced, to that partition, at offsets 0..n-1, and where its
          offset was acknowledged for another record, that one was lost
          (reported, not a failure: nothing was synced). Seen so far:
          recovery's cut of a torn tail is not itself synced, so at the
          next cut the old torn bytes come back and recovery cuts there
          again; cuts 2 and 3 then end each log where cut 1 did (allowed
          with fsync off: those appends were never synced).
"""

import os
import re
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition  # noqa: E402

TOPIC = "powercut"
PARTITIONS = 2
CUTS = 3
ACKED_BEFORE_CUT = 400   # newly acknowledged records before each cut
ACKED_AFTER_LAST = 400   # and after the last restart, before the read-back
OUTSTANDING = 200        # records produced but not yet reported, at most
RESTART_TIMEOUT = 30


def value(n):
    return b"rec-%07d-" % n + b"x" * (n % 50)


class Acks:
    """Delivery reports: acknowledged (partition, offset) -> value, and failures."""

    def __init__(self):
        self.cond = threading.Condition()
        self.acked = []      # (partition, offset, value) in report order
        self.failed = []     # (partition, error)

    def on_delivery(self, err, msg):
        with self.cond:
            if err is None:
                self.acked.append((msg.partition(), msg.offset(), msg.value()))
            else:
                self.failed.append((msg.partition(), str(err)))
            self.cond.notify_all()

    def count(self):
        with self.cond:
            return len(self.acked)


def produce_loop(p, acks, stop, sent):
    """Produces numbered records round-robin over the partitions until stop is set."""
    n = 0
    while not stop.is_set():
        if len(p) >= OUTSTANDING:
            p.poll(0.05)  # serves delivery reports; returns at the first one
            continue
        try:
            p.produce(TOPIC, value=value(n), partition=n % PARTITIONS, on_delivery=acks.on_delivery)
            n += 1
            sent[0] = n
        except BufferError:
            p.poll(0.05)
        p.poll(0)


def wait_acked(b, acks, target, what):
    """Waits (on delivery reports) until target records are acknowledged."""
    deadline = time.monotonic() + 60
    with acks.cond:
        while len(acks.acked) < target:
            check(b.alive(), "broker died while waiting for %s" % what)
            left = deadline - time.monotonic()
            check(left > 0, "only %d of %d records acknowledged (%s); failures %r" %
                  (len(acks.acked), target, what, acks.failed[:5]))
            acks.cond.wait(min(left, 1.0))


def wait_log(b, text, timeout):
    """Waits until the broker's log has the line text (the broker's own event)."""
    deadline = time.monotonic() + timeout
    while text not in b.log_text():
        check(b.alive(), "broker exited (status %s) waiting for %r" % (b.proc.poll(), text))
        check(time.monotonic() < deadline, "no %r in the broker's log within %ds" % (text, timeout))
        time.sleep(0.05)


def read_back(b):
    """Every record of each partition: {partition: {offset: value}}, and the high watermarks."""
    c = Consumer({"bootstrap.servers": b.bootstrap, "broker.address.family": "v4",
                  "group.id": "ck-it-power-cut", "enable.auto.commit": False,
                  "enable.partition.eof": True})
    try:
        highs = {}
        for part in range(PARTITIONS):
            _, highs[part] = c.get_watermark_offsets(TopicPartition(TOPIC, part), timeout=10)
        c.assign([TopicPartition(TOPIC, part, OFFSET_BEGINNING) for part in range(PARTITIONS)])
        got = {part: {} for part in range(PARTITIONS)}
        done = {part for part in range(PARTITIONS) if highs[part] == 0}
        deadline = time.monotonic() + 30
        while len(done) < PARTITIONS:
            check(time.monotonic() < deadline, "read-back incomplete after 30s: %r of %r" %
                  ({q: len(r) for q, r in got.items()}, highs))
            m = c.poll(1.0)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:  # _PARTITION_EOF
                    if m.offset() >= highs[m.partition()]:
                        done.add(m.partition())
                    continue
                raise harness.TestFailure("consumer error: %s" % m.error())
            got[m.partition()][m.offset()] = m.value()
            if m.offset() + 1 >= highs[m.partition()]:
                done.add(m.partition())
        return got, highs
    finally:
        c.close()


def lost_records(acks, got):
    """Acknowledged records not found at their acknowledged offset."""
    lost = []
    for part, off, val in acks.acked:
        if got[part].get(off) != val:
            lost.append((part, off, val, got[part].get(off)))
    return lost


def main(ctx):
    mode = ctx.args[0] if ctx.args else "fsync"
    check(mode in ("fsync", "torn", "nofsync"), "mode is fsync, torn or nofsync, not %r" % mode)
    env = {"CK_TEST_MEMFS": "1"}
    if mode == "torn":
        seed = int(ctx.args[1]) if len(ctx.args) > 1 else int(time.time() * 1000) % 1000000007
        env["CK_TEST_MEMFS_TORN"] = str(seed)
        print("[power_cut] torn tails, seed %d (repeat: test_power_cut.py ... torn %d)" % (seed, seed), flush=True)
    b = ctx.broker({"num.partitions": str(PARTITIONS),
                    "ciuic.acks.all.fsync": "true" if mode == "fsync" else "false"},
                   env=env)
    wait_log(b, "CK_TEST_MEMFS=1: log dirs on an in-memory file system", 5)
    b.create_topic(TOPIC, PARTITIONS)

    acks = Acks()
    p = Producer({"bootstrap.servers": b.bootstrap, "broker.address.family": "v4",
                  "acks": "all", "linger.ms": 2, "retries": 1000000, "message.timeout.ms": 45000,
                  "reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 200,
                  "socket.timeout.ms": 10000})
    stop = threading.Event()
    sent = [0]
    t = threading.Thread(target=produce_loop, args=(p, acks, stop, sent), daemon=True)
    t.start()
    t0 = time.monotonic()
    try:
        for cut in range(1, CUTS + 1):
            wait_acked(b, acks, acks.count() + ACKED_BEFORE_CUT, "before cut %d" % cut)
            # Mid-stream: the producer keeps OUTSTANDING records in flight.
            acked_at_cut, sent_at_cut = acks.count(), sent[0]
            t_cut = time.monotonic()
            b.proc.send_signal(signal.SIGUSR2)
            wait_log(b, "power cut %d: restarted" % cut, RESTART_TIMEOUT)
            print("[power_cut] cut %d at %.1fs: %d acknowledged, %d sent; listening again %.2fs later" %
                  (cut, t_cut - t0, acked_at_cut, sent_at_cut, time.monotonic() - t_cut), flush=True)
        wait_acked(b, acks, acks.count() + ACKED_AFTER_LAST, "after the last restart")
    finally:
        stop.set()
        t.join(10)
    left = p.flush(60)
    check(left == 0, "%d records never reported after 60s" % left)
    check(not t.is_alive(), "producer thread did not stop")
    print("[power_cut] %s: %d records sent, %d acknowledged, %d failed (%r) in %.1fs" %
          (mode, sent[0], len(acks.acked), len(acks.failed), acks.failed[:3], time.monotonic() - t0), flush=True)

    got, highs = read_back(b)
    lost = lost_records(acks, got)
    twice = len(acks.acked) - len({(q, o) for q, o, _ in acks.acked})
    print("[power_cut] %s: read back %r records (high watermarks %r); %d acknowledged records lost, "
          "%d offsets acknowledged twice" % (mode, {q: len(r) for q, r in got.items()}, highs, len(lost), twice),
          flush=True)
    truncated = sum(int(x) for x in re.findall(r"segments scanned, (\d+) bytes truncated", b.log_text()))
    print("[power_cut] %s: recovery truncated %d bytes over %d restarts" % (mode, truncated, CUTS), flush=True)
    for part in range(PARTITIONS):
        offsets = sorted(got[part])
        check(offsets == list(range(highs[part])),
              "partition %d: offsets are not 0..%d: %r" % (part, highs[part] - 1, offsets[:10]))
    if mode == "fsync":
        check(not acks.failed, "delivery failures with fsync on: %r" % acks.failed[:5])
        check(not lost, "%d acknowledged records lost across %d power cuts, e.g. %r" % (len(lost), CUTS, lost[:5]))
        check(twice == 0, "%d offsets acknowledged twice" % twice)
    elif mode == "torn":
        check(truncated > 0, "torn tails kept at %d cuts, but recovery truncated nothing" % CUTS)
        for part in range(PARTITIONS):
            for off, val in got[part].items():
                m = re.match(rb"rec-(\d{7})-", val or b"")
                check(m is not None and val == value(int(m.group(1))),
                      "partition %d offset %d: not a record the producer sent: %r" % (part, off, (val or b"")[:40]))
                n = int(m.group(1))
                check(n < sent[0] and n % PARTITIONS == part,
                      "partition %d offset %d: record %d was sent to partition %d" % (part, off, n, n % PARTITIONS))
    else:
        # Without fsync nothing was durable at any cut: the check above must
        # find losses here, or it could not fail.
        check(lost, "fsync off, %d power cuts, and no acknowledged record lost: the power cut drops nothing" % CUTS)
        check(len(lost) >= ACKED_BEFORE_CUT,
              "fsync off: only %d acknowledged records lost, want at least the %d before the last cut" %
              (len(lost), ACKED_BEFORE_CUT))


if __name__ == "__main__":
    harness.run_test(main, total_timeout=90)
