"""tests/integration/test_kafka_python.py: kafka-python 2.0.2 against the real broker.

KafkaAdminClient creates a 2-partition topic (and lists it); KafkaProducer
with compression_type='gzip', acks='all' sends 500 keyed messages to explicit
partitions and records the offsets it was given; KafkaConsumer with
group_id=None uses assign()/seek_to_beginning() and reads exactly those
messages back; seek() to a middle offset yields that message first;
end_offsets/beginning_offsets match.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.admin import NewTopic  # noqa: E402

N = 500


def main(ctx):
    b = ctx.broker()
    topic = "kp-topic"
    admin = KafkaAdminClient(bootstrap_servers=b.bootstrap, request_timeout_ms=15000,
                             client_id="ck-it-kafka-python")
    resp = admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)],
                               timeout_ms=10000)
    errs = [t for t in getattr(resp, "topic_errors", []) if t[1] != 0]
    check(not errs, "create_topics errors %r" % errs)
    harness.wait_until(lambda: topic in admin.list_topics(), 10, "kp-topic listed")
    admin.close()

    prod = KafkaProducer(bootstrap_servers=b.bootstrap, compression_type="gzip", acks="all",
                         linger_ms=10, request_timeout_ms=15000, client_id="ck-it-kafka-python")
    futures = []
    for i in range(N):
        key, value = b"key-%d" % i, b"value-%d-" % i + b"abc" * (i % 20)
        futures.append((i % 2, key, value, prod.send(topic, key=key, value=value, partition=i % 2)))
    prod.flush(timeout=30)
    sent = {0: [], 1: []}
    for part, key, value, f in futures:
        md = f.get(timeout=30)
        check(md.partition == part, "message %r went to partition %d" % (key, md.partition))
        sent[part].append((md.offset, key, value))
    prod.close(timeout=10)
    for part in (0, 1):
        check([o for o, _, _ in sent[part]] == list(range(N // 2)),
              "partition %d: producer offsets not 0..%d" % (part, N // 2 - 1))

    cons = KafkaConsumer(bootstrap_servers=b.bootstrap, group_id=None, enable_auto_commit=False,
                         consumer_timeout_ms=2000, fetch_max_wait_ms=100,
                         request_timeout_ms=15000, client_id="ck-it-kafka-python")
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    cons.assign(tps)
    cons.seek_to_beginning(*tps)
    got = {0: [], 1: []}
    end = time.monotonic() + 40
    while time.monotonic() < end and sum(len(v) for v in got.values()) < N:
        for tp, msgs in cons.poll(timeout_ms=500).items():
            got[tp.partition] += [(m.offset, m.key, m.value) for m in msgs]
    for part in (0, 1):
        check(got[part] == sent[part], "partition %d: read %d messages, first difference %r" % (
            part, len(got[part]),
            next(((g, s) for g, s in zip(got[part], sent[part]) if g != s), "(length)")))
    ends = cons.end_offsets(tps)
    begins = cons.beginning_offsets(tps)
    check(all(ends[tp] == N // 2 for tp in tps), "end_offsets %r" % ends)
    check(all(begins[tp] == 0 for tp in tps), "beginning_offsets %r" % begins)

    cons.seek(tps[1], 123)
    first = None
    end = time.monotonic() + 15
    while first is None and time.monotonic() < end:
        recs = cons.poll(timeout_ms=500, max_records=1).get(tps[1])
        if recs:
            first = recs[0]
    check(first is not None, "nothing after seek(partition 1, 123)")
    check((first.offset, first.key) == (123, sent[1][123][1]),
          "after seek 123: got offset %d key %r" % (first.offset, first.key))
    cons.close()


if __name__ == "__main__":
    harness.run_test(main, total_timeout=120)
