"""tests/integration/test_cluster_shutdown.py: controlled shutdown and preferred leader election.

Usage: test_cluster_shutdown.py --broker BIN --work DIR SCENARIO

Real processes on 127.0.0.1: Debian's ZooKeeper (standalone) and three
ciuickafka brokers with zookeeper.connect (a chroot), a 3 s session timeout
and auto.leader.rebalance.enable=false (so only the test's ElectLeaders
moves leadership back). Topics and records go through confluent-kafka;
Kafka's znodes are read with kazoo; ElectLeaders is a raw v1 request
(kafka_wire.py: the installed confluent-kafka 1.7 and kafka-python 2.0.2 have
no elect_leaders call).

Scenarios:
  controlled  a topic with 6 partitions, replication factor 3 and
              min.insync.replicas 2; an acks=all producer runs while the
              leader of partition 0 gets SIGTERM. Before that process is
              gone, every partition has another leader and no ISR holds it:
              the state znodes read the moment it exits say so, and each
              was last written (mzxid) before its registration went (the
              pzxid of /brokers/ids), so the move came from ControlledShutdown,
              not from the broker leaving. The SIGTERM-to-new-leader time of
              partition 0 is printed. The producer loses no acknowledged
              record (a consumer reads all back at their offsets); the
              SIGTERM'd broker timed no produce out (it steps down once its
              leaderships moved) and no survivor truncated a partition more
              than 3 times (no truncate-and-refetch loop). The broker
              restarts and rejoins every ISR; ElectLeaders (preferred) on a
              broker that is not the controller answers NOT_CONTROLLER per
              partition; on the controller it moves each partition whose
              preferred replica is the restarted broker back to it (NONE) and
              answers ELECTION_NOT_NEEDED for the others, and the state
              znodes show every preferred replica leading.
  controller  the same with the SIGTERM sent to the controller itself (it
              answers its own ControlledShutdown over the network, as Kafka's
              controller does, then resigns on exit), and the election on
              the (new) controller made by Kafka 3.9's own
              kafka-leader-election (LeaderElectionCommand, build/java as
              for the kafka_tools tests): with --path-to-json-file naming
              the six partitions it reports the restarted broker's
              partitions elected and the others already led by their
              preferred replica; with --topic/--partition of one of the
              latter, that one already elected.
"""

import json
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import kafka_wire as kw  # noqa: E402
import test_cluster_replication as repl  # noqa: E402
import zookeeper  # noqa: E402
from harness import check, wait_until  # noqa: E402

CHROOT = repl.CHROOT
SESSION_MS = repl.SESSION_MS
PARTITIONS = 6


def state_with_stat(kz, topic, p):
    data, st = kz.get("/brokers/topics/%s/partitions/%d/state" % (topic, p))
    return json.loads(data.decode("utf-8")), st


def elect_leaders_v1(broker, partitions_by_topic, election_type=0):
    """Raw ElectLeaders v1; {(topic, partition): (error_code, message)} and the top-level code."""
    def topic(t):
        return kw.string(t[0]) + kw.array(t[1], kw.i32)
    items = None if partitions_by_topic is None else sorted(partitions_by_topic.items())
    body = kw.i8(election_type) + kw.array(items, topic) + kw.i32(30000)
    with kw.Conn(broker.port, timeout=40.0) as c:
        d = c.receive(c.send(43, 1, body))
    d.i32()  # throttle_time_ms
    top = d.i16()
    out = {}

    def partition(dd):
        return dd.i32(), dd.i16(), dd.string()

    def result(dd):
        name = dd.string()
        for pid, code, msg in dd.array(partition):
            out[(name, pid)] = (code, msg)
    d.array(result)
    return top, out


def tool_partitions(out, prefix):
    """The partitions of kafka-leader-election's line that starts with prefix, as a set of names."""
    lines = [ln for ln in out.splitlines() if ln.startswith(prefix)]
    check(len(lines) <= 1, "more than one %r line:\n%s" % (prefix, out))
    return set(lines[0][len(prefix):].strip().split(", ")) if lines else set()


def elect_with_kafka_tool(ctx, brokers, topic, prefers_victim):
    """Kafka 3.9's kafka-leader-election (LeaderElectionCommand, through its
    Admin client: the election goes to the controller whichever broker it
    bootstraps from) elects the preferred leaders of a JSON file's
    partitions, then is told one partition whose preferred leader leads."""
    batch = repl.tools_batch(ctx, "leader-election")
    plan = batch.file("elect.json", json.dumps(
        {"partitions": [{"topic": topic, "partition": p} for p in range(PARTITIONS)]}))
    boot = ",".join(b.bootstrap for b in brokers)
    main = "org.apache.kafka.tools.LeaderElectionCommand"
    batch.add("file", main, "--bootstrap-server", boot, "--election-type", "preferred", "--path-to-json-file", plan)
    settled = next(p for p in range(PARTITIONS) if p not in prefers_victim)
    batch.add("one", main, "--bootstrap-server", boot, "--election-type", "PREFERRED", "--topic", topic,
              "--partition", str(settled))
    batch.run()
    by_file, one = batch.out("file"), batch.out("one")
    print("[test] kafka-leader-election --path-to-json-file: %s; --topic --partition: %s" %
          (" / ".join(by_file.strip().splitlines()), " / ".join(one.strip().splitlines())), flush=True)
    moved = tool_partitions(by_file, "Successfully completed leader election (PREFERRED) for partitions ")
    noop = tool_partitions(by_file, "Valid replica already elected for partitions ")
    check(moved == {"%s-%d" % (topic, p) for p in prefers_victim} and
          noop == {"%s-%d" % (topic, p) for p in range(PARTITIONS) if p not in prefers_victim} and
          "Error completing" not in by_file, "kafka-leader-election --path-to-json-file said:\n%s" % by_file)
    check(tool_partitions(one, "Valid replica already elected for partitions ") == {"%s-%d" % (topic, settled)} and
          "Successfully completed" not in one, "kafka-leader-election --topic --partition said:\n%s" % one)


def scenario_controlled(ctx, zk):
    run_controlled(ctx, zk, victim_is_controller=False)


def scenario_controller(ctx, zk):
    run_controlled(ctx, zk, victim_is_controller=True)


def run_controlled(ctx, zk, victim_is_controller):
    brokers = repl.start_cluster(ctx, zk, extra={"auto.leader.rebalance.enable": "false"})
    by_id = {i + 1: b for i, b in enumerate(brokers)}
    kz = zk.client(CHROOT)
    repl.wait_formed(kz, brokers)
    topic = "cs"
    code, msg = repl.create(brokers, topic, PARTITIONS, 3, {"min.insync.replicas": "2"})
    check(code == 0, "CreateTopics: %s %s" % (code, msg))
    repl.wait_leaders(brokers, topic, PARTITIONS, want_isr=3)
    assignment = {int(p): r for p, r in repl.zk_json(kz, "/brokers/topics/%s" % topic)["partitions"].items()}

    acked = {}
    failures = {}
    debug_log = os.path.join(ctx.work, "producer-debug.log")
    t = threading.Thread(target=repl.produce, args=(brokers, topic, 0, 6000, acked, 0.03, failures, debug_log))
    t.start()
    wait_until(lambda: len(acked) >= 1000, 60, "1000 acknowledgements before the SIGTERM", interval=0.01)
    if victim_is_controller:
        victim_id = json.loads(kz.get("/controller")[0].decode())["brokerid"]
    else:
        victim_id = state_with_stat(kz, topic, 0)[0]["leader"]
    victim = by_id[victim_id]
    led = sorted(p for p in range(PARTITIONS) if state_with_stat(kz, topic, p)[0]["leader"] == victim_id)
    check(led, "the victim leads some partitions")
    first = led[0]
    victim.proc.send_signal(signal.SIGTERM)
    t_term = time.monotonic()
    print("[test] SIGTERM to broker %d (leader of partitions %s, %d acknowledged so far)" %
          (victim_id, led, len(acked)), flush=True)
    t_new_leader = None
    moved_mzxid = {}  # partition -> mzxid of the first state seen without the victim
    deadline = t_term + 60
    while time.monotonic() < deadline:
        for p in range(PARTITIONS):
            if p in moved_mzxid:
                continue
            s, st = state_with_stat(kz, topic, p)
            if s["leader"] not in (-1, victim_id) and victim_id not in s["isr"]:
                moved_mzxid[p] = st.mzxid
                if p == first and t_new_leader is None:
                    t_new_leader = time.monotonic()
        if victim.proc.poll() is not None:
            break
        time.sleep(0.002)  # a poll interval while waiting on the event, bounded by the deadline
    check(victim.proc.poll() is not None or time.monotonic() < deadline, "broker still running 60 s after SIGTERM")
    rc = victim.proc.wait(30)
    t_exit = time.monotonic()
    victim.proc = None
    check(rc == 0, "the SIGTERM'd broker exited %d" % rc)
    # The moment it is gone: every partition has another leader, no ISR holds it.
    ids_stat = kz.get("/brokers/ids")[1]
    for p in range(PARTITIONS):
        s, st = state_with_stat(kz, topic, p)
        check(s["leader"] not in (-1, victim_id) and victim_id not in s["isr"],
              "partition %d when broker %d exited: %s" % (p, victim_id, s))
        moved_mzxid.setdefault(p, st.mzxid)
        # Written before the registration went: the controlled shutdown moved it.
        check(moved_mzxid[p] < ids_stat.pzxid,
              "partition %d moved at zxid %d, after the registration went (%d): not by ControlledShutdown" %
              (p, moved_mzxid[p], ids_stat.pzxid))
    check(t_new_leader is not None, "partition %d's new leader was not seen before the broker exited" % first)
    print("[test] SIGTERM to new leader of partition %d: %.3fs; SIGTERM to exit: %.3fs (session timeout %.1fs)" %
          (first, t_new_leader - t_term, t_exit - t_term, SESSION_MS / 1000), flush=True)
    victim_log = victim.log_text()
    check("controlled shutdown: succeeded" in victim_log, "the broker's log does not say it succeeded")
    # Its listeners stopped only once every broker's Metadata showed the
    # move: a client that lost its connection asks a survivor where the
    # partitions went, and a stale answer sent it back to the dead broker.
    check("every broker's metadata shows the move" in victim_log,
          "the broker stopped its listeners before every broker's metadata showed the move")
    # Once its leaderships moved it answers NOT_LEADER_OR_FOLLOWER at once: it
    # never holds an acks=all produce until the stop's grace runs out.
    check("REQUEST_TIMED_OUT" not in victim_log,
          "the SIGTERM'd broker timed an acks=all produce out: %s" %
          [ln for ln in victim_log.splitlines() if "REQUEST_TIMED_OUT" in ln][:2])

    # Every survivor's Metadata, what clients route by, stops naming the
    # victim: the controller's UpdateMetadata reached each of them.
    survivors = [b for b in brokers if b is not victim]

    seen = {}

    def routed_off(b):
        md = seen[b.name] = repl.metadata(b, topic)
        return md is not None and len(md) == PARTITIONS and all(v[0] not in (-1, victim_id) for v in md.values())
    try:
        wait_until(lambda: all(routed_off(b) for b in survivors), 30,
                   "every surviving broker's Metadata to name leaders other than broker %d" % victim_id, interval=0.1)
    except harness.TestFailure:
        print("[test] the last Metadata (partition: (leader, replicas, ISR)) of each survivor: %s" % seen, flush=True)
        raise

    t.join(120)
    if t.is_alive() or failures:
        # What the clients are told, for the failure's reader.
        for b in survivors:
            print("[test] broker %s Metadata for %s: %s" % (b.name, topic, repl.metadata(b, topic)), flush=True)
        print("[test] failed deliveries by partition: %s; acknowledged by partition: %s" %
              (failures, {p: sum(1 for (q, _) in acked if q == p) for p in range(PARTITIONS)}), flush=True)
        # Where librdkafka routed each partition, and from which broker's answer.
        keys = ("Leader", "delegat", "QRYLEADER", "Received metadata", "Request metadata", "STATE")
        with open(debug_log, errors="replace") as f:
            lines = [ln.rstrip() for ln in f if any(k in ln for k in keys)]
        print("[test] the producer's last %d routing lines (of %d):" % (min(150, len(lines)), len(lines)), flush=True)
        for ln in lines[-150:]:
            print("  | " + ln[:240], flush=True)
    check(not t.is_alive(), "the producer did not finish")
    check(len(acked) == 6000, "%d of 6000 acknowledged" % len(acked))
    got = repl.read_all(survivors, topic, acked)
    missing = [k for k in acked if got.get(k) != acked[k]]
    check(not missing, "%d acknowledged records lost or changed, e.g. %s" % (len(missing), missing[:5]))
    print("[test] all %d acknowledged records read back" % len(acked), flush=True)
    # A follower truncates a partition once per leadership change at most; a
    # loop (a re-elected leader's epoch starting below a write in flight: the
    # follower truncating and fetching it back every few ms) would log it
    # thousands of times.
    for b in survivors:
        counts = {}
        for ln in b.log_text().splitlines():
            for p in range(PARTITIONS):
                if ("replica fetcher %s-%d: truncating from" % (topic, p)) in ln:
                    counts[p] = counts.get(p, 0) + 1
        check(all(n <= 3 for n in counts.values()),
              "broker %s truncated partitions over and over: %s" % (b.name, counts))

    victim.start()
    wait_until(lambda: all(sorted(state_with_stat(kz, topic, p)[0]["isr"]) == [1, 2, 3] for p in range(PARTITIONS)),
               60, "the restarted broker back in every ISR", interval=0.2)
    prefers_victim = sorted(p for p in range(PARTITIONS) if assignment[p][0] == victim_id)
    check(prefers_victim and all(state_with_stat(kz, topic, p)[0]["leader"] != victim_id for p in prefers_victim),
          "before ElectLeaders the restarted broker should lead none of %s" % prefers_victim)
    controller_id = json.loads(kz.get("/controller")[0].decode())["brokerid"]
    other = next(b for i, b in by_id.items() if i != controller_id)
    top, res = elect_leaders_v1(other, {topic: list(range(PARTITIONS))})
    check(top == 0 and all(res.get((topic, p), (None,))[0] == 41 for p in range(PARTITIONS)),
          "ElectLeaders on broker %s (not the controller): %s %s" % (other.name, top, res))
    t_elect = time.monotonic()
    if victim_is_controller:
        elect_with_kafka_tool(ctx, brokers, topic, prefers_victim)
    else:
        top, res = elect_leaders_v1(by_id[controller_id], {topic: list(range(PARTITIONS))})
        check(top == 0, "ElectLeaders top-level error %d" % top)
        for p in range(PARTITIONS):
            want = 0 if p in prefers_victim else 84  # NONE / ELECTION_NOT_NEEDED
            check(res.get((topic, p), (None,))[0] == want,
                  "ElectLeaders partition %d: %s (want %d)" % (p, res.get((topic, p)), want))
    for p in range(PARTITIONS):
        s, _ = state_with_stat(kz, topic, p)
        check(s["leader"] == assignment[p][0], "partition %d after ElectLeaders: %s, preferred %d" % (p, s, assignment[p][0]))
    print("[test] ElectLeaders moved partitions %s back to broker %d in %.3fs" %
          (prefers_victim, victim_id, time.monotonic() - t_elect), flush=True)
    repl.wait_leaders(brokers, topic, PARTITIONS, want_isr=3)
    # The restarted broker serves as leader again: a short acks=all run through it.
    more = {}
    repl.produce(brokers, topic, 6000, 300, more)
    check(len(more) == 300, "%d of 300 acknowledged after the election" % len(more))


SCENARIOS = {"controlled": scenario_controlled, "controller": scenario_controller}


def main(ctx):
    zookeeper.run_scenario(ctx, SCENARIOS)


if __name__ == "__main__":
    harness.run_test(main, total_timeout=170)
