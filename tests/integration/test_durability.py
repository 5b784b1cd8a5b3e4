"""tests/integration/test_durability.py: acks=all survives kill -9.

A raw producer (kafka_wire, Produce v3, acks=-1) sends numbered records to
the two partitions of a topic, one request at a time (one batch of 20 per
partition per request), and notes each acknowledged base offset. Once a few
hundred requests are acknowledged the broker is killed with SIGKILL while
the producer is still sending. The broker is restarted on the same data
directory and each partition is read back from offset 0 with Fetch v4:

  * every acknowledged record is present, at the offset the ack gave;
  * no record appears twice; numbers increase along each partition;
  * anything present beyond the acknowledged records comes from the one
    request that was in flight at the kill (nothing else was ever sent);
  * the restarted broker accepts new writes after the recovered data, and a
    clean SIGTERM/restart keeps all of it.
Then the whole cycle runs a second time on the same directory.
"""

import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402
import kafka_wire as kw  # noqa: E402

TOPIC = "durable"
PER_BATCH = 20


def record(n):
    return (b"n%08d" % n, b"payload-%08d-" % n + b"z" * (n % 100))


def producer_loop(b, state, stop_after):
    """Sends until the connection breaks; state collects acks and the in-flight request."""
    n = state["next"]
    try:
        with b.conn(timeout=10) as c:
            while True:
                batches = []
                for p in (0, 1):
                    recs = [record(n + i) for i in range(PER_BATCH)]
                    batches.append((p, n, kw.record_batch(recs, timestamp_ms=int(time.time() * 1000))))
                    n += PER_BATCH
                state["in_flight"] = [(p, first) for p, first, _ in batches]
                res = c.produce([(TOPIC, [(p, data) for p, _, data in batches])], acks=-1)
                for p, first, _ in batches:
                    err, base, _ = res[(TOPIC, p)]
                    if err != 0:
                        state["errors"].append((p, first, err))
                        return
                    state["acked"][p].append((first, base))
                state["in_flight"] = []
                state["requests"] += 1
                if state["requests"] == stop_after:
                    state["reached"].set()
    except (OSError, kw.ConnectionClosed, ValueError, kw.Truncated) as e:
        state["ended_by"] = repr(e)
    finally:
        state["next"] = n


def verify(b, state):
    recovered = {}
    with b.conn() as c:
        for p in (0, 1):
            recs, hw = c.fetch_all(TOPIC, p)
            nums = [int(k[1:]) for _, k, _ in recs]
            offsets = [o for o, _, _ in recs]
            check(offsets == list(range(len(recs))), "partition %d: offsets after restart not 0..n-1: %r" % (p, offsets[:10]))
            check(len(set(nums)) == len(nums), "partition %d: duplicated records after restart" % p)
            check(nums == sorted(nums), "partition %d: records out of order after restart" % p)
            for o, k, v in recs:
                n = int(k[1:])
                check((k, v) == record(n), "partition %d offset %d: payload of %d damaged" % (p, o, n))
            at = {n: o for o, n in zip(offsets, nums)}
            for first, base in state["acked"][p]:
                for i in range(PER_BATCH):
                    check(at.get(first + i) == base + i,
                          "partition %d: acknowledged record %d (offset %d) %s after kill -9" %
                          (p, first + i, base + i,
                           "missing" if first + i not in at else "at offset %d" % at[first + i]))
            acked = {first + i for first, _ in state["acked"][p] for i in range(PER_BATCH)}
            in_flight = {first + i for q, first in state["in_flight"] if q == p for i in range(PER_BATCH)}
            extra = set(nums) - acked
            check(extra <= in_flight, "partition %d: %d records present that were never sent in the last request: %r" %
                  (p, len(extra - in_flight), sorted(extra - in_flight)[:5]))
            check(not extra or extra == in_flight,
                  "partition %d: a partial batch survived (%d of %d records)" % (p, len(extra), len(in_flight)))
            recovered[p] = (len(recs), hw)
            # What is beyond the acks now counts as acknowledged for later rounds.
            if extra:
                state["acked"][p].append((min(extra), at[min(extra)]))
    state["in_flight"] = []
    return recovered


def main(ctx):
    b = ctx.broker({"num.partitions": "2"})
    b.create_topic(TOPIC, 2)
    state = {"next": 0, "acked": {0: [], 1: []}, "in_flight": [], "errors": [], "requests": 0}
    for round_no in (1, 2):
        state["reached"] = threading.Event()
        state["ended_by"] = None
        target = state["requests"] + 150
        t = threading.Thread(target=producer_loop, args=(b, state, target), daemon=True)
        t.start()
        check(state["reached"].wait(60), "round %d: only %d requests acknowledged in 60s (errors %r, ended by %s)" %
              (round_no, state["requests"], state["errors"], state.get("ended_by")))
        time.sleep(0.05)  # mid-stream
        b.kill()
        t.join(20)
        check(not t.is_alive(), "producer did not notice the broker's death")
        check(not state["errors"], "produce errors before the kill: %r" % state["errors"])
        print("[durability] round %d: %d requests acknowledged, %d in flight at kill -9" %
              (round_no, state["requests"], len(state["in_flight"])), flush=True)
        b.start()
        rec = verify(b, state)
        print("[durability] round %d: recovered %r" % (round_no, rec), flush=True)
    # New writes land after the recovered data; a clean restart keeps everything.
    with b.conn() as c:
        n = state["next"]
        res = c.produce([(TOPIC, [(0, kw.record_batch([record(n)]))])], acks=-1)
        err, base, _ = res[(TOPIC, 0)]
        check(err == 0, "produce after recovery: error %d" % err)
        before, _ = c.fetch_all(TOPIC, 0)
        check(base == len(before) - 1, "produce after recovery got offset %d, log has %d records" % (base, len(before)))
    b.restart(clean=True)
    with b.conn() as c:
        recs, _ = c.fetch_all(TOPIC, 0)
        check(recs[-1][0] == base and recs[-1][1] == record(n)[0],
              "after clean restart the last record is %r, want offset %d key %r" % (recs[-1][:2], base, record(n)[0]))
        check(len(recs) == base + 1, "after clean restart partition 0 has %d records, want %d" % (len(recs), base + 1))


if __name__ == "__main__":
    harness.run_test(main, total_timeout=150)
