"""tests/integration/test_groups_kafka_python.py: a kafka-python consumer group restarts from its commits.

Usage: test_groups_kafka_python.py --broker BIN --work DIR

Two kafka-python member processes (tests/clients/kafka_python_group_member.py)
share a 4-partition topic (2 partitions each). 8,000 keyed messages are
produced while they run slowed down, so both are stopped (SIGTERM: finish
the batch, commit synchronously, close() = LeaveGroup) mid-stream. The
committed offsets (kafka-python KafkaAdminClient.list_consumer_group_offsets)
must equal where each member's acknowledged commits ended. 4,000 more are
produced and both are started again: together the two runs read every
message exactly once, the second run starting exactly at the commits, and
the group ends committed at the end offsets.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, wait_until  # noqa: E402
from test_groups_confluent import Member, check_reads, end_offsets, produce, reads_of  # noqa: E402

SCRIPT = os.path.join(harness.CLIENTS, "kafka_python_group_member.py")
PARTS = 4


def committed(b, group, topic):
    from kafka import KafkaAdminClient
    a = KafkaAdminClient(bootstrap_servers=b.bootstrap, client_id="ck-it-kp-admin")
    try:
        if hasattr(a, "list_group_offsets"):  # kafka-python 3.x's name (OffsetFetch v8+ batches groups)
            got = a.list_group_offsets({group: None})[group]
        else:  # 2.0.2
            got = a.list_consumer_group_offsets(group)
    finally:
        a.close()
    return {tp.partition: om.offset for tp, om in got.items() if tp.topic == topic}


def last_acked(members):
    acked = {}
    for m in members:
        for e in m.events(0):
            if e["ev"] == "commit" and e["ok"]:
                for p, o in e["offs"].items():
                    acked[int(p)] = max(acked.get(int(p), 0), o)
    return acked


def main(ctx):
    ctx.members = []
    b = ctx.broker({"group.initial.rebalance.delay.ms": "1000"})
    topic, group = "groups-kafka-python", "ck-it-group-kafka-python"
    b.create_topic(topic, PARTS)
    pace = os.path.join(ctx.work, "pace")
    members = [Member(ctx, b, n, group, topic, pace_file=pace, script=SCRIPT) for n in ("p", "q")]
    ctx.members = members
    try:
        open(pace, "w").close()
        for m in members:
            m.start()
        wait_until(lambda: all(len(m.assignment()) == 2 for m in members) and
                   members[0].assignment() | members[1].assignment() == set(range(PARTS)),
                   40, "2 kafka-python members owning 2 partitions each")
        produced = produce(b, topic, 0, 8000, 1)
        wait_until(lambda: len({r[2] for r in reads_of(members)}) == PARTS, 40, "reads from every partition")
        t0 = time.monotonic()
        for m in members:
            m.proc.send_signal(15)
        for m in members:
            m.stop(signalled=True)
        print("[test] both stopped in %.1fs after %d reads" % (time.monotonic() - t0, len(reads_of(members))),
              flush=True)
        acked = last_acked(members)
        got = committed(b, group, topic)
        print("[test] acknowledged %s, OffsetFetch %s" % (acked, got), flush=True)
        check(got == acked and len(got) == PARTS,
              "committed offsets %s != last acknowledged commits %s" % (got, acked))
        check(sum(got.values()) < len(produced), "everything had been read before the stop")

        os.remove(pace)
        produced.update(produce(b, topic, 8000, 4000, 2))
        for m in members:
            m.start()
        wait_until(lambda: len({(r[2], r[3]) for r in reads_of(members)}) >= len(produced), 60,
                   "the restarted group to read the rest", interval=0.25)
        # Exactly once unless a commit was refused (a rebalance while the pair stopped); then
        # only batches no acknowledged commit covered may be read again.
        failed = [e for m in members for e in m.events(0) if e["ev"] == "commit" and not e["ok"]]
        _, dups = check_reads(members, produced, exactly_once=not failed)
        print("[test] refused commits %s, re-reads %d" % ([e["err"] for e in failed], len(dups)), flush=True)
        second = {}
        for m in members:
            for e in m.events():  # the current (second) incarnation only
                for p, o, _k, _v in (e["m"] if e["ev"] == "read" else []):
                    second[p] = min(second.get(p, o), o)
        check(second == got, "the second run started at %s, the commits were %s" % (second, got))
        ends = end_offsets(produced, PARTS)
        wait_until(lambda: committed(b, group, topic) == ends, 15, "commits at the end offsets %s" % ends)
        for m in members:
            m.stop()
        print("[test] all 12000 read across the restart (%d re-reads); committed %s" % (len(dups), ends), flush=True)
    except BaseException:
        for m in members:
            m.show_tail_if(True)
        raise
    finally:
        for m in members:
            if m.alive():
                m.proc.kill()
                m.proc.wait(10)


if __name__ == "__main__":
    harness.run_test(main, total_timeout=150)
