"""tests/integration/test_cluster_groups.py: group coordinators follow leadership in a ZooKeeper cluster.

Usage: test_cluster_groups.py --broker BIN --work DIR SCENARIO

Real processes on 127.0.0.1: Debian's ZooKeeper (standalone) and ciuickafka
brokers with zookeeper.connect (a chroot), a 3 s session timeout and
offsets.topic.replication.factor 3 (as test_cluster_replication.py starts
them). Clients: confluent-kafka (librdkafka) and raw FindCoordinator v1.

Scenarios:
  failover     three brokers; a replication-factor-3 topic with 3,000
               records; a consumer group reads part of it and commits. The
               offsets topic exists in ZooKeeper with replication factor 3
               and Kafka's configs; FindCoordinator (raw, on every broker)
               names the leader of the group's __consumer_offsets partition
               as Metadata shows it. That broker is killed -9; once another
               replica leads the partition, a new consumer of the same group
               resumes exactly at the committed offsets (nothing committed
               before the kill delivered again, nothing skipped) and commits
               the end offsets to the new coordinator, read back by a third
               consumer.
  live         the same with one member that stays in the group while its
               coordinator is killed -9: it goes on consuming (every record
               delivered once) and its commit, retried while the
               coordinator moves, lands on the new coordinator.
  unavailable  one broker of a cluster meant for three: FindCoordinator
               answers COORDINATOR_NOT_AVAILABLE and __consumer_offsets is
               not created (fewer live brokers than its replication factor,
               as Kafka refuses); once the two others join, FindCoordinator
               names a leader.
"""

import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import kafka_wire  # noqa: E402
import zookeeper  # noqa: E402
from harness import check, wait_until  # noqa: E402
from test_cluster_replication import create, wait_formed, metadata, partition_states, produce, wait_leaders, zk_json  # noqa: E402

CHROOT = "/ck-groups"
SESSION_MS = 3000
OFFSETS = "__consumer_offsets"
OFFSETS_PARTITIONS = 6
COORDINATOR_NOT_AVAILABLE = 15


def start_cluster(ctx, zk, ids=(1, 2, 3)):
    out = []
    for i in ids:
        o = {"node.id": str(i), "zookeeper.connect": zk.connect + CHROOT,
             "zookeeper.session.timeout.ms": str(SESSION_MS), "replica.lag.time.max.ms": "5000",
             "offsets.topic.replication.factor": "3",
             "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS)}
        out.append(ctx.broker(o, name="broker%d" % i))
    return out


def java_hash(s):
    h = 0
    for unit in struct.unpack(">%dH" % (len(s.encode("utf-16-be")) // 2), s.encode("utf-16-be")):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h


def partition_for(group, n=OFFSETS_PARTITIONS):
    """Kafka's Utils.abs(groupId.hashCode()) % n (abs, not a mask: they differ for negative hashes)."""
    h = java_hash(group)
    h = h - (1 << 32) if h >= 1 << 31 else h
    return (0 if h == -(1 << 31) else abs(h)) % n


def find_coordinator(b, key, key_type=0):
    """Raw FindCoordinator v1 (key_type 0: GROUP, 1: TRANSACTION): (error_code, node_id, host, port)."""
    with b.conn() as c:
        d = c.request(10, 1, kafka_wire.string(key) + kafka_wire.i8(key_type))
        d.i32()  # throttle_time_ms
        err = d.i16()
        d.string()  # error_message
        node = d.i32()
        host = d.string()
        port = d.i32()
        return err, node, host, port


def consumer(brokers, group):
    from confluent_kafka import Consumer
    return Consumer({"bootstrap.servers": ",".join(b.bootstrap for b in brokers), "group.id": group,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False,
                     "broker.address.family": "v4", "session.timeout.ms": 10000})


def consume(c, topic, stop, timeout=90):
    """Polls until stop(got) holds; got: {(partition, offset): value} in delivery order per partition."""
    got = {}
    firsts = {}
    end = time.monotonic() + timeout
    while time.monotonic() < end and not stop(got):
        m = c.poll(0.5)
        if m is None or m.error() is not None:
            continue
        k = (m.partition(), m.offset())
        check(k not in got, "record %s delivered twice" % (k,))
        firsts.setdefault(m.partition(), m.offset())
        got[k] = m.value().decode()
    per = {}
    for (q, o) in got:
        lo, hi, n = per.get(q, (o, o, 0))
        per[q] = (min(lo, o), max(hi, o), n + 1)
    check(stop(got), "consumer stopped early: %d records; per partition (first, last, count) %s; assignment %s" %
          (len(got), per, [(tp.partition, tp.offset) for tp in c.position(c.assignment())]))
    return got, firsts


def committed(c, topic, partitions):
    from confluent_kafka import TopicPartition
    tps = c.committed([TopicPartition(topic, p) for p in partitions], timeout=30)
    return {tp.partition: tp.offset for tp in tps if tp.error is None and tp.offset >= 0}  # -1001: none


def three_brokers_with_data(ctx, zk, topic, parts):
    """Three registered brokers, topic (RF 3, full ISRs) holding 3,000 acknowledged records.
    Returns the brokers, them by id, a kazoo client, the acknowledged records and each partition's end offset."""
    brokers = start_cluster(ctx, zk)
    by_id = {i + 1: b for i, b in enumerate(brokers)}
    kz = zk.client(CHROOT)
    wait_formed(kz, brokers)
    code, msg = create(brokers, topic, parts, 3)
    check(code == 0, "CreateTopics: %s %s" % (code, msg))
    wait_leaders(brokers, topic, parts, want_isr=3)
    acked = {}
    produce(brokers, topic, 0, 3000, acked)
    check(len(acked) == 3000, "%d of 3000 acknowledged" % len(acked))
    ends = {p: 1 + max(o for (q, o) in acked if q == p) for p in range(parts)}
    return brokers, by_id, kz, acked, ends


def scenario_failover(ctx, zk):
    topic, group, parts = "cg-data", "ck-cg-failover", 3
    brokers, by_id, kz, acked, ends = three_brokers_with_data(ctx, zk, topic, parts)

    # A consumer reads about half and commits what it read.
    c = consumer(brokers, group)
    c.subscribe([topic])
    first, _ = consume(c, topic, lambda got: len(got) >= 1500)
    c.commit(asynchronous=False)
    positions = {p: 1 + max(o for (q, o) in first if q == p) for p in range(parts) if any(q == p for (q, _) in first)}
    done = committed(c, topic, range(parts))
    check(all(done.get(p) == off for p, off in positions.items()),
          "committed %s, consumed up to %s" % (done, positions))
    c.close()
    print("[test] group %s committed %s (ends %s)" % (group, done, ends), flush=True)

    # __consumer_offsets is a ZooKeeper topic with Kafka's settings.
    t = zk_json(kz, "/brokers/topics/" + OFFSETS)
    check(len(t["partitions"]) == OFFSETS_PARTITIONS and all(sorted(r) == [1, 2, 3] for r in t["partitions"].values()),
          "offsets topic assignment %s" % t["partitions"])
    cfg = zk_json(kz, "/config/topics/" + OFFSETS)["config"]
    check(cfg.get("cleanup.policy") == "compact" and cfg.get("compression.type") == "producer" and
          cfg.get("segment.bytes") == "104857600", "offsets topic config %s" % cfg)

    # FindCoordinator names the leader of the group's partition (Metadata's).
    op = partition_for(group)
    md = metadata(brokers[0], OFFSETS)
    check(md is not None and md[op][0] >= 1, "Metadata of %s: %s" % (OFFSETS, md))
    leader = md[op][0]
    for b in brokers:
        err, node, host, port = find_coordinator(b, group)
        check(err == 0 and node == leader and port == by_id[leader].port,
              "%s: FindCoordinator %s, want node %d (partition %d's leader)" % (b.name, (err, node, host, port),
                                                                              leader, op))
    st0 = partition_states(kz, OFFSETS)[op]
    victim = by_id[leader]
    victim.kill()
    t_kill = time.monotonic()
    print("[test] killed -9 broker %d, coordinator of %s (offsets partition %d, epoch %d)" %
          (leader, group, op, st0["leader_epoch"]), flush=True)
    survivors = [b for b in brokers if b is not victim]
    wait_until(lambda: partition_states(kz, OFFSETS)[op]["leader"] not in (-1, leader), SESSION_MS / 1000 + 20,
               "a new leader for offsets partition %d" % op, interval=0.05)
    new_leader = partition_states(kz, OFFSETS)[op]["leader"]

    def coordinator_moved():
        return all(find_coordinator(b, group)[:2] == (0, new_leader) for b in survivors)
    wait_until(coordinator_moved, 30, "FindCoordinator on the survivors to name broker %d" % new_leader, interval=0.1)
    print("[test] broker %d coordinates %s %.2fs after the kill" % (new_leader, group, time.monotonic() - t_kill),
          flush=True)

    # A new member resumes exactly at the committed offsets.
    remaining = sum(ends[p] - done.get(p, 0) for p in range(parts))
    print("[test] %d records left after the committed offsets" % remaining, flush=True)
    c2 = consumer(survivors, group)
    c2.subscribe([topic])
    second, firsts = consume(c2, topic, lambda got: len(got) >= remaining)
    for p in range(parts):
        if ends[p] > done.get(p, 0):
            check(firsts.get(p) == done.get(p, 0),
                  "partition %d: first record after the failover at %s, committed %s" % (p, firsts.get(p), done.get(p)))
    redelivered = [k for k in second if k[1] < done.get(k[0], 0)]
    check(not redelivered, "%d committed records delivered again, e.g. %s" % (len(redelivered), redelivered[:5]))
    want = {k: v for k, v in acked.items() if k[1] >= done.get(k[0], 0)}
    missing = [k for k in want if second.get(k) != want[k]]
    check(not missing and len(second) == len(want),
          "%d records skipped or changed, %d extra, e.g. %s" % (len(missing), len(second) - len(want), missing[:5]))
    c2.commit(asynchronous=False)
    c2.close()

    # The new coordinator took the commit.
    c3 = consumer(survivors, group)
    got = committed(c3, topic, range(parts))
    c3.close()
    check(got == ends, "committed after the failover %s, want %s" % (got, ends))
    print("[test] %d records resumed at the committed offsets; the new commit %s read back" % (len(second), got),
          flush=True)


def commit_until_ok(c, timeout=30):
    from confluent_kafka import KafkaException

    def ok():
        try:
            c.commit(asynchronous=False)
            return True
        except KafkaException as e:  # retriable while the coordinator moves
            print("[test] commit: %s" % e.args[0], flush=True)
            return False
    wait_until(ok, timeout, "a commit to succeed", interval=0.2)


def scenario_live(ctx, zk):
    topic, group, parts = "cg-live", "ck-cg-live", 3
    brokers, by_id, kz, acked, ends = three_brokers_with_data(ctx, zk, topic, parts)

    # One member stays in the group across the coordinator's death.
    c = consumer(brokers, group)
    c.subscribe([topic])
    first, _ = consume(c, topic, lambda got: len(got) >= 1000)
    c.commit(asynchronous=False)
    op = partition_for(group)
    wait_until(lambda: metadata(brokers[0], OFFSETS) is not None, 10, "Metadata of " + OFFSETS)
    leader = metadata(brokers[0], OFFSETS)[op][0]
    check(find_coordinator(brokers[0], group)[:2] == (0, leader), "coordinator of %s is not broker %d" % (group, leader))
    by_id[leader].kill()
    print("[test] killed -9 broker %d, coordinator of %s, under a live member" % (leader, group), flush=True)

    # It keeps consuming where it was and commits to the new coordinator.
    rest, _ = consume(c, topic, lambda got: len(first) + len(got) >= 3000)
    both = dict(first)
    both.update(rest)
    check(len(both) == 3000 and all(both.get(k) == v for k, v in acked.items()),
          "%d distinct records delivered, want the 3000 acknowledged" % len(both))
    commit_until_ok(c)
    c.close()
    survivors = [b for b in brokers if b is not by_id[leader]]
    new_leader = partition_states(kz, OFFSETS)[op]["leader"]
    check(new_leader not in (-1, leader), "offsets partition %d leader %d after the kill" % (op, new_leader))
    c3 = consumer(survivors, group)
    got = committed(c3, topic, range(parts))
    c3.close()
    check(got == ends, "committed through the new coordinator %s, want %s" % (got, ends))
    print("[test] the live member committed %s through broker %d" % (got, new_leader), flush=True)


def scenario_unavailable(ctx, zk):
    (b1,) = start_cluster(ctx, zk, ids=(1,))
    kz = zk.client(CHROOT)
    wait_until(lambda: [int(c) for c in kz.get_children("/brokers/ids")] == [1], 30, "broker 1 registered")
    for _ in range(3):
        err, node, _, _ = find_coordinator(b1, "ck-cg-lonely")
        check(err == COORDINATOR_NOT_AVAILABLE and node == -1,
              "one broker, offsets RF 3: FindCoordinator (%d, %d), want COORDINATOR_NOT_AVAILABLE" % (err, node))
    check(not kz.exists("/brokers/topics/" + OFFSETS), "__consumer_offsets created with fewer brokers than its RF")
    others = start_cluster(ctx, zk, ids=(2, 3))
    wait_formed(kz, [b1] + others)
    wait_until(lambda: find_coordinator(b1, "ck-cg-lonely")[0] == 0, 60,
               "FindCoordinator to name a coordinator once three brokers live", interval=0.2)
    named = find_coordinator(b1, "ck-cg-lonely")[1]
    check(named in (1, 2, 3), "broker 1 names coordinator %d" % named)
    # Broker 2 learns the new partitions' leaders from the controller's
    # LeaderAndIsr/UpdateMetadata, which may land after broker 1 answered:
    # until then it says COORDINATOR_NOT_AVAILABLE, as Kafka does.
    wait_until(lambda: find_coordinator(others[0], "ck-cg-lonely")[0] == 0, 30,
               "broker 2 to learn the coordinator", interval=0.2)
    err, node, _, _ = find_coordinator(others[0], "ck-cg-lonely")
    check(err == 0 and node == named, "FindCoordinator on broker 2: (%d, %d), broker 1 said %d" % (err, node, named))


SCENARIOS = {"failover": scenario_failover, "live": scenario_live, "unavailable": scenario_unavailable}


def main(ctx):
    zookeeper.run_scenario(ctx, SCENARIOS)


if __name__ == "__main__":
    harness.run_test(main, total_timeout=170)
