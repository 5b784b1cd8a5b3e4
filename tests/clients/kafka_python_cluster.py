"""tests/clients/kafka_python_cluster.py: kafka-python's driver for tests/integration/test_cluster_clients.py.

Usage: PYTHON kafka_python_cluster.py produce BOOTSTRAP TOPIC N CHUNK
       PYTHON kafka_python_cluster.py consume BOOTSTRAP TOPIC GROUP FIRST HALF

The line protocol is described in test_cluster_clients.py. PYTHON is
Debian's /usr/bin/python3 (kafka-python 2.0.2, no idempotent producer: it
retries with one request in flight, so order holds but a retried record
may be written twice) or build/clients-venv's (kafka-python 3.x,
enable_idempotence). Single-threaded; every wait is bounded.
"""
import sys
import time

import kafka
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata

PARTS = 3
IDEMPOTENT = not kafka.__version__.startswith(("1.", "2.0."))


def out(line):
    sys.stdout.write(line + "\n")


def produce(bootstrap, topic, n, chunk):
    kw = {"enable_idempotence": True} if IDEMPOTENT else {"max_in_flight_requests_per_connection": 1}
    p = KafkaProducer(bootstrap_servers=bootstrap.split(","), client_id="ck-cc-kafka-python", acks="all",
                      retries=1000000, retry_backoff_ms=100, request_timeout_ms=10000, linger_ms=5, **kw)
    acked = failed = 0
    for start in range(0, n, chunk):
        futs = [(i, p.send(topic, key=b"k%d" % i, value=b"v%06d" % i, partition=i % PARTS))
                for i in range(start, min(n, start + chunk))]
        p.flush(timeout=120)
        for i, f in futs:
            try:
                md = f.get(timeout=1)
                out("ack %d %d %d" % (md.partition, md.offset, i))
                acked += 1
            except KafkaError as e:
                out("err %d %r" % (i, e))
                failed += 1
        sys.stdout.flush()
    p.close(timeout=10)
    out("produced %d %d" % (acked, failed))


def member(bootstrap, topic, group):
    c = KafkaConsumer(bootstrap_servers=bootstrap.split(","), group_id=group, client_id="ck-cc-kafka-python",
                      enable_auto_commit=False, auto_offset_reset="earliest", session_timeout_ms=10000,
                      heartbeat_interval_ms=1000, fetch_max_wait_ms=200, request_timeout_ms=15000,
                      max_partition_fetch_bytes=4096,
                      retry_backoff_ms=100)
    c.subscribe([topic])
    return c


def poll(c):
    """c.poll(); a retriable error (kafka-python 3.x raises KafkaConnectionError
    from poll when its metadata refresh picked the broker just killed) is
    reported as a `note` line and answered with an empty poll: the caller's
    loop polls again, within its own deadline."""
    try:
        return c.poll(timeout_ms=200)
    except KafkaError as e:
        if not getattr(e, "retriable", False):
            raise
        out("note poll raised %s, polling again" % type(e).__name__)
        time.sleep(0.1)
        return {}


def read(c, nxt, done, seconds=90):
    """Polls, printing each record, until done(count) holds; nxt: the next
    offset per partition, updated. Returns how many records it delivered."""
    count = 0
    deadline = time.monotonic() + seconds
    while not done(count):
        if time.monotonic() > deadline:
            raise SystemExit("timed out reading: %d records, next offsets %s" % (count, nxt))
        for tp, msgs in poll(c).items():
            for m in msgs:
                out("rec %d %d %s" % (m.partition, m.offset, m.value.decode()))
                nxt[m.partition] = m.offset + 1
                count += 1
        sys.stdout.flush()
    return count


def commit(c, topic, nxt):
    """Commits nxt, retrying retriable errors (the coordinator moving) for up to 60 s."""
    deadline = time.monotonic() + 60
    while True:
        try:
            c.commit({TopicPartition(topic, p): OffsetAndMetadata(o, None) for p, o in nxt.items()})
            break
        except KafkaError as e:
            if time.monotonic() > deadline or not getattr(e, "retriable", False):
                raise
            out("note commit raised %r, retrying" % e)
            time.sleep(0.2)
    for p, o in sorted(nxt.items()):
        out("committed %d %d" % (p, o))


def stdin_line(want):
    f = sys.stdin.readline().split()
    if not f or f[0] != want:
        raise SystemExit("expected `%s`, got %r" % (want, f))
    return f[1:]


def consume(bootstrap, topic, group, first, half):
    c = member(bootstrap, topic, group)
    nxt = {}
    n = read(c, nxt, lambda count: count >= first)
    commit(c, topic, nxt)
    out("paused")
    sys.stdout.flush()
    stdin_line("resume")
    read(c, nxt, lambda count: n + count >= half)
    commit(c, topic, nxt)
    c.close(autocommit=False)
    out("closed")
    sys.stdout.flush()
    ends = {p: int(e) for p, e in enumerate(stdin_line("go"))}
    out("member2")
    c = member(bootstrap, topic, group)
    mine = {}
    read(c, mine, lambda _: all(mine.get(p, nxt.get(p, 0)) >= e for p, e in ends.items()))
    commit(c, topic, mine)
    c.close(autocommit=False)
    out("done")


def main():
    out("client kafka-python %s idempotent=%d" % (kafka.__version__, IDEMPOTENT))
    mode = sys.argv[1]
    if mode == "produce":
        produce(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif mode == "consume":
        consume(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]))
    else:
        raise SystemExit("usage: produce BOOTSTRAP TOPIC N CHUNK | consume BOOTSTRAP TOPIC GROUP FIRST HALF")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
