"""tests/integration/test_groups_burrow.py: Burrow (Debian's 1.2.1) reads the group's lag.

Usage: test_groups_burrow.py --broker BIN --work DIR

Burrow 1.2.1 will not start without a ZooKeeper (its zookeeper coordinator
panics on "No Zookeeper servers specified"), so the test starts Debian's
ZooKeeper standalone on a free 127.0.0.1 port (tests/integration/zookeeper.py),
killed at the end.

A 3-partition topic gets 1,000 messages per partition; a consumer-group
member (confluent-kafka) commits 600, 300 and 1,000. Burrow (kafka cluster
and kafka consumer modules against the broker; it reads the commits from
__consumer_offsets itself) must report through its HTTP API
(/v3/kafka/ck/consumer/GROUP and .../lag) those committed offsets and lags
400, 700 and 0 (total 1,100). Then 500 more messages go to partition 2 and
the group commits 1,000 on partition 1: Burrow must report lags 400, 0, 500.
"""

import json
import os
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import zookeeper  # noqa: E402
from harness import check, wait_until  # noqa: E402

BURROW = "/usr/bin/Burrow"
TOPIC, GROUP, PARTS = "burrow-topic", "ck-it-burrow-group", 3


class Proc:
    """A helper process with its output in a file, killed at the end."""

    def __init__(self, name, cmd, workdir, cwd=None):
        self.name = name
        self.log = os.path.join(workdir, name + ".log")
        out = open(self.log, "wb")
        print("[test] start %s: %s" % (name, " ".join(cmd)), flush=True)
        self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     cwd=cwd or workdir)
        out.close()

    def check_alive(self):
        check(self.proc.poll() is None, "%s exited with status %s" % (self.name, self.proc.poll()))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)

    def tail(self, n=40):
        with open(self.log, "rb") as f:
            lines = f.read().decode("utf-8", "replace").splitlines()
        print("[test] ---- %s (last %d lines) ----" % (self.log, min(n, len(lines))))
        for line in lines[-n:]:
            print("  | " + line[:400])


def start_burrow(ctx, b, zk_port):
    check(os.access(BURROW, os.X_OK), "Burrow not installed (apt-get install burrow)")
    http = harness.free_port()
    conf = os.path.join(ctx.work, "burrow")
    os.makedirs(conf)
    with open(os.path.join(conf, "burrow.toml"), "w") as f:
        f.write("""[general]
pidfile="%(dir)s/burrow.pid"
[logging]
level="info"
[zookeeper]
servers=["127.0.0.1:%(zk)d"]
timeout=6
root-path="/burrow-ck"
[client-profile.ck]
client-id="burrow-ck"
kafka-version="2.0.0"
[cluster.ck]
class-name="kafka"
servers=["%(bootstrap)s"]
client-profile="ck"
topic-refresh=1
offset-refresh=1
[consumer.ck]
class-name="kafka"
cluster="ck"
servers=["%(bootstrap)s"]
client-profile="ck"
group-blacklist=""
group-whitelist=""
[httpserver.default]
address="127.0.0.1:%(http)d"
[storage.default]
class-name="inmemory"
workers=2
intervals=10
expire-group=604800
min-distance=1
""" % {"dir": conf, "zk": zk_port, "bootstrap": b.bootstrap, "http": http})
    burrow = Proc("burrow", [BURROW, "--config-dir", conf], ctx.work, cwd=conf)
    ctx.procs.append(burrow)
    return burrow, http


def get(http, path):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (http, path), timeout=5) as r:
        return json.loads(r.read().decode())


def burrow_view(http):
    """{partition: committed offset} from /consumer/GROUP, {partition: current_lag} and totallag from /lag."""
    d = get(http, "/v3/kafka/ck/consumer/%s" % GROUP)
    check(not d.get("error"), "Burrow consumer detail: %s" % d.get("message"))
    offs = {}
    for p, part in enumerate(d["topics"].get(TOPIC, [])):
        last = [o for o in part["offsets"] if o]
        if last:
            latest = max(last, key=lambda o: o["timestamp"])
            offs[p] = latest["offset"]  # its "lag" is as of the commit; current_lag is now
    s = get(http, "/v3/kafka/ck/consumer/%s/lag" % GROUP)
    check(not s.get("error"), "Burrow lag: %s" % s.get("message"))
    lag = {x["partition"]: x["current_lag"] for x in s["status"]["partitions"] if x["topic"] == TOPIC}
    return offs, lag, s["status"]["totallag"]


def commit(b, offsets):
    """A group member (subscribe, joined) commits the given offsets synchronously."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": GROUP, "enable.auto.commit": False,
                  "broker.address.family": "v4", "auto.offset.reset": "earliest"})
    try:
        c.subscribe([TOPIC])
        wait_until(lambda: c.poll(0.2) is not None and c.assignment(), 30, "the member to be assigned")
        res = c.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in offsets.items()], asynchronous=False)
        check(all(tp.error is None for tp in res), "commit: %s" % res)
    finally:
        c.close()


def produce(b, counts):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "broker.address.family": "v4"})
    for part, n in counts.items():
        for i in range(n):
            p.produce(TOPIC, key=b"k%d" % i, value=b"v%d" % i, partition=part)
            if i % 1000 == 999:
                p.poll(0)
    check(p.flush(30) == 0, "produce: not all delivered")


def expect(http, committed, ends, what):
    want = {p: committed[p] for p in range(PARTS)}
    want_lag = {p: ends[p] - committed[p] for p in range(PARTS)}
    last = [None]

    def ok():
        v = burrow_view(http)
        last[0] = v
        return v[0] == want and v[1] == want_lag and v[2] == sum(want_lag.values())
    try:
        wait_until(ok, 60, "Burrow to report %s: offsets %s, lags %s, total %d" %
                   (what, want, want_lag, sum(want_lag.values())),
                   interval=0.5)
    except harness.TestFailure:
        print("[test] Burrow's last answer: %s" % (last[0],), flush=True)
        raise
    print("[test] Burrow %s: offsets %s, current lags %s, total %d" %
          (what, last[0][0], last[0][1], last[0][2]), flush=True)


def main(ctx):
    ctx.procs = []
    zk = None
    try:
        zk = zookeeper.ZooKeeper(ctx.work, tick_ms=500).start()
        zk_port = zk.port
        b = ctx.broker({"group.initial.rebalance.delay.ms": "0"})
        b.create_topic(TOPIC, PARTS)
        produce(b, {0: 1000, 1: 1000, 2: 1000})
        committed = {0: 600, 1: 300, 2: 1000}
        commit(b, committed)
        burrow, http = start_burrow(ctx, b, zk_port)
        wait_until(lambda: burrow.check_alive() or GROUP in get(http, "/v3/kafka/ck/consumer")["consumers"],
                   60, "Burrow to list the group", interval=0.5)
        expect(http, committed, {0: 1000, 1: 1000, 2: 1000}, "after the first commits")
        produce(b, {2: 500})
        committed[1] = 1000
        commit(b, {1: 1000})
        expect(http, committed, {0: 1000, 1: 1000, 2: 1500}, "after more messages and a commit")
        burrow.check_alive()
    except BaseException:
        for p in ctx.procs:
            p.tail()
        raise
    finally:
        for p in ctx.procs:
            p.stop()
        if zk is not None:
            zk.stop()


if __name__ == "__main__":
    harness.run_test(main, total_timeout=150)
