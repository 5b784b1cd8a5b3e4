"""tests/integration/test_quotas.py: client quotas against the real broker
(issue #15: broker/quotas/client_quotas.h).

Usage: test_quotas.py --broker BIN --work DIR

The broker runs with quota.window.num=3 and quota.window.size.seconds=1, so
a rate is taken over at least 2 s and the test stays short.

1. AlterClientQuotas / DescribeClientQuotas v0 over a raw socket: set,
   describe (exact, default, strict), validate_only, the errors, remove.
2. Muting (KIP-219), raw socket: a Produce of 60 KB from client id
   "muted" with producer_byte_rate=10000 is answered at once with a
   throttle time; an ApiVersions sent right behind it on the same
   connection is not answered before that time is over, while another
   client's ApiVersions sent after it is answered first.
   2b. request_percentage=1e-9 for client id "busy": its next answer
   carries one window's throttle (Kafka's bound) and its connection waits
   that long before the request after it is answered.
3. librdkafka (confluent-kafka): a producer with client.id "slow-producer"
   and producer_byte_rate=40000 writes 400 KB (10 s worth): every record is
   acked, librdkafka's statistics report the broker's throttle, the broker
   counts throttled produce responses, and it takes at least 6 s (the
   quota's own figure is (400 KB - the 80 KB two windows let through at
   once) / 40 KB/s = 8 s, seen as 8.2 s; only a lower bound, which a slow
   machine cannot break). Before a quota'd client's requests went one at a
   time, librdkafka's pipelined requests passed before a throttle's mute
   and the same 400 KB went through in 3.9-8.8 s. A consumer with
   client.id "slow-consumer" and consumer_byte_rate=40000 reads all of it
   back, every record, likewise throttled and no faster than 6 s; an
   unlimited consumer reads it all too.
4. connection_creation_rate=2 for 127.0.0.2 (the test's connections from
   127.0.0.2, the others from 127.0.0.1): of 10 connections opened back to
   back from 127.0.0.2, some are closed unanswered and counted; one from
   127.0.0.1 meanwhile is served.
5. A restart keeps the quotas.
"""

import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import kafka_wire  # noqa: E402
from harness import check  # noqa: E402

TOPIC = "quota-t"
EXACT, DEFAULT, ANY = 0, 1, 2
INVALID_REQUEST = 42


def quota_metric(b, name, label=None):
    import urllib.request
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % b.metrics_port, timeout=5).read().decode()
    for line in text.splitlines():
        if line.startswith(name + " ") or (line.startswith(name + "{") and (label is None or label in line)):
            return float(line.rsplit(" ", 1)[1])
    return None


def alter(b, entries, validate_only=False):
    with b.conn() as c:
        return c.alter_client_quotas(entries, validate_only)


def describe(b, components, strict=False):
    with b.conn() as c:
        return c.describe_client_quotas(components, strict)


def apis(b):
    print("[test] 1. AlterClientQuotas / DescribeClientQuotas", flush=True)
    res = alter(b, [([("client-id", "c1")], [("producer_byte_rate", 1024.0)])], validate_only=True)
    check(res == [(0, None, {"client-id": "c1"})], "validate_only: %r" % (res,))
    err, _, entries = describe(b, [])
    check(err == 0 and entries == [], "nothing set yet: %r" % (entries,))
    res = alter(b, [([("client-id", "c1")], [("producer_byte_rate", 1024.0), ("consumer_byte_rate", 2048.0)]),
                    ([("user", None)], [("producer_byte_rate", 4096.0)]),
                    ([("client-id", "c2")], [("producer_byte_rate", 1.5)]),
                    ([("ip", "127.0.0.9"), ("user", "u")], [("connection_creation_rate", 1.0)]),
                    ([("client-id", "c3")], [("controller_mutation_rate", 0.0)])])
    check([r[0] for r in res] == [0, 0, INVALID_REQUEST, INVALID_REQUEST, INVALID_REQUEST], "alter: %r" % (res,))
    check(res[2][1] == "producer_byte_rate cannot be a fractional value.", "fractional: %r" % (res[2],))
    check(res[4][1] == "Quota controller_mutation_rate must be greater than 0", "zero: %r" % (res[4],))
    err, _, entries = describe(b, [("client-id", EXACT, "c1")], strict=True)
    check(err == 0 and entries == [({"client-id": "c1"}, {"consumer_byte_rate": 2048.0, "producer_byte_rate": 1024.0})],
          "describe c1: %r" % (entries,))
    err, _, entries = describe(b, [("user", DEFAULT, None)])
    check(err == 0 and entries == [({"user": None}, {"producer_byte_rate": 4096.0})], "user default: %r" % (entries,))
    err, msg, entries = describe(b, [("user", EXACT, None)])
    check(err == INVALID_REQUEST and entries is None, "a bad filter: %r %r %r" % (err, msg, entries))
    res = alter(b, [([("client-id", "c1")], [("producer_byte_rate", None), ("consumer_byte_rate", None)]),
                    ([("user", None)], [("producer_byte_rate", None)])])
    check([r[0] for r in res] == [0, 0], "remove: %r" % (res,))
    err, _, entries = describe(b, [])
    check(err == 0 and entries == [], "all removed: %r" % (entries,))


def muting(b):
    print("[test] 2. a throttled connection reads nothing until its throttle time is over", flush=True)
    res = alter(b, [([("client-id", "muted")], [("producer_byte_rate", 10000.0)])])
    check(res[0][0] == 0, "set: %r" % (res,))
    batch = kafka_wire.record_batch([(None, b"m" * 1000) for _ in range(60)])
    a = kafka_wire.Conn(b.port, client_id="muted")
    other = kafka_wire.Conn(b.port, client_id="free")
    try:
        corr = a.send(kafka_wire.API_PRODUCE, 3, kafka_wire.produce_v3(1, 10000, [(TOPIC, [(0, batch)])]))
        d = a.receive(corr)
        answered = time.monotonic()
        # The throttle time is the last field of a Produce v3 response.
        frame = d.buf
        throttle_ms = int.from_bytes(frame[-4:], "big", signed=True)
        check(throttle_ms > 500, "60 KB at 10 KB/s over >= 2 s: a throttle, got %d ms" % throttle_ms)
        corr = a.send(kafka_wire.API_API_VERSIONS, 0, kafka_wire.api_versions_v0())
        ocorr = other.send(kafka_wire.API_API_VERSIONS, 0, kafka_wire.api_versions_v0())
        other.receive(ocorr)
        other_at = time.monotonic()
        a.receive(corr)
        muted_at = time.monotonic()
        waited = muted_at - answered
        print("[test] throttle %d ms; the muted connection's next answer after %.0f ms, another client's "
              "after %.0f ms" % (throttle_ms, waited * 1000, (other_at - answered) * 1000), flush=True)
        check(waited >= throttle_ms / 1000.0 - 0.05,
              "the muted connection answered after %.0f ms, before its throttle of %d ms" % (waited * 1000,
                                                                                              throttle_ms))
        check(other_at < muted_at, "another client's request waited for the muted one")
    finally:
        a.close()
        other.close()


def request_quota(b):
    print("[test] 2b. request_percentage: a client over it is throttled and muted", flush=True)
    res = alter(b, [([("client-id", "busy")], [("request_percentage", 1e-9)])])
    check(res[0][0] == 0, "set: %r" % (res,))
    with kafka_wire.Conn(b.port, client_id="busy") as c:
        d = c.request(kafka_wire.API_DESCRIBE_CLIENT_QUOTAS, 0, kafka_wire.describe_client_quotas_v0([]))
        answered = time.monotonic()
        throttle_ms = d.i32()  # the first field
        # (1e-9 percent: any request puts it over; the throttle is one window, 1 s here)
        check(throttle_ms == 1000, "request_percentage throttle %d ms, want one window (1000)" % throttle_ms)
        c.api_versions()
        waited = time.monotonic() - answered
    check(waited >= 0.95, "the next request was answered after %.0f ms, within the throttle" % (waited * 1000))
    counted = quota_metric(b, "ciuic_client_quota_throttled_total", 'type="request"')
    print("[test] request_percentage: throttle %d ms, next answer after %.0f ms, %s counted"
          % (throttle_ms, waited * 1000, counted), flush=True)
    check(counted and counted >= 1, "no throttled request counted")
    res = alter(b, [([("client-id", "busy")], [("request_percentage", None)])])
    check(res[0][0] == 0, "remove: %r" % (res,))


def stats_throttle(stats_json):
    import json
    s = json.loads(stats_json)
    return max((br.get("throttle", {}).get("max", 0) for br in s.get("brokers", {}).values()), default=0)


def real_clients(b):
    from confluent_kafka import Consumer, Producer, TopicPartition
    print("[test] 3. librdkafka producer and consumers under byte-rate quotas", flush=True)
    res = alter(b, [([("client-id", "slow-producer")], [("producer_byte_rate", 40000.0)]),
                    ([("client-id", "slow-consumer")], [("consumer_byte_rate", 40000.0)])])
    check([r[0] for r in res] == [0, 0], "set: %r" % (res,))
    n, size = 400, 1000
    throttles = []
    acked = []
    p = Producer({"bootstrap.servers": b.bootstrap, "broker.address.family": "v4", "client.id": "slow-producer",
                  "acks": "1", "linger.ms": 5, "batch.size": 16384, "statistics.interval.ms": 200,
                  "stats_cb": lambda j: throttles.append(stats_throttle(j))})
    t0 = time.monotonic()
    for i in range(n):
        p.produce(TOPIC, key=b"k%d" % i, value=b"v" * size, partition=1,
                  on_delivery=lambda e, m: acked.append(e is None))
        p.poll(0)
    p.flush(60)
    produce_s = time.monotonic() - t0
    p.poll(0.5)  # one more statistics window
    check(len(acked) == n and all(acked), "%d of %d acknowledged" % (sum(acked), n))
    throttled = quota_metric(b, "ciuic_client_quota_throttled_total", 'type="produce"')
    print("[test] producer: %d KB in %.1f s, librdkafka saw a throttle of up to %d ms, broker throttled %s "
          "produce responses" % (n * size // 1000, produce_s, max(throttles, default=0), throttled), flush=True)
    check(produce_s >= 6.0, "400 KB at 40 KB/s took only %.1f s" % produce_s)
    check(max(throttles, default=0) > 0, "librdkafka's statistics report no throttle")
    check(throttled and throttled > 0, "the broker counted no throttled produce")

    def consume(client_id):
        c = Consumer({"bootstrap.servers": b.bootstrap, "broker.address.family": "v4", "group.id": client_id,
                      "client.id": client_id, "enable.auto.commit": False, "fetch.max.bytes": 1 << 20})
        c.assign([TopicPartition(TOPIC, 1, 0)])
        got, t0 = 0, time.monotonic()
        deadline = t0 + 60
        while got < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got += 1
        took = time.monotonic() - t0
        c.close()
        return got, took

    got, took = consume("slow-consumer")
    fetch_throttled = quota_metric(b, "ciuic_client_quota_throttled_total", 'type="fetch"')
    print("[test] throttled consumer: %d records in %.1f s, broker throttled %s fetch responses"
          % (got, took, fetch_throttled), flush=True)
    check(got == n, "the throttled consumer read %d of %d" % (got, n))
    check(took >= 6.0, "400 KB at 40 KB/s read in only %.1f s" % took)
    check(fetch_throttled and fetch_throttled > 0, "the broker counted no throttled fetch")
    got, took = consume("free-consumer")
    print("[test] unlimited consumer: %d records in %.1f s" % (got, took), flush=True)
    check(got == n, "the unlimited consumer read %d of %d" % (got, n))


def connection_rate(b):
    print("[test] 4. connection_creation_rate for 127.0.0.2", flush=True)
    res = alter(b, [([("ip", "127.0.0.2")], [("connection_creation_rate", 2.0)])])
    check(res[0][0] == 0, "set: %r" % (res,))
    served = closed = 0
    for _ in range(10):
        try:
            with kafka_wire.Conn(b.port, source="127.0.0.2", timeout=5) as c:
                c.api_versions()
                served += 1
        except (kafka_wire.ConnectionClosed, ConnectionResetError, socket.timeout):
            closed += 1
        # meanwhile another address is served
    with b.conn() as c:
        c.api_versions()
    counted = quota_metric(b, "ciuic_client_quota_connections_throttled_total")
    print("[test] 10 connections from 127.0.0.2: %d served, %d closed unserved (counted %s)"
          % (served, closed, counted), flush=True)
    check(served >= 1 and closed >= 1, "served %d, closed %d: want both" % (served, closed))
    check(counted is not None and counted >= closed, "counted %s closed connections of %d" % (counted, closed))


def main(ctx):
    b = ctx.broker({"quota.window.num": "3", "quota.window.size.seconds": "1", "num.partitions": "2"})
    b.create_topic(TOPIC, 2)
    apis(b)
    muting(b)
    request_quota(b)
    real_clients(b)
    connection_rate(b)
    print("[test] 5. a restart keeps the quotas", flush=True)
    b.restart()
    err, _, entries = describe(b, [("client-id", ANY, None)], strict=True)
    names = sorted(e[0]["client-id"] for e in entries or [])
    check(err == 0 and names == ["muted", "slow-consumer", "slow-producer"], "after a restart: %r" % (entries,))
    err, _, entries = describe(b, [("ip", EXACT, "127.0.0.2")])
    check(err == 0 and entries == [({"ip": "127.0.0.2"}, {"connection_creation_rate": 2.0})],
          "the ip quota after a restart: %r" % (entries,))


if __name__ == "__main__":
    harness.run_test(main, total_timeout=150)
