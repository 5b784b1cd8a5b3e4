"""tests/integration/test_groups_durability.py: acknowledged commits survive kill -9.

Usage: test_groups_durability.py --broker BIN --work DIR

Two consumer-group members (tests/clients/confluent_group_member.py,
slowed so they commit about 20 times a second each) read a 3-partition
topic and commit synchronously after every batch, logging each batch before
committing it and each commit's outcome after. While they are committing the
broker is killed with SIGKILL, then the members are killed too. The broker is
restarted on the same data directory and OffsetFetch (confluent-kafka
committed()) must return, for every partition, at least the last commit a
member saw acknowledged, and only an offset some member actually tried to
commit (one in flight at the kill may or may not have landed). A new member
of the same group then resumes from exactly those offsets and reads the rest:
nothing lost, nothing re-read before the committed offsets. The cycle runs
twice on the same data directory.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, wait_until  # noqa: E402
from test_groups_confluent import Member, committed_offsets, produce, reads_of, with_members  # noqa: E402

PARTS = 3


def acked_and_tried(members):
    """{part: last acknowledged commit}, {part: set of every offset a member tried to commit}."""
    acked, tried = {}, {}
    for m in members:
        for e in m.events(0):
            if e["ev"] == "read":
                ends = {}
                for p, o, _k, _v in e["m"]:
                    ends[p] = max(ends.get(p, 0), o + 1)
                for p, o in ends.items():
                    tried.setdefault(p, set()).add(o)
            elif e["ev"] == "commit" and e["ok"]:
                for p, o in e["offs"].items():
                    acked[int(p)] = max(acked.get(int(p), -1), o)
    return acked, tried


def cycle(ctx, b, topic, group, n, produced, pace):
    members = [Member(ctx, b, "m%d-%d" % (n, i), group, topic, pace_file=pace) for i in range(2)]
    ctx.members += members
    open(pace, "w").close()
    for m in members:
        m.start()

    def enough():
        acked, _ = acked_and_tried(members)
        return len(acked) == PARTS and sum(1 for m in members for e in m.events(0)
                                            if e["ev"] == "commit" and e["ok"]) >= 30
    wait_until(enough, 40, "30 acknowledged commits on every partition", interval=0.1)
    b.kill()
    for m in members:
        m.kill()
    acked, tried = acked_and_tried(members)
    b.start()
    got = committed_offsets(b, group, topic, PARTS)
    print("[test] cycle %d: acknowledged %s, after kill -9 and restart %s" % (n, acked, got), flush=True)
    for p in range(PARTS):
        check(got[p] >= acked[p], "partition %d: committed %d after restart, %d had been acknowledged" %
              (p, got[p], acked[p]))
        check(got[p] in tried[p], "partition %d: committed %d after restart was never committed by a member" %
              (p, got[p]))

    # A new member resumes from exactly those offsets and reads the rest once.
    os.remove(pace)
    r = Member(ctx, b, "r%d" % n, group, topic)
    ctx.members.append(r)
    r.start()
    total = sum(1 for (p, o) in produced if o >= got[p])
    wait_until(lambda: len(reads_of([r])) >= total, 60, "the new member to read the %d left" % total,
               interval=0.25)
    reads = reads_of([r])
    check(len(reads) == total, "new member read %d, %d were left" % (len(reads), total))
    seen = {(x[2], x[3]) for x in reads}
    want = {(p, o) for (p, o) in produced if o >= got[p]}
    check(seen == want, "new member read %d messages, not exactly the %d past the commits" % (len(seen), len(want)))
    for x in reads:
        check(produced[(x[2], x[3])] == (x[4], x[5]), "content of %d/%d" % (x[2], x[3]))
    r.stop()
    wait_until(lambda: committed_offsets(b, group, topic, PARTS) ==
               {p: max(o for (q, o) in produced if q == p) + 1 for p in range(PARTS)},
               15, "commits at the end offsets")


def main(ctx):
    b = ctx.broker({"group.initial.rebalance.delay.ms": "0"})
    topic, group = "groups-durable", "ck-it-group-durable"
    pace = os.path.join(ctx.work, "pace")
    b.create_topic(topic, PARTS)

    def body():
        produced = produce(b, topic, 0, 12000, 1)
        cycle(ctx, b, topic, group, 1, produced, pace)
        produced.update(produce(b, topic, 12000, 12000, 2))
        cycle(ctx, b, topic, group, 2, produced, pace)

    with_members(ctx, body)


if __name__ == "__main__":
    harness.run_test(main, total_timeout=180)
