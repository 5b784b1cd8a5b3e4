"""tests/integration/test_cluster_follower_reads.py: fetch from follower (KIP-392).

Usage: test_cluster_follower_reads.py --broker BIN --work DIR

Run with the current confluent-kafka (build/clients-venv: librdkafka 2.16;
Debian's librdkafka 2.0.2 stays on a dead preferred replica until its
5-minute lease ends, against Kafka too). Real processes on 127.0.0.1:
Debian's ZooKeeper (standalone) and three
ciuickafka brokers in racks rack-1, rack-2 and rack-3, each with
replica.selector.class = Kafka's RackAwareReplicaSelector. A topic of 3
partitions, replication factor 3, min.insync.replicas 2, gets 3,000 records
with acks=all. Then:

  wire    raw Fetch v11 requests (the first version with a rack): the leader
          of a partition, asked by a client in a follower's rack, answers
          PreferredReadReplica = that follower and no records; asked from its
          own rack, from no rack or from a rack nobody is in, it answers -1
          and records. The follower serves a v11 fetch with records that end
          at or below its high watermark, answers an empty fetch at its HW
          and OFFSET_OUT_OF_RANGE past its LEO; a v10 fetch (no client
          metadata) there is NOT_LEADER_OR_FOLLOWER, as Kafka answers it.
  client  confluent-kafka (librdkafka) with client.rack = rack-2 reads every
          acknowledged record, in order, at its acknowledged offset: broker
          2 serves all of them (its bytes-out series for the topic grows by
          at least the data's size) and brokers 1 and 3 serve none (their
          bytes-out series do not move), while their replication bytes-out
          counters show they fed the followers.
  failover the same consumer reading from broker 2 as a follower while
          2,000 more records are produced; broker 2 is killed -9 mid-read:
          the consumer goes back to the leaders and still reads every
          acknowledged record.
"""

import os
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import kafka_wire as kw  # noqa: E402
import test_cluster_replication as repl  # noqa: E402
import zookeeper  # noqa: E402
from harness import check, wait_until  # noqa: E402

SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
TOPIC = "ffr"
NOT_LEADER_OR_FOLLOWER = 6
OFFSET_OUT_OF_RANGE = 1


def rack(broker_id):
    return "rack-%d" % broker_id


def fetch_request(version, topic, partition, offset, rack_id, leader_epoch=-1, max_wait_ms=100):
    """Fetch v10 or v11 (non-flexible) from a consumer: one partition, read_uncommitted."""
    part = kw.i32(partition) + kw.i32(leader_epoch) + kw.i64(offset) + kw.i64(-1) + kw.i32(1 << 20)
    body = (kw.i32(-1) + kw.i32(max_wait_ms) + kw.i32(0) + kw.i32(8 << 20) + kw.i8(0)
            + kw.i32(0) + kw.i32(-1)  # sessionless
            + kw.array([(topic, [part])], lambda t: kw.string(t[0]) + kw.array(t[1], lambda p: p))
            + kw.array([], None))
    if version >= 11:
        body += kw.string(rack_id)
    return body


def parse_fetch(d, version):
    """{partition: dict(error, hw, lso, log_start, preferred, records)} of a v10/v11 answer."""
    d.i32()  # throttle
    check(d.i16() == 0, "top-level fetch error")
    d.i32()  # session id
    out = {}
    for _ in range(d.i32()):
        d.string()
        for _ in range(d.i32()):
            p, err, hw, lso, log_start = d.i32(), d.i16(), d.i64(), d.i64(), d.i64()
            d.array(lambda d: (d.i64(), d.i64()))  # aborted transactions (null: -1)
            preferred = d.i32() if version >= 11 else -1
            recs = d.nbytes()
            out[p] = {"error": err, "hw": hw, "lso": lso, "log_start": log_start, "preferred": preferred,
                      "records": recs or b""}
    return out


def fetch(broker, version, partition, offset, rack_id, **kwargs):
    with kw.Conn(broker.port) as c:
        return parse_fetch(c.request(kw.API_FETCH, version, fetch_request(version, TOPIC, partition, offset,
                                                                           rack_id, **kwargs)), version)[partition]


def last_offset(records):
    """The last offset of the last complete v2 batch in a records blob (-1 when none)."""
    last, pos = -1, 0
    while pos + 61 <= len(records):
        base, length = struct.unpack(">qi", records[pos:pos + 12])
        if pos + 12 + length > len(records):
            break
        last = base + struct.unpack(">i", records[pos + 23:pos + 27])[0]
        pos += 12 + length
    return last


def topic_bytes_out(b):
    """(this topic's consumer bytes out, all topics' replication bytes out) on broker b."""
    import re
    import urllib.request
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % b.metrics_port, timeout=5).read().decode()
    out = re.search(r'^kafka_server_brokertopicmetrics_bytesout_total\{topic="%s"\} (\S+)$' % TOPIC, text, re.M)
    repl_out = re.search(r"^kafka_server_brokertopicmetrics_replicationbytesout_total (\S+)$", text, re.M)
    check(repl_out is not None, "broker %s exports replicationbytesout_total" % b.name)
    return (float(out.group(1)) if out else 0.0), float(repl_out.group(1))


def start(ctx, zk):
    brokers = []
    for i in (1, 2, 3):
        o = {"node.id": str(i), "zookeeper.connect": zk.connect + repl.CHROOT,
             "zookeeper.session.timeout.ms": str(repl.SESSION_MS), "replica.lag.time.max.ms": "5000",
             "broker.rack": rack(i), "replica.selector.class": SELECTOR}
        brokers.append(ctx.broker(o, name="broker%d" % i))
    return brokers


def consume(brokers, client_rack, expect, timeout=60, on_record=None):
    """Reads every partition from the beginning with client.rack until it has every key of
    expect() (None: not known yet); {(p, offset): value}. Offsets must rise within a partition."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": ",".join(b.bootstrap for b in brokers), "group.id": "ck-ffr",
                  "client.rack": client_rack, "enable.auto.commit": False, "broker.address.family": "v4",
                  "topic.metadata.refresh.interval.ms": 1000, "isolation.level": "read_committed"})
    c.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(3)])
    got, last = {}, {}
    end = time.monotonic() + timeout
    try:
        while time.monotonic() < end:
            want = expect()
            if want is not None and set(want) <= set(got):
                break
            m = c.poll(0.2)
            if m is None or m.error() is not None:
                continue
            p, o = m.partition(), m.offset()
            check(o > last.get(p, -1), "partition %d went from offset %d to %d" % (p, last.get(p, -1), o))
            last[p] = o
            got[(p, o)] = m.value().decode()
            if on_record is not None:
                on_record(len(got))
    finally:
        c.close()
    return got


def check_read(acked, got):
    missing = [k for k in acked if k not in got]
    check(not missing, "%d acknowledged records never read, e.g. %s" % (len(missing), missing[:5]))
    wrong = [k for k in acked if got[k] != acked[k]]
    check(not wrong, "%d records read with another value at their offset, e.g. %s" % (len(wrong), wrong[:5]))


def scenario(ctx, zk):
    brokers = start(ctx, zk)
    by_id = {i + 1: b for i, b in enumerate(brokers)}
    code, msg = repl.create(brokers, TOPIC, 3, 3, {"min.insync.replicas": "2"})
    check(code == 0, "CreateTopics: %s %s" % (code, msg))
    repl.wait_leaders(brokers, TOPIC, 3, want_isr=3)
    acked = {}
    repl.produce(brokers, TOPIC, 0, 3000, acked)
    check(len(acked) == 3000, "%d of 3000 acknowledged" % len(acked))
    leaders = {p: v[0] for p, v in repl.metadata(brokers[0], TOPIC).items()}
    check(sorted(leaders.values()) == [1, 2, 3], "one leader per broker: %s" % leaders)
    ends = {p: 1 + max(o for (q, o) in acked if q == p) for p in range(3)}

    # --- wire: the leader of the partition broker 1 leads, asked from each rack.
    p1 = next(p for p, l in leaders.items() if l == 1)
    follower = 3
    leader = by_id[1]
    # Wait until the leader has seen both followers fetch at its end (they are
    # candidates only once their fetch position holds the offset).
    wait_until(lambda: fetch(leader, 11, p1, ends[p1] - 1, rack(follower))["preferred"] == follower, 20,
               "the leader of partition %d to name broker %d for a client in %s" % (p1, follower, rack(follower)),
               interval=0.1)
    r = fetch(leader, 11, p1, 0, rack(follower))
    check(r["error"] == 0 and r["preferred"] == follower and r["records"] == b"",
          "leader, client in the follower's rack: %s" % {k: v for k, v in r.items() if k != "records"})
    check(r["hw"] == ends[p1], "the answer naming a replica carries the HW %d (got %d)" % (ends[p1], r["hw"]))
    for rid, why in ((rack(1), "the leader's own rack"), ("", "no rack"), ("rack-nowhere", "a rack nobody is in")):
        r = fetch(leader, 11, p1, 0, rid)
        check(r["error"] == 0 and r["preferred"] == -1 and len(r["records"]) > 0,
              "leader, %s: preferred %d, %d record bytes" % (why, r["preferred"], len(r["records"])))

    f = by_id[follower]
    wait_until(lambda: fetch(f, 11, p1, 0, rack(follower))["hw"] == ends[p1], 20,
               "the follower's HW to reach %d" % ends[p1], interval=0.1)
    r = fetch(f, 11, p1, 0, rack(follower))
    check(r["error"] == 0 and r["preferred"] == -1 and len(r["records"]) > 0,
          "follower read: error %d, %d bytes" % (r["error"], len(r["records"])))
    check(last_offset(r["records"]) < r["hw"], "the follower served offset %d at or past its HW %d" % (
        last_offset(r["records"]), r["hw"]))
    r = fetch(f, 11, p1, ends[p1], rack(follower))
    check(r["error"] == 0 and r["records"] == b"", "follower at its HW: error %d, %d bytes" % (
        r["error"], len(r["records"])))
    r = fetch(f, 11, p1, ends[p1] + 1000, rack(follower))
    check(r["error"] == OFFSET_OUT_OF_RANGE, "follower past its LEO: error %d" % r["error"])
    r = fetch(f, 10, p1, 0, "")
    check(r["error"] == NOT_LEADER_OR_FOLLOWER, "follower, Fetch v10 (no client metadata): error %d" % r["error"])
    print("[test] wire: leader names the rack's follower; follower serves below its HW", flush=True)

    # --- client: librdkafka in rack-2 reads everything from broker 2.
    before = {i: topic_bytes_out(b) for i, b in by_id.items()}
    got = consume(brokers, rack(2), lambda: acked)
    check_read(acked, got)
    after = {i: topic_bytes_out(b) for i, b in by_id.items()}
    data_bytes = sum(len(v) for v in acked.values())
    served = {i: after[i][0] - before[i][0] for i in by_id}
    print("[test] client in rack-2: consumer bytes out by broker %s (values: %d bytes)" % (served, data_bytes),
          flush=True)
    check(served[2] >= data_bytes, "broker 2 served %d consumer bytes, fewer than the data's %d" % (
        served[2], data_bytes))
    check(served[1] == 0 and served[3] == 0, "brokers 1 and 3 served consumer bytes: %s" % served)
    for i in (1, 3):
        check(after[i][1] > 0, "broker %d sent no replication bytes" % i)

    # --- failover: broker 2 (the rack-2 client's replica) dies under the reader.
    more = {}
    t = threading.Thread(target=repl.produce, args=(brokers, TOPIC, 3000, 2000, more, 0.02))
    t.start()
    killed = []

    def kill_midway(n):
        if not killed and n >= 4000:
            by_id[2].kill()
            killed.append(time.monotonic())
            print("[test] killed -9 broker 2 after %d records read" % n, flush=True)

    def everything():
        if t.is_alive():
            return None  # the producer is still running: the final set is not known yet
        out = dict(acked)
        out.update(more)
        return out

    got = consume(brokers, rack(2), everything, timeout=100, on_record=kill_midway)
    t.join(60)
    check(killed, "broker 2 was killed during the read")
    check(len(more) >= 1000, "%d of 2000 acknowledged around the kill" % len(more))
    all_acked = everything()
    check_read(all_acked, got)
    print("[test] failover: %d acknowledged records read after broker 2 died mid-read" % len(all_acked),
          flush=True)


def main(ctx):
    zookeeper.run(ctx, scenario)


if __name__ == "__main__":
    harness.run_test(main, total_timeout=170)
