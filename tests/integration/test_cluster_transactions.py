"""tests/integration/test_cluster_transactions.py: transactions on a ZooKeeper cluster (issue #13).

Usage: test_cluster_transactions.py --broker BIN --work DIR SCENARIO

Real processes on 127.0.0.1: Debian's ZooKeeper (standalone) and three
ciuickafka brokers (transaction.state.log.replication.factor 3, min ISR 2,
5 transaction log partitions); a topic of 3 partitions, replication factor
3, whose leaders are spread over the three brokers, so that the coordinator
writes markers both to itself and, with WriteTxnMarkers, to the two others.
Client: confluent-kafka (librdkafka) transactional producer and
read_committed / read_uncommitted consumers.

Scenarios:
  commit_abort  __transaction_state is made in ZooKeeper with replication
                factor 3 and min.insync.replicas 2; FindCoordinator (raw, on
                every broker) names the leader of the id's partition. Three
                transactions of 300 records over the 3 partitions: commit,
                abort, commit. A read_committed consumer gets exactly the 600
                committed records, once each, in producer order per
                partition; read_uncommitted gets all 900. Each transaction
                also commits a group's offsets (send_offsets_to_transaction):
                the group sees the committed ones, never the aborted.
  failover      a transaction committed, then a second one written (300
                acknowledged records) and left open while the coordinator's
                broker is killed -9. Its partition's new leader loads the
                state and the producer's commit lands there: read_committed
                then reads both transactions' 600 records, once each.
  fence         as failover, but a new producer with the same transactional
                id takes over after the kill: it fences the old one and the
                open transaction is aborted, so read_committed reads only the
                first transaction's 300; the new producer commits its own.
  copy          exactly-once copy, as Kafka's transactions_test.py: 6,000
                records (env CK_EOS_RECORDS for a longer run) (one partition, RF 3) copied to an output topic by a
                copier process (eos_copier.py: transactions of up to 100
                records with send_offsets_to_transaction) while the copier
                is killed -9 and restarted, and each broker in turn is
                killed -9 and restarted (the copier restarted whenever it
                gives up). The output read_committed equals the input: same
                records, same order, no duplicate; so does what a
                read_committed consumer saw while it ran.
  verify        KIP-890 across brokers (raw requests): a transactional
                batch to a partition led by another broker than the
                coordinator, not added to the transaction, is refused
                (INVALID_TXN_STATE) and nothing is written: the leader asked
                the coordinator (AddPartitionsToTxn v4 verify-only); once
                added it is accepted, another partition still refused, and
                after the commit read_committed reads the one record.
"""

import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import zookeeper  # noqa: E402
from harness import check, wait_until  # noqa: E402
from test_cluster_groups import find_coordinator, partition_for  # noqa: E402
from test_cluster_replication import create, wait_formed, metadata, partition_states, wait_leaders, zk_json  # noqa: E402

CHROOT = "/ck-txn"
SESSION_MS = 3000
TXN_TOPIC = "__transaction_state"
TXN_PARTITIONS = 5
TOPIC = "tx-data"
PARTS = 3


def start_cluster(ctx, zk, ids=(1, 2, 3)):
    out = []
    for i in ids:
        o = {"node.id": str(i), "zookeeper.connect": zk.connect + CHROOT,
             "zookeeper.session.timeout.ms": str(SESSION_MS), "replica.lag.time.max.ms": "5000",
             "offsets.topic.replication.factor": "3", "offsets.topic.num.partitions": "3",
             "transaction.state.log.replication.factor": "3", "transaction.state.log.min.isr": "2",
             "transaction.state.log.num.partitions": str(TXN_PARTITIONS)}
        out.append(ctx.broker(o, name="broker%d" % i))
    return out


def txn_partition(tid):
    return partition_for(tid, TXN_PARTITIONS)  # Kafka's Utils.abs(hashCode) % n, as for groups


def find_txn_coordinator(b, tid):
    """Raw FindCoordinator v1 (TRANSACTION key): (error_code, node_id, port)."""
    err, node, _, port = find_coordinator(b, tid, key_type=1)
    return err, node, port


def bootstrap(brokers):
    return ",".join(b.bootstrap for b in brokers)


def producer(brokers, tid):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap(brokers), "transactional.id": tid, "acks": "all",
                  "broker.address.family": "v4", "transaction.timeout.ms": 60000,
                  "message.timeout.ms": 60000, "socket.timeout.ms": 10000,
                  **harness.rdkafka_debug_conf()})
    p.init_transactions(60)
    return p


def write_txn(p, tag, n=300):
    """Produces n records (round-robin over the partitions) in the open
    transaction; returns {partition: [values in order]} once all are acknowledged."""
    acked = []
    for i in range(n):
        v = "%s-%d" % (tag, i)
        p.produce(TOPIC, value=v.encode(), partition=i % PARTS,
                  on_delivery=lambda e, m: acked.append(None if e is not None else (m.partition(), m.value().decode())))
    p.flush(60)
    check(len(acked) == n and all(a is not None for a in acked), "%s: %d of %d acknowledged" %
          (tag, sum(1 for a in acked if a is not None), n))
    per = {}
    for q, v in acked:
        per.setdefault(q, []).append(v)
    return per


def read_all(brokers, isolation, want, timeout=60, topic=TOPIC, parts=PARTS):
    """Reads the topic from the start until `want` records came and every
    partition's end is reached; {partition: [values]}."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap(brokers), "group.id": "txn-check-%s-%f" % (isolation, time.time()),
                  "enable.auto.commit": False, "isolation.level": isolation, "broker.address.family": "v4",
                  "enable.partition.eof": True})
    c.assign([TopicPartition(topic, q, 0) for q in range(parts)])
    got = {}
    eof = set()
    n = 0
    end = time.monotonic() + timeout
    while time.monotonic() < end and not (n >= want and len(eof) == parts):
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error() is not None:
            if m.error().code() == -191:  # _PARTITION_EOF
                eof.add(m.partition())
            continue
        eof.discard(m.partition())
        got.setdefault(m.partition(), []).append(m.value().decode())
        n += 1
    c.close()
    return got


def expect_records(got, want, what):
    for q in range(PARTS):
        check(got.get(q, []) == want.get(q, []), "%s, partition %d: %d records, want %d; first difference at %s" %
              (what, q, len(got.get(q, [])), len(want.get(q, [])),
               next((i for i, (a, b) in enumerate(zip(got.get(q, []), want.get(q, []))) if a != b),
                    min(len(got.get(q, [])), len(want.get(q, []))))))


def merge(*pers):
    out = {}
    for per in pers:
        for q, vs in per.items():
            out.setdefault(q, []).extend(vs)
    return out


def setup(ctx, zk):
    brokers = start_cluster(ctx, zk)
    by_id = {i + 1: b for i, b in enumerate(brokers)}
    kz = zk.client(CHROOT)
    wait_formed(kz, brokers)
    code, msg = create(brokers, TOPIC, PARTS, 3)
    check(code == 0, "CreateTopics: %s %s" % (code, msg))
    wait_leaders(brokers, TOPIC, PARTS, want_isr=3)
    leaders = sorted(v[0] for v in metadata(brokers[0], TOPIC).values())
    check(leaders == [1, 2, 3], "partition leaders %s: want one partition led by each broker" % leaders)
    return brokers, by_id, kz


def coordinator_of(brokers, tid, not_node=None):
    """Waits for every broker's FindCoordinator to agree (on a node other than
    not_node); returns the node id."""
    seen = {}

    def agree():
        seen.clear()
        for b in brokers:
            err, node, port = find_txn_coordinator(b, tid)
            seen[b.name] = (err, node)
            if err != 0 or node == not_node:
                return False
        return len(set(seen.values())) == 1
    wait_until(agree, 40, "FindCoordinator for %s on every broker: %s" % (tid, seen), interval=0.2)
    return next(iter(seen.values()))[1]


def scenario_commit_abort(ctx, zk):
    brokers, by_id, kz = setup(ctx, zk)
    tid = "ck-tx-commit-abort"
    p = producer(brokers, tid)
    # The transaction log exists in ZooKeeper with Kafka's settings.
    t = zk_json(kz, "/brokers/topics/" + TXN_TOPIC)
    check(len(t["partitions"]) == TXN_PARTITIONS and all(sorted(r) == [1, 2, 3] for r in t["partitions"].values()),
          "transaction log assignment %s" % t["partitions"])
    cfg = zk_json(kz, "/config/topics/" + TXN_TOPIC)["config"]
    check(cfg.get("cleanup.policy") == "compact" and cfg.get("min.insync.replicas") == "2",
          "transaction log config %s" % cfg)
    coord = coordinator_of(brokers, tid)
    leader = metadata(brokers[0], TXN_TOPIC)[txn_partition(tid)][0]
    check(coord == leader, "FindCoordinator names broker %d, the leader of partition %d is %d" %
          (coord, txn_partition(tid), leader))
    print("[test] coordinator of %s: broker %d (partition %d)" % (tid, coord, txn_partition(tid)), flush=True)

    from confluent_kafka import Consumer, TopicPartition
    group = Consumer({"bootstrap.servers": bootstrap(brokers), "group.id": "tx-copier",
                      "broker.address.family": "v4", "enable.auto.commit": False})

    def offsets(n):  # a consume-transform-produce job's input positions
        return [TopicPartition(TOPIC, q, n + q) for q in range(PARTS)]

    p.begin_transaction()
    t1 = write_txn(p, "t1")
    p.send_offsets_to_transaction(offsets(10), group.consumer_group_metadata(), 30)
    p.commit_transaction(60)
    p.begin_transaction()
    write_txn(p, "t2")
    p.send_offsets_to_transaction(offsets(20), group.consumer_group_metadata(), 30)
    p.abort_transaction(60)
    committed_offsets = {tp.partition: tp.offset for tp in group.committed(offsets(0), timeout=30)}
    check(committed_offsets == {q: 10 + q for q in range(PARTS)},
          "group offsets after t1 (committed) and t2 (aborted): %s" % committed_offsets)
    p.begin_transaction()
    t3 = write_txn(p, "t3")
    p.send_offsets_to_transaction(offsets(30), group.consumer_group_metadata(), 30)
    p.commit_transaction(60)
    committed_offsets = {tp.partition: tp.offset for tp in group.committed(offsets(0), timeout=30)}
    check(committed_offsets == {q: 30 + q for q in range(PARTS)}, "group offsets after t3: %s" % committed_offsets)
    group.close()

    committed = read_all(brokers, "read_committed", 600)
    expect_records(committed, merge(t1, t3), "read_committed")
    everything = read_all(brokers, "read_uncommitted", 900)
    check(sum(len(v) for v in everything.values()) == 900,
          "read_uncommitted read %d records, want 900" % sum(len(v) for v in everything.values()))
    print("[test] read_committed: 600 records of t1 and t3; read_uncommitted: 900", flush=True)


def open_then_kill(ctx, zk, tid):
    brokers, by_id, kz = setup(ctx, zk)
    p = producer(brokers, tid)
    coord = coordinator_of(brokers, tid)
    p.begin_transaction()
    t1 = write_txn(p, "t1")
    p.commit_transaction(60)
    p.begin_transaction()
    t2 = write_txn(p, "t2")
    tp = txn_partition(tid)
    before = partition_states(kz, TXN_TOPIC)[tp]
    by_id[coord].kill()
    print("[test] killed -9 broker %d, coordinator of %s (transaction log partition %d, epoch %d) with t2 open" %
          (coord, tid, tp, before["leader_epoch"]), flush=True)
    survivors = [b for b in brokers if b is not by_id[coord]]
    wait_until(lambda: partition_states(kz, TXN_TOPIC)[tp]["leader"] not in (-1, coord), SESSION_MS / 1000 + 20,
               "a new leader for transaction log partition %d" % tp, interval=0.05)
    new_coord = coordinator_of(survivors, tid, not_node=coord)
    print("[test] broker %d coordinates %s now" % (new_coord, tid), flush=True)
    return survivors, p, t1, t2


def scenario_failover(ctx, zk):
    tid = "ck-tx-failover"
    survivors, p, t1, t2 = open_then_kill(ctx, zk, tid)
    p.commit_transaction(90)
    committed = read_all(survivors, "read_committed", 600)
    expect_records(committed, merge(t1, t2), "read_committed after the failover")
    print("[test] the open transaction committed on the new coordinator: 600 records read_committed", flush=True)


def scenario_fence(ctx, zk):
    tid = "ck-tx-fence"
    survivors, old, t1, _ = open_then_kill(ctx, zk, tid)
    new = producer(survivors, tid)  # fences the old producer, aborting its open transaction
    new.begin_transaction()
    t3 = write_txn(new, "t3")
    new.commit_transaction(60)
    committed = read_all(survivors, "read_committed", 600)
    expect_records(committed, merge(t1, t3), "read_committed after the fence")
    from confluent_kafka import KafkaException
    try:
        old.commit_transaction(30)
        fenced = False
    except KafkaException as e:
        fenced = e.args[0].fatal() or "fenced" in str(e).lower() or "epoch" in str(e).lower()
        print("[test] the old producer's commit failed: %s" % e, flush=True)
    check(fenced, "the fenced producer's commit did not fail as fenced")


def scenario_copy(ctx, zk):
    from confluent_kafka import Consumer, Producer, TopicPartition
    total = int(os.environ.get("CK_EOS_RECORDS", "6000"))  # a longer run by hand: 100000 and --timeout 1200
    src, dst = "eos-in", "eos-out"
    brokers = start_cluster(ctx, zk)
    by_id = {i + 1: b for i, b in enumerate(brokers)}
    kz = zk.client(CHROOT)
    wait_formed(kz, brokers)
    for t in (src, dst):
        code, msg = create(brokers, t, 1, 3)
        check(code == 0, "CreateTopics %s: %s %s" % (t, code, msg))
        wait_leaders(brokers, t, 1, want_isr=3)
    p = Producer({"bootstrap.servers": bootstrap(brokers), "enable.idempotence": True, "acks": "all",
                  "broker.address.family": "v4"})
    acked = []
    for i in range(total):
        p.produce(src, value=b"m%06d" % i, partition=0, on_delivery=lambda e, m: acked.append(e is None))
    p.flush(60)
    check(len(acked) == total and all(acked), "input: %d of %d acknowledged" % (sum(acked), total))
    want = ["m%06d" % i for i in range(total)]

    # A read_committed consumer of the output, all along.
    seen = []
    stop = threading.Event()

    def watch():
        c = Consumer({"bootstrap.servers": bootstrap(brokers), "group.id": "eos-watch", "broker.address.family": "v4",
                      "enable.auto.commit": False, "isolation.level": "read_committed"})
        c.assign([TopicPartition(dst, 0, 0)])
        while not stop.is_set() and len(seen) < total:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                seen.append(m.value().decode())
        c.close()
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()

    copier_log = open(os.path.join(ctx.work, "copier.log"), "ab")
    copiers = {"n": 0, "proc": None}

    def start_copier():
        copiers["n"] += 1
        copiers["proc"] = subprocess.Popen(
            [harness.PYTHON, os.path.join(os.path.dirname(os.path.abspath(__file__)), "eos_copier.py"),
             bootstrap(brokers), src, dst, "eos-copy", "eos-copier", str(total)],
            stdout=copier_log, stderr=subprocess.STDOUT)

    def copier_progress():
        with open(os.path.join(ctx.work, "copier.log"), "rb") as f:
            lines = [ln for ln in f.read().decode().splitlines() if "committed up to" in ln]
        return int(lines[-1].rsplit(" ", 1)[1]) if lines else 0

    def keep_copying(until):
        """Restarts the copier whenever it exits early; returns when until() holds."""
        deadline = time.monotonic() + 120 + total / 100
        while not until():
            check(time.monotonic() < deadline, "copying stalled at %d (copier log: %s)" %
                  (copier_progress(), os.path.join(ctx.work, "copier.log")))
            rc = copiers["proc"].poll()
            if rc is not None:
                if rc == 0:
                    return
                print("[test] copier exited %d at %d; restarting it" % (rc, copier_progress()), flush=True)
                start_copier()
            time.sleep(0.1)

    start_copier()
    # The copier killed -9 twice, then each broker in turn.
    for k in range(2):
        mark = copier_progress() + total // 6
        keep_copying(lambda: copier_progress() >= mark)
        copiers["proc"].kill()
        copiers["proc"].wait()
        print("[test] copier killed -9 at %d; restarting it" % copier_progress(), flush=True)
        start_copier()
    for victim in (1, 2, 3):
        mark = copier_progress() + total // 12
        keep_copying(lambda: copier_progress() >= mark or copiers["proc"].poll() == 0)
        by_id[victim].kill()
        print("[test] broker %d killed -9 at %d" % (victim, copier_progress()), flush=True)
        mark = copier_progress() + total // 20
        keep_copying(lambda: copier_progress() >= mark or copiers["proc"].poll() == 0)
        by_id[victim].start()
        live = list(brokers)
        wait_leaders(live, dst, 1, want_isr=3, timeout=60)
        wait_leaders(live, src, 1, want_isr=3, timeout=60)
        print("[test] broker %d back in the ISRs at %d" % (victim, copier_progress()), flush=True)
    keep_copying(lambda: copiers["proc"].poll() == 0)
    print("[test] copy complete after %d copier runs" % copiers["n"], flush=True)

    out = read_all(brokers, "read_committed", total, timeout=60 + total / 100, topic=dst, parts=1).get(0, [])
    dups = len(out) - len(set(out))
    check(out == want, "output read_committed: %d records (%d duplicates), want %d; first difference at %s" %
          (len(out), dups, total, next((i for i, (a, b) in enumerate(zip(out, want)) if a != b), min(len(out), total))))
    wait_until(lambda: len(seen) >= total, 60 + total / 100, "the live read_committed consumer to reach %d (at %d)" % (total, len(seen)))
    stop.set()
    watcher.join(10)
    check(seen == want, "the live read_committed consumer saw %d records, first difference at %s" %
          (len(seen), next((i for i, (a, b) in enumerate(zip(seen, want)) if a != b), min(len(seen), total))))
    print("[test] output == input (%d records, in order, no duplicate), also as seen live" % total, flush=True)


def scenario_verify(ctx, zk):
    """KIP-890 with the coordinator on another broker than the partition's
    leader: the leader asks the coordinator (AddPartitionsToTxn v4
    verify-only) before a transactional batch opens the transaction there."""
    import kafka_wire as kw
    brokers, by_id, kz = setup(ctx, zk)
    tid = "ck-tx-verify"
    coord = coordinator_of(brokers, tid)
    elsewhere = sorted(q for q, v in metadata(brokers[0], TOPIC).items() if v[0] != coord)
    check(len(elsewhere) == 2, "two partitions led by brokers other than the coordinator %d" % coord)
    q, r = elsewhere

    def call(node, api, version, body, parse):
        with kw.Conn(by_id[node].port) as c:
            return parse(c.request(api, version, body))

    def init(d):
        d.i32()
        return d.i16(), d.i64(), d.i16()
    state = {}

    def init_ok():  # InitProducerId v1 (retried while the coordinator loads)
        state["init"] = call(coord, 22, 1, kw.string(tid) + kw.i32(60000), init)
        return state["init"][0] == 0
    wait_until(init_ok, 30, "InitProducerId: %s" % (state.get("init"),), interval=0.2)
    _, pid, epoch = state["init"]

    def produce(part, seq):
        batch = kw.record_batch([(None, b"v-%d" % seq)], producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                transactional=True)
        leader = metadata(brokers[0], TOPIC)[part][0]
        body = kw.produce_v3(-1, 10000, [(TOPIC, [(part, batch)])], transactional_id=tid)
        return call(leader, kw.API_PRODUCE, 3, body, kw.parse_produce_v3)[(TOPIC, part)]

    def latest(part):
        leader = metadata(brokers[0], TOPIC)[part][0]
        with kw.Conn(by_id[leader].port) as c:
            return c.list_offsets([(TOPIC, [(part, -1)])])[(TOPIC, part)][2]

    # Not added to the transaction: the coordinator says so, nothing is written.
    err, _, _ = produce(q, 0)
    check(err == 48, "produce to %s-%d before AddPartitionsToTxn: error %d, want INVALID_TXN_STATE (48)" % (TOPIC, q, err))
    check(latest(q) == 0, "nothing written to %s-%d" % (TOPIC, q))

    def add(d):
        d.i32()
        return [(name, p, e) for name, parts in d.array(lambda d: (d.string(), d.array(lambda d: (d.i32(), d.i16()))))
                for p, e in parts]

    def add_ok():  # AddPartitionsToTxn v1 (retried on CONCURRENT_TRANSACTIONS)
        state["add"] = call(coord, 24, 1, kw.string(tid) + kw.i64(pid) + kw.i16(epoch) +
                            kw.array([(TOPIC, [q])], lambda t: kw.string(t[0]) + kw.array(t[1], kw.i32)), add)
        return state["add"] == [(TOPIC, q, 0)]
    wait_until(add_ok, 30, "AddPartitionsToTxn: %s" % (state.get("add"),), interval=0.2)
    err, base, _ = produce(q, 0)
    check(err == 0 and base == 0, "produce to the added partition: error %d, offset %d" % (err, base))
    # Another partition, still not in the transaction: refused.
    err, _, _ = produce(r, 1)
    check(err == 48, "produce to %s-%d, not added: error %d, want 48" % (TOPIC, r, err))
    check(latest(r) == 0, "nothing written to %s-%d" % (TOPIC, r))

    def end(d):
        d.i32()
        return d.i16()
    state["end"] = call(coord, 26, 1, kw.string(tid) + kw.i64(pid) + kw.i16(epoch) + kw.i8(1), end)
    check(state["end"] == 0, "EndTxn commit: %s" % state["end"])
    got = read_all(brokers, "read_committed", 1)
    check(got == {q: ["v-0"]}, "read_committed sees the one verified record: %s" % got)
    print("[txn] coordinator %d verified for leaders of %s-%d and %s-%d: refused twice, accepted once" %
          (coord, TOPIC, q, TOPIC, r))


SCENARIOS = {"commit_abort": scenario_commit_abort, "failover": scenario_failover, "fence": scenario_fence,
             "copy": scenario_copy, "verify": scenario_verify}


def main(ctx):
    zookeeper.run_scenario(ctx, SCENARIOS)


if __name__ == "__main__":
    harness.run_test(main, total_timeout=170)
