"""tests/integration/test_metrics.py: the metrics catalogue, scraped from a real broker.

A broker serves produce (raw Produce v3, acks=-1), fetch (raw Fetch v4, one
of them a long poll on an empty topic) and a consumer group
(confluent-kafka, subscribed to a 4-partition topic of N = 2,500 records of
which it commits 1,600: all of partitions 0 and 1, nothing on 2 and 3).
Then GET http://127.0.0.1:<ciuic.metrics.listener port>/metrics must show:

  * every family of metrics/README.md's catalogue (its first table), by its
    # TYPE line;
  * plausible values: log sizes > 0 after writes and end offsets equal to
    what was produced (a topic never written has size 0 and end offset 0:
    series exist from the moment a log is opened); per-topic bytes in /
    out, produce / fetch request counts; no per-topic series for a topic
    that does not exist; the request time split (the five phases add up to
    the total; a long-poll Fetch's remote time includes its wait);
    connections by listener; flush, group-commit and io_uring figures;
    numgroups / numoffsets; leader and under-replicated counts;
  * the group's lag over all four partitions = N - 1,600, the two without a
    commit labelled committed="false" and counted from the log start; the
    same after the consumer leaves (the group is Empty, its committed topic
    still counts);
  * every metric a query of the Grafana dashboard (deploy/grafana/) names is
    exported or catalogued (what deploy/compose-test.sh checks against
    Prometheus);
  * after DeleteTopics the topic's series are gone; after a restart, with no
    write since, the log series are back with the same values.
"""

import json
import os
import re
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, wait_until  # noqa: E402
import kafka_wire as kw  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(ROOT, "metrics", "README.md")
DASHBOARD = os.path.join(ROOT, "deploy", "grafana", "ciuickafka-broker.json")

LAGGED = "lagged"
COUNTS = {0: 1000, 1: 600, 2: 500, 3: 400}  # records per partition of LAGGED
N = sum(COUNTS.values())
COMMITTED = {0: 1000, 1: 600}  # what the group read and committed: 1,600
GROUP = "metrics-group"

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})?\s+(\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def scrape(b):
    url = "http://127.0.0.1:%d/metrics" % b.metrics_port
    with urllib.request.urlopen(url, timeout=5) as r:
        check(r.status == 200, "GET %s: HTTP %d" % (url, r.status))
        return r.read().decode("utf-8", "replace")


class Scrape:
    """One exposition: families by # TYPE, samples as (name, labels dict, value)."""

    def __init__(self, text):
        self.text = text
        self.types = dict(re.findall(r'^# TYPE (\S+) (\S+)$', text, re.M))
        self.samples = []
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            m = SAMPLE.match(line)
            if m:
                labels = dict(LABEL.findall(m.group(2) or ""))
                self.samples.append((m.group(1), labels, float(m.group(3))))

    def values(self, name, **labels):
        return [v for n, ls, v in self.samples
                if n == name and all(ls.get(k) == str(want) for k, want in labels.items())]

    def one(self, name, **labels):
        vs = self.values(name, **labels)
        check(len(vs) == 1, "%s%r: %d samples, want 1 (%r)" % (name, labels, len(vs), vs))
        return vs[0]

    def aggregate(self, name):
        """The one sample of name without labels (the all-topics series)."""
        vs = [v for n, ls, v in self.samples if n == name and not ls]
        check(len(vs) == 1, "%s without labels: %d samples" % (name, len(vs)))
        return vs[0]

    def has(self, name, **labels):
        return bool(self.values(name, **labels))


def catalogue():
    """The families of metrics/README.md's first catalogue table (not the cluster-only one)."""
    text = open(README).read()
    single = text.split("### Cluster mode only")[0]
    names = re.findall(r"^\| `([a-z_]+)` \|", single, re.M)
    check(len(names) >= 50, "metrics/README.md lists %d families, want 50+" % len(names))
    return names


def produce_lagged(b):
    with b.conn() as c:
        for p, n in COUNTS.items():
            sent = 0
            while sent < n:
                k = min(200, n - sent)
                recs = [(b"k%d" % (sent + i), b"v" * 50) for i in range(k)]
                res = c.produce([(LAGGED, [(p, kw.record_batch(recs))])], acks=-1)
                check(res[(LAGGED, p)][0] == 0, "produce %s-%d: %r" % (LAGGED, p, res))
                sent += k


def run_group(b):
    """A confluent-kafka consumer subscribed to LAGGED commits COMMITTED; returned open."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": GROUP, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "session.timeout.ms": 10000})
    c.subscribe([LAGGED])
    wait_until(lambda: (c.poll(0.1), len(c.assignment()) == 4)[1], 30,
               "the consumer owns all 4 partitions of " + LAGGED)
    got = c.commit(offsets=[TopicPartition(LAGGED, p, o) for p, o in COMMITTED.items()], asynchronous=False)
    for tp in got:
        check(tp.error is None, "commit %s-%d: %s" % (tp.topic, tp.partition, tp.error))
    return c


def check_lag(s, members):
    for p, n in COUNTS.items():
        if p in COMMITTED:
            check(s.one("kafka_consumergroup_current_offset", consumergroup=GROUP, topic=LAGGED,
                        partition=p) == COMMITTED[p], "current offset of partition %d" % p)
            want, committed = n - COMMITTED[p], "true"
        else:
            check(not s.has("kafka_consumergroup_current_offset", consumergroup=GROUP, topic=LAGGED, partition=p),
                  "partition %d has no commit, yet a current_offset series" % p)
            want, committed = n, "false"  # unread from the log start (0)
        got = s.one("kafka_consumergroup_lag", consumergroup=GROUP, topic=LAGGED, partition=p, committed=committed)
        check(got == want, "lag of %s partition %d (committed=%s): %r, want %d" % (GROUP, p, committed, got, want))
    total = s.one("kafka_consumergroup_lag_sum", consumergroup=GROUP, topic=LAGGED)
    check(total == N - sum(COMMITTED.values()), "lag_sum %r, want %d" % (total, N - sum(COMMITTED.values())))
    check(s.one("kafka_consumergroup_members", consumergroup=GROUP) == members, "members of " + GROUP)


def check_log_series(s):
    for p, n in COUNTS.items():
        check(s.one("kafka_log_log_logendoffset", topic=LAGGED, partition=p) == n, "LEO of %s-%d" % (LAGGED, p))
        check(s.one("kafka_log_log_logstartoffset", topic=LAGGED, partition=p) == 0, "log start of %d" % p)
        check(s.one("kafka_log_log_size", topic=LAGGED, partition=p) > n * 50, "size of %s-%d" % (LAGGED, p))
        check(s.one("kafka_log_log_numlogsegments", topic=LAGGED, partition=p) >= 1, "segments of %d" % p)
    # Never written: the series exist anyway, with the truth.
    check(s.one("kafka_log_log_size", topic="idle", partition=0) == 0, "size of idle-0")
    check(s.one("kafka_log_log_logendoffset", topic="idle", partition=0) == 0, "LEO of idle-0")


def check_values(s):
    # Topics.
    check(s.one("kafka_log_log_logendoffset", topic="metered", partition=0) == 100, "LEO of metered-0")
    check(s.one("kafka_log_log_size", topic="metered", partition=0) > 100 * 200, "size of metered-0")
    check_log_series(s)
    check(s.one("kafka_server_brokertopicmetrics_bytesin_total", topic="metered") > 100 * 200, "bytes in metered")
    check(not s.values("kafka_server_brokertopicmetrics_bytesin_total", topic="idle")
          or s.one("kafka_server_brokertopicmetrics_bytesin_total", topic="idle") == 0, "idle has bytes in")
    check(s.one("kafka_server_brokertopicmetrics_bytesout_total", topic="metered") > 100 * 200, "bytes out metered")
    check(s.one("kafka_server_brokertopicmetrics_messagesin_total", topic=LAGGED) == N, "messages in lagged")
    parts = sum((n + 199) // 200 for n in COUNTS.values())
    check(s.one("kafka_server_brokertopicmetrics_totalproducerequests_total", topic=LAGGED) == parts,
          "totalproducerequests of %s, want %d" % (LAGGED, parts))
    check(s.one("kafka_server_brokertopicmetrics_totalfetchrequests_total", topic="metered") >= 1,
          "totalfetchrequests of metered")
    for name in ("bytesin_total", "totalfetchrequests_total", "failedfetchrequests_total"):
        check(not s.has("kafka_server_brokertopicmetrics_" + name, topic="no-such-topic"),
              "a series for a topic that does not exist: " + name)
    check(s.aggregate("kafka_server_brokertopicmetrics_failedfetchrequests_total") >= 1,
          "the unknown-topic fetch counts in the all-topics failed fetches")
    check(any(ls.get("request") == "Fetch" and ls.get("error") == "UNKNOWN_TOPIC_OR_PARTITION"
              for n, ls, v in s.samples if n == "kafka_network_requestmetrics_errors_total"),
          "errors_total for the unknown-topic fetch")

    # Request time split: for Produce (nothing else produces meanwhile) the
    # phases' counts equal the total's and their sums add up to it.
    phases = ("requestqueuetimems", "localtimems", "remotetimems", "responsequeuetimems", "responsesendtimems")
    total_n = s.one("kafka_network_requestmetrics_totaltimems_count", request="Produce")
    total_sum = s.one("kafka_network_requestmetrics_totaltimems_sum", request="Produce")
    check(total_n >= parts + 1, "Produce requests timed: %r" % total_n)
    psum = 0.0
    for ph in phases:
        check(s.one("kafka_network_requestmetrics_%s_count" % ph, request="Produce") == total_n, ph + " count")
        psum += s.one("kafka_network_requestmetrics_%s_sum" % ph, request="Produce")
    check(abs(psum - total_sum) <= 1e-6 * max(1.0, total_sum) + 1e-3, "phases %r != total %r" % (psum, total_sum))
    # The long poll (300 ms on an empty topic) is remote time, inside the total.
    check(s.one("kafka_network_requestmetrics_remotetimems_sum", request="Fetch") >= 250, "Fetch remote time")
    check(s.one("kafka_network_requestmetrics_totaltimems_sum", request="Fetch") >= 250, "Fetch total time")

    # Network.
    idle = s.one("kafka_network_socketserver_networkprocessoravgidlepercent")
    check(0.0 <= idle <= 1.0, "idle ratio %r" % idle)
    check(s.one("kafka_network_requestchannel_requestqueuesize") == 0, "request queue")
    check(s.one("kafka_server_socketservermetrics_connection_count", listener="PLAINTEXT") >= 1, "connections")
    check(s.one("kafka_server_socketservermetrics_connection_creation_total", listener="PLAINTEXT") >= 3,
          "connections created")
    check(sum(s.values("ciuic_network_thread_busy_seconds_total")) > 0, "network threads busy time")

    # Storage: acks=-1 with ciuic.acks.all.fsync (default true) went through group commit.
    check(s.one("kafka_log_logflushstats_logflushrateandtimems_count") >= 1, "flushes")
    rounds = s.one("ciuic_log_group_commit_batch_size_count")
    check(rounds >= 1 and s.one("ciuic_log_group_commit_batch_size_sum") >= rounds, "group commit batches")
    check(s.one("ciuic_log_group_commit_syncs_total") >= 1, "group commit syncs")
    if s.one("ciuic_io_uring_rings") > 0:
        check(s.one("ciuic_io_uring_submissions_total") > 0, "io_uring submissions")
        check(s.one("ciuic_io_uring_completions_total") > 0, "io_uring completions")
        check(s.one("ciuic_io_uring_in_flight") >= 0, "io_uring depth")

    # Replication family (single node: leader of everything, nothing under-replicated).
    hosted = s.one("kafka_server_replicamanager_partitioncount")
    check(s.one("kafka_server_replicamanager_leadercount") == hosted, "leader count %r vs %r" % (
        s.one("kafka_server_replicamanager_leadercount"), hosted))
    check(s.one("kafka_server_replicamanager_underreplicatedpartitions") == 0, "under-replicated")
    check(s.one("kafka_cluster_partition_replicascount", topic=LAGGED, partition=0) == 1, "replicas")
    check(s.one("kafka_cluster_partition_underreplicated", topic=LAGGED, partition=0) == 0, "UR partition")

    # Waiting rooms and fetch sessions exist with sane values.
    for kind in ("Produce", "Fetch"):
        check(s.one("kafka_server_delayedoperationpurgatory_purgatorysize", delayedOperation=kind) >= 0, kind)
        check(s.one("kafka_server_delayedoperationpurgatory_numdelayedoperations", delayedOperation=kind) >= 0, kind)
    check(s.one("kafka_server_fetchsessioncache_numincrementalfetchsessions") >= 0, "fetch sessions")

    # Groups.
    check(s.one("kafka_coordinator_group_groupmetadatamanager_numgroups") >= 1, "numgroups")
    check(s.one("kafka_coordinator_group_groupmetadatamanager_numoffsets") >= len(COMMITTED), "numoffsets")
    check(s.one("kafka_coordinator_rebalances_total", consumergroup=GROUP) >= 1, "rebalances")
    check(s.one("process_start_time_seconds") > 1e9, "process start time")


def cluster_catalogue():
    """The families of metrics/README.md's cluster-only table."""
    text = open(README).read().split("### Cluster mode only")[1]
    return re.findall(r"^\| `([a-z_]+)` \|", text, re.M)


def check_dashboard(s):
    # A single-node broker is scraped here: the replication row's series are
    # the catalogue's cluster-only ones (the compose cluster test scrapes them).
    exported = set(s.types) | {"up"}
    for n in catalogue() + cluster_catalogue():
        exported |= {n + x for x in ("", "_bucket", "_sum", "_count")}
    for n, t in s.types.items():
        if t in ("histogram", "summary"):
            exported |= {n + "_bucket", n + "_sum", n + "_count"}
    bad = []
    for panel in json.load(open(DASHBOARD))["panels"]:
        for t in panel.get("targets", []):
            for name in re.findall(r"\b((?:kafka|process)_[a-z0-9_]+)", t["expr"]):
                if name not in exported:
                    bad.append("%s: %s" % (panel.get("title"), name))
    check(not bad, "dashboard queries name series the broker does not export: %s" % bad)


def main(ctx):
    b = ctx.broker()
    b.create_topic("metered", 1)
    b.create_topic("idle", 1)
    b.create_topic(LAGGED, 4)
    with b.conn() as c:
        recs = [(b"k%d" % i, b"v" * 200) for i in range(100)]
        res = c.produce([("metered", [(0, kw.record_batch(recs))])], acks=-1)
        check(res[("metered", 0)][0] == 0, "produce: %r" % res)
        got, hw = c.fetch_all("metered", 0)
        check(len(got) == 100 and hw == 100, "fetched %d of metered (hw %s)" % (len(got), hw))
        t0 = time.monotonic()
        r = c.fetch([("idle", [(0, 0, 1 << 20)])], max_wait_ms=300, min_bytes=1)
        check(r[("idle", 0)]["error"] == 0 and time.monotonic() - t0 >= 0.25, "long poll on idle: %r" % r)
        r = c.fetch([("no-such-topic", [(0, 0, 1 << 20)])], max_wait_ms=0)
        check(r[("no-such-topic", 0)]["error"] == 3, "fetch of an unknown topic: %r" % r)
    produce_lagged(b)

    consumer = run_group(b)
    names = catalogue()
    s = None
    try:
        def complete():
            nonlocal s
            s = Scrape(scrape(b))
            return all(n in s.types for n in names) and s.has("kafka_consumergroup_lag_sum", consumergroup=GROUP)
        try:
            wait_until(complete, 15, "every catalogued family in the scrape")
        finally:
            if s is not None:
                missing = [n for n in names if n not in s.types]
                print("[metrics] %d families exported, %d catalogued, missing: %s" % (
                    len(s.types), len(names), missing), flush=True)
        check_values(s)
        check_lag(s, members=1)
        check_dashboard(s)
    finally:
        consumer.close()

    # The group is Empty now; its committed topic still counts, every partition.
    wait_until(lambda: Scrape(scrape(b)).values("kafka_consumergroup_members", consumergroup=GROUP) == [0], 15,
               "the group empties")
    check_lag(Scrape(scrape(b)), members=0)

    # Deleting a topic removes its series.
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": b.bootstrap})  # kept alive until the answer
    for f in admin.delete_topics(["metered"], operation_timeout=10).values():
        f.result(15)
    wait_until(lambda: not Scrape(scrape(b)).has("kafka_log_log_size", topic="metered"), 15,
               "metered's log series gone")
    s = Scrape(scrape(b))
    check(not s.has("kafka_server_brokertopicmetrics_bytesin_total", topic="metered"), "bytes in of deleted topic")
    check(s.aggregate("kafka_server_brokertopicmetrics_bytesin_total") > 100 * 200, "aggregate keeps deleted bytes")

    # After a restart, with no write since, the log series are there and true.
    b.restart()
    check_log_series(Scrape(scrape(b)))


if __name__ == "__main__":
    harness.run_test(main, total_timeout=105)
