"""tests/integration/test_confluent.py: confluent-kafka-python 1.7 (librdkafka 2.0.2).

Usage: test_confluent.py --broker BIN --work DIR admin|idempotent|offsets

admin: AdminClient create_topics (with a topic config), a duplicate create
(TOPIC_ALREADY_EXISTS), an illegal name, describe_configs of the topic and of
the broker, alter_configs, create_partitions, delete_topics.

idempotent: enable.idempotence=True (InitProducerId, sequence numbers),
acks=all, 10,000 keyed messages over 3 partitions; every delivery report
succeeds; a Consumer with assign() from offset 0 (no subscribe, no commits)
reads back exactly those messages in order per partition at the reported
offsets; get_watermark_offsets matches.

offsets: messages with explicit timestamps; offsets_for_times finds the first
offset at or after a time, -1 past the end; watermarks before and after.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import (AdminClient, ConfigResource, NewPartitions,  # noqa: E402
                                   NewTopic)

TIMEOUT = 20


def conf(b, **kw):
    c = {"bootstrap.servers": b.bootstrap, "broker.address.family": "v4",
         "socket.timeout.ms": 10000}
    c.update(kw)
    return c


def result(futures, what):
    out = {}
    for k, f in futures.items():
        try:
            out[k] = f.result(timeout=TIMEOUT)
        except Exception as e:  # noqa: BLE001 - the KafkaException carries the error
            raise harness.TestFailure("%s %s: %r" % (what, k, e))
    return out


def source(entry):
    """ConfigEntry.source as an int (an int or a ConfigSource enum by version)."""
    return getattr(entry.source, "value", entry.source)


def topic_partitions(admin, topic):
    # All topics, not list_topics(topic): librdkafka's admin client asks for a
    # named topic with allow_auto_topic_creation, which (as on Kafka with
    # auto.create.topics.enable) would re-create a topic just deleted.
    md = admin.list_topics(timeout=TIMEOUT)
    t = md.topics.get(topic)
    if t is None or t.error is not None:
        return None
    return len(t.partitions)


def test_admin(ctx):
    b = ctx.broker()
    admin = AdminClient(conf(b))
    md = admin.list_topics(timeout=TIMEOUT)
    check(len(md.brokers) == 1, "list_topics brokers %r" % md.brokers)
    node = list(md.brokers.keys())[0]

    result(admin.create_topics([NewTopic("adm-a", 3, 1, config={"retention.ms": "3600000"}),
                                NewTopic("adm-b", 1, 1)], operation_timeout=10), "create_topics")
    harness.wait_until(lambda: topic_partitions(admin, "adm-a") == 3, 10, "adm-a with 3 partitions")

    # Duplicate and illegal names are per-topic errors.
    f = admin.create_topics([NewTopic("adm-a", 1, 1)])["adm-a"]
    try:
        f.result(timeout=TIMEOUT)
        raise harness.TestFailure("create_topics of an existing topic succeeded")
    except harness.TestFailure:
        raise
    except Exception as e:  # noqa: BLE001
        code = e.args[0].code()
        check(code == KafkaError.TOPIC_ALREADY_EXISTS, "duplicate create: %r" % e)
    f = admin.create_topics([NewTopic("bad name!", 1, 1)])["bad name!"]
    try:
        f.result(timeout=TIMEOUT)
        raise harness.TestFailure("create_topics of 'bad name!' succeeded")
    except harness.TestFailure:
        raise
    except Exception as e:  # noqa: BLE001
        code = e.args[0].code()
        check(code == KafkaError.TOPIC_EXCEPTION, "illegal name: want INVALID_TOPIC_EXCEPTION, got %r" % e)

    res = ConfigResource(ConfigResource.Type.TOPIC, "adm-a")
    cfg = result(admin.describe_configs([res]), "describe_configs topic")[res]
    check(cfg["retention.ms"].value == "3600000", "retention.ms %r" % cfg["retention.ms"].value)
    check(source(cfg["retention.ms"]) == 1, "retention.ms source %r, want DYNAMIC_TOPIC_CONFIG(1)" % source(cfg["retention.ms"]))
    check("cleanup.policy" in cfg and cfg["cleanup.policy"].value == "delete",
          "cleanup.policy %r" % (cfg.get("cleanup.policy") and cfg["cleanup.policy"].value))
    check(source(cfg["cleanup.policy"]) in (4, 5),
          "cleanup.policy should come from a broker default, source %r" % source(cfg["cleanup.policy"]))

    bres = ConfigResource(ConfigResource.Type.BROKER, str(node))
    bcfg = result(admin.describe_configs([bres]), "describe_configs broker")[bres]
    check("num.partitions" in bcfg, "broker configs lack num.partitions (%d keys)" % len(bcfg))
    check(bcfg["num.partitions"].value == "1", "broker num.partitions %r" % bcfg["num.partitions"].value)

    res = ConfigResource(ConfigResource.Type.TOPIC, "adm-a",
                         set_config={"retention.ms": "7200000", "segment.bytes": "1048576"})
    result(admin.alter_configs([res]), "alter_configs")
    res = ConfigResource(ConfigResource.Type.TOPIC, "adm-a")
    cfg = result(admin.describe_configs([res]), "describe_configs after alter")[res]
    check(cfg["retention.ms"].value == "7200000", "after alter: retention.ms %r" % cfg["retention.ms"].value)
    check(cfg["segment.bytes"].value == "1048576", "after alter: segment.bytes %r" % cfg["segment.bytes"].value)

    bad = ConfigResource(ConfigResource.Type.TOPIC, "adm-a", set_config={"retention.ms": "soon"})
    try:
        result(admin.alter_configs([bad]), "alter_configs bad value")
        raise harness.TestFailure("alter_configs retention.ms=soon succeeded")
    except harness.TestFailure as e:
        check("alter_configs bad value" in str(e), str(e))

    result(admin.create_partitions([NewPartitions("adm-a", 5)], operation_timeout=10), "create_partitions")
    harness.wait_until(lambda: topic_partitions(admin, "adm-a") == 5, 10, "adm-a with 5 partitions")

    result(admin.delete_topics(["adm-a", "adm-b"], operation_timeout=10), "delete_topics")
    harness.wait_until(lambda: topic_partitions(admin, "adm-a") is None and
                       topic_partitions(admin, "adm-b") is None, 10, "topics gone")
    # A deleted topic can be created again, empty.
    result(admin.create_topics([NewTopic("adm-a", 2, 1)], operation_timeout=10), "re-create")
    harness.wait_until(lambda: topic_partitions(admin, "adm-a") == 2, 10, "adm-a re-created")
    c = Consumer(conf(b, **{"group.id": "ck-it-assign-only", "enable.auto.commit": False}))
    lo, hi = c.get_watermark_offsets(TopicPartition("adm-a", 0), timeout=TIMEOUT)
    c.close()
    check((lo, hi) == (0, 0), "re-created topic watermarks %r, want (0, 0)" % ((lo, hi),))


def consume_all(b, topic, partitions, expect_per_part, deadline=60):
    """assign() from offset 0 and read until each partition has its count."""
    c = Consumer(conf(b, **{"group.id": "ck-it-assign-only", "enable.auto.commit": False,
                            "enable.partition.eof": False, "fetch.wait.max.ms": 100}))
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = {p: [] for p in range(partitions)}
    end = time.monotonic() + deadline
    try:
        while time.monotonic() < end and any(len(got[p]) < expect_per_part[p] for p in got):
            for m in c.consume(1000, timeout=0.5):
                if m.error():
                    raise harness.TestFailure("consume error: %s" % m.error())
                got[m.partition()].append((m.offset(), m.key(), m.value(), m.timestamp()))
        # Nothing extra arrives.
        for m in c.consume(1000, timeout=1.0):
            if not m.error():
                got[m.partition()].append((m.offset(), m.key(), m.value(), m.timestamp()))
        print("[confluent] consumed %r" % {p: len(v) for p, v in got.items()}, flush=True)
        wm = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=TIMEOUT) for p in got}
    finally:
        c.close()
    return got, wm


def test_idempotent(ctx):
    b = ctx.broker()
    topic, parts, n = "idem", 3, 10000
    admin = AdminClient(conf(b))
    result(admin.create_topics([NewTopic(topic, parts, 1)], operation_timeout=10), "create_topics")
    harness.wait_until(lambda: topic_partitions(admin, topic) == parts, 10, "idem partitions")

    p = Producer(conf(b, **{"enable.idempotence": True, "acks": "all", "linger.ms": 5,
                            "message.timeout.ms": 30000, "compression.type": "lz4"}))
    reports, errors = {}, []

    def on_delivery(err, msg):
        if err is not None:
            errors.append((msg.key(), str(err)))
        else:
            reports[msg.key()] = (msg.partition(), msg.offset())

    sent = []
    for i in range(n):
        key, value = b"k%05d" % i, b"v%05d-" % i + b"x" * (i % 50)
        part = i % parts
        sent.append((part, key, value))
        while True:
            try:
                p.produce(topic, value, key, partition=part, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    left = p.flush(60)
    print("[confluent] produced %d, %d delivery reports, %d errors, %d left" % (n, len(reports), len(errors), left), flush=True)
    check(left == 0, "%d messages still queued after flush(60)" % left)
    check(not errors, "%d delivery errors, first: %r" % (len(errors), errors[:3]))
    check(len(reports) == n, "%d delivery reports, want %d" % (len(reports), n))

    per_part = {q: [x for x in sent if x[0] == q] for q in range(parts)}
    got, wm = consume_all(b, topic, parts, {q: len(per_part[q]) for q in range(parts)})
    print("[confluent] read back %r, watermarks %r" % ({q: len(v) for q, v in got.items()}, wm), flush=True)
    for q in range(parts):
        want = per_part[q]
        have = got[q]
        check(len(have) == len(want), "partition %d: read %d, want %d" % (q, len(have), len(want)))
        for (_, key, value), (off, gk, gv, _) in zip(want, have):
            check((gk, gv) == (key, value), "partition %d offset %d: got %r, want %r" % (q, off, (gk, gv[:20]), (key, value[:20])))
            check(reports[key] == (q, off), "key %r: delivered at %r, read at %r" % (key, reports[key], (q, off)))
        check([h[0] for h in have] == list(range(len(have))), "partition %d: offsets not 0..n-1" % q)
        check(wm[q] == (0, len(want)), "partition %d watermarks %r, want (0, %d)" % (q, wm[q], len(want)))


def test_offsets(ctx):
    b = ctx.broker({"num.partitions": "1"})
    topic, n = "times", 100
    t0 = int(time.time() * 1000) - 3600 * 1000  # an hour ago, within the default timestamp range
    p = Producer(conf(b, **{"acks": "all", "linger.ms": 0}))
    errs = []
    for i in range(n):
        p.produce(topic, b"v%d" % i, b"k%d" % i, partition=0, timestamp=t0 + i * 1000,
                  on_delivery=lambda e, m: e and errs.append(str(e)))
        if i % 10 == 9:
            p.flush(20)  # several batches, so the time index has entries
    check(p.flush(30) == 0 and not errs, "produce errors %r" % errs[:3])
    c = Consumer(conf(b, **{"group.id": "ck-it-assign-only", "enable.auto.commit": False}))
    try:
        lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT)
        check((lo, hi) == (0, n), "watermarks %r, want (0, %d)" % ((lo, hi), n))
        cached = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT, cached=False)
        check(cached == (0, n), "uncached watermarks %r" % (cached,))
        cases = [(t0 - 5000, 0), (t0, 0), (t0 + 5500, 6), (t0 + 42000, 42),
                 (t0 + (n - 1) * 1000, n - 1), (t0 + n * 1000 + 1, -1)]
        # One lookup per request: Kafka answers INVALID_REQUEST to a
        # ListOffsets that names the same partition twice (v1+).
        res = [c.offsets_for_times([TopicPartition(topic, 0, ts)], timeout=TIMEOUT)[0] for ts, _ in cases]
        for (ts, want), tp in zip(cases, res):
            check(tp.error is None, "offsets_for_times(%d): %s" % (ts - t0, tp.error))
            check(tp.offset == want, "offsets_for_times(t0%+d): offset %d, want %d" % (ts - t0, tp.offset, want))
        # Reading from the found offset yields the message with that timestamp.
        c.assign([TopicPartition(topic, 0, 42)])
        m = None
        end = time.monotonic() + 15
        while m is None and time.monotonic() < end:
            m = c.poll(0.5)
        check(m is not None and not m.error(), "no message at offset 42: %r" % (m and m.error()))
        check((m.offset(), m.key(), m.timestamp()[1]) == (42, b"k42", t0 + 42000),
              "message at 42: %r" % ((m.offset(), m.key(), m.timestamp()),))
    finally:
        c.close()


def main(ctx):
    mode = ctx.args[0] if ctx.args else "admin"
    {"admin": test_admin, "idempotent": test_idempotent, "offsets": test_offsets}[mode](ctx)


if __name__ == "__main__":
    harness.run_test(main, total_timeout=150)
