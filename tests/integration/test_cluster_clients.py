"""tests/integration/test_cluster_clients.py: the cluster driven by the other real clients.

Usage: test_cluster_clients.py --broker BIN --work DIR CLIENT

CLIENT is one of kafka_python (Debian's kafka-python 2.0.2 under
/usr/bin/python3), kafka_python_3x (kafka-python 3.x from
build/clients-venv), kafkajs (node, tests/clients/node_modules), franz
(franz-go, build/go/franz-it), sarama (IBM/sarama, build/go/sarama-it) and
java (kafka-clients 3.9.1, build/java/clients-3.9.1). Each runs the same
scenario through a small driver program of that client (see DRIVERS),
which speaks a line protocol on stdin/stdout:

  DRIVER produce BOOTSTRAP TOPIC N CHUNK
      prints `client NAME VERSION idempotent=0|1`, then sends records
      i = 0..N-1 (key "k<i>", value "v<i>" zero-padded to 6 digits, partition i % 3) with
      acks=all (idempotent where the client supports it, retrying through a
      leader change), CHUNK at a time, waiting for a chunk's outcome before
      the next; prints `ack P O I` for each acknowledged record (P, O: the
      partition and offset the client reported) and `err I REASON` for each
      failed one, then `produced ACKED FAILED`.
  DRIVER consume BOOTSTRAP TOPIC GROUP FIRST HALF
      prints the same client line; member 1 of GROUP (subscribe, from the
      earliest offset, auto commit off) delivers at least FIRST records,
      printing `rec P O VALUE` for each in delivery order, commits exactly
      the next offsets of what it delivered and, once the commit is
      acknowledged, prints `committed P O` per partition, then `paused`, and
      waits for a line `resume`; goes on with the same consumer until it
      has delivered at least HALF, commits again (retrying while the
      coordinator moves), prints `committed` lines, closes the consumer and
      prints `closed`; then reads a line `go E0 E1 E2` (the partitions' end
      offsets), prints `member2` and runs a new member of the same group,
      printing `rec` lines until it has delivered up to each end offset,
      commits, prints `committed` lines and `done`.

The scenario (Debian's ZooKeeper and three ASan brokers on 127.0.0.1,
offsets.topic.replication.factor 3, as test_cluster_groups.py starts them):

  1. a topic with 3 partitions, replication factor 3, min.insync.replicas 2;
  2. the driver produces 3,000 records; after 1,000 are acknowledged the
     leader of partition 0 is killed -9, and the test waits for its
     /brokers/ids node to go and another replica to lead partition 0 at a
     higher leader epoch; the driver must get all 3,000 acknowledged, each
     at a distinct (partition, offset), partition = i % 3;
  3. the killed broker restarts and rejoins every ISR;
  4. the driver's member 1 reads a quarter and commits; the group's
     coordinator (FindCoordinator: the leader of the group's
     __consumer_offsets partition) is killed -9 under it and restarted
     while member 1 goes on to half and commits through the new
     coordinator; once member 1 closed, the coordinator is killed -9
     again and `go` is sent at once: member 2 has to find the next
     coordinator itself;
  5. checks: every acknowledged record at its acknowledged offset with its
     value; within a partition each member delivers contiguous, increasing
     offsets, or goes back exactly to its last acknowledged commit (a
     rejoin; such repeats are counted and printed); member 2 starts each
     partition exactly at member 1's last acknowledged commit (nothing
     committed is delivered again, nothing skipped); every offset of the
     log is delivered; a value twice in the log is a duplicate, refused for
     the idempotent producers and counted for kafka-python 2.0.2 (which has
     no idempotence, as Kafka's own tests allow for non-idempotent
     producers); member 2's final commit equals the end offsets, read back
     with confluent-kafka's committed().
"""

import os
import queue
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import zookeeper  # noqa: E402
from harness import check, wait_until  # noqa: E402
from test_cluster_groups import CHROOT, OFFSETS, SESSION_MS, find_coordinator, partition_for, start_cluster  # noqa: E402
from test_cluster_replication import create, wait_formed, partition_states, wait_leaders  # noqa: E402

N = 3000
CHUNK = 50
KILL_AT = 1000
PARTS = 3
TOPIC = "cc-topic"
GROUP = "ck-cc-group"


def venv_python():
    return os.path.join(harness.REPO, "build", "clients-venv", "bin", "python3")


def venv_kafka_python():
    """The kafka-python version tests/clients/requirements.txt pins for the venv."""
    with open(os.path.join(harness.CLIENTS, "requirements.txt")) as f:
        pins = [l.split("==")[1].split()[0] for l in f if l.startswith("kafka-python==")]
    check(len(pins) == 1, "one kafka-python pin in tests/clients/requirements.txt: %s" % pins)
    return pins[0]


def _python_driver(py):
    return [py, os.path.join(harness.CLIENTS, "kafka_python_cluster.py")]


def _node_driver():
    node = shutil.which("node")
    check(node is not None, "node not on PATH")
    check(os.path.isdir(os.path.join(harness.CLIENTS, "node_modules", "kafkajs")),
          "kafkajs not installed: run (cd tests/clients && npm ci)")
    return [node, os.path.join(harness.CLIENTS, "kafkajs_cluster.js")]


def _franz_driver():
    exe = os.path.join(harness.REPO, "build", "go", "franz-it")
    check(os.access(exe, os.X_OK), "%s not built (run deploy/install-deps.sh)" % exe)
    return [exe, "cluster"]


def _sarama_driver():
    exe = os.path.join(harness.REPO, "build", "go", "sarama-it")
    check(os.access(exe, os.X_OK), "%s not built (run deploy/install-deps.sh)" % exe)
    return [exe, "cluster"]


def _java_driver():
    from test_java_clients import JVM_TEST_FLAGS, java, java_dir
    d = java_dir("clients", "3.9.1")
    return [java(), *JVM_TEST_FLAGS, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", os.path.join(d, "*"),
            "io.ciuic.kafka.it.Main", "cluster"]


# CLIENT: (driver command, client name and version the driver must report,
# whether its producer is idempotent).
DRIVERS = {
    "kafka_python": (lambda: _python_driver("/usr/bin/python3"), "kafka-python 2.0.2", False),
    "kafka_python_3x": (lambda: _python_driver(venv_python()), "kafka-python " + venv_kafka_python(), True),
    "kafkajs": (_node_driver, "kafkajs 2.2.4", True),
    "franz": (_franz_driver, "franz-go v1.22.3", True),
    "sarama": (_sarama_driver, "IBM/sarama v1.61.1", True),
    "java": (_java_driver, "kafka-clients 3.9.1", True),
}


class Driver:
    """A driver process; its stdout lines are read on a thread into a queue."""

    def __init__(self, ctx, cmd, name):
        print("[test] run: %s" % " ".join(cmd), flush=True)
        self.err_path = os.path.join(ctx.work, name + ".stderr")
        self.err = open(self.err_path, "wb")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err,
                                     cwd=harness.CLIENTS)
        self.lines = queue.Queue()
        self.all = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for raw in self.proc.stdout:
            self.lines.put(raw.decode("utf-8", "replace").rstrip("\n"))
        self.lines.put(None)

    def next(self, deadline, what):
        """The next stdout line (None at EOF) before the monotonic deadline."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise harness.TestFailure("timed out waiting for %s; driver stderr:\n%s" % (what, self.stderr_tail()))
        try:
            line = self.lines.get(timeout=left)
        except queue.Empty:
            raise harness.TestFailure("timed out waiting for %s; driver stderr:\n%s" % (what, self.stderr_tail()))
        if line is not None:
            self.all.append(line)
        return line

    def send(self, line):
        self.proc.stdin.write((line + "\n").encode())
        self.proc.stdin.flush()

    def finish(self, timeout):
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise harness.TestFailure("driver did not exit; stderr:\n%s" % self.stderr_tail())
        check(rc == 0, "driver exited %d; stderr:\n%s" % (rc, self.stderr_tail()))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.err.close()

    def stderr_tail(self):
        self.err.flush()
        with open(self.err_path, "rb") as f:
            return f.read()[-4000:].decode("utf-8", "replace")


def client_line(d, deadline, want, idempotent):
    """The driver's first line: `client NAME VERSION idempotent=0|1`."""
    line = d.next(deadline, "the driver's client line")
    want_line = "client %s idempotent=%d" % (want, idempotent)
    check(line == want_line, "the driver should say %r, it says %r; stderr:\n%s" % (want_line, line, d.stderr_tail()))
    print("[test] %s" % line, flush=True)


def brokers_known(b):
    """The broker ids broker b's Metadata names."""
    from confluent_kafka.admin import AdminClient
    a = AdminClient({"bootstrap.servers": b.bootstrap, "broker.address.family": "v4"})
    return sorted(a.list_topics(timeout=10).brokers)


OFFSET_NOT_AVAILABLE = 78


def end_offsets(brokers):
    """Every partition's high watermark. A broker just restarted answers
    Metadata without the topic until the controller's UpdateMetadata reaches
    it (as Kafka's does), and librdkafka then fails the query at once with
    _UNKNOWN_PARTITION: asked again until the metadata names the partition.
    A leader whose HW has not yet reached the start of its leader epoch (a
    coordinator killed and restarted leads again with its checkpointed HW)
    answers OFFSET_NOT_AVAILABLE (KIP-207), which librdkafka does not retry
    itself: asked again too. (Before the broker did so, such a leader gave
    its stale HW, and the scenario read a partition end that was too low.)"""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
    c = Consumer({"bootstrap.servers": ",".join(b.bootstrap for b in brokers if b.alive()),
                  "group.id": "ck-cc-ends", "broker.address.family": "v4"})
    deadline = time.monotonic() + 30
    try:
        out = []
        for p in range(PARTS):
            while True:
                try:
                    out.append(c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=20)[1])
                    break
                except KafkaException as e:
                    retriable = (KafkaError._UNKNOWN_PARTITION, OFFSET_NOT_AVAILABLE)
                    if e.args[0].code() not in retriable or time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
                    c.list_topics(timeout=5)  # fresh metadata (all topics: no auto-creation), then again
        return out
    finally:
        c.close()


def committed_offsets(brokers, group):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": ",".join(b.bootstrap for b in brokers if b.alive()),
                  "group.id": group, "broker.address.family": "v4", "enable.auto.commit": False})
    try:
        tps = c.committed([TopicPartition(TOPIC, p) for p in range(PARTS)], timeout=30)
        return {tp.partition: tp.offset for tp in tps if tp.error is None and tp.offset >= 0}
    finally:
        c.close()


def produce_through_failover(ctx, cmd, want_client, idempotent, brokers, by_id, kz):
    """Step 2; returns the acknowledged records {(p, o): value} and the victim broker."""
    d = Driver(ctx, cmd + ["produce", ",".join(b.bootstrap for b in brokers), TOPIC, str(N), str(CHUNK)], "produce")
    try:
        deadline = time.monotonic() + 120
        client_line(d, deadline, want_client, idempotent)
        acked, errors = {}, []
        victim = None
        st0 = partition_states(kz, TOPIC)[0]
        produced = None
        acks_at_kill = None
        while True:
            line = d.next(deadline, "the driver's acknowledgements")
            check(line is not None, "driver ended before `produced`; stderr:\n%s" % d.stderr_tail())
            f = line.split()
            if f[0] == "ack":
                p, o, i = int(f[1]), int(f[2]), int(f[3])
                check(p == i % PARTS, "record %d acknowledged on partition %d" % (i, p))
                check((p, o) not in acked, "(%d, %d) acknowledged for two records: %s and v%06d" % (
                    p, o, acked.get((p, o)), i))
                acked[(p, o)] = "v%06d" % i
                if victim is None and len(acked) >= KILL_AT:
                    victim = by_id[st0["leader"]]
                    victim.kill()
                    acks_at_kill = len(acked)
                    t_kill = time.monotonic()
                    print("[test] killed -9 broker %d (leader of partition 0, epoch %d) after %d acks" % (
                        st0["leader"], st0["leader_epoch"], acks_at_kill), flush=True)
            elif f[0] == "err":
                errors.append(line)
            elif f[0] == "produced":
                produced = (int(f[1]), int(f[2]))
                break
            else:
                print("[driver] %s" % line, flush=True)
        d.finish(30)
    finally:
        d.stop()
    check(victim is not None, "only %d acknowledgements: the leader was never killed" % len(acked))
    check(acks_at_kill < N - 2 * CHUNK, "the kill came too late (%d of %d acked)" % (acks_at_kill, N))
    check(not errors and produced == (N, 0) and len(acked) == N,
          "%d of %d acknowledged (driver: %s); errors: %s" % (len(acked), N, produced, errors[:5]))
    vid = st0["leader"]
    wait_until(lambda: str(vid) not in kz.get_children("/brokers/ids"), SESSION_MS / 1000 + 20,
               "broker %d's /brokers/ids node to go" % vid, interval=0.05)
    st1 = partition_states(kz, TOPIC)[0]
    check(st1["leader"] not in (-1, vid) and st1["leader_epoch"] > st0["leader_epoch"] and vid not in st1["isr"],
          "partition 0 after the kill: %s (before %s)" % (st1, st0))
    print("[test] all %d acknowledged (%.1fs after the kill); partition 0: leader %d epoch %d isr %s" % (
        N, time.monotonic() - t_kill, st1["leader"], st1["leader_epoch"], st1["isr"]), flush=True)
    return acked, victim


def check_member(events, name, start):
    """events: a member's ("rec", p, o, v) and ("committed", p, o) in the
    order it printed them. Within a partition each delivery follows the one
    before, or rewinds to the member's last acknowledged commit (a rejoin:
    the records after a commit read again, as a consumer group allows);
    returns {p: last offset delivered} and how many deliveries were
    repeats."""
    last, hi, acked, again = {}, {}, dict(start), 0
    for e in events:
        if e[0] == "committed":
            acked[e[1]] = e[2]
            continue
        _, p, o, _ = e
        if p not in last:
            check(o == acked.get(p, 0), "%s: partition %d started at %d, want %d" % (name, p, o, acked.get(p, 0)))
        elif o != last[p] + 1:
            check(o == acked.get(p, 0) and o <= last[p],
                  "%s: partition %d delivered offset %d after %d (last acknowledged commit %s)" % (
                      name, p, o, last[p], acked.get(p)))
        if o <= hi.get(p, -1):
            again += 1
        last[p] = o
        hi[p] = max(hi.get(p, -1), o)
    return last, again


def commits_of(events):
    return {e[1]: e[2] for e in events if e[0] == "committed"}


def coordinator_of(brokers, by_id, kz):
    """The broker FindCoordinator (asked of the live brokers) names for
    GROUP: the leader of the group's __consumer_offsets partition in
    ZooKeeper. A broker just restarted answers COORDINATOR_NOT_AVAILABLE
    (retriable, as Kafka's) until it has rejoined the cluster, so the brokers
    are asked in turn until one names a live broker (bounded)."""
    answers = {}

    def named_live():
        for b in brokers:
            if not b.alive():
                continue
            err, node, _, _ = find_coordinator(b, GROUP)
            answers[b.name] = (err, node)
            if err == 0 and node in by_id and by_id[node].alive():
                answers["node"] = node
                return True
        return False

    try:
        wait_until(named_live, 30, "FindCoordinator for %s to name a live broker" % GROUP)
    except harness.TestFailure as e:
        raise harness.TestFailure("%s; last answers (error, node) by broker: %s" % (e, answers)) from None
    node = answers["node"]
    leader = partition_states(kz, OFFSETS)[partition_for(GROUP)]["leader"]
    check(node == leader, "FindCoordinator names broker %d, offsets partition %d is led by %d" % (
        node, partition_for(GROUP), leader))
    return by_id[node]


def consume_with_coordinator_kills(ctx, cmd, want_client, idempotent, brokers, by_id, kz, acked):
    """Step 4: member 1 across one coordinator kill, member 2 started while another is dead."""
    first, half = N // 4, N // 2
    d = Driver(ctx, cmd + ["consume", ",".join(b.bootstrap for b in brokers), TOPIC, GROUP, str(first), str(half)],
               "consume")
    members = [[], []]
    kills = []
    try:
        deadline = time.monotonic() + 150
        client_line(d, deadline, want_client, idempotent)
        member = 0
        while True:
            line = d.next(deadline, "the consumer driver")
            check(line is not None, "consumer driver ended before `done`; stderr:\n%s" % d.stderr_tail())
            f = line.split()
            if f[0] == "rec":
                members[member].append(("rec", int(f[1]), int(f[2]), f[3]))
            elif f[0] == "committed":
                members[member].append(("committed", int(f[1]), int(f[2])))
            elif f[0] == "paused":
                check(member == 0 and not kills, "`paused` out of turn")
                x1 = coordinator_of(brokers, by_id, kz)
                x1.kill()
                kills.append(x1)
                print("[test] member 1 delivered %d and committed %s; killed -9 broker %s, coordinator of %s, "
                      "under it" % (sum(e[0] == "rec" for e in members[0]), commits_of(members[0]), x1.name, GROUP),
                      flush=True)
                d.send("resume")
                x1.start()  # back while member 1 goes on (its output waits in the pipe)
            elif f[0] == "closed":
                check(member == 0 and len(kills) == 1, "`closed` out of turn")
                ends = end_offsets(brokers)
                x2 = coordinator_of(brokers, by_id, kz)
                x2.kill()
                kills.append(x2)
                t_kill = time.monotonic()
                print("[test] member 1 delivered %d in all, last commit %s; killed -9 broker %s, coordinator of "
                      "%s; ends %s" % (sum(e[0] == "rec" for e in members[0]), commits_of(members[0]), x2.name,
                                       GROUP, ends), flush=True)
                d.send("go %s" % " ".join(str(e) for e in ends))
            elif f[0] == "member2":
                member = 1
            elif f[0] == "done":
                break
            else:
                print("[driver] %s" % line, flush=True)
        d.finish(30)
    finally:
        d.stop()
    check(len(kills) == 2, "coordinator kills: %d, want 2" % len(kills))
    print("[test] member 2 delivered %d and committed %s %.1fs after the second kill" % (
        sum(e[0] == "rec" for e in members[1]), commits_of(members[1]), time.monotonic() - t_kill), flush=True)

    # Member 1: from 0, in order, its last commit = what it delivered.
    n1 = sum(e[0] == "rec" for e in members[0])
    check(n1 >= half, "member 1 delivered %d, want >= %d" % (n1, half))
    last1, again1 = check_member(members[0], "member 1", {})
    commit1 = commits_of(members[0])
    check(commit1 == {p: o + 1 for p, o in last1.items()},
          "member 1's last commits %s, it delivered up to %s" % (commit1, last1))
    # Member 2: each partition from member 1's commit, in order, up to the end.
    last2, again2 = check_member(members[1], "member 2", commit1)
    check(all(last2.get(p, commit1.get(p, 0) - 1) == ends[p] - 1 for p in range(PARTS)),
          "member 2 stopped at %s, ends %s" % (last2, ends))
    survivors = [b for b in brokers if b.alive()]
    check(commits_of(members[1]) == {p: ends[p] for p in last2} and
          committed_offsets(survivors, GROUP) == dict(enumerate(ends)),
          "member 2 committed %s; the group's offsets %s; ends %s" % (
              commits_of(members[1]), committed_offsets(survivors, GROUP), ends))
    # The log: every offset delivered, one value each.
    log = {}
    for e in members[0] + members[1]:
        if e[0] == "rec":
            check(log.setdefault((e[1], e[2]), e[3]) == e[3], "(%d, %d) delivered as %s and %s" % (
                e[1], e[2], log[(e[1], e[2])], e[3]))
    check(len(log) == sum(ends), "%d offsets delivered, the log has %d" % (len(log), sum(ends)))
    wrong = [(k, v, log.get(k)) for k, v in acked.items() if log.get(k) != v]
    check(not wrong, "%d acknowledged records not at their offsets, e.g. %s" % (len(wrong), wrong[:5]))
    by_value = {}
    for k, v in log.items():
        by_value.setdefault(v, []).append(k)
    dups = {v: ks for v, ks in by_value.items() if len(ks) > 1}
    strangers = [v for v in by_value if v not in set(acked.values())]
    check(not strangers, "values in the log never produced: %s" % strangers[:5])
    if again1 or again2:
        print("[test] records delivered again after a rejoin (at-least-once, from the last commit): member 1 %d, "
              "member 2 %d" % (again1, again2), flush=True)
    return log, dups


def main(ctx):
    check(ctx.args and ctx.args[0] in DRIVERS, "client: one of %s" % sorted(DRIVERS))
    make_cmd, want_client, idempotent = DRIVERS[ctx.args[0]]
    cmd = make_cmd()
    zk = zookeeper.ZooKeeper(ctx.work).start()
    t0 = time.monotonic()
    try:
        brokers = start_cluster(ctx, zk)
        by_id = {i + 1: b for i, b in enumerate(brokers)}
        kz = zk.client(CHROOT)
        wait_formed(kz, brokers)
        # Each broker learns of the registrations through its own ZooKeeper
        # watch (ciuic_cluster_live_brokers) and, from the controller, its
        # metadata cache (Metadata's broker list, which CreateTopics assigns
        # replicas over, as Kafka's ZkAdminManager does). Wait for both on
        # every broker, so every later step sees a settled cluster.
        wait_until(lambda: all(harness.scrape(b, "ciuic_cluster_live_brokers") == 3 and
                               brokers_known(b) == [1, 2, 3] for b in brokers), 30,
                   "every broker's view and Metadata to name brokers 1, 2, 3", interval=0.1)
        code, msg = create(brokers, TOPIC, PARTS, 3, {"min.insync.replicas": "2"})
        check(code == 0, "CreateTopics: %s %s" % (code, msg))
        wait_leaders(brokers, TOPIC, PARTS, want_isr=3)

        acked, victim = produce_through_failover(ctx, cmd, want_client, idempotent, brokers, by_id, kz)
        victim.start()
        wait_until(lambda: all(sorted(s["isr"]) == [1, 2, 3] for s in partition_states(kz, TOPIC).values()),
                   60, "the restarted broker back in every ISR", interval=0.1)
        check(not kz.exists("/brokers/topics/" + OFFSETS), "%s exists before any group" % OFFSETS)

        log, dups = consume_with_coordinator_kills(ctx, cmd, want_client, idempotent, brokers, by_id, kz, acked)
        extra = sum(len(ks) - 1 for ks in dups.values())
        if idempotent:
            check(not dups, "idempotent producer: %d values twice in the log, e.g. %s" % (
                len(dups), sorted(dups.items())[:3]))
        print("[test] %s: %d acknowledged records read back at their offsets; log %d records, %d duplicates "
              "(%s producer); %.1fs" % (want_client, len(acked), len(log), extra,
                                        "idempotent" if idempotent else "non-idempotent", time.monotonic() - t0),
              flush=True)
        for b in ctx.brokers:
            if b.proc is not None and b.proc.poll() is None:
                b.stop()
    finally:
        for b in ctx.brokers:
            if b.proc is not None and b.proc.poll() is None:
                b.kill()
        zk.stop()


if __name__ == "__main__":
    harness.run_test(main, total_timeout=170)
