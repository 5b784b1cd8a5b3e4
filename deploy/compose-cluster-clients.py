#!/usr/bin/python3
"""deploy/compose-cluster-clients.py: the clients of `deploy/compose-test.sh --cluster`.

Runs on the host against the three-broker stack, with confluent-kafka:
- a producer (idempotent, acks=all) writing --records records "rec-N",
  paced to last about a minute, so that a broker dies under it;
- a consumer in group "trainers" (auto-commit) reading the topic from the
  start until it has read every record the producer got acknowledged.
It touches WORK/consumed-1000 once the group has read 1,000 records (the
test kills a broker then), and exits 0 only when every acknowledged record
was consumed, each value sits at exactly one (partition, offset) (the
idempotent producer wrote none twice) and the group still consumed records
in the last third of the run (after the kill). Duplicated deliveries to the group (at
least once, after a coordinator or leader change) are counted and reported.
"""
import argparse
import os
import sys
import threading
import time

from confluent_kafka import Consumer, Producer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--work", required=True)
    ap.add_argument("--timeout", type=float, default=300.0)
    a = ap.parse_args()
    deadline = time.monotonic() + a.timeout

    acked = {}
    failed = []
    produced_done = threading.Event()

    def produce():
        p = Producer({"bootstrap.servers": a.bootstrap, "acks": "all", "enable.idempotence": True,
                      "linger.ms": 5, "message.timeout.ms": 120000, "broker.address.family": "v4"})

        def dr(err, m):
            if err is None:
                acked[m.value().decode()] = (m.partition(), m.offset())
            else:
                failed.append(str(err))
        for i in range(a.records):
            while True:
                try:
                    p.produce(a.topic, key=b"k%d" % i, value=b"rec-%d" % i, on_delivery=dr)
                    break
                except BufferError:
                    p.poll(0.1)
            p.poll(0)
            if i % 100 == 99:
                time.sleep(0.3)  # about 330 records/s: a minute of writing
        p.flush(150)
        produced_done.set()

    t = threading.Thread(target=produce, daemon=True)
    t.start()

    c = Consumer({"bootstrap.servers": a.bootstrap, "group.id": "trainers", "auto.offset.reset": "earliest",
                  "enable.auto.commit": True, "auto.commit.interval.ms": 1000, "broker.address.family": "v4",
                  "session.timeout.ms": 10000})
    c.subscribe([a.topic])
    seen = {}  # value -> set of (partition, offset)
    deliveries = 0
    marked = False
    t0 = time.monotonic()
    times = []
    while time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            deliveries += 1
            seen.setdefault(m.value().decode(), set()).add((m.partition(), m.offset()))
            times.append(time.monotonic() - t0)
            if not marked and len(seen) >= 1000:
                open(os.path.join(a.work, "consumed-1000"), "w").close()
                marked = True
        if produced_done.is_set() and all(v in seen for v in acked):
            break
    c.close()
    t.join(5)

    missing = [v for v in acked if v not in seen]
    twice = [v for v, locs in seen.items() if len(locs) > 1]
    wrong = [v for v, loc in acked.items() if v in seen and loc not in seen[v]]
    late = sum(1 for x in times if x > (times[-1] if times else 0) * 2 / 3)
    print("producer: %d acknowledged, %d failed (%s)" % (len(acked), len(failed), failed[:3]))
    print("group: %d distinct records consumed, %d deliveries (%d redelivered), %d in the last third of the run"
          % (len(seen), deliveries, deliveries - sum(len(s) for s in seen.values()), late))
    ok = produced_done.is_set() and not missing and not twice and not wrong and late > 0
    if not ok:
        print("FAIL: producer done %s, %d acknowledged records never consumed (e.g. %s), %d values at two offsets "
              "(e.g. %s), %d consumed at another offset than acknowledged" %
              (produced_done.is_set(), len(missing), missing[:3], len(twice), twice[:3], len(wrong)))
        sys.exit(1)
    print("PASS: every acknowledged record consumed, each at exactly its acknowledged offset")


if __name__ == "__main__":
    main()
