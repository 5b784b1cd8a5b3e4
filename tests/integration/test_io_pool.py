"""tests/integration/test_io_pool.py: creating and deleting topics does not
stall the network thread (issue #16, point 2: num.io.threads).

Usage: test_io_pool.py --broker BIN --work DIR

The broker runs on the in-memory file system of test builds with a disk
whose every file and directory sync takes 20 ms (CK_TEST_MEMFS=1,
CK_TEST_MEMFS_SYNC_US=20000) and one network thread. While a second client
on that thread sends ApiVersions in a loop, one client creates a topic of 20
partitions (CreateTopics), auto-creates one of 20 by asking Metadata for it,
adds 20 partitions to the first (CreatePartitions), then deletes the second
(DeleteTopics). Each step's directories, files and syncs take seconds on
this disk. Done on the network thread (as before this issue), each would
hold the prober for as long; done on the I/O pool, the prober's round trips
stay short. Checked: every step succeeds, took long enough for the test to
mean something (1 s or more), and no ApiVersions round trip took as long as
a third of the fastest step or 1 s.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402

PARTITIONS = 20


def main(ctx):
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
    b = ctx.broker({"num.network.threads": "1", "num.partitions": str(PARTITIONS), "num.io.threads": "2"},
                   env={"CK_TEST_MEMFS": "1", "CK_TEST_MEMFS_SYNC_US": "20000"})
    admin = AdminClient({"bootstrap.servers": b.bootstrap, "broker.address.family": "v4",
                         "socket.timeout.ms": 120000})
    steps = []

    def step(name, fn):
        t0 = time.monotonic()
        fn()
        steps.append((name, time.monotonic() - t0))

    def create():
        for f in admin.create_topics([NewTopic("made", PARTITIONS, 1)], operation_timeout=120).values():
            f.result(120)

    def auto_create():
        with b.conn(timeout=120) as c:
            md = c.metadata(["auto"])
        t = [t for t in md["topics"] if t["name"] == "auto"]
        check(t and t[0]["error"] == 0 and len(t[0]["partitions"]) == PARTITIONS,
              "Metadata did not auto-create topic auto with %d partitions: %r" % (PARTITIONS, t))

    def add_partitions():
        for f in admin.create_partitions([NewPartitions("made", PARTITIONS + 20)], operation_timeout=120).values():
            f.result(120)

    def delete():
        for f in admin.delete_topics(["auto"], operation_timeout=120).values():
            f.result(120)

    with harness.ApiVersionsProber(b) as prober:
        step("CreateTopics", create)
        step("Metadata auto-create", auto_create)
        step("CreatePartitions", add_partitions)
        step("DeleteTopics", delete)
    worst = prober.worst()
    print("[test] %s; %d ApiVersions round trips meanwhile, slowest %.0f ms, median %.1f ms"
          % (", ".join("%s %.1fs" % s for s in steps), len(prober.latencies), worst * 1000,
             prober.median() * 1000), flush=True)
    fastest = min(s[1] for s in steps)
    check(fastest >= 1.0, "a step took %.2fs: the slow disk did not slow it, so the test shows nothing" % fastest)
    check(worst < min(1.0, fastest / 3),
          "an ApiVersions round trip took %.0f ms while topics were created or deleted (the fastest step took "
          "%.1fs): the network thread was held" % (worst * 1000, fastest))


if __name__ == "__main__":
    harness.run_test(main, total_timeout=240)
