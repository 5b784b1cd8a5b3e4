"""tests/integration/test_network_threads.py: num.network.threads changes
live (issue #15, Kafka's dynamic broker configs) under real producers, and
loses nothing.

Usage: test_network_threads.py --broker BIN --work DIR

The broker starts with 4 network threads. Four confluent-kafka producers
(idempotent, acks=all), each on its own connection (one per thread, by the
broker's round-robin), write numbered records to a topic of 4 partitions
while the test lowers num.network.threads to 2 (IncrementalAlterConfigs on
the BROKER resource ""), raises it to 4, and lowers it to 2 again, each
change with 5,000 acknowledgements before and after it. Lowering closes the connections of the threads that
leave, as Kafka closes a removed processor's connections; the producers
reconnect and retry. Checked: each change is carried out (the broker logs
it), at least one producer saw its connection closed (else the test proved
nothing), every record is acknowledged, and reading the topic back
gives every record exactly once, in each producer's order within each
partition.
"""

import os
import re
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402
import kafka_wire as kw  # noqa: E402

TOPIC = "nt"
PARTITIONS = 4
PRODUCERS = 4
STEP = 5000                 # acknowledgements before and after each change
MAX_PER_PRODUCER = 1000000  # a bound; the test stops the producers long before
RESIZE_LINE = re.compile(r"num\.network\.threads: (\d+) network threads, was (\d+)(?:; (\d+) connections)?")


def set_threads(b, n):
    with kw.Conn(b.port) as c:
        res = kw.parse_incremental_alter_configs_v0(
            c.request(44, 0, kw.incremental_alter_configs_v0(4, "", "num.network.threads", str(n))))
    check(res[0][0] == 0, "IncrementalAlterConfigs num.network.threads=%d: error %d %s" % (n, res[0][0], res[0][1]))


def resizes(b):
    return [tuple(int(x) if x else 0 for x in m.groups()) for m in RESIZE_LINE.finditer(b.log_text())]


def main(ctx):
    from confluent_kafka import Consumer, Producer, TopicPartition
    b = ctx.broker({"num.network.threads": "4", "num.partitions": str(PARTITIONS)})
    b.create_topic(TOPIC, PARTITIONS)

    acked = [0] * PRODUCERS
    produced = [0] * PRODUCERS
    cut = [0] * PRODUCERS  # transport errors each producer saw (its connection closed)
    errors = []
    lock = threading.Lock()
    stop = threading.Event()

    def produce(i):
        def on_error(err):
            with lock:
                if err.code() == -195:  # _TRANSPORT
                    cut[i] += 1

        p = Producer({"bootstrap.servers": b.bootstrap, "broker.address.family": "v4", "enable.idempotence": True,
                      "acks": "all", "linger.ms": 2, "retry.backoff.ms": 50, "error_cb": on_error,
                      "reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 200})

        def done(err, msg):
            with lock:
                if err is None:
                    acked[i] += 1
                else:
                    errors.append("producer %d: %s" % (i, err))

        seq = 0
        while not stop.is_set() and seq < MAX_PER_PRODUCER:
            try:
                p.produce(TOPIC, key=b"p%d" % i, value=b"%d-%d" % (i, seq), partition=seq % PARTITIONS,
                          on_delivery=done)
                seq += 1
            except BufferError:
                p.poll(0.05)
            if seq % 500 == 0:
                p.poll(0)
        produced[i] = seq
        left = p.flush(60)
        if left:
            with lock:
                errors.append("producer %d: %d records not delivered after 60 s" % (i, left))

    def total_acked():
        with lock:
            return sum(acked)

    # One connection each, made one after another: round-robin puts them on
    # the four threads, so the first shrink cuts two producers mid-stream.
    workers = []
    for i in range(PRODUCERS):
        workers.append(threading.Thread(target=produce, args=(i,)))
        workers[-1].start()
        harness.wait_until(lambda: total_acked() > 0 and all(w.is_alive() for w in workers), 30,
                           "producer %d to get an acknowledgement" % i)
        before = total_acked()
        harness.wait_until(lambda: total_acked() > before, 30, "producer %d's records acknowledged" % i)
    # Each change lands mid-stream: it waits for STEP more acknowledgements
    # before it and after it.
    for n in (2, 4, 2):
        start = total_acked()
        harness.wait_until(lambda: total_acked() >= start + STEP, 120, "%d more records acknowledged" % STEP)
        done_before = len(resizes(b))
        set_threads(b, n)
        harness.wait_until(lambda: len(resizes(b)) > done_before, 30, "the broker to run %d network threads" % n)
        print("[test] %s after %d records acknowledged" % (resizes(b)[-1], total_acked()), flush=True)
    start = total_acked()
    harness.wait_until(lambda: total_acked() >= start + STEP, 120, "%d more records acknowledged" % STEP)
    stop.set()
    for w in workers:
        w.join(120)
    total = sum(produced)
    check(not errors, "delivery errors: %s" % errors[:5])
    check(sum(acked) == total, "%d of %d records acknowledged" % (sum(acked), total))
    check(all(produced[i] < MAX_PER_PRODUCER for i in range(PRODUCERS)),
          "a producer reached its bound of %d records before the changes were done" % MAX_PER_PRODUCER)
    done = resizes(b)
    check([(n, was) for n, was, _ in done] == [(2, 4), (4, 2), (2, 4)], "resizes logged: %s" % done)
    closed = sum(c for _, _, c in done)
    check(sum(1 for c in cut if c) >= 1,
          "no producer lost its connection (resizes %s, %d connections closed): the test proved nothing" %
          (done, closed))

    # Read everything back: each record once, in each producer's order per partition.
    c = Consumer({"bootstrap.servers": b.bootstrap, "broker.address.family": "v4", "group.id": "nt-check",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    c.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    last = {}
    seen = set()
    eof = set()
    dups = 0
    disorder = 0
    deadline = time.monotonic() + 60
    while len(eof) < PARTITIONS and time.monotonic() < deadline:
        for m in c.consume(1000, 1.0):
            if m.error():
                if m.error().code() == -191:  # _PARTITION_EOF
                    eof.add(m.partition())
                continue
            i, seq = (int(x) for x in m.value().split(b"-"))
            if (i, seq) in seen:
                dups += 1
            seen.add((i, seq))
            if last.get((i, m.partition()), -1) >= seq:
                disorder += 1
            last[(i, m.partition())] = seq
    c.close()
    check(len(eof) == PARTITIONS, "read to the end of %d of %d partitions" % (len(eof), PARTITIONS))
    check(dups == 0, "%d records read twice" % dups)
    check(disorder == 0, "%d records out of their producer's order" % disorder)
    check(len(seen) == total, "%d of %d records read back" % (len(seen), total))
    print("[test] %d records, each once and in order; %d connections closed by the shrinks, %d of %d producers "
          "cut" % (total, closed, sum(1 for c in cut if c), PRODUCERS), flush=True)


if __name__ == "__main__":
    harness.run_test(main, total_timeout=240)
