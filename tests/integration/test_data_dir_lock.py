"""tests/integration/test_data_dir_lock.py: one broker per data directory (issue #18, point 1).

Usage: test_data_dir_lock.py --broker BIN --work DIR

A broker runs on its data dir with a few messages written. A second broker
on the same dir, on another port and then on the same port, must exit 1 at
once with a line naming the directory and the first broker's pid, and leave
every file of the dir byte-identical (no clean-shutdown marker, no
checkpoint, no byte written). The first broker is stopped (SIGSTOP, every
thread of it seen stopped in /proc, io_uring workers included) while the
refused ones run, so that its own background writes (the transaction
coordinator creating __transaction_state a moment after the first produce,
checkpoints) cannot be mistaken for theirs; its flock stays held while it is
stopped. Then kill -9 of the first broker and a
restart: it must run recovery (no marker was left by the refused ones) and
still hold every message.
"""

import hashlib
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402

TOPIC = "locked"


def snapshot(d):
    out = {}
    for root, _, files in os.walk(d):
        for f in files:
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, d)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def produce(b, n):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all"})
    acked = []
    for i in range(n):
        p.produce(TOPIC, value=b"m%d" % i, on_delivery=lambda e, m: acked.append(e is None))
    p.flush(30)
    check(len(acked) == n and all(acked), "%d of %d acknowledged" % (sum(acked), n))


def count(b):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "lock-test", "enable.auto.commit": False})
    lo, hi = c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)
    c.close()
    return hi - lo


def all_threads_stopped(pid):
    """True when every thread of pid is in state T (stopped) or t (traced)."""
    task = "/proc/%d/task" % pid
    for tid in os.listdir(task):
        try:
            with open(os.path.join(task, tid, "stat")) as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            continue  # the thread ended
        if state not in ("T", "t"):
            return False
    return True


def freeze(b):
    os.kill(b.proc.pid, signal.SIGSTOP)
    deadline = time.monotonic() + 20
    while not all_threads_stopped(b.proc.pid):
        check(time.monotonic() < deadline, "the first broker's threads did not all stop within 20 s")
        time.sleep(0.01)


def second_broker(ctx, first, name, port):
    cmd = [ctx.binary, "--override", "node.id=0", "--override", "log.dirs=" + first.data_dir,
           "--override", "listeners=PLAINTEXT://127.0.0.1:%d" % port,
           "--override", "ciuic.metrics.listener=127.0.0.1:%d" % harness.free_port()]
    t0 = time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
    out = r.stdout.decode("utf-8", "replace")
    print("[test] %s: exit %d after %.1fs: %s" % (name, r.returncode, time.monotonic() - t0, out.strip()))
    check(r.returncode == 1, "%s: exit %d, want 1" % (name, r.returncode))
    check(first.data_dir in out and "in use by another broker" in out and str(first.proc.pid) in out,
          "%s: the message names neither the dir nor pid %d" % (name, first.proc.pid))


def main(ctx):
    b = ctx.broker()
    b.create_topic(TOPIC)
    produce(b, 200)
    freeze(b)
    before = snapshot(b.data_dir)
    second_broker(ctx, b, "other-port", harness.free_port())
    second_broker(ctx, b, "same-port", b.port)
    after = snapshot(b.data_dir)
    os.kill(b.proc.pid, signal.SIGCONT)
    check(before == after, "the refused brokers changed the data dir: %s" %
          sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k)))
    check(not os.path.exists(os.path.join(b.data_dir, ".kafka_cleanshutdown")), "a clean-shutdown marker appeared")
    check(count(b) == 200, "the first broker lost messages")
    b.kill()
    b.start()
    check("logs opened with recovery" in b.log_text(), "the restart after kill -9 did not run recovery")
    check(count(b) == 200, "messages lost across the kill -9")


if __name__ == "__main__":
    harness.run_test(main, total_timeout=90)
