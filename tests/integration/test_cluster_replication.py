"""tests/integration/test_cluster_replication.py: replicated topics on a ZooKeeper cluster.

Usage: test_cluster_replication.py --broker BIN --work DIR SCENARIO

Real processes on 127.0.0.1: Debian's ZooKeeper (standalone) and three
ciuickafka brokers with zookeeper.connect (a chroot) and a 3 s session
timeout. Topics are made and driven with confluent-kafka (librdkafka's admin
client, producer and consumer); Kafka's znodes are read with kazoo.

Scenarios:
  topics      CreateTopics (6 partitions, replication factor 3, a config)
              writes Kafka's /brokers/topics/T (v3, a topic id, 3 distinct
              live brokers per partition, preferred leaders spread over all
              three) and /config/topics/T; the controller writes every
              partition's state (leader = first replica, ISR = all three);
              Metadata from each broker names those leaders and ISRs, and
              the topic's log directories exist on exactly the brokers
              named; CreateTopics is answered only once the answering
              broker's Metadata has every leader. Replication factor 4 is
              INVALID_REPLICATION_FACTOR
              naming 3 brokers; the same name again TOPIC_ALREADY_EXISTS.
              CreatePartitions to 8 adds two partitions with leaders.
              DeleteTopics removes the znodes and, on every broker, the logs.
              InitProducerId on each broker hands out ids from a block it
              claimed in /latest_producer_id_block: no id twice.
  failover    a replication-factor-3 topic, min.insync.replicas 2: 3,000
              records produced with acks=all, then a second producer sends
              3,000 more and the leader of partition 0 is killed -9 under
              it; another replica becomes leader with a higher leader epoch
              and the dead one leaves the ISR, 1,000 more are produced, and
              a consumer reads every acknowledged record at its
              acknowledged offset with its value. The killed broker
              restarts, catches up and is back in every ISR; then the other
              two are killed: it leads every partition and a consumer reads
              every acknowledged record from it alone.
  configs     topic config changes reach every broker: IncrementalAlterConfigs
              and AlterConfigs sent to one broker write /config/topics/T and a
              /config/changes notification, and DescribeConfigs on each of
              the three brokers shows the new value; a change written into
              ZooKeeper directly (as kafka-configs.sh --zookeeper does) is
              applied by all three; a change made while a broker is down is
              applied when it restarts. Dynamic broker configs the same way:
              /config/brokers/<default> (every broker) and /config/brokers/2
              (broker2 only), as each broker's own config and as a topic's
              default; a key read only at start-up is refused. Client
              quotas: AlterClientQuotas on a broker that does not lead
              cfg-0 writes /config/clients/cq and a notification,
              DescribeClientQuotas on another broker shows it, and cfg-0's
              leader throttles client cq's produce once it applied it.
  reassign    partition reassignment (KIP-455). Two replication-factor-2
              topics on brokers [1, 2], 1,000 acknowledged records each.
              Kafka 3.9's own kafka-reassign-partitions (Java AdminClient:
              AlterPartitionReassignments, then --verify through
              ListPartitionReassignments) moves the first to [2, 3]: the
              tool reports it started and then in progress or completed; the
              topic znode ends as exactly [2, 3] with no adding/removing
              replicas, the leader (broker 1) is replaced by 2, the ISR is
              [2, 3] and broker 1's log directory for it is deleted. The
              second is moved to [2, 4] by writing /admin/reassign_partitions
              with kazoo while broker 4 is not running: the topic znode shows
              adding [4] and removing [1], --verify says it is in
              progress, and its leader's reassigningpartitions gauge is 1
              (underreplicatedpartitions 0); broker 4 starts, catches up, and the move completes:
              the znode is [2, 4] and /admin/reassign_partitions is gone.
              Then broker 2 is killed -9 and every acknowledged record of
              both topics is read back from the new replicas (3 and 4) alone.
"""

import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import kafka_wire  # noqa: E402
import zookeeper  # noqa: E402
from harness import check, wait_until  # noqa: E402

CHROOT = "/ck-repl"
SESSION_MS = 3000


def start_cluster(ctx, zk, n=3, extra=None):
    out = []
    for i in range(1, n + 1):
        o = {"node.id": str(i), "zookeeper.connect": zk.connect + CHROOT,
             "zookeeper.session.timeout.ms": str(SESSION_MS), "replica.lag.time.max.ms": "5000"}
        o.update(extra or {})
        out.append(ctx.broker(o, name="broker%d" % i))
    return out


def wait_formed(kz, brokers, ids=(1, 2, 3), timeout=30):
    """Registered in ZooKeeper and known to every broker: each one's Metadata lists exactly
    these brokers. CreateTopics counts the brokers the answering broker's cache lists (Kafka's
    getAliveBrokers), and the controller's UpdateMetadata naming a new broker comes a moment
    after its znode: a topic of replication factor len(ids) asked for in between is refused."""
    want = sorted(ids)
    wait_until(lambda: sorted(int(c) for c in kz.get_children("/brokers/ids")) == want, timeout,
               "brokers %s registered" % want)

    def known(b):
        from confluent_kafka.admin import AdminClient
        a = AdminClient({"bootstrap.servers": b.bootstrap, "broker.address.family": "v4"})
        return sorted(a.list_topics(timeout=10).brokers) == want
    wait_until(lambda: all(known(b) for b in brokers), timeout,
               "every broker's Metadata to list brokers %s" % want, interval=0.1)


def admin(brokers):
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": ",".join(b.bootstrap for b in brokers),
                        "broker.address.family": "v4"})


def create(brokers, name, partitions, rf, configs=None):
    """CreateTopics; returns the KafkaError code (0 on success) and its message."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic
    a = admin(brokers)  # kept alive until the futures are done
    fs = a.create_topics([NewTopic(name, partitions, rf, config=configs or {})], request_timeout=30)
    try:
        fs[name].result(30)
        return 0, ""
    except KafkaException as e:
        err = e.args[0]
        return err.code(), err.str()


def zk_json(kz, path):
    data, _ = kz.get(path)
    return json.loads(data.decode("utf-8"))


def partition_states(kz, topic):
    out = {}
    path = "/brokers/topics/%s/partitions" % topic
    if not kz.exists(path):
        return out
    for p in kz.get_children(path):
        sp = "%s/%s/state" % (path, p)
        if kz.exists(sp):
            out[int(p)] = zk_json(kz, sp)
    return out


def metadata(b, topic):
    """{partition: (leader, replicas, isrs)} from one broker's Metadata, or None if the topic errs."""
    from confluent_kafka.admin import AdminClient
    a = AdminClient({"bootstrap.servers": b.bootstrap, "broker.address.family": "v4"})
    md = a.list_topics(timeout=10)  # all topics: asking for one by name would auto-create it
    t = md.topics.get(topic)
    if t is None or t.error is not None:
        return None
    return {p: (pm.leader, sorted(pm.replicas), sorted(pm.isrs)) for p, pm in t.partitions.items()}


def log_dirs(b, topic):
    return sorted(int(d.rsplit("-", 1)[1]) for d in os.listdir(b.data_dir)
                  if d.rsplit("-", 1)[0] == topic and d.rsplit("-", 1)[1].isdigit())


def wait_leaders(brokers, topic, parts, want_isr=None, timeout=30):
    def ready():
        for b in brokers:
            md = metadata(b, topic)
            if md is None or len(md) != parts or any(v[0] < 0 for v in md.values()):
                return False
            if want_isr is not None and any(len(v[2]) != want_isr for v in md.values()):
                return False
        return True
    wait_until(ready, timeout, "every broker's Metadata to show %d partitions of %s with leaders" % (parts, topic),
               interval=0.2)


def scenario_topics(ctx, zk):
    brokers = start_cluster(ctx, zk)
    by_id = {i + 1: b for i, b in enumerate(brokers)}
    kz = zk.client(CHROOT)
    wait_formed(kz, brokers)

    code, msg = create(brokers, "repl-a", 6, 3, {"retention.ms": "3600000"})
    check(code == 0, "CreateTopics repl-a: %s %s" % (code, msg))
    # librdkafka sends CreateTopics to the controller, which answers only once
    # its metadata names a leader for every partition (Kafka's rule): no wait.
    ctl = by_id[json.loads(kz.get("/controller")[0].decode())["brokerid"]]
    md = metadata(ctl, "repl-a")
    check(md is not None and len(md) == 6 and all(v[0] >= 0 for v in md.values()),
          "the controller answered CreateTopics before its metadata had the leaders: %s" % md)
    t = zk_json(kz, "/brokers/topics/repl-a")
    check(t["version"] == 3 and t.get("topic_id"), "topic znode %s" % t)
    check(sorted(t["partitions"]) == [str(p) for p in range(6)], "partitions %s" % sorted(t["partitions"]))
    for p, replicas in t["partitions"].items():
        check(sorted(replicas) == [1, 2, 3], "partition %s replicas %s" % (p, replicas))
    check({r[0] for r in t["partitions"].values()} == {1, 2, 3}, "preferred leaders not spread: %s" % t["partitions"])
    cfg = zk_json(kz, "/config/topics/repl-a")
    check(cfg["config"] == {"retention.ms": "3600000"}, "topic config znode %s" % cfg)

    wait_until(lambda: len(partition_states(kz, "repl-a")) == 6, 30, "6 partition state znodes", interval=0.1)
    for p, st in partition_states(kz, "repl-a").items():
        replicas = t["partitions"][str(p)]
        check(st["leader"] == replicas[0] and sorted(st["isr"]) == [1, 2, 3],
              "partition %d state %s, replicas %s" % (p, st, replicas))
    wait_leaders(brokers, "repl-a", 6, want_isr=3)
    for b in brokers:
        md = metadata(b, "repl-a")
        for p, (leader, replicas, isr) in md.items():
            check(leader == t["partitions"][str(p)][0] and replicas == [1, 2, 3],
                  "%s: partition %d leader %d replicas %s" % (b.name, p, leader, replicas))
    wait_until(lambda: all(log_dirs(b, "repl-a") == list(range(6)) for b in brokers), 20,
               "every broker to hold a log of each of the 6 partitions")

    code, msg = create(brokers, "repl-b", 2, 4)
    check(code == 38 and "larger than available brokers: 3" in msg,
          "RF 4 on 3 brokers: want INVALID_REPLICATION_FACTOR (38), got %s %s" % (code, msg))
    code, msg = create(brokers, "repl-a", 6, 3)
    check(code == 36, "second CreateTopics repl-a: want TOPIC_ALREADY_EXISTS (36), got %s %s" % (code, msg))

    from confluent_kafka.admin import NewPartitions
    a = admin(brokers)
    fs = a.create_partitions([NewPartitions("repl-a", 8)], request_timeout=30)
    fs["repl-a"].result(30)
    check(len(zk_json(kz, "/brokers/topics/repl-a")["partitions"]) == 8, "assignment did not grow to 8")
    wait_leaders(brokers, "repl-a", 8)

    fs = a.delete_topics(["repl-a"], request_timeout=30)
    fs["repl-a"].result(30)
    wait_until(lambda: not kz.exists("/brokers/topics/repl-a") and not kz.exists("/admin/delete_topics/repl-a"),
               30, "repl-a's znodes to go", interval=0.1)
    wait_until(lambda: all(metadata(b, "repl-a") is None for b in brokers), 20, "Metadata to drop repl-a")
    wait_until(lambda: all(not log_dirs(b, "repl-a") for b in brokers), 30, "every broker to remove repl-a's logs")

    # Producer ids: every broker claimed its own block of 1000 in ZooKeeper.
    ids = {}
    for i, b in by_id.items():
        ids[i] = [init_producer_id(b) for _ in range(3)]
    flat = [x for v in ids.values() for x in v]
    check(len(set(flat)) == len(flat), "producer ids handed out twice across brokers: %s" % ids)
    blocks = {i: v[0] // 1000 for i, v in ids.items()}
    check(len(set(blocks.values())) == 3 and all(v == list(range(v[0], v[0] + 3)) for v in ids.values()),
          "each broker's ids from its own block, in order: %s" % ids)
    last = json.loads(kz.get("/latest_producer_id_block")[0].decode())
    check(int(last["block_end"]) == max(blocks.values()) * 1000 + 999 and last["broker"] in by_id,
          "/latest_producer_id_block names the last block claimed: %s (ids %s)" % (last, ids))


def init_producer_id(broker):
    """InitProducerId v0 with a null transactional id, retried while the broker has no block ready."""
    import struct
    import kafka_wire as kw
    body = struct.pack(">hi", -1, 60000)
    result = []

    def attempt():
        with kw.Conn(broker.port) as c:
            d = c.request(22, 0, body)
            d.i32()  # throttle
            err, pid = d.i16(), d.i64()
        check(err in (0, 14), "InitProducerId error %d" % err)  # 14: COORDINATOR_LOAD_IN_PROGRESS
        if err == 0:
            result.append(pid)
            return True
        return False
    wait_until(attempt, 20, "InitProducerId on broker %s" % broker.name, interval=0.1)
    return result[-1]


def produce(brokers, topic, start, count, acked, pace=0.0, failures=None, debug_log=None):
    """acks=all; every acknowledged (partition, offset) -> value into acked. pace: a pause after
    every 100 records (flushed first), so the run lasts long enough to kill a broker under it.
    failures (a dict): partition -> {error text: count} of the deliveries that failed, and
    debug_log (a path): librdkafka's metadata, topic and broker debug lines, for a failing test
    to print."""
    from confluent_kafka import Producer
    conf = {"bootstrap.servers": ",".join(b.bootstrap for b in brokers), "acks": "all",
            "enable.idempotence": False, "linger.ms": 5, "message.timeout.ms": 60000,
            "broker.address.family": "v4", "retries": 1000000, "retry.backoff.ms": 100,
            **harness.rdkafka_debug_conf()}
    extra = {}
    if debug_log is not None:
        import logging
        logger = logging.getLogger("ck-producer-" + os.path.basename(debug_log))
        logger.propagate = False
        logger.setLevel(logging.DEBUG)
        logger.addHandler(logging.FileHandler(debug_log))
        conf["debug"] = "metadata,topic,broker"
        extra["logger"] = logger  # served from poll() and flush()
    p = Producer(conf, **extra)

    def dr(err, m):
        if err is None:
            acked[(m.partition(), m.offset())] = m.value().decode()
        elif failures is not None:
            by_error = failures.setdefault(m.partition(), {})
            by_error[str(err)] = by_error.get(str(err), 0) + 1

    for i in range(start, start + count):
        while True:
            try:
                p.produce(topic, key=b"k%d" % i, value=b"v%06d" % i, on_delivery=dr)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
        if pace and (i - start) % 100 == 99:
            p.flush(60)
            time.sleep(pace)
    p.flush(60)


def read_all(brokers, topic, expect):
    # Partitions assigned from the beginning, not a group subscription: the
    # group coordinator follows __consumer_offsets leadership, and this test
    # kills brokers down to one (fewer than the offsets topic's replication
    # factor, so no coordinator could be found; test_cluster_groups.py
    # covers that).
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": ",".join(b.bootstrap for b in brokers), "group.id": "ck-repl-reader",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False, "broker.address.family": "v4"})
    parts = {p for (p, _) in expect}
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(parts)])
    got = {}
    end = time.monotonic() + 60
    while time.monotonic() < end and not set(expect) <= set(got):
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got[(m.partition(), m.offset())] = m.value().decode()
    c.close()
    return got


def scenario_failover(ctx, zk):
    brokers = start_cluster(ctx, zk)
    by_id = {i + 1: b for i, b in enumerate(brokers)}
    kz = zk.client(CHROOT)
    wait_formed(kz, brokers)
    topic = "repl-f"
    code, msg = create(brokers, topic, 3, 3, {"min.insync.replicas": "2"})
    check(code == 0, "CreateTopics: %s %s" % (code, msg))
    wait_leaders(brokers, topic, 3, want_isr=3)

    acked = {}
    produce(brokers, topic, 0, 3000, acked)
    check(len(acked) == 3000, "%d of 3000 acknowledged before the kill" % len(acked))
    st0 = partition_states(kz, topic)[0]
    victim = by_id[st0["leader"]]
    # 3,000 more from a second producer; the leader dies under it.
    during = {}
    t = threading.Thread(target=produce, args=(brokers, topic, 3000, 3000, during, 0.05))
    t.start()
    wait_until(lambda: len(during) >= 500, 60, "500 acknowledgements from the second producer", interval=0.01)
    check(len(during) < 2500, "the second producer was nearly done (%d acked) before the kill" % len(during))
    victim.kill()
    t_kill = time.monotonic()
    print("[test] killed -9 broker %d (leader of partition 0, epoch %d) after %d of the second 3,000 were acked" %
          (st0["leader"], st0["leader_epoch"], len(during)), flush=True)
    wait_until(lambda: partition_states(kz, topic)[0]["leader"] not in (-1, st0["leader"]), SESSION_MS / 1000 + 20,
               "a new leader for partition 0", interval=0.05)
    print("[test] new leader of partition 0 in ZooKeeper %.2fs after the kill (session timeout %.1fs)" %
          (time.monotonic() - t_kill, SESSION_MS / 1000), flush=True)
    t.join(90)
    check(not t.is_alive(), "the second producer did not finish")
    st1 = partition_states(kz, topic)[0]
    check(st1["leader_epoch"] > st0["leader_epoch"] and st0["leader"] not in st1["isr"],
          "after failover: %s (before %s)" % (st1, st0))
    print("[test] partition 0: leader %d epoch %d isr %s; %d of the second 3,000 acknowledged" %
          (st1["leader"], st1["leader_epoch"], st1["isr"], len(during)), flush=True)
    acked.update(during)
    survivors = [b for b in brokers if b is not victim]
    before = len(acked)
    produce(survivors, topic, 6000, 1000, acked)
    check(len(acked) == before + 1000, "%d of 1000 acknowledged after the failover" % (len(acked) - before))
    # Every acknowledged record is at its acknowledged offset with its value.
    # (A record whose acknowledgement was lost with the leader may have been
    # retried and be there twice: the producer is not idempotent.)
    got = read_all(survivors, topic, acked)
    missing = [k for k in acked if got.get(k) != acked[k]]
    check(not missing, "%d acknowledged records lost or changed, e.g. %s" % (len(missing), missing[:5]))
    print("[test] all %d acknowledged records read back from the survivors" % len(acked), flush=True)

    t_start = time.monotonic()
    victim.start()
    wait_until(lambda: all(sorted(s["isr"]) == [1, 2, 3] for s in partition_states(kz, topic).values()),
               60, "the restarted broker back in every ISR", interval=0.2)
    print("[test] broker %d caught up and back in every ISR %.1fs after it was started" %
          (st0["leader"], time.monotonic() - t_start), flush=True)
    # Its return was three ISR expansions, proposed by the survivors that
    # lead the partitions and committed by the controller.
    expands = sum(harness.scrape(b, "kafka_server_replicamanager_isrexpands_total") or 0 for b in survivors)
    check(expands >= 3, "isrexpands_total on the survivors: %s, want >= 3" % expands)
    # Only the rejoined replica left: it must lead everything and hold every
    # acknowledged record.
    for b in survivors:
        b.kill()
    wait_until(lambda: all(s["leader"] == st0["leader"] for s in partition_states(kz, topic).values()),
               SESSION_MS / 1000 + 20, "the rejoined broker to lead every partition", interval=0.1)
    got = read_all([victim], topic, acked)
    missing = [k for k in acked if got.get(k) != acked[k]]
    check(not missing, "after the restart: %d acknowledged records lost, e.g. %s" % (len(missing), missing[:5]))


def incremental_alter(broker, topic, key, value, rtype=2):
    """IncrementalAlterConfigs v0, SET one key of a topic (rtype 2) or a
    broker (4: name "" for every broker); returns the error code."""
    import kafka_wire as kw
    with kw.Conn(broker.port) as c:
        res = kw.parse_incremental_alter_configs_v0(c.request(44, 0, kw.incremental_alter_configs_v0(rtype, topic, key, value)))
    return res[0][0]


def alter(broker, topic, configs):
    """AlterConfigs v0 (the whole override set); returns the error code."""
    import kafka_wire as kw
    body = kw.array([None], lambda _: kw.i8(2) + kw.string(topic) +
                    kw.array(sorted(configs.items()), lambda kv: kw.string(kv[0]) + kw.string(kv[1]))) + kw.i8(0)
    with kw.Conn(broker.port) as c:
        d = c.request(33, 0, body)
        d.i32()
        res = d.array(lambda d: (d.i16(), d.string(), d.i8(), d.string()))
    return res[0][0]


def described(broker, topic, key, rtype=2):
    """DescribeConfigs v0 of one key of a topic (rtype 2) or broker (4) on
    this broker: its value (None on an error or when not listed)."""
    import kafka_wire as kw
    body = kw.array([None], lambda _: kw.i8(rtype) + kw.string(topic) + kw.array([key], kw.string))
    try:
        with kw.Conn(broker.port) as c:
            d = c.request(32, 0, body)
            d.i32()
            res = d.array(lambda d: (d.i16(), d.string(), d.i8(), d.string(),
                                     d.array(lambda d: (d.string(), d.string(), d.i8(), d.i8(), d.i8()))))
    except OSError:
        return None
    if res[0][0] != 0:
        return None
    return {n: v for n, v, _, _, _ in res[0][4]}.get(key)


def scenario_configs(ctx, zk):
    brokers = start_cluster(ctx, zk)
    kz = zk.client(CHROOT)
    wait_formed(kz, brokers)
    code, msg = create(brokers, "cfg", 2, 3)
    check(code == 0, "CreateTopics cfg: %s %s" % (code, msg))
    wait_until(lambda: all(described(b, "cfg", "retention.ms") is not None for b in brokers), 30,
               "every broker to host cfg")

    def everywhere(key, value, what):
        t0 = time.monotonic()
        wait_until(lambda: all(described(b, "cfg", key) == value for b in brokers), 20, what, interval=0.1)
        print("[test] %s: on all three brokers after %.2fs" % (what, time.monotonic() - t0))

    err = incremental_alter(brokers[0], "cfg", "retention.ms", "123456")
    check(err == 0, "IncrementalAlterConfigs on broker1: error %d" % err)
    conf = json.loads(kz.get("/config/topics/cfg")[0].decode())
    check(conf.get("config", {}).get("retention.ms") == "123456", "/config/topics/cfg: %s" % conf)
    notes = sorted(kz.get_children("/config/changes"))
    check(notes and json.loads(kz.get("/config/changes/" + notes[-1])[0].decode()) ==
          {"version": 2, "entity_path": "topics/cfg"}, "no change notification for cfg: %s" % notes)
    everywhere("retention.ms", "123456", "IncrementalAlterConfigs retention.ms=123456")

    err = alter(brokers[1], "cfg", {"retention.ms": "234567", "segment.bytes": "1048576"})
    check(err == 0, "AlterConfigs on broker2: error %d" % err)
    everywhere("segment.bytes", "1048576", "AlterConfigs segment.bytes=1048576")
    check(all(described(b, "cfg", "retention.ms") == "234567" for b in brokers), "AlterConfigs retention.ms")

    # As kafka-configs.sh --zookeeper writes it: the znode, then a notification.
    kz.set("/config/topics/cfg", json.dumps({"version": 1, "config": {"retention.ms": "345678"}}).encode())
    kz.create("/config/changes/config_change_", json.dumps({"version": 2, "entity_path": "topics/cfg"}).encode(),
              sequence=True)
    everywhere("retention.ms", "345678", "a change written into ZooKeeper")
    check(all(described(b, "cfg", "segment.bytes") == "1073741824" for b in brokers),
          "segment.bytes back to the default once the override is gone")

    # Dynamic broker configs (Kafka's /config/brokers/<default> and
    # /config/brokers/<id>): the default through broker1 reaches all three,
    # broker2's own only broker2; each as the broker's own config and as the
    # default of a topic without an override.
    def on_brokers(key, want, what, rtype=4, topic=None):
        t0 = time.monotonic()
        wait_until(lambda: all(described(b, topic if topic else str(i + 1), key, rtype) == w
                               for i, (b, w) in enumerate(zip(brokers, want))), 20, what, interval=0.1)
        print("[test] %s: as wanted on all three brokers after %.2fs" % (what, time.monotonic() - t0))

    err = incremental_alter(brokers[0], "", "message.max.bytes", "2000000", rtype=4)
    check(err == 0, "IncrementalAlterConfigs of every broker's message.max.bytes on broker1: error %d" % err)
    conf = json.loads(kz.get("/config/brokers/<default>")[0].decode())
    check(conf == {"version": 1, "config": {"message.max.bytes": "2000000"}}, "/config/brokers/<default>: %s" % conf)
    notes = sorted(kz.get_children("/config/changes"))
    check(json.loads(kz.get("/config/changes/" + notes[-1])[0].decode()) ==
          {"version": 2, "entity_path": "brokers/<default>"}, "no change notification for brokers/<default>")
    on_brokers("message.max.bytes", ["2000000"] * 3, "the dynamic default message.max.bytes=2000000")
    on_brokers("max.message.bytes", ["2000000"] * 3, "... inherited by topic cfg", rtype=2, topic="cfg")
    err = incremental_alter(brokers[1], "2", "message.max.bytes", "3000000", rtype=4)
    check(err == 0, "IncrementalAlterConfigs of broker2's own message.max.bytes: error %d" % err)
    check(json.loads(kz.get("/config/brokers/2")[0].decode()) == {"version": 1, "config": {"message.max.bytes": "3000000"}},
          "/config/brokers/2")
    on_brokers("message.max.bytes", ["2000000", "3000000", "2000000"], "broker2's own message.max.bytes=3000000")
    check(incremental_alter(brokers[0], "2", "message.max.bytes", "1", rtype=4) != 0,
          "broker1 refuses a change of broker2's configs")
    check(incremental_alter(brokers[0], "", "socket.request.max.bytes", "4096", rtype=4) == 42,
          "a key read only at start-up is INVALID_REQUEST")

    # Client quotas (Kafka's /config/clients/<c> and a notification): set on
    # a broker that does not lead cfg-0, seen by DescribeClientQuotas on
    # another, enforced by cfg-0's leader once its listener applied it (it
    # measures nothing before any quota exists: a throttle proves the change
    # arrived).
    leader = metadata(brokers[0], "cfg")[0][0]
    setter = next(b for i, b in enumerate(brokers) if i + 1 != leader)
    teller = next(b for i, b in enumerate(brokers) if i + 1 != leader and b is not setter)
    with setter.conn() as c:
        res = c.alter_client_quotas([([("client-id", "cq")], [("producer_byte_rate", 10000.0)])])
    check(res == [(0, None, {"client-id": "cq"})], "AlterClientQuotas: %r" % (res,))
    conf = json.loads(kz.get("/config/clients/cq")[0].decode())
    check(conf == {"version": 1, "config": {"producer_byte_rate": "10000"}}, "/config/clients/cq: %s" % conf)
    notes = sorted(kz.get_children("/config/changes"))
    check(json.loads(kz.get("/config/changes/" + notes[-1])[0].decode()) ==
          {"version": 2, "entity_path": "clients/cq"}, "no change notification for clients/cq")
    with teller.conn() as c:
        err, _, entries = c.describe_client_quotas([("client-id", 0, "cq")])
    check(err == 0 and entries == [({"client-id": "cq"}, {"producer_byte_rate": 10000.0})],
          "DescribeClientQuotas on another broker: %r" % (entries,))
    batch = kafka_wire.record_batch([(None, b"q" * 1000) for _ in range(120)])
    throttles = []

    def throttled():
        # A rate is taken over 10 s at least (11 windows of 1 s): 120 KB puts
        # a 10 KB/s quota over at once.
        with kafka_wire.Conn(brokers[leader - 1].port, client_id="cq") as c:
            d = c.request(kafka_wire.API_PRODUCE, 3, kafka_wire.produce_v3(1, 10000, [("cfg", [(0, batch)])]))
            throttles.append(int.from_bytes(d.buf[-4:], "big", signed=True))
        return throttles[-1] > 0
    wait_until(throttled, 20, "broker%d to throttle client cq" % leader, interval=0.2)
    print("[test] client quota set on broker%d, described on broker%d, throttled by broker%d (%d ms) after %d "
          "produce(s)" % (brokers.index(setter) + 1, brokers.index(teller) + 1, leader, throttles[-1],
                          len(throttles)), flush=True)

    # A change while broker3 is down reaches it when it restarts (a topic's
    # and every broker's).
    brokers[2].stop()
    err = incremental_alter(brokers[0], "cfg", "retention.ms", "456789")
    check(err == 0, "IncrementalAlterConfigs with broker3 down: error %d" % err)
    # As kafka-configs.sh --zookeeper writes it: the znode, then a notification.
    kz.set("/config/brokers/<default>", json.dumps({"version": 1, "config": {"message.max.bytes": "2500000"}}).encode())
    kz.create("/config/changes/config_change_", json.dumps({"version": 2, "entity_path": "brokers/<default>"}).encode(),
              sequence=True)
    brokers[2].start()
    everywhere("retention.ms", "456789", "a change made while broker3 was down")
    on_brokers("message.max.bytes", ["2500000", "3000000", "2500000"],
               "a default written into ZooKeeper while broker3 was down")


def tools_batch(ctx, name):
    """A test_kafka_tools.Batch (one JVM, commands run in order) on Kafka 3.9.1's tools (build/java)."""
    from test_java_clients import java_dir
    from test_kafka_tools import Batch
    cp = os.path.join(java_dir("clients", "3.9.1"), "ck-java-it.jar") + os.pathsep + \
        os.path.join(java_dir("tools", "3.9.1"), "*")
    return Batch(ctx, cp, name)


def reassign_tool(ctx, name, *commands):
    """One JVM running Kafka 3.9's ReassignPartitionsCommand once per (label, args); {label: stdout}."""
    batch = tools_batch(ctx, name)
    for label, args in commands:
        batch.add(label, "org.apache.kafka.tools.reassign.ReassignPartitionsCommand", *args)
    batch.run()
    return {label: batch.out(label) for label, _ in commands}


def topic_znode(kz, topic):
    t = zk_json(kz, "/brokers/topics/%s" % topic)
    return t["partitions"], t.get("adding_replicas") or {}, t.get("removing_replicas") or {}


def scenario_reassign(ctx, zk):
    from confluent_kafka.admin import NewTopic
    brokers = start_cluster(ctx, zk)
    by_id = {i + 1: b for i, b in enumerate(brokers)}
    kz = zk.client(CHROOT)
    wait_formed(kz, brokers)
    a = admin(brokers)
    fs = a.create_topics([NewTopic(t, 1, replica_assignment=[[1, 2]]) for t in ("mv-api", "mv-zk")],
                         request_timeout=30)
    for t, f in fs.items():
        f.result(30)
    for t in ("mv-api", "mv-zk"):
        wait_leaders(brokers, t, 1, want_isr=2)
        check(partition_states(kz, t)[0]["leader"] == 1, "%s led by broker 1: %s" % (t, partition_states(kz, t)))
    acked = {"mv-api": {}, "mv-zk": {}}
    for t in acked:
        produce(brokers, t, 0, 1000, acked[t])
        check(len(acked[t]) == 1000, "%s: %d of 1000 acknowledged" % (t, len(acked[t])))

    # 1. Kafka's tool, through AlterPartitionReassignments on the controller.
    plan = json.dumps({"version": 1, "partitions": [{"topic": "mv-api", "partition": 0, "replicas": [2, 3]}]})
    plan_file = os.path.join(ctx.work, "mv-api.json")
    with open(plan_file, "w") as f:
        f.write(plan)
    boot = ",".join(b.bootstrap for b in brokers)
    out = reassign_tool(ctx, "reassign-api",
                        ("execute", ["--bootstrap-server", boot, "--reassignment-json-file", plan_file, "--execute"]),
                        ("verify", ["--bootstrap-server", boot, "--reassignment-json-file", plan_file, "--verify",
                                    "--preserve-throttles"]))
    check("Successfully started partition reassignment for mv-api-0" in out["execute"],
          "execute output:\n%s" % out["execute"])
    check("Reassignment of partition mv-api-0 is" in out["verify"], "verify output:\n%s" % out["verify"])
    print("[test] kafka-reassign-partitions --verify right after --execute: %s" %
          [l for l in out["verify"].splitlines() if "mv-api-0" in l], flush=True)
    wait_until(lambda: topic_znode(kz, "mv-api") == ({"0": [2, 3]}, {}, {}), 60,
               "mv-api's znode to be exactly [2, 3]", interval=0.1)
    st = partition_states(kz, "mv-api")[0]
    check(st["leader"] == 2 and sorted(st["isr"]) == [2, 3], "mv-api after the move: %s" % st)
    wait_until(lambda: not log_dirs(by_id[1], "mv-api"), 30, "broker 1 to delete its mv-api-0 log")
    check(log_dirs(by_id[3], "mv-api") == [0], "broker 3 holds mv-api-0")
    out = reassign_tool(ctx, "reassign-api-done",
                        ("verify", ["--bootstrap-server", boot, "--reassignment-json-file", plan_file, "--verify",
                                    "--preserve-throttles"]))
    check("Reassignment of partition mv-api-0 is completed" in out["verify"], "verify output:\n%s" % out["verify"])
    wait_leaders(brokers, "mv-api", 1, want_isr=2)
    for b in brokers:
        check(metadata(b, "mv-api")[0][1] == [2, 3], "%s: Metadata replicas %s" % (b.name, metadata(b, "mv-api")))

    # 2. /admin/reassign_partitions, to a broker that is not running yet.
    b4 = ctx.broker({"node.id": "4", "zookeeper.connect": zk.connect + CHROOT,
                     "zookeeper.session.timeout.ms": str(SESSION_MS), "replica.lag.time.max.ms": "5000"},
                    name="broker4", start=False)
    kz.create("/admin/reassign_partitions", json.dumps(
        {"version": 1, "partitions": [{"topic": "mv-zk", "partition": 0, "replicas": [2, 4]}]}).encode())
    wait_until(lambda: topic_znode(kz, "mv-zk") == ({"0": [2, 4, 1]}, {"0": [4]}, {"0": [1]}), 30,
               "mv-zk's znode to show RS = [2, 4, 1], adding [4], removing [1]", interval=0.1)
    zk_plan = os.path.join(ctx.work, "mv-zk.json")
    with open(zk_plan, "w") as f:
        f.write(json.dumps({"version": 1, "partitions": [{"topic": "mv-zk", "partition": 0, "replicas": [2, 4]}]}))
    out = reassign_tool(ctx, "reassign-zk",
                        ("verify", ["--bootstrap-server", boot, "--reassignment-json-file", zk_plan, "--verify",
                                    "--preserve-throttles"]))
    check("Reassignment of partition mv-zk-0 is still in progress" in out["verify"],
          "verify output:\n%s" % out["verify"])
    check(kz.exists("/admin/reassign_partitions"), "/admin/reassign_partitions removed before the move finished")
    # Its leader counts it as reassigning, not as under-replicated: the ISR
    # [1, 2] is the whole original replica set (Kafka's rule). The leader is
    # 1, or 2 when the auto leader rebalance (5 s after the controller's
    # activation) has already moved it to the head of RS = [2, 4, 1].
    def leader_gauge():
        leader = by_id[partition_states(kz, "mv-zk")[0]["leader"]]
        return harness.scrape(leader, "kafka_server_replicamanager_reassigningpartitions") == 1 and \
            harness.scrape(leader, "kafka_server_replicamanager_underreplicatedpartitions") == 0
    wait_until(leader_gauge, 10, "mv-zk's leader to report reassigningpartitions 1, underreplicatedpartitions 0")
    b4.start()
    wait_until(lambda: topic_znode(kz, "mv-zk") == ({"0": [2, 4]}, {}, {}), 60,
               "mv-zk's znode to be exactly [2, 4] once broker 4 caught up", interval=0.1)
    wait_until(lambda: not kz.exists("/admin/reassign_partitions"), 10, "/admin/reassign_partitions to be deleted")
    st = partition_states(kz, "mv-zk")[0]
    check(st["leader"] == 2 and sorted(st["isr"]) == [2, 4], "mv-zk after the move: %s" % st)
    wait_until(lambda: not log_dirs(by_id[1], "mv-zk"), 30, "broker 1 to delete its mv-zk-0 log")

    # 3. The new replicas alone hold every acknowledged record.
    by_id[2].kill()
    wait_until(lambda: partition_states(kz, "mv-api")[0]["leader"] == 3 and
               partition_states(kz, "mv-zk")[0]["leader"] == 4, SESSION_MS / 1000 + 20,
               "brokers 3 and 4 to lead once broker 2 is gone", interval=0.1)
    for t, holder in (("mv-api", by_id[3]), ("mv-zk", b4)):
        got = read_all([holder], t, acked[t])
        missing = [k for k in acked[t] if got.get(k) != acked[t][k]]
        check(not missing, "%s from broker %s alone: %d acknowledged records missing, e.g. %s" % (
            t, holder.name, len(missing), missing[:5]))
        print("[test] %s: all %d acknowledged records read back from %s alone" % (t, len(acked[t]), holder.name),
              flush=True)


SCENARIOS = {"topics": scenario_topics, "failover": scenario_failover, "configs": scenario_configs,
             "reassign": scenario_reassign}


def main(ctx):
    zookeeper.run_scenario(ctx, SCENARIOS)


if __name__ == "__main__":
    harness.run_test(main, total_timeout=170)
