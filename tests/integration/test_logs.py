"""tests/integration/test_logs.py: the operator log of a real broker (issue #18, point 3).

Usage: test_logs.py --broker BIN --work DIR

One broker (text format, INFO):
- the start-up summary: version and config sources, the log dirs and
  whether they started clean, the listeners it serves;
- a produce to an unknown topic auto-creates it: "auto-creating topic" and
  "topic ... created" lines;
- records over message.max.bytes are refused with MESSAGE_TOO_LARGE: a WARN
  "produce rejected" line with the error name and the client id, at most 5
  such lines per 10 s for one client, topic and error, and a later line that
  says how many were suppressed;
- a consumer group join: "rebalance done: generation N, 1 member(s),
  protocol consumer/...";
- AlterConfigs: "configs set to {...}" with the client id;
- kill -9 and restart: one "recovered" line per log with the bytes
  truncated, and "logs opened with recovery";
- DeleteTopics: "topic ... deleted".
Then: log.level=WARN drops every INFO line (and KAFKA_LOG4J_ROOT_LOGLEVEL
does the same); ciuic.log.format=json makes every line a JSON object with
ts, level, logger and msg (a rejected produce carries client_id as a
field); log.level=LOUD stops start-up naming the key and the value; and a
metrics port already taken stops start-up with a line naming
ciuic.metrics.listener and the address, not civetweb's "null context".
In cluster mode (a standalone ZooKeeper, when installed) with JSON: topic
creation and deletion through ZooKeeper are logged, and the ZooKeeper C
client's own lines during an outage come through the same log as JSON.
"""

import json
import os
import re
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, wait_until  # noqa: E402

CLIENT = "logs-test-client"
TIMEOUT = 15


def lines(b):
    return b.log_text().splitlines()


def has(b, pattern):
    rx = re.compile(pattern)
    return any(rx.search(line) for line in lines(b))


def wait_line(b, pattern, what, timeout=TIMEOUT):
    wait_until(lambda: has(b, pattern), timeout, "%s (a log line matching %r)" % (what, pattern))


def producer(b, **extra):
    from confluent_kafka import Producer
    conf = {"bootstrap.servers": b.bootstrap, "client.id": CLIENT, "acks": "all", "retries": 0,
            "message.send.max.retries": 0, "linger.ms": 0}
    conf.update(extra)
    return Producer(conf)


def produce_one(p, topic, value):
    """One record in its own request; returns the delivery error (None if acknowledged)."""
    out = []
    p.produce(topic, value=value, on_delivery=lambda e, m: out.append(e))
    p.flush(TIMEOUT)
    check(len(out) == 1, "no delivery report for a record to %s" % topic)
    return out[0]


def rejected_lines(b):
    return [line for line in lines(b) if "produce rejected: big-0: MESSAGE_TOO_LARGE" in line]


def scenario_main(ctx):
    b = ctx.broker({"message.max.bytes": "2000", "auto.create.topics.enable": "true"}, name="main")
    # Start-up summary.
    wait_line(b, r"\[ciuickafka\] INFO ciuickafka \S+ \(Kafka protocol 3\.9\) starting: config from "
                 r".*server\.properties \(\d+ keys\), --override \(2 keys\)", "the version and config sources")
    wait_line(b, r"INFO log dirs %s: no logs yet" % re.escape(b.data_dir), "the log dirs, a clean start")
    wait_line(b, r"INFO started: node 0, cluster \S+, listening on port\(s\) %d, .*listeners=PLAINTEXT://127\.0\.0\.1:%d"
              % (b.port, b.port), "the listeners")
    check(has(b, r"ciuic\.metrics\.listener=127\.0\.0\.1:%d" % b.metrics_port), "the summary lacks the metrics address")

    # Auto-creation by a produce.
    p = producer(b)
    err = None
    for _ in range(20):  # the first answers may be LEADER_NOT_AVAILABLE while it is created
        err = produce_one(p, "auto-logs", b"hello")
        if err is None:
            break
    check(err is None, "produce to auto-logs: %s" % err)
    wait_line(b, r"INFO auto-creating topic auto-logs \(auto\.create\.topics\.enable\)", "auto-creation")
    wait_line(b, r"INFO topic auto-logs created: 1 partition\(s\), replication factor 1", "the creation")

    # Rejected produces, rate-limited per client, topic and error.
    p.list_topics("big", timeout=TIMEOUT)  # auto-creates big
    wait_line(b, r"INFO topic big created", "big's creation")
    wait_until(lambda: produce_one(p, "big", b"s") is None, TIMEOUT, "a small record in big")
    big = b"x" * 10000
    for _ in range(12):
        e = produce_one(p, "big", big)
        check(e is not None and e.code() == 10, "a 10 kB record: %s, want MESSAGE_TOO_LARGE (10)" % e)
    wait_until(lambda: rejected_lines(b), TIMEOUT, "a produce rejected line")
    first = rejected_lines(b)
    check(len(first) <= 5, "%d produce rejected lines for 12 rejections within seconds, want at most 5:\n%s"
          % (len(first), "\n".join(first)))
    check(any("WARN" in line and "client_id=%s" % CLIENT in line for line in first),
          "the rejected line lacks WARN or client_id=%s: %r" % (CLIENT, first[0]))
    # Once the 10 s window passed, the next line reports the dropped ones.

    def suppressed_reported():
        produce_one(p, "big", big)
        return any("suppressed" in line and "similar" in line for line in rejected_lines(b))
    wait_until(suppressed_reported, 40, "a rejected line saying how many were suppressed", interval=0.5)

    # A group rebalance.
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "logs-group", "client.id": CLIENT,
                  "auto.offset.reset": "earliest", "session.timeout.ms": 10000})
    c.subscribe(["auto-logs"])
    wait_until(lambda: c.poll(0.2) is not None and c.assignment(), 30, "the consumer's assignment")
    wait_line(b, r"INFO group logs-group: rebalance done: generation \d+, 1 member\(s\), protocol consumer/\w+",
              "the rebalance line")
    check(has(b, r"INFO group logs-group: preparing to rebalance"), "no preparing-to-rebalance line")
    c.close()

    # A config change.
    from confluent_kafka.admin import AdminClient, ConfigResource
    admin = AdminClient({"bootstrap.servers": b.bootstrap, "client.id": CLIENT})
    res = ConfigResource(ConfigResource.Type.TOPIC, "auto-logs", set_config={"retention.ms": "7200000"})
    for f in admin.alter_configs([res]).values():
        f.result(timeout=TIMEOUT)
    wait_line(b, r"INFO AlterConfigs: topic auto-logs configs set to \{retention\.ms=7200000\} client_id=%s" % CLIENT,
              "the config change")

    # Recovery after kill -9: a line per recovered log.
    b.kill()
    b.start()
    wait_line(b, r"INFO log %s/auto-logs-0 recovered: \d+ segment\(s\) scanned, \d+ bytes truncated"
              % re.escape(b.data_dir), "the recovered log line")
    wait_line(b, r"logs opened with recovery", "the recovery summary")

    # Deletion.
    admin = AdminClient({"bootstrap.servers": b.bootstrap, "client.id": CLIENT})
    for f in admin.delete_topics(["auto-logs"], operation_timeout=10).values():
        f.result(timeout=TIMEOUT)
    wait_line(b, r"INFO topic auto-logs deleted", "the deletion")
    b.stop()
    check(has(b, r"INFO stopped$"), "no stopped line")


def produce_rejected(b, how):
    """A small record into "big", then a 10 kB one that message.max.bytes=2000
    rejects, and the broker's WARN line saying so."""
    p = producer(b)
    p.list_topics("big", timeout=TIMEOUT)
    wait_until(lambda: produce_one(p, "big", b"s") is None, TIMEOUT, "a small record in big")
    check(produce_one(p, "big", b"x" * 10000) is not None, "a 10 kB record was accepted")
    wait_until(lambda: rejected_lines(b), TIMEOUT, "a produce rejected line " + how)


def scenario_levels(ctx):
    # log.level=WARN: no INFO line at all, WARN lines still there.
    w = ctx.broker({"log.level": "WARN", "message.max.bytes": "2000"}, name="warn")
    produce_rejected(w, "at WARN")
    w.stop()
    info = [line for line in lines(w) if " INFO " in line]
    check(not info, "log.level=WARN still wrote INFO lines: %r" % info[:3])

    # The images' variable does the same.
    os.environ["KAFKA_LOG4J_ROOT_LOGLEVEL"] = "warn"
    try:
        e = ctx.broker(name="env-warn")
    finally:
        del os.environ["KAFKA_LOG4J_ROOT_LOGLEVEL"]
    e.stop()
    info = [line for line in lines(e) if " INFO " in line]
    check(not info, "KAFKA_LOG4J_ROOT_LOGLEVEL=warn still wrote INFO lines: %r" % info[:3])


def scenario_json(ctx):
    j = ctx.broker({"ciuic.log.format": "json", "message.max.bytes": "2000"}, name="json")
    produce_rejected(j, "in JSON")
    j.stop()
    objs = []
    for line in lines(j):
        try:
            objs.append(json.loads(line))
        except ValueError:
            raise harness.TestFailure("not a JSON line: %r" % line)
    check(objs, "no lines at all")
    for o in objs:
        check(isinstance(o, dict) and all(k in o for k in ("ts", "level", "logger", "msg")),
              "a JSON line lacks ts/level/logger/msg: %r" % o)
        check(re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", o["ts"]), "ts %r" % o["ts"])
    check(any(o["msg"].startswith("started: node 0") and o.get("listeners") for o in objs),
          "no started line with a listeners field")
    rej = [o for o in objs if o["msg"].startswith("produce rejected")]
    check(rej and rej[0]["level"] == "WARN" and rej[0].get("client_id") == CLIENT
          and rej[0].get("error") == "MESSAGE_TOO_LARGE" and rej[0].get("partition") == 0,
          "the rejected produce in JSON: %r" % rej[:1])


def json_lines(b):
    objs = []
    for line in lines(b):
        try:
            objs.append(json.loads(line))
        except ValueError:
            raise harness.TestFailure("not a JSON line: %r" % line)
    return objs


def scenario_cluster_json(ctx):
    """Cluster mode, JSON: topic creation and deletion through ZooKeeper, and
    the ZooKeeper C client's own lines during an outage stay JSON."""
    import zookeeper
    if not zookeeper.installed():
        print("[test] ZooKeeper not installed: cluster scenario skipped", flush=True)
        return
    zk = zookeeper.ZooKeeper(ctx.work).start()
    try:
        b = ctx.broker({"node.id": "1", "zookeeper.connect": zk.connect + "/ck-logs",
                        "zookeeper.session.timeout.ms": "3000", "ciuic.log.format": "json"}, name="cluster")
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": b.bootstrap, "client.id": CLIENT})
        # librdkafka sends CreateTopics to the controller it saw in Metadata.
        wait_until(lambda: admin.list_topics(timeout=5).controller_id == 1, 30, "the controller in Metadata")
        for f in admin.create_topics([NewTopic("zk-logs", 2, 1)], request_timeout=30).values():
            f.result(timeout=35)
        wait_until(lambda: any(o["msg"].startswith("topic zk-logs created in ZooKeeper: 2 partition(s)")
                               for o in json_lines(b)), TIMEOUT, "the creation in ZooKeeper")
        for f in admin.delete_topics(["zk-logs"], request_timeout=30).values():
            f.result(timeout=35)
        wait_until(lambda: any(o["msg"].startswith("topic zk-logs marked for deletion") for o in json_lines(b)),
                   TIMEOUT, "the deletion request")
        # An outage: the C client complains, through our log.
        zk.kill()
        wait_until(lambda: any(o["logger"] == "zookeeper" for o in json_lines(b)), 20,
                   "a ZooKeeper client line")
        zk.start()
        b.stop()
        check(all(o["level"] in ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL") for o in json_lines(b)),
              "a JSON line with an unknown level")
    finally:
        zk.stop()


def expect_exit_1(ctx, name, overrides, want, unwanted=()):
    b = harness.Broker(ctx.binary, ctx.work, overrides, name=name)
    r = subprocess.run(b.command(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60, cwd=b.dir)
    out = r.stdout.decode("utf-8", "replace")
    print("[test] %s: exit %d: %s" % (name, r.returncode, out.strip()[-400:]), flush=True)
    check(r.returncode == 1, "%s: exit status %d, want 1" % (name, r.returncode))
    for w in want:
        check(w in out, "%s: output lacks %r" % (name, w))
    for u in unwanted:
        check(u not in out, "%s: output has %r" % (name, u))


def scenario_failures(ctx):
    expect_exit_1(ctx, "bad-level", {"log.level": "LOUD"}, ["log.level", "LOUD"])
    expect_exit_1(ctx, "bad-format", {"ciuic.log.format": "xml"}, ["ciuic.log.format", "xml"])
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen(4)
        taken = "127.0.0.1:%d" % s.getsockname()[1]
        expect_exit_1(ctx, "metrics-port-taken", {"ciuic.metrics.listener": taken},
                      ["ERROR start-up failed: ciuic.metrics.listener=" + taken, "in use"], ["null context"])


def main(ctx):
    t0 = time.monotonic()
    for s in (scenario_failures, scenario_levels, scenario_json, scenario_cluster_json, scenario_main):
        print("[test] ---- %s (at %.1fs)" % (s.__name__, time.monotonic() - t0), flush=True)
        s(ctx)


if __name__ == "__main__":
    harness.run_test(main, total_timeout=150)
