"""tests/chaos/run_chaos.py: a fault-injection run against real brokers, then the checker.

For --seconds N, on one topic with a few partitions:

  * K producer threads (confluent_kafka, one idempotent acks=all Producer
    each) send unique values "p<id>-<seq>" to partitions they pick with a
    seeded generator, and log every invoke and every delivery report (ok
    with the report's partition and offset; fail, definite or indefinite)
    to the history;
  * a consumer group of C threads logs every poll (partition, offset, value)
    and its assignment callbacks (assign / revoke / lost markers);
  * the nemesis, seeded, at random intervals picks a fault from --nemesis
    and a target from the cluster's broker list: `kill` (SIGKILL, a random
    downtime, start again), `pause` (SIGSTOP for a random time, SIGCONT),
    `restart` (SIGTERM, which must exit 0, and start again).
Then it heals (every broker resumed and running), stops the producers and
waits for their delivery reports (bounded by message.timeout.ms), closes the
consumers, reads every partition from its log start to its end offset with
an independent reader (tests/integration/kafka_wire.py, Fetch v4), and runs
tests/chaos/checker.py over the history.

Exit 0 when the run completed and the checker found nothing; 1 otherwise
(an anomaly, a broker that would not start or stop cleanly, a run that
acknowledged nothing, or the wall-clock bound). The run directory
(<work>/chaos_seed<S>/: history.jsonl, summary.json, the brokers' data and
logs) is removed on success unless --keep, kept on failure.

--brokers N > 1 runs a ZooKeeper-mode cluster: a standalone ZooKeeper
(tests/integration/zookeeper.py, never faulted), N brokers with node.id,
zookeeper.connect and a 3 s session timeout, the topic with replication
factor min(N, 3) and min.insync.replicas 2 (acks=all producers then keep
writing with one broker down), __consumer_offsets with the same replication
factor. The nemesis hits any broker (leaders and the controller included); a
pause longer than the session timeout expires the broker's session, so it
comes back as a new registration and truncates as a follower. After the heal
the run waits for every partition to have a leader, and the final read asks
each partition's leader.

/usr/bin/python3 (Debian's, with confluent_kafka). See README.md.
"""

import argparse
import collections
import json
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import kafka_wire  # noqa: E402
import zookeeper  # noqa: E402
import checker  # noqa: E402

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer  # noqa: E402

TOPIC = "chaos"

# Delivery-report errors that mean the record was certainly not written.
# Anything else (timeouts, transport errors, fatal idempotence errors) may
# or may not have been: an indefinite failure.
DEFINITE = {KafkaError._PURGE_QUEUE, KafkaError.MSG_SIZE_TOO_LARGE,
            KafkaError.INVALID_MSG, KafkaError.INVALID_RECORD, KafkaError.RECORD_LIST_TOO_LARGE,
            KafkaError.INVALID_REQUIRED_ACKS, KafkaError.TOPIC_AUTHORIZATION_FAILED,
            KafkaError._INVALID_ARG}


class History:
    """The history file: one JSON object a line, appended under a lock."""

    def __init__(self, path):
        self.path = path
        self.f = open(path, "w")
        self.lock = threading.Lock()
        self.t0 = time.monotonic()
        self.counts = collections.Counter()

    def log(self, **event):
        event["t"] = round(time.monotonic() - self.t0, 4)
        line = json.dumps(event, separators=(",", ":"))
        with self.lock:
            self.f.write(line + "\n")
            self.counts[event["type"]] += 1

    def close(self):
        with self.lock:
            self.f.close()


# ------------------------------------------------------------------ cluster

class Node:
    """One broker process the nemesis can hit; remembers whether it is paused."""

    def __init__(self, broker):
        self.broker = broker
        self.name = broker.name
        self.paused = False
        # Set by the nemesis around each of its operations on this node, so
        # the liveness watch never counts a fault it caused.
        self.busy = False
        self.ops = 0
        self.last_op_end = time.monotonic()

    def pid(self):
        return self.broker.proc.pid

    def pause(self):
        os.kill(self.pid(), signal.SIGSTOP)
        self.paused = True

    def resume(self):
        if self.paused and self.broker.alive():
            os.kill(self.pid(), signal.SIGCONT)
        self.paused = False

    def heal(self):
        """Resumed and running; returns a note if it had died on its own."""
        self.busy = True
        try:
            return self._heal()
        finally:
            self.last_op_end = time.monotonic()
            self.busy = False

    def _heal(self):
        self.resume()
        note = None
        if self.broker.proc is not None and not self.broker.alive():
            note = "%s had exited by itself (status %s)" % (self.name, self.broker.proc.returncode)
            self.broker.dump_log(40)
            # The run's summary is what a truncated CI log keeps: the log's
            # last lines go into the note too, the errors among them first.
            tail = self.broker.log_text().splitlines()[-200:]
            errors = [l for l in tail if " ERROR " in l or "Sanitizer" in l or "runtime error" in l][-6:]
            note += "; its log ends:\n" + "\n".join("    | " + l[:300] for l in errors + tail[-8:])
            self.broker.proc = None
        if self.broker.proc is None:
            self.broker.start()
        return note

    def teardown(self):
        self.resume()
        self.broker.kill()


SESSION_MS = 3000


class Cluster:
    """The brokers under test: one single-node broker, or N brokers of a
    ZooKeeper-mode cluster (the nemesis and the clients only use `nodes` and
    `bootstrap`)."""

    def __init__(self, binary, work, brokers, overrides):
        self.zk = None
        self.rf = min(brokers, 3)
        if brokers > 1:
            self.zk = zookeeper.ZooKeeper(work)
        self.nodes = []
        for i in range(brokers):
            o = dict(overrides)
            if self.zk is not None:
                o.update({"node.id": str(i + 1), "zookeeper.connect": "%s/chaos" % self.zk.connect,
                          "zookeeper.session.timeout.ms": str(SESSION_MS), "replica.lag.time.max.ms": "5000",
                          "offsets.topic.replication.factor": str(self.rf),
                          "default.replication.factor": str(self.rf)})
            self.nodes.append(Node(harness.Broker(binary, work, o, name="broker%d" % (i + 1 if self.zk else i),
                                                  start_timeout=60.0, stop_timeout=30.0)))

    @property
    def bootstrap(self):
        return ",".join(n.broker.bootstrap for n in self.nodes)

    def start(self):
        if self.zk is not None:
            self.zk.start()
        for n in self.nodes:
            n.broker.start()

    def create_topic(self, name, partitions):
        if self.zk is None:
            self.nodes[0].broker.create_topic(name, partitions)
            return
        from confluent_kafka.admin import AdminClient, NewTopic
        a = AdminClient({"bootstrap.servers": self.bootstrap, "broker.address.family": "v4",
                         "logger": CLIENT_LOG})
        harness.wait_until(lambda: len(a.list_topics(timeout=5).brokers) == len(self.nodes), 30,
                           "every broker in the metadata")
        # The broker that assigns the replicas learns of the last registration
        # through its own ZooKeeper watch, which may trail the metadata seen
        # above: INVALID_REPLICATION_FACTOR then, and again until it has.
        def created():
            fs = a.create_topics([NewTopic(name, partitions, self.rf, config={"min.insync.replicas": "2"})],
                                 request_timeout=30)
            try:
                fs[name].result(30)
            except KafkaException as e:
                err = e.args[0] if e.args else None
                if err is not None and err.code() == KafkaError.INVALID_REPLICATION_FACTOR:
                    return False
                raise
            return True
        harness.wait_until(created, 30, "topic %s created" % name, interval=0.2)
        self.wait_leaders(name, partitions)

    def leaders(self, name, partitions, full_isr=False):
        """{partition: leader node} from any live broker's Metadata (None when one has no leader)."""
        for n in self.nodes:
            if not n.broker.alive() or n.paused:
                continue
            try:
                with n.broker.conn(timeout=5) as c:
                    md = c.metadata([name])
            except (OSError, kafka_wire.ConnectionClosed, ValueError, kafka_wire.Truncated):
                continue
            t = [t for t in md["topics"] if t["name"] == name]
            if not t or t[0]["error"] != 0 or len(t[0]["partitions"]) != partitions:
                return None
            by_id = {int(b.name.replace("broker", "")): b for b in (x.broker for x in self.nodes)}
            out = {}
            for p in t[0]["partitions"]:
                if p["leader"] < 0 or p["leader"] not in by_id or not by_id[p["leader"]].alive():
                    return None
                if full_isr and len(p["isr"] or []) < len(p["replicas"] or []):
                    return None
                out[p["partition"]] = by_id[p["leader"]]
            return out
        return None

    def wait_leaders(self, name, partitions, full_isr=False):
        return harness.wait_until(lambda: self.leaders(name, partitions, full_isr), 60,
                                  "a leader%s for every partition of %s" % (" and a full ISR" if full_isr else "", name),
                                  interval=0.1)

    def heal(self):
        return [note for note in (n.heal() for n in self.nodes) if note]

    def teardown(self):
        for n in self.nodes:
            try:
                n.teardown()
            except Exception as e:  # noqa: BLE001 - best effort at the end
                print("[chaos] teardown of %s: %r" % (n.name, e), flush=True)
        if self.zk is not None:
            self.zk.stop()

    def final_read(self, topic, partitions):
        """{partition: (log_start, end, [(offset, value, producer session)])}, read from each partition's leader."""
        out = {}
        # A cluster: every replica back in the ISR first, so the leader's HW
        # has reached its log end (a new leader's HW may lag until the
        # followers have fetched from it).
        for p in range(partitions):
            # The controller may still move a leader (its preferred-replica
            # election after the heal): a read that meets another leader
            # starts again from the leaders of the moment.
            for attempt in range(5):
                leaders = {q: self.nodes[0].broker for q in range(partitions)} if self.zk is None else \
                    self.wait_leaders(topic, partitions, full_isr=True)
                try:
                    out[p] = self._read_partition(leaders[p], topic, p)
                    break
                except LeaderMoved as e:
                    if self.zk is None or attempt == 4:
                        raise AssertionError(str(e))
                    print("[chaos] final read: %s; reading again" % e, flush=True)
        return out

    @staticmethod
    def _read_partition(broker, topic, p):
        with broker.conn(timeout=10) as c:
            lo = c.list_offsets([(topic, [(p, -2)])])[(topic, p)]
            hi = c.list_offsets([(topic, [(p, -1)])])[(topic, p)]
            if NOT_LEADER in (lo[0], hi[0]):
                raise LeaderMoved("ListOffsets %s-%d on %s: NOT_LEADER_OR_FOLLOWER" % (topic, p, broker.name))
            harness.check(lo[0] == 0 and hi[0] == 0, "ListOffsets %s-%d: errors %d, %d" % (topic, p, lo[0], hi[0]))
            try:
                recs, hw = c.fetch_all(topic, p, start=lo[2], deadline_s=30.0, with_session=True)
            except AssertionError as e:
                if str(e).endswith(": error %d" % NOT_LEADER):
                    raise LeaderMoved("%s on %s" % (e, broker.name)) from e
                raise
            harness.check(hw == hi[2], "%s-%d: high watermark %d, ListOffsets latest %d" % (topic, p, hw, hi[2]))
            return (lo[2], hi[2], [(o, v.decode("utf-8", "replace") if v is not None else None, session)
                                   for o, _, v, session in recs])


NOT_LEADER = 6  # NOT_LEADER_OR_FOLLOWER


class LeaderMoved(Exception):
    """The final read met a broker that no longer leads the partition."""


# ------------------------------------------------------------------ nemesis

class Nemesis:
    """Seeded random faults against the cluster's nodes, one at a time."""

    def __init__(self, cluster, ops, rng, history, stop, interval=(1.0, 4.0),
                 pause_s=(0.5, 8.0), down_s=(0.0, 2.0)):
        self.cluster, self.ops, self.rng, self.history, self.stop = cluster, ops, rng, history, stop
        self.interval, self.pause_s, self.down_s = interval, pause_s, down_s
        self.events = collections.Counter()

    def run(self, deadline):
        while True:
            wait = self.rng.uniform(*self.interval)
            if self.stop.wait(min(wait, max(0.0, deadline - time.monotonic()))):
                return
            if time.monotonic() >= deadline:
                return
            op = self.rng.choice(self.ops)
            node = self.rng.choice(self.cluster.nodes)
            self.history.log(type="nemesis", op=op, node=node.name, phase="start")
            print("[chaos] %7.2fs nemesis %s %s" % (time.monotonic() - self.history.t0, op, node.name),
                  flush=True)
            node.busy = True
            node.ops += 1
            try:
                getattr(self, op)(node)
            finally:
                node.last_op_end = time.monotonic()
                node.busy = False
            self.history.log(type="nemesis", op=op, node=node.name, phase="end")
            self.events[op] += 1

    def kill(self, node):
        node.broker.kill()
        self.stop.wait(self.rng.uniform(*self.down_s))
        node.broker.start()

    def pause(self, node):
        node.pause()
        self.stop.wait(self.rng.uniform(*self.pause_s))
        node.resume()

    def restart(self, node):
        node.broker.stop()  # SIGTERM; must exit 0
        self.stop.wait(self.rng.uniform(*self.down_s))
        node.broker.start()


# ------------------------------------------------------------------ liveness

# A broker that is running, not paused and untouched by the nemesis answers
# ApiVersions (network threads never block): silent this long, it is hung.
UNRESPONSIVE_S = 12.0


class LivenessWatch(threading.Thread):
    """Probes every running broker with ApiVersions once a second. One that
    stays silent for UNRESPONSIVE_S while nothing touched it is a problem;
    its threads' stacks (gdb, where installed) go to the run directory, so
    a deadlock shows where it is."""

    def __init__(self, cluster, run_dir, history):
        super().__init__(name="liveness", daemon=True)
        self.cluster, self.run_dir, self.history = cluster, run_dir, history
        self.stop = threading.Event()
        self.problems = []
        self.last_ok = {}

    def probe(self, node):
        try:
            with kafka_wire.Conn(node.broker.port, timeout=2.0) as c:
                err, apis = c.api_versions()
                return err == 0 and bool(apis)
        except (OSError, kafka_wire.ConnectionClosed, ValueError, kafka_wire.Truncated):
            return False

    def run(self):
        reported = set()
        while not self.stop.wait(1.0):
            for node in self.cluster.nodes:
                proc = node.broker.proc
                if proc is None or proc.poll() is not None or node.paused or node.busy:
                    continue
                ops = node.ops
                ok = self.probe(node)
                if node.ops != ops or node.busy or node.paused:
                    continue  # the nemesis acted meanwhile: not this broker's doing
                now = time.monotonic()
                if ok:
                    self.last_ok[node.name] = now
                    continue
                since = max(self.last_ok.get(node.name, 0.0), node.last_op_end)
                key = (node.name, proc.pid)
                if now - since < UNRESPONSIVE_S or key in reported:
                    continue
                reported.add(key)
                where = self.dump_stacks(node, proc.pid)
                msg = "%s (pid %d) answered no ApiVersions for %.0fs while running untouched%s" % (
                    node.name, proc.pid, now - since, where)
                print("[chaos] %7.2fs PROBLEM %s" % (now - self.history.t0, msg), flush=True)
                self.history.log(type="unresponsive", node=node.name)
                self.problems.append(msg)

    def dump_stacks(self, node, pid):
        gdb = shutil.which("gdb")
        if gdb is None:
            return " (no gdb here for its stacks)"
        path = os.path.join(self.run_dir, "stacks-%s-%d.txt" % (node.name, pid))
        try:
            with open(path, "w") as f:
                subprocess.run([gdb, "-batch", "-p", str(pid), "-ex", "thread apply all bt 25"],
                               stdout=f, stderr=subprocess.STDOUT, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            return " (gdb failed: %r)" % e
        return "; its threads' stacks: %s" % path


# ------------------------------------------------------------------ workload

# librdkafka's own log lines go to <run dir>/clients.log (set up in main), not
# the test's output: under faults they are many and expected.
CLIENT_LOG = logging.getLogger("chaos.clients")
CLIENT_LOG.propagate = False

CLIENT_TIMEOUTS = {
    "logger": CLIENT_LOG,
    "broker.address.family": "v4",
    "socket.timeout.ms": 3000,
    "socket.connection.setup.timeout.ms": 3000,
    "reconnect.backoff.ms": 50,
    "reconnect.backoff.max.ms": 500,
    "retry.backoff.ms": 100,
}


# librdkafka before 2.3.0 (Debian's 2.0.2, without the venv) turns a retriable error on a
# batch that may be persisted (NOT_LEADER_FOR_PARTITION from a leader that
# lost its leadership while the batch waited for acks=all, which Kafka's
# DelayedProduce answers too) into a fatal "rewound sequence number" /
# "sequence desynchronization" error of its own (librdkafka issue 3584,
# fixed by PR 4438). The run replaces the producer and checks its records
# like any other; the error is reported as a note, not held against the
# broker. Other fatal errors are problems.
# How long a consumer's close() may take after it revoked its partitions
# (final commit, LeaveGroup, destroy) before the run goes on without it.
CLOSE_AFTER_REVOKE_S = 20

LIBRDKAFKA_SEQUENCE_BUG = ("failed with rewound sequence number", "failed due to sequence desynchronization")

# produce() refusals that are not errors of the run: nothing was sent.
LOCAL_REFUSALS = (KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC)


class ProducerWorker(threading.Thread):
    def __init__(self, pid, bootstrap, history, stop, seed, partitions, rate, max_in_flight,
                 message_timeout_ms):
        super().__init__(name="p%d" % pid, daemon=True)
        self.proc = "p%d" % pid
        self.bootstrap, self.history, self.stop = bootstrap, history, stop
        self.rng = random.Random(seed)
        self.partitions, self.rate, self.max_in_flight = partitions, rate, max_in_flight
        self.message_timeout_ms = message_timeout_ms
        self.outstanding = set()
        self.seq = 0
        self.fatal = []
        self.fatal_errors = []  # every fatal error, for the report
        self.unresolved = 0
        self.local_refusals = 0  # produce() refusals for a partition or topic missing from the client's metadata
        self.error = None

    def make(self):
        conf = dict(CLIENT_TIMEOUTS)
        conf.update({"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "acks": "all",
                     "linger.ms": 5, "message.timeout.ms": self.message_timeout_ms,
                     "request.timeout.ms": 3000, "compression.type": "none",
                     "error_cb": self.on_error})
        return Producer(conf)

    def on_error(self, err):
        if err.fatal():
            self.fatal.append(str(err))
            self.fatal_errors.append(str(err))
            self.history.log(type="error", process=self.proc, fatal=True, error=str(err))

    def on_delivery(self, err, msg):
        v = msg.value().decode()
        self.outstanding.discard(v)
        if err is None:
            self.history.log(type="ok", process=self.proc, value=v, partition=msg.partition(),
                             offset=msg.offset())
        else:
            # After a fatal error librdkafka purges its queues, and a message
            # back in the queue for a retry may have been written by its
            # first send: _PURGE_QUEUE is definite only without one.
            definite = err.code() in DEFINITE and not (err.code() == KafkaError._PURGE_QUEUE and self.fatal_errors)
            self.history.log(type="fail", process=self.proc, value=v, definite=definite, error=str(err))

    def run(self):
        try:
            self._run()
        except BaseException as e:  # noqa: BLE001 - reported by the runner
            self.error = repr(e) + " at " + traceback.format_exc().strip().splitlines()[-3].strip()

    def serve(self, p, timeout, flush=False):
        """poll() or flush(); a fatal error raised from there marks the
        producer for replacement instead of ending the thread."""
        try:
            return p.flush(timeout) if flush else p.poll(timeout)
        except KafkaException as e:
            err = e.args[0] if e.args else None
            if not (err is not None and hasattr(err, "fatal") and err.fatal()):
                raise
            if not self.fatal:
                self.fatal.append(str(err))
                self.fatal_errors.append(str(err))
                self.history.log(type="error", process=self.proc, fatal=True, error=str(err))
            return len(self.outstanding)

    def _run(self):
        p = self.make()
        gap = 1.0 / self.rate
        next_at = time.monotonic()
        while not self.stop.is_set():
            if self.fatal:
                # The idempotent producer is unusable after a fatal error; what
                # it had in flight is reported (indefinite) by flush/purge.
                self.serve(p, self.message_timeout_ms / 1000.0 + 5, flush=True)
                self.fatal.clear()
                p = self.make()
            if len(self.outstanding) >= self.max_in_flight:
                self.serve(p, 0.05)
                continue
            now = time.monotonic()
            if now < next_at:
                self.serve(p, next_at - now)  # pacing: serves delivery reports meanwhile
                continue
            next_at = max(next_at + gap, now - 1.0)
            v = "%s-%d" % (self.proc, self.seq)
            self.seq += 1
            part = self.rng.randrange(self.partitions)
            self.history.log(type="invoke", process=self.proc, value=v, partition=part)
            self.outstanding.add(v)
            try:
                p.produce(TOPIC, value=v.encode(), partition=part, on_delivery=self.on_delivery)
            except BufferError as e:
                self.outstanding.discard(v)
                self.history.log(type="fail", process=self.proc, value=v, definite=True, error=repr(e))
            except KafkaException as e:
                # Refused before sending, so definite: a fatal idempotence
                # error (the broker forgot or rewound this producer's
                # sequence; the producer is replaced at the top of the loop),
                # or a partition the client's metadata lacks right now (a
                # broker that restarted answers Metadata from an empty cache
                # until the controller's first UpdateMetadata reaches it).
                self.outstanding.discard(v)
                self.history.log(type="fail", process=self.proc, value=v, definite=True, error=repr(e))
                err = e.args[0] if e.args else None
                if err is not None and err.code() in LOCAL_REFUSALS:
                    self.local_refusals += 1
                    continue
                if not (err is not None and hasattr(err, "fatal") and err.fatal()):
                    raise
                if not self.fatal:
                    self.fatal.append(str(err))
            self.serve(p, 0)
        # Drain: every delivery report within message.timeout.ms (+ margin).
        self.serve(p, self.message_timeout_ms / 1000.0 + 10, flush=True)
        self.unresolved = len(self.outstanding)
        for v in sorted(self.outstanding):
            self.history.log(type="fail", process=self.proc, value=v, definite=False,
                             error="no delivery report by the end of the run")


class ConsumerWorker(threading.Thread):
    def __init__(self, cid, bootstrap, history, stop):
        super().__init__(name="c%d" % cid, daemon=True)
        self.proc = "c%d" % cid
        self.bootstrap, self.history, self.stop = bootstrap, history, stop
        self.records = 0
        self.errors = collections.Counter()
        self.error = None
        self.assigned = threading.Event()  # the first assignment arrived
        self.close_revoked = threading.Event()  # close() got as far as revoking the assignment
        self.close_revoked_at = None  # monotonic time of that revoke

    def parts(self, partitions):
        return sorted(tp.partition for tp in partitions)

    def run(self):
        try:
            self._run()
        except BaseException as e:  # noqa: BLE001 - reported by the runner
            self.error = repr(e) + " at " + traceback.format_exc().strip().splitlines()[-3].strip()

    def _run(self):
        conf = dict(CLIENT_TIMEOUTS)
        conf.update({"bootstrap.servers": self.bootstrap, "group.id": "chaos",
                     "auto.offset.reset": "earliest", "enable.auto.commit": True,
                     "auto.commit.interval.ms": 500, "session.timeout.ms": 10000,
                     "heartbeat.interval.ms": 1000, "fetch.wait.max.ms": 100,
                     "enable.partition.eof": False})
        if os.environ.get("CHAOS_CONSUMER_DEBUG"):  # e.g. cgrp: the group protocol, into clients.log
            conf["debug"] = os.environ["CHAOS_CONSUMER_DEBUG"]
        c = Consumer(conf)

        def on_assign(consumer, partitions):
            self.history.log(type="assign", process=self.proc, partitions=self.parts(partitions))
            self.assigned.set()

        def on_revoke(consumer, partitions):
            self.history.log(type="revoke", process=self.proc, partitions=self.parts(partitions))
            if self.stop.is_set():
                self.close_revoked_at = time.monotonic()
                self.close_revoked.set()

        def on_lost(consumer, partitions):
            self.history.log(type="lost", process=self.proc, partitions=self.parts(partitions))

        c.subscribe([TOPIC], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
        try:
            while not self.stop.is_set():
                msgs = c.consume(num_messages=500, timeout=0.2)
                recs = []
                for m in msgs:
                    if m.error():
                        self.errors[m.error().name()] += 1
                        self.history.log(type="error", process=self.proc, error=str(m.error()))
                        continue
                    recs.append([m.partition(), m.offset(), m.value().decode("utf-8", "replace")])
                if recs:
                    self.records += len(recs)
                    self.history.log(type="poll", process=self.proc, records=recs)
        finally:
            c.close()


# ------------------------------------------------------------------ the run

def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--broker", required=True, help="the ciuickafka binary")
    ap.add_argument("--work", required=True, help="scratch directory")
    ap.add_argument("--seconds", type=float, default=60, help="how long the faults run")
    ap.add_argument("--seed", type=int, default=None, help="seeds the nemesis and the producers' partition choice")
    ap.add_argument("--nemesis", default="kill,pause,restart", help="comma-separated: kill,pause,restart")
    ap.add_argument("--brokers", type=int, default=1)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--producers", type=int, default=3)
    ap.add_argument("--consumers", type=int, default=2)
    ap.add_argument("--rate", type=float, default=100, help="sends per second per producer")
    ap.add_argument("--max-in-flight", type=int, default=200, help="unacknowledged sends per producer")
    ap.add_argument("--message-timeout-ms", type=int, default=5000)
    ap.add_argument("--override", action="append", default=[], metavar="K=V", help="broker config")
    ap.add_argument("--timeout", type=int, default=None,
                    help="hard wall-clock bound of the whole run (default: seconds + 100)")
    ap.add_argument("--keep", action="store_true", help="keep the run directory on success")
    args = ap.parse_args(argv)
    args.nemesis = [x for x in args.nemesis.split(",") if x]
    for op in args.nemesis:
        if op not in ("kill", "pause", "restart"):
            ap.error("unknown nemesis %r" % op)
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 31)
    if args.timeout is None:
        args.timeout = int(args.seconds + 100)
    return args


class WallClock(Exception):
    pass


def main(argv=None):
    args = parse_args(argv)
    t_start = time.monotonic()
    run_dir = os.path.join(os.path.abspath(args.work), "chaos_seed%d" % args.seed)
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    # No initial rebalance delay: the group forms at once (before the faults).
    overrides = {"num.partitions": str(args.partitions), "group.initial.rebalance.delay.ms": "0"}
    for kv in args.override:
        k, _, v = kv.partition("=")
        overrides[k] = v
    print("[chaos] seed %d, %gs of %s, %d broker(s), %d partitions, %d producers, %d consumers; run dir %s" % (
        args.seed, args.seconds, ",".join(args.nemesis) or "no faults", args.brokers, args.partitions,
        args.producers, args.consumers, run_dir), flush=True)

    def on_alarm(signum, frame):
        raise WallClock("run exceeded its %ds wall-clock bound" % args.timeout)
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(args.timeout)

    handler = logging.FileHandler(os.path.join(run_dir, "clients.log"))
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    CLIENT_LOG.addHandler(handler)
    CLIENT_LOG.setLevel(logging.DEBUG)
    rng = random.Random(args.seed)
    history = History(os.path.join(run_dir, "history.jsonl"))
    cluster = Cluster(args.broker, run_dir, args.brokers, overrides)
    stop_producers, stop_consumers, stop_nemesis = threading.Event(), threading.Event(), threading.Event()
    producers, consumers, problems, notes, summary = [], [], [], [], None
    nemesis = Nemesis(cluster, args.nemesis, rng, history, stop_nemesis)
    liveness = LivenessWatch(cluster, run_dir, history)
    try:
        cluster.start()
        cluster.create_topic(TOPIC, args.partitions)
        consumers = [ConsumerWorker(i, cluster.bootstrap, history, stop_consumers) for i in range(args.consumers)]
        producers = [ProducerWorker(i, cluster.bootstrap, history, stop_producers, rng.randrange(1 << 31),
                                    args.partitions, args.rate, args.max_in_flight, args.message_timeout_ms)
                     for i in range(args.producers)]
        for w in consumers + producers:
            w.start()
        # Faults begin once the group has formed: a group whose first join
        # is cut by a kill every few seconds may never form, and then the
        # poll checks would check nothing.
        for w in consumers:
            harness.check(w.assigned.wait(60), "consumer %s got no assignment within 60s" % w.proc)
        history.log(type="nemesis", op="start", phase="start")
        t_faults = time.monotonic()
        liveness.start()
        if args.nemesis:
            nemesis.run(t_faults + args.seconds)
        else:
            stop_nemesis.wait(args.seconds)
        print("[chaos] %7.2fs heal" % (time.monotonic() - history.t0), flush=True)
        problems += cluster.heal()
        history.log(type="nemesis", op="heal", phase="end")
        stop_producers.set()
        for w in producers:
            w.join(args.message_timeout_ms / 1000.0 + 30)
            if w.is_alive():
                problems.append("producer %s did not finish its flush" % w.proc)
        stop_consumers.set()
        close_by = time.monotonic() + 60  # one bound for all: they close at once
        for w in consumers:
            # close() commits (answered once replicated) and leaves the group.
            # Once it has revoked, what is left is that commit (3 s request
            # timeouts) and LeaveGroup: CLOSE_AFTER_REVOKE_S bounds it, so a
            # consumer stuck past its group's end costs seconds, not the 60.
            while w.is_alive() and time.monotonic() < close_by:
                if w.close_revoked_at is not None and time.monotonic() > w.close_revoked_at + CLOSE_AFTER_REVOKE_S:
                    break
                w.join(0.2)
            if w.is_alive():
                # Debian's client (librdkafka 2.0.2) could hang in destroy
                # after the group is left (the three-broker run saw it with
                # the cgrp log showing the
                # final commit, LeaveGroup and "Consumer group sub-system
                # terminated"): reported, not held against the broker. A
                # consumer that never reaches its group's end is an error.
                if w.close_revoked.is_set():
                    notes.append("consumer %s: close() revoked its partitions (and then leaves the group) "
                                 "but did not return within %d s of the revoke"
                                 % (w.proc, CLOSE_AFTER_REVOKE_S))
                else:
                    problems.append("consumer %s did not close" % w.proc)
        for w in producers:
            for err in w.fatal_errors[:3]:
                if any(m in err for m in LIBRDKAFKA_SEQUENCE_BUG):
                    notes.append("%s: librdkafka's own sequence bookkeeping failed (a new producer took over; "
                                 "librdkafka issue 3584, fixed in 2.3.0 by PR 4438): %s" % (w.proc, err))
                else:
                    problems.append("%s: fatal producer error (a new producer took over): %s" % (w.proc, err))
        for w in producers + consumers:
            if w.error:
                problems.append("%s died: %s" % (w.name, w.error))
        final = cluster.final_read(TOPIC, args.partitions)
        liveness.stop.set()
        liveness.join(10)
        problems += liveness.problems
        for p, (lo, hi, recs) in sorted(final.items()):
            history.log(type="final", partition=p, log_start=lo, end=hi, records=[list(r) for r in recs])
        history.close()
        summary = checker.check(checker.load(history.path))
        if summary["stats"].get("acked", 0) == 0:
            problems.append("no send was acknowledged: the run proves nothing")
        if args.consumers and summary["stats"].get("polled-records", 0) == 0:
            problems.append("the consumers polled nothing: the poll checks prove nothing "
                            "(assignments: %d)" % history.counts["assign"])
        for n in cluster.nodes:
            n.broker.stop()  # a clean SIGTERM at the end must still exit 0
    except BaseException as e:  # noqa: BLE001 - every failure ends the same way
        signal.alarm(0)
        problems.append("run aborted: %r" % e)
        traceback.print_exc()
        for n in cluster.nodes:
            n.broker.dump_log(40)
    finally:
        signal.alarm(0)
        liveness.stop.set()
        stop_nemesis.set()
        stop_producers.set()
        stop_consumers.set()
        cluster.teardown()

    wall = time.monotonic() - t_start
    if summary is not None:
        print(checker.render(summary))
        summary["run"] = {"seed": args.seed, "seconds": args.seconds, "nemesis": dict(nemesis.events),
                          "wall_s": round(wall, 1), "problems": problems,
                          "client_error_events": history.counts["error"],
                          "consumer_records": sum(w.records for w in consumers),
                          "unresolved_sends": sum(w.unresolved for w in producers),
                          "local_refusals": sum(w.local_refusals for w in producers), "notes": notes}
        with open(os.path.join(run_dir, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1, sort_keys=True)
    s = summary["stats"] if summary else {}
    print("[chaos] seed %d: %d sends invoked, %d acked, %d failed (%d definite, %d indefinite); "
          "%d records polled; nemesis %s; %.1fs wall" % (
              args.seed, s.get("invoked", 0), s.get("acked", 0),
              s.get("failed-definite", 0) + s.get("failed-indefinite", 0),
              s.get("failed-definite", 0), s.get("failed-indefinite", 0), s.get("polled-records", 0),
              dict(nemesis.events) or "none", wall), flush=True)
    refusals = sum(w.local_refusals for w in producers)
    if refusals:
        print("[chaos] %d sends refused by the client before sending (partition or topic missing from its "
              "metadata)" % refusals, flush=True)
    ok = summary is not None and summary["valid"] and not problems
    for n in notes:
        print("[chaos] NOTE: %s" % n, flush=True)
    for p in problems:
        print("[chaos] PROBLEM: %s" % p, flush=True)
    if summary is not None:
        print("[chaos] anomalies: %s" % (", ".join("%s x%d" % (k, a["count"]) for k, a in summary["anomalies"].items())
                                         or "none"), flush=True)
    if ok:
        print("PASS (%.1fs)" % wall, flush=True)
        if not args.keep:
            shutil.rmtree(run_dir, ignore_errors=True)
        return 0
    print("FAIL; run directory kept: %s (replay the schedule with --seed %d)" % (run_dir, args.seed), flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main())
