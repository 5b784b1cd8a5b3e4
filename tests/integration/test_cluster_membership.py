"""tests/integration/test_cluster_membership.py: brokers joining a ZooKeeper cluster.

Usage: test_cluster_membership.py --broker BIN --work DIR SCENARIO

Real processes on 127.0.0.1: Debian's ZooKeeper (standalone, tickTime 200 ms)
and ciuickafka brokers with zookeeper.connect (a chroot) and a 3 s session
timeout. Kafka's znodes are read with kazoo (an independent ZooKeeper
client); Metadata with confluent-kafka (librdkafka).

Scenarios:
  layout      three brokers: /brokers/ids = [1,2,3] with v5 JSON whose
              endpoints are the advertised listeners (and the rack); one
              /controller naming a live broker, /controller_epoch >= 1;
              /cluster/id equal to every broker's Metadata cluster id; every
              broker's Metadata lists all three brokers at their ports and the
              controller; Kafka's persistent paths exist under the chroot.
  failover    kill -9 of the controller: its registration expires, another
              broker holds /controller with a higher epoch, and Metadata from
              the others drops the dead broker; it restarts at once (its old
              session still alive), waits its old registration out and
              registers again with a new broker epoch (czxid). SIGTERM of a
              broker removes its registration before it exits.
  sessions    SIGSTOP of a broker past its session timeout, then SIGCONT: it
              makes a new session and registers again with a new epoch
              (zookeeperexpires_total 1). kill -9 of ZooKeeper: the brokers
              keep serving produce and fetch; ZooKeeper back on its port: all
              three registered again and a controller elected.
  refusals    a config error names zookeeper.connect; no ZooKeeper at the
              address: exit 1 within zookeeper.connection.timeout.ms, naming
              it; a data dir carrying another cluster id: exit 1 naming both
              ids; a KRaft stack with three voters and no zookeeper.connect:
              exit 1 saying a cluster needs ZooKeeper; one voter: starts.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import zookeeper  # noqa: E402
from harness import check, scrape, wait_until  # noqa: E402

CHROOT = "/ck-it"
SESSION_MS = 3000


def cluster_overrides(zk, node_id, extra=None):
    o = {"node.id": str(node_id), "zookeeper.connect": zk.connect + CHROOT,
         "zookeeper.session.timeout.ms": str(SESSION_MS)}
    o.update(extra or {})
    return o


def start_cluster(ctx, zk, n=3, extra=None):
    return [ctx.broker(cluster_overrides(zk, i, (extra or {}).get(i)), name="broker%d" % i) for i in range(1, n + 1)]


def znode(kz, path):
    data, stat = kz.get(path)
    return data.decode("utf-8"), stat


def registered(kz):
    return sorted(int(c) for c in kz.get_children("/brokers/ids"))


def controller(kz):
    if not kz.exists("/controller"):
        return None, None
    data, _ = znode(kz, "/controller")
    epoch, _ = znode(kz, "/controller_epoch")
    return json.loads(data)["brokerid"], int(epoch)


def metadata(b):
    from confluent_kafka.admin import AdminClient
    md = AdminClient({"bootstrap.servers": b.bootstrap}).list_topics(timeout=10)
    return md


def wait_registered(kz, ids, timeout=30):
    wait_until(lambda: registered(kz) == sorted(ids), timeout, "/brokers/ids == %s" % sorted(ids), interval=0.1)


def wait_controller(kz, among, timeout=30):
    def elected():
        c, e = controller(kz)
        return (c, e) if c in among else None
    return wait_until(elected, timeout, "a controller among %s" % sorted(among), interval=0.1)


def wait_metadata_brokers(b, ids, controller_id, timeout=30):
    def agrees():
        md = metadata(b)
        return sorted(md.brokers) == sorted(ids) and md.controller_id == controller_id
    wait_until(agrees, timeout, "%s's Metadata to list brokers %s, controller %s" % (b.name, sorted(ids), controller_id),
               interval=0.2)


def scenario_layout(ctx, zk):
    brokers = start_cluster(ctx, zk, extra={2: {"broker.rack": "rack-b"}})
    kz = zk.client(CHROOT)
    wait_registered(kz, [1, 2, 3])
    for b in brokers:
        nid = int(b.overrides["node.id"])
        data, stat = znode(kz, "/brokers/ids/%d" % nid)
        reg = json.loads(data)
        check(reg["version"] == 5, "registration version %r" % reg)
        check(reg["endpoints"] == ["PLAINTEXT://127.0.0.1:%d" % b.port], "endpoints %r" % reg["endpoints"])
        check(reg["host"] == "127.0.0.1" and reg["port"] == b.port, "host/port %r" % reg)
        check(reg["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}, "protocol map %r" % reg)
        check(reg["jmx_port"] == -1 and reg["timestamp"].isdigit() and reg["features"] == {}, "fields %r" % reg)
        check(reg.get("rack") == ("rack-b" if nid == 2 else None), "rack of %d: %r" % (nid, reg.get("rack")))
        check(stat.ephemeralOwner != 0, "/brokers/ids/%d is not ephemeral" % nid)
    c, epoch = wait_controller(kz, [1, 2, 3])
    check(epoch >= 1, "controller epoch %d" % epoch)
    cdata = json.loads(znode(kz, "/controller")[0])
    check(cdata["version"] == 2 and cdata["timestamp"].isdigit() and cdata.get("kraftControllerEpoch") == -1,
          "/controller payload %r" % cdata)
    cid = json.loads(znode(kz, "/cluster/id")[0])
    check(cid["version"] == "1" and len(cid["id"]) == 22, "/cluster/id payload %r" % cid)
    for path in ["/consumers", "/brokers/ids", "/brokers/topics", "/brokers/seqid", "/config/changes",
                 "/config/topics", "/config/brokers", "/admin/delete_topics", "/isr_change_notification",
                 "/latest_producer_id_block", "/log_dir_event_notification"]:
        check(kz.exists(path) is not None, "persistent path %s missing" % path)
    check(zk.client().exists(CHROOT + "/brokers/ids") is not None, "chroot %s not used" % CHROOT)
    for b in brokers:
        wait_metadata_brokers(b, [1, 2, 3], c)
        md = metadata(b)
        check(md.cluster_id == cid["id"], "%s cluster id %s != ZooKeeper's %s" % (b.name, md.cluster_id, cid["id"]))
        for other in brokers:
            bm = md.brokers[int(other.overrides["node.id"])]
            check((bm.host, bm.port) == ("127.0.0.1", other.port), "%s lists %s at %s:%d" %
                  (b.name, other.name, bm.host, bm.port))
    with open(os.path.join(brokers[0].data_dir, "meta.properties")) as f:
        check("cluster.id=%s\n" % cid["id"] in f.read(), "meta.properties lacks the cluster id")


def scenario_failover(ctx, zk):
    brokers = start_cluster(ctx, zk)
    by_id = {int(b.overrides["node.id"]): b for b in brokers}
    kz = zk.client(CHROOT)
    wait_registered(kz, [1, 2, 3])
    c, epoch = wait_controller(kz, [1, 2, 3])
    old_czxid = kz.exists("/brokers/ids/%d" % c).czxid
    t0 = time.monotonic()
    by_id[c].kill()
    others = [i for i in by_id if i != c]
    c2, epoch2 = wait_controller(kz, others, timeout=SESSION_MS / 1000 + 15)
    print("[test] controller %d killed; %d took over (epoch %d -> %d) after %.1fs" %
          (c, c2, epoch, epoch2, time.monotonic() - t0), flush=True)
    check(epoch2 > epoch, "controller epoch did not grow: %d -> %d" % (epoch, epoch2))
    wait_registered(kz, others)
    for i in others:
        wait_metadata_brokers(by_id[i], others, c2)

    # Restart at once: a non-controller killed now leaves a live session
    # behind, which the new process must wait out.
    victim = others[0] if others[0] != c2 else others[1]
    victim_czxid = kz.exists("/brokers/ids/%d" % victim).czxid
    by_id[victim].kill()
    by_id[victim].start_timeout = SESSION_MS / 1000 + 30
    by_id[victim].start()

    def reregistered():
        st = kz.exists("/brokers/ids/%d" % victim)
        return st is not None and st.czxid > victim_czxid
    wait_until(reregistered, SESSION_MS / 1000 + 15, "broker %d registered again with a new czxid" % victim,
               interval=0.1)
    check("waiting for it to expire" in by_id[victim].log_text(), "no wait for the old registration in the log")

    by_id[c].start()
    wait_registered(kz, [1, 2, 3])
    check(kz.exists("/brokers/ids/%d" % c).czxid > old_czxid, "restarted broker kept its old broker epoch")
    check(controller(kz)[0] == c2, "controller moved again without a failure")
    for b in brokers:
        wait_metadata_brokers(b, [1, 2, 3], c2)

    # SIGTERM: the registration (and /controller) go before the process exits.
    watcher = zk.client(CHROOT)
    gone = []
    watcher.exists("/brokers/ids/%d" % c2, watch=lambda ev: gone.append(time.monotonic()))
    t0 = time.monotonic()
    by_id[c2].stop()
    t_exit = time.monotonic()
    # Without an explicit close ZooKeeper would keep it for the whole 3 s
    # session timeout after the exit.
    wait_until(lambda: gone, 5, "the registration of %d to go" % c2)
    check(gone[0] - t_exit < 1.0, "registration of %d went %.1fs after the exit: not removed by the clean stop" %
          (c2, gone[0] - t_exit))
    c3, epoch3 = wait_controller(kz, [i for i in by_id if i != c2], timeout=10)
    print("[test] SIGTERM of controller %d: broker %d controller (epoch %d) %.2fs after the signal" %
          (c2, c3, epoch3, time.monotonic() - t0), flush=True)
    check(epoch3 > epoch2, "epoch did not grow on the clean handover")


def produce_and_read(b, topic, n, already=0):
    from confluent_kafka import Consumer, Producer
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "message.timeout.ms": 20000})
    acked = []
    for i in range(n):
        p.produce(topic, value=b"v%d" % i, on_delivery=lambda e, m: acked.append(e is None))
    p.flush(30)
    check(len(acked) == n and all(acked), "%s: %d of %d acknowledged" % (b.name, sum(acked), n))
    # Assigned from the beginning rather than subscribed: a group needs the
    # coordinator, which follows __consumer_offsets leadership (replication
    # factor 3), and a broker here may be paused or gone.
    from confluent_kafka import OFFSET_BEGINNING, TopicPartition
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "ck-it-sessions", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    md = c.list_topics(topic, timeout=10).topics[topic]
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(md.partitions)])
    seen = 0
    end = time.monotonic() + 30
    while seen < n + already and time.monotonic() < end:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            seen += 1
    c.close()
    check(seen == n + already, "%s: read %d of %d" % (b.name, seen, n + already))


def scenario_sessions(ctx, zk):
    # The consumers here read by assignment and need no coordinator; an
    # offsets replication factor above the brokers keeps their group's
    # FindCoordinator from creating __consumer_offsets (ZooKeeper writes
    # racing the outage below; libzookeeper leaks a multi still in flight at
    # shutdown, which fails the sanitizer build's exit status).
    no_offsets_topic = {"offsets.topic.replication.factor": "4"}
    brokers = start_cluster(ctx, zk, extra={i: no_offsets_topic for i in (1, 2, 3)})
    by_id = {int(b.overrides["node.id"]): b for b in brokers}
    kz = zk.client(CHROOT)
    wait_registered(kz, [1, 2, 3])
    wait_controller(kz, [1, 2, 3])
    b = by_id[2]
    before = kz.exists("/brokers/ids/2").czxid
    b.proc.send_signal(signal.SIGSTOP)
    wait_until(lambda: 2 not in registered(kz), SESSION_MS / 1000 + 15, "broker 2's session to expire", interval=0.1)
    b.proc.send_signal(signal.SIGCONT)
    wait_registered(kz, [1, 2, 3])
    after = kz.exists("/brokers/ids/2").czxid
    check(after > before, "broker 2 came back with czxid %d (was %d)" % (after, before))
    wait_until(lambda: scrape(b, "kafka_server_sessionexpirelistener_zookeeperexpires_total") == 1, 10,
               "zookeeperexpires_total == 1 on broker 2")
    check(scrape(by_id[1], "kafka_server_sessionexpirelistener_zookeeperexpires_total") == 0,
          "broker 1 counted an expiry it did not have")
    active = sum(scrape(x, "kafka_controller_kafkacontroller_activecontrollercount") for x in brokers)
    check(active == 1, "active controller count over the cluster is %s" % active)

    # ZooKeeper outage: the brokers keep serving what they have (the topic is
    # made first: creating one needs ZooKeeper).
    produce_and_read(by_id[1], "during-outage", 10)
    kz.stop()
    zk.kill()
    for x in brokers:
        check(x.alive(), "%s died when ZooKeeper went away" % x.name)
    produce_and_read(by_id[1], "during-outage", 50, already=10)
    zk.start()
    kz = zk.client(CHROOT)
    wait_registered(kz, [1, 2, 3], timeout=SESSION_MS / 1000 + 30)
    wait_controller(kz, [1, 2, 3])
    for x in brokers:
        check(x.alive(), "%s died across the ZooKeeper outage" % x.name)
        wait_metadata_brokers(x, [1, 2, 3], controller(kz)[0])


def expect_exit_1(ctx, name, overrides, want, timeout=40, prepare=None, cluster_id=None):
    b = harness.Broker(ctx.binary, ctx.work, overrides, name=name)
    if prepare:
        prepare(b)
    t0 = time.monotonic()
    r = subprocess.run(b.command(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout, cwd=b.dir)
    out = r.stdout.decode("utf-8", "replace")
    print("[test] %s: exit %d after %.1fs: %s" % (name, r.returncode, time.monotonic() - t0, out.strip()[-300:]))
    check(r.returncode == 1, "%s: exit status %d, want 1" % (name, r.returncode))
    for w in want:
        check(w in out, "%s: output lacks %r" % (name, w))
    return time.monotonic() - t0


def scenario_refusals(ctx, zk):
    expect_exit_1(ctx, "bad-connect", {"zookeeper.connect": "127.0.0.1:notaport"},
                  ["zookeeper.connect", "127.0.0.1:notaport"])
    dead = harness.free_port()
    took = expect_exit_1(ctx, "no-zookeeper",
                         {"zookeeper.connect": "127.0.0.1:%d" % dead, "zookeeper.connection.timeout.ms": "2000"},
                         ["zookeeper.connect=127.0.0.1:%d" % dead])
    check(took < 15, "gave up after %.1fs with a 2 s connection timeout" % took)

    # A data dir of another cluster.
    first = ctx.broker(cluster_overrides(zk, 1), name="member")
    first.stop()

    def other_cluster(b):
        with open(os.path.join(b.data_dir, "meta.properties"), "w") as f:
            f.write("version=0\nbroker.id=7\ncluster.id=AAAAAAAAAAAAAAAAAAAAAA\n")
    kz = zk.client(CHROOT)
    zk_id = json.loads(znode(kz, "/cluster/id")[0])["id"]
    expect_exit_1(ctx, "wrong-cluster", cluster_overrides(zk, 7), ["AAAAAAAAAAAAAAAAAAAAAA", zk_id, "wrong cluster"],
                  prepare=other_cluster)
    check(7 not in registered(kz), "the refused broker registered anyway")

    kraft = {"process.roles": "broker,controller", "controller.listener.names": "CONTROLLER",
             "controller.quorum.voters": "1@127.0.0.1:19093,2@127.0.0.2:19093,3@127.0.0.3:19093"}
    expect_exit_1(ctx, "kraft-three-voters", kraft, ["controller.quorum.voters", "zookeeper.connect"])
    one = harness.free_port()
    single = ctx.broker({"process.roles": "broker,controller", "controller.listener.names": "CONTROLLER",
                         "controller.quorum.voters": "1@127.0.0.1:%d" % one,
                         "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                         "listeners": "PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (harness.free_port(), one)},
                        name="kraft-one-voter", start=False)
    single.overrides["listeners"] = "PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (single.port, one)
    single.start()
    single.stop()


def alter_broker(b, nid, configs):
    """AlterConfigs of broker nid's own set (replaced by configs) through b;
    None, or the error's text."""
    from confluent_kafka.admin import AdminClient, ConfigResource
    res = ConfigResource(ConfigResource.Type.BROKER, str(nid), set_config=configs)
    admin = AdminClient({"bootstrap.servers": b.bootstrap})  # held until the answer: its end fails the futures
    fs = admin.alter_configs([res], request_timeout=15)
    try:
        for f in fs.values():
            f.result()
        return None
    except Exception as e:  # noqa: BLE001 - the client's KafkaException carries the broker's message
        return str(e)


def scenario_listeners(ctx, zk):
    """Listeners changed live in a cluster (Kafka's DynamicListenerConfig):
    each broker adds a listener with AlterConfigs; its /brokers/ids/N is
    rewritten (same node, so the same broker epoch), the controller spreads
    it, and a client that knows only broker 1's new listener reaches both
    brokers through theirs. Removing it again takes broker 2 out of that
    listener's Metadata. Moving the inter-broker listener is refused."""
    import types
    from confluent_kafka.admin import AdminClient, NewTopic
    brokers = start_cluster(ctx, zk, n=2)
    kz = zk.client(CHROOT)
    wait_registered(kz, [1, 2])
    c, _ = wait_controller(kz, [1, 2])
    for b in brokers:
        wait_metadata_brokers(b, [1, 2], c)
    extra = {1: harness.free_port(), 2: harness.free_port()}
    czxid = {i: znode(kz, "/brokers/ids/%d" % i)[1].czxid for i in (1, 2)}
    proto = "PLAINTEXT:PLAINTEXT,EXTRA:PLAINTEXT"
    for b in brokers:
        nid = int(b.overrides["node.id"])
        err = alter_broker(b, nid, {"listeners": "PLAINTEXT://127.0.0.1:%d,EXTRA://127.0.0.1:%d" % (b.port, extra[nid]),
                                    "listener.security.protocol.map": proto})
        check(err is None, "adding a listener to broker %d: %s" % (nid, err))
    for nid in (1, 2):
        want = "EXTRA://127.0.0.1:%d" % extra[nid]
        wait_until(lambda: want in json.loads(znode(kz, "/brokers/ids/%d" % nid)[0])["endpoints"], 15,
                   "/brokers/ids/%d to list %s" % (nid, want), interval=0.1)
        data, stat = znode(kz, "/brokers/ids/%d" % nid)
        check(stat.czxid == czxid[nid], "broker %d registered anew (a new broker epoch) instead of rewriting" % nid)
        check(json.loads(data)["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT", "EXTRA": "PLAINTEXT"},
              "protocol map of %d: %s" % (nid, data))
    via_extra = types.SimpleNamespace(bootstrap="127.0.0.1:%d" % extra[1], name="EXTRA of broker 1")

    def extra_brokers():
        md = AdminClient({"bootstrap.servers": via_extra.bootstrap}).list_topics(timeout=10)
        return {i: (m.host, m.port) for i, m in md.brokers.items()}
    want = {1: ("127.0.0.1", extra[1]), 2: ("127.0.0.1", extra[2])}
    wait_until(lambda: extra_brokers() == want, 20, "broker 1's EXTRA Metadata to list %s" % want, interval=0.2)
    # Leaders on both brokers, reached through their EXTRA listeners only.
    admin = AdminClient({"bootstrap.servers": via_extra.bootstrap})
    fs = admin.create_topics([NewTopic("live-listeners", num_partitions=2, replication_factor=2)], request_timeout=15)
    for f in fs.values():
        f.result()
    produce_and_read(via_extra, "live-listeners", 200)

    # The inter-broker listener stays where the followers reach it.
    err = alter_broker(brokers[1], 2, {"listeners": "PLAINTEXT://127.0.0.1:%d,EXTRA://127.0.0.1:%d" %
                                       (harness.free_port(), extra[2]), "listener.security.protocol.map": proto})
    check(err is not None and "inter-broker listener PLAINTEXT" in err, "moving PLAINTEXT of broker 2: %s" % err)

    # Broker 2 drops EXTRA: it leaves that listener's Metadata; PLAINTEXT is untouched.
    err = alter_broker(brokers[1], 2, {})
    check(err is None, "removing broker 2's listener: %s" % err)
    wait_until(lambda: set(extra_brokers()) == {1}, 20, "broker 1's EXTRA Metadata to list broker 1 only",
               interval=0.2)
    with socket.socket() as sock:
        check(sock.connect_ex(("127.0.0.1", extra[2])) != 0, "broker 2's EXTRA port still accepts")
    check(znode(kz, "/brokers/ids/2")[1].czxid == czxid[2], "broker 2 registered anew")
    wait_metadata_brokers(brokers[0], [1, 2], c)


SCENARIOS = {"layout": scenario_layout, "failover": scenario_failover, "sessions": scenario_sessions,
             "refusals": scenario_refusals, "listeners": scenario_listeners}


def main(ctx):
    zookeeper.run_scenario(ctx, SCENARIOS)


if __name__ == "__main__":
    harness.run_test(main, total_timeout=150)
