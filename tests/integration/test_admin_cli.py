"""tests/integration/test_admin_cli.py: `ciuickafka admin` end to end (issue #18, point 4).

Usage: test_admin_cli.py --broker BIN --work DIR single|cluster

single: drives the admin command (the same ciuickafka binary) against a real
broker process and cross-checks with confluent_kafka:

- `--connect-wait-ms` started before the broker waits for it;
- usage errors exit 2 (and `ciuickafka create-topic` points to `admin`), an unreachable bootstrap exits 3, a refused
  security setting in --command-config exits 2, each with one line;
- topics create (then TOPIC_ALREADY_EXISTS, exit 1; --if-not-exists, exit
  0), list, describe (leader, replicas, ISR), alter-config --set/--delete
  (seen by confluent's describe_configs and by `configs describe`),
  add-partitions, delete; an unknown topic is UNKNOWN_TOPIC_OR_PARTITION;
- cluster info and configs describe --broker;
- produce from stdin then consume --from-beginning, and confluent reads
  the same values;
- groups list / describe with lag after a confluent consumer committed,
  reset-offsets refused while the group has a member, then --to-earliest /
  --to-offset (confluent sees the committed offsets), groups delete;
- every --format json output parses.

cluster: three brokers over Debian's ZooKeeper; a `topics create
--replication-factor 3 --connect-wait-ms` started before them waits for all
three; then, bootstrapped at a broker
that is not the controller: create (RF 3, leaders spread), produce and
consume across leaders, groups describe/reset-offsets at the coordinator,
configs describe of each broker (each answers with its own node.id),
add-partitions and delete; then a consume running while one leader is
killed follows its partitions to the new leaders and reads every record.
"""

import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, wait_until  # noqa: E402

from confluent_kafka import Consumer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, ConfigResource  # noqa: E402


class Admin:
    def __init__(self, ctx, bootstrap):
        self.binary = ctx.binary
        self.bootstrap = bootstrap

    def run(self, *args, want=0, stdin=None, bootstrap=None, timeout=60):
        cmd = [self.binary, "admin", "--bootstrap-server", bootstrap or self.bootstrap] + list(args)
        print("[admin] $ %s" % " ".join(cmd), flush=True)
        p = subprocess.run(cmd, input=(stdin or "").encode(), capture_output=True, timeout=timeout)
        out = p.stdout.decode("utf-8", "replace")
        err = p.stderr.decode("utf-8", "replace")
        print("[admin] exit %d\n%s%s" % (p.returncode, out[-3000:], err[-2000:]), flush=True)
        if want is not None:
            check(p.returncode == want, "%s: exit %d, want %d; stderr: %s" % (" ".join(args), p.returncode, want, err))
        return p.returncode, out, err

    def json(self, *args, **kw):
        rc, out, err = self.run("--format", "json", *args, **kw)
        try:
            return json.loads(out)
        except ValueError as e:
            raise harness.TestFailure("%s: output is not JSON (%s): %r" % (" ".join(args), e, out[:500]))


def one_line_error(err, *needles):
    lines = [line for line in err.splitlines() if line.strip()]
    check(len(lines) == 1, "want one error line, got %r" % lines)
    for n in needles:
        check(n in lines[0], "error line %r does not name %r" % (lines[0], n))


def conf(b, **kw):
    c = {"bootstrap.servers": b.bootstrap, "broker.address.family": "v4", "socket.timeout.ms": 10000}
    c.update(kw)
    return c


def describe_rows(adm, topic):
    return adm.json("topics", "describe", topic)


def check_errors(ctx, b, adm):
    rc, out, err = adm.run("topics", "frobnicate", want=2)
    one_line_error(err, "unknown command")
    rc, out, err = adm.run("topics", "create", want=2)
    one_line_error(err, "missing argument")
    rc, out, err = adm.run("topics", "list", bootstrap="127.0.0.1:%d" % harness.free_port(), want=3)
    one_line_error(err, "cannot connect")
    cfg = os.path.join(ctx.work, "sasl.properties")
    with open(cfg, "w") as f:
        f.write("security.protocol=SASL_SSL\n")
    rc, out, err = adm.run("--command-config", cfg, "topics", "list", want=2)
    one_line_error(err, "security.protocol")
    # A bootstrap list is tried in order: a dead first address is skipped.
    listed = adm.json("topics", "list", bootstrap="127.0.0.1:%d,%s" % (harness.free_port(), b.bootstrap))
    check("adm-early" in {t["topic"] for t in listed}, "topics list through a bootstrap list %r" % listed)
    good = os.path.join(ctx.work, "client.properties")
    with open(good, "w") as f:
        f.write("client.id=admin-it\nrequest.timeout.ms=20000\n")
    adm.run("--command-config", good, "topics", "list")
    p = subprocess.run([ctx.binary, "create-topic", "x"], capture_output=True, timeout=20)
    check(p.returncode == 2 and b"ciuickafka admin" in p.stderr,
          "`ciuickafka create-topic x`: exit %d, %r" % (p.returncode, p.stderr))
    rc, out, err = adm.run("--help")
    check("topics create" in out and "groups reset-offsets" in out, "--help lists the commands")


def check_topics(b, adm):
    created = adm.json("topics", "create", "adm-t", "--partitions", "3", "--config", "retention.ms=3600000")
    check(created == [{"topic": "adm-t", "partitions": 3, "replication_factor": 1, "status": "created"}],
          "create answer %r" % created)
    rc, out, err = adm.run("topics", "create", "adm-t", want=1)
    one_line_error(err, "TOPIC_ALREADY_EXISTS")
    again = adm.json("topics", "create", "adm-t", "--if-not-exists")
    check(again[0]["status"] == "exists", "--if-not-exists answer %r" % again)

    rc, out, err = adm.run("topics", "list")
    check(out.splitlines()[0].split() == ["topic", "partitions", "replication_factor", "internal"],
          "table header %r" % out.splitlines()[:1])
    listed = {t["topic"]: t for t in adm.json("topics", "list")}
    check("adm-t" in listed and listed["adm-t"]["partitions"] == 3, "topics list %r" % listed)

    rows = describe_rows(adm, "adm-t")
    check([r["partition"] for r in rows] == [0, 1, 2], "describe partitions %r" % rows)
    for r in rows:
        check(r["leader"] == 0 and r["replicas"] == [0] and r["isr"] == [0] and r["error"] is None,
              "describe row %r" % r)
    rc, out, err = adm.run("topics", "describe", "no-such-topic", want=1)
    one_line_error(err, "UNKNOWN_TOPIC_OR_PARTITION")

    # Configs: --set, seen by confluent and by configs describe; then --delete.
    adm.run("topics", "alter-config", "adm-t", "--set", "retention.ms=1000", "--set", "cleanup.policy=compact")
    ac = AdminClient(conf(b))
    res = ConfigResource(ConfigResource.Type.TOPIC, "adm-t")
    entries = list(ac.describe_configs([res]).values())[0].result(timeout=20)
    check(entries["retention.ms"].value == "1000", "confluent sees retention.ms=%s" % entries["retention.ms"].value)
    check(entries["cleanup.policy"].value == "compact", "confluent sees cleanup.policy")
    cfg = {c["name"]: c for c in adm.json("configs", "describe", "--topic", "adm-t")}
    check(cfg["retention.ms"]["value"] == "1000" and cfg["retention.ms"]["source"] == "DYNAMIC_TOPIC_CONFIG",
          "configs describe retention.ms %r" % cfg.get("retention.ms"))
    adm.run("configs", "alter", "--topic", "adm-t", "--delete", "retention.ms")
    cfg = {c["name"]: c for c in adm.json("configs", "describe", "--topic", "adm-t")}
    check(cfg["retention.ms"]["source"] != "DYNAMIC_TOPIC_CONFIG", "retention.ms still dynamic after --delete")
    check(cfg["cleanup.policy"]["value"] == "compact", "cleanup.policy lost by the --delete of another key")
    rc, out, err = adm.run("topics", "alter-config", "adm-t", "--set", "retention.ms=soon", want=1)
    one_line_error(err, "INVALID_CONFIG")

    adm.run("topics", "add-partitions", "adm-t", "--partitions", "5")
    wait_until(lambda: len(describe_rows(adm, "adm-t")) == 5, 15, "adm-t with 5 partitions")
    rc, out, err = adm.run("topics", "add-partitions", "adm-t", "--partitions", "2", want=1)
    one_line_error(err, "INVALID_PARTITIONS")

    adm.run("topics", "delete", "adm-t")
    wait_until(lambda: "adm-t" not in {t["topic"] for t in adm.json("topics", "list")}, 15, "adm-t deleted")
    rc, out, err = adm.run("topics", "delete", "adm-t", want=1)
    one_line_error(err, "UNKNOWN_TOPIC_OR_PARTITION")


def check_cluster(b, adm):
    info = adm.json("cluster", "info")
    check(info["cluster"][0]["cluster_id"], "cluster id %r" % info)
    check(info["cluster"][0]["controller"] == 0, "controller %r" % info)
    check(info["brokers"] == [{"id": 0, "host": "127.0.0.1", "port": b.port, "rack": None, "controller": True}],
          "brokers %r" % info["brokers"])
    rc, out, err = adm.run("cluster", "info")
    check("cluster_id" in out and "brokers:" in out, "cluster info table %r" % out)
    bcfg = {c["name"]: c for c in adm.json("configs", "describe", "--broker", "0")}
    check("num.partitions" in bcfg, "broker configs lack num.partitions: %r" % sorted(bcfg)[:20])
    rc, out, err = adm.run("configs", "describe", "--broker", "7", want=1)
    one_line_error(err, "broker 7")


def check_data_and_groups(b, adm):
    adm.run("topics", "create", "adm-p", "--partitions", "1")
    produced = adm.json("produce", "adm-p", stdin="one\ntwo\nthree\n")
    check(produced == [{"topic": "adm-p", "partition": 0, "records": 3, "first_offset": 0, "last_offset": 2}],
          "produce answer %r" % produced)
    rc, out, err = adm.run("consume", "adm-p", "--from-beginning", "--max-messages", "3")
    check(out.splitlines() == ["one", "two", "three"], "consume output %r" % out)
    rc, out, err = adm.run("--format", "json", "consume", "adm-p", "--from-beginning", "--timeout-ms", "1500")
    recs = [json.loads(line) for line in out.splitlines()]
    check([(r["offset"], r["value"]) for r in recs] == [(0, "one"), (1, "two"), (2, "three")],
          "consume json %r" % recs)

    # A confluent consumer group reads all three, commits offset 2 and leaves.
    c = Consumer(conf(b, **{"group.id": "adm-g", "enable.auto.commit": False, "auto.offset.reset": "earliest"}))
    c.subscribe(["adm-p"])
    got = []
    end = time.monotonic() + 30
    while len(got) < 3 and time.monotonic() < end:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
    check(got == [b"one", b"two", b"three"], "confluent read %r" % got)

    # While it is a member: describe shows it, reset-offsets is refused.
    g = adm.json("groups", "describe", "adm-g")
    check(g["group"][0]["members"] == 1 and g["group"][0]["state"] == "Stable", "group %r" % g["group"])
    check(g["members"][0]["assignment"] == "adm-p:0", "member assignment %r" % g["members"])
    rc, out, err = adm.run("groups", "reset-offsets", "adm-g", "--topic", "adm-p", "--to-earliest", want=1)
    one_line_error(err, "active member")

    c.commit(offsets=[TopicPartition("adm-p", 0, 2)], asynchronous=False)
    c.close()
    adm.run("produce", "adm-p", stdin="four\nfive\n")
    g = adm.json("groups", "describe", "adm-g")
    check(g["group"][0]["members"] == 0, "group after close %r" % g["group"])
    check(g["offsets"] == [{"topic": "adm-p", "partition": 0, "committed": 2, "log_end": 5, "lag": 3,
                            "member_id": None, "client_id": None, "host": None}], "offsets %r" % g["offsets"])
    rc, out, err = adm.run("groups", "describe", "adm-g")
    check("lag" in out and "adm-p" in out, "groups describe table %r" % out)
    groups = {x["group"]: x for x in adm.json("groups", "list")}
    check("adm-g" in groups, "groups list %r" % groups)

    def committed():
        cc = Consumer(conf(b, **{"group.id": "adm-g", "enable.auto.commit": False}))
        try:
            return cc.committed([TopicPartition("adm-p", 0)], timeout=20)[0].offset
        finally:
            cc.close()

    dry = adm.json("groups", "reset-offsets", "adm-g", "--topic", "adm-p", "--to-earliest", "--dry-run")
    check(dry[0]["previous"] == 2 and dry[0]["new_offset"] == 0 and dry[0]["status"] == "dry-run", "dry run %r" % dry)
    check(committed() == 2, "--dry-run changed the commit")
    adm.run("groups", "reset-offsets", "adm-g", "--topic", "adm-p", "--to-earliest")
    check(committed() == 0, "after --to-earliest confluent sees %r" % committed())
    adm.run("groups", "reset-offsets", "adm-g", "--topic", "adm-p", "--to-offset", "4")
    check(committed() == 4, "after --to-offset 4 confluent sees %r" % committed())
    adm.run("groups", "reset-offsets", "adm-g", "--topic", "adm-p", "--to-latest")
    g = adm.json("groups", "describe", "adm-g")
    check(g["offsets"][0]["committed"] == 5 and g["offsets"][0]["lag"] == 0, "after --to-latest %r" % g["offsets"])

    adm.run("groups", "delete", "adm-g")
    check("adm-g" not in {x["group"] for x in adm.json("groups", "list")}, "adm-g still listed after delete")
    rc, out, err = adm.run("groups", "delete", "adm-g", want=1)
    one_line_error(err, "GROUP_ID_NOT_FOUND")
    rc, out, err = adm.run("groups", "describe", "no-such-group", want=1)
    one_line_error(err, "GROUP_ID_NOT_FOUND")


def single(ctx):
    b = ctx.broker(start=False)
    adm = Admin(ctx, b.bootstrap)
    # Started before the broker: --connect-wait-ms keeps retrying (compose's
    # one-shot topic creator starts with the broker).
    early = subprocess.Popen([ctx.binary, "admin", "--bootstrap-server", b.bootstrap, "--connect-wait-ms", "60000",
                              "topics", "create", "adm-early", "--if-not-exists"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    b.start()
    out, err = early.communicate(timeout=60)
    check(early.returncode == 0 and b"adm-early" in out,
          "admin started before the broker: exit %d, %r %r" % (early.returncode, out, err))
    check_errors(ctx, b, adm)
    check_topics(b, adm)
    check_cluster(b, adm)
    check_data_and_groups(b, adm)


def cluster(ctx):
    """Three brokers over ZooKeeper, bootstrapped at one that is not the
    controller: topic admin is routed to the controller, produce, fetch and
    ListOffsets to each partition's leader, group calls to the coordinator,
    broker configs to that broker."""
    import zookeeper
    zk = zookeeper.ZooKeeper(ctx.work).start()
    try:
        brokers = [ctx.broker({"node.id": str(i), "zookeeper.connect": zk.connect + "/ck-admin",
                               "zookeeper.session.timeout.ms": "3000", "replica.lag.time.max.ms": "5000"},
                              name="broker%d" % i, start=False) for i in (1, 2, 3)]
        # The compose creator's case: started with the cluster, it waits for
        # a broker to answer and for three brokers before creating an RF 3 topic.
        early = subprocess.Popen([ctx.binary, "admin", "--connect-wait-ms", "60000", "--bootstrap-server",
                                  ",".join(b.bootstrap for b in brokers), "topics", "create", "adm-early",
                                  "--partitions", "3", "--replication-factor", "3", "--if-not-exists"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for b in brokers:
            b.start()
        out, err = early.communicate(timeout=90)
        check(early.returncode == 0, "creator started with the cluster: exit %d, %r" % (early.returncode, err))
        adm = Admin(ctx, brokers[0].bootstrap)
        early_rows = describe_rows(adm, "adm-early")
        check(len(early_rows) == 3 and all(len(r["replicas"]) == 3 for r in early_rows),
              "adm-early created with 3 replicas: %r" % early_rows)

        def three():
            info = adm.json("cluster", "info")
            ok = len(info["brokers"]) == 3 and info["cluster"][0]["controller"] in (1, 2, 3)
            return info if ok else None
        info = wait_until(three, 30, "cluster info with 3 brokers and a controller", interval=0.2)
        ctrl = info["cluster"][0]["controller"]
        other = [b for b in brokers if int(b.overrides["node.id"]) != ctrl][0]
        adm = Admin(ctx, other.bootstrap)
        print("[admin] controller %d, bootstrap at broker %s" % (ctrl, other.overrides["node.id"]), flush=True)

        adm.run("topics", "create", "adm-r", "--partitions", "6", "--replication-factor", "3",
                "--config", "min.insync.replicas=2")

        def replicated():
            rows = describe_rows(adm, "adm-r")
            ok = len(rows) == 6 and all(len(r["replicas"]) == 3 and sorted(r["isr"]) == sorted(r["replicas"])
                                        for r in rows)
            return rows if ok else None
        rows = wait_until(replicated, 30, "adm-r with 6 partitions of 3 in-sync replicas", interval=0.2)
        leaders = {r["leader"] for r in rows}
        check(len(leaders) > 1, "all leaders on one broker: %r" % rows)

        lines = ["r%02d" % i for i in range(60)]
        produced = adm.json("produce", "adm-r", stdin="\n".join(lines) + "\n")
        check(sum(p["records"] for p in produced) == 60 and len(produced) == 6, "produce %r" % produced)
        rc, out, err = adm.run("consume", "adm-r", "--from-beginning", "--max-messages", "60")
        check(sorted(out.splitlines()) == lines, "consume read %r" % out.splitlines()[:10])

        c = Consumer(conf(other, **{"group.id": "adm-cg", "enable.auto.commit": False,
                                    "auto.offset.reset": "earliest"}))
        c.subscribe(["adm-r"])
        n = 0
        end = time.monotonic() + 40
        while n < 60 and time.monotonic() < end:
            m = c.poll(0.5)
            if m is not None and not m.error():
                n += 1
        check(n == 60, "confluent group read %d of 60" % n)
        c.commit(offsets=[TopicPartition("adm-r", p, 1) for p in range(6)], asynchronous=False)
        c.close()
        g = adm.json("groups", "describe", "adm-cg")
        check(len(g["offsets"]) == 6 and all(o["committed"] == 1 and o["lag"] == o["log_end"] - 1
                                             for o in g["offsets"]), "offsets %r" % g["offsets"])
        check(sum(o["log_end"] for o in g["offsets"]) == 60, "log ends %r" % g["offsets"])
        adm.run("groups", "reset-offsets", "adm-cg", "--topic", "adm-r", "--to-latest")
        g = adm.json("groups", "describe", "adm-cg")
        check(all(o["lag"] == 0 for o in g["offsets"]), "after --to-latest %r" % g["offsets"])

        for nid in (1, 2, 3):
            cfg = {x["name"]: x for x in adm.json("configs", "describe", "--broker", str(nid))}
            check(cfg["node.id"]["value"] == str(nid), "broker %d's configs say node.id=%r" %
                  (nid, cfg.get("node.id")))

        adm.run("topics", "add-partitions", "adm-r", "--partitions", "8")
        wait_until(lambda: len(describe_rows(adm, "adm-r")) == 8, 30, "adm-r with 8 partitions", interval=0.2)
        adm.run("topics", "delete", "adm-r")
        wait_until(lambda: "adm-r" not in {t["topic"] for t in adm.json("topics", "list")}, 30, "adm-r deleted",
                   interval=0.2)

        # consume follows its partitions when a leader dies under it.
        adm.run("topics", "create", "adm-f", "--partitions", "6", "--replication-factor", "3")
        wait_until(lambda: len([r for r in describe_rows(adm, "adm-f") if len(r["isr"]) == 3]) == 6, 30,
                   "adm-f fully in sync", interval=0.2)
        first = ["f%02d" % i for i in range(60)]
        adm.run("produce", "adm-f", stdin="\n".join(first) + "\n")
        cons = subprocess.Popen([ctx.binary, "admin", "--bootstrap-server", other.bootstrap, "consume", "adm-f",
                                 "--from-beginning", "--max-messages", "90"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        seen = [cons.stdout.readline().decode().rstrip("\n") for _ in range(60)]  # bounded by the test's alarm
        check(sorted(seen) == first, "consume before the kill read %r" % seen[:10])
        victim = [b for b in brokers if b is not other][0]
        vid = int(victim.overrides["node.id"])
        victim.kill()
        wait_until(lambda: all(r["leader"] != vid and vid not in r["isr"] and r["leader"] >= 0
                               for r in describe_rows(adm, "adm-f")), 40,
                   "adm-f's leaders and ISRs without broker %d" % vid, interval=0.3)
        second = ["s%02d" % i for i in range(30)]
        adm.run("produce", "adm-f", stdin="\n".join(second) + "\n")
        out, err = cons.communicate(timeout=60)
        print("[admin] consume after the kill: exit %d, stderr %r" % (cons.returncode, err[-500:]), flush=True)
        check(cons.returncode == 0, "consume across the kill exited %d: %r" % (cons.returncode, err[-500:]))
        check(sorted(out.decode().splitlines()) == second, "consume after the kill read %r" % out[:300])

        for b in brokers:
            if b is victim:
                continue
            check(b.alive(), "broker %s died" % b.name)
            b.stop()
    finally:
        for b in ctx.brokers:
            if b.proc is not None and b.proc.poll() is None:
                b.kill()
        zk.stop()


SCENARIOS = {"single": single, "cluster": cluster}


def main(ctx):
    check(ctx.args and ctx.args[0] in SCENARIOS, "scenario: one of %s" % sorted(SCENARIOS))
    SCENARIOS[ctx.args[0]](ctx)


if __name__ == "__main__":
    harness.run_test(main, total_timeout=150)
