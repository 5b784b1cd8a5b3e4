"""tests/integration/test_groups_kafkajs.py: kafkajs 2.2.4 consumer group and group admin.

Usage: test_groups_kafkajs.py --broker BIN --work DIR

Runs tests/clients/kafkajs_group.js: a Consumer with eachBatch and manual
commitOffsets; admin listGroups, describeGroups (Stable while running, Empty
after), deleteGroups of a live group refused (GROUP_NOT_EMPTY), fetchOffsets
equal to the end offsets, a second run resuming from the commits,
resetOffsets earliest followed by a full re-read, deleteGroups. kafkajs
comes from `npm ci` in tests/clients; a missing install is a failure.
"""

import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402


def main(ctx):
    node = shutil.which("node")
    check(node is not None, "node not on PATH")
    check(os.path.isdir(os.path.join(harness.CLIENTS, "node_modules", "kafkajs")),
          "kafkajs not installed: run (cd tests/clients && npm ci)")
    b = ctx.broker({"group.initial.rebalance.delay.ms": "0"})
    p = ctx.run([node, os.path.join(harness.CLIENTS, "kafkajs_group.js"), str(b.port)],
                timeout=160, cwd=harness.CLIENTS, env={"KAFKAJS_NO_PARTITIONER_WARNING": "1"})
    print(p.stdout.decode(), end="")


if __name__ == "__main__":
    harness.run_test(main, total_timeout=180)
