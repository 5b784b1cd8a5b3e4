"""tests/integration/test_kafkajs.py: kafkajs 2.2.4 (node) against the real broker.

Usage: test_kafkajs.py --broker BIN --work DIR [group]

Runs tests/clients/kafkajs_it.js (admin createTopics/fetchTopicMetadata,
producer with GZIP, reading back by kafkajs' own Fetch without a consumer
group). kafkajs comes from `npm ci` in tests/clients (deploy/install-deps.sh
does it); a missing install is a failure, not a skip.

kafkajs' public Consumer needs a consumer group (issue #5); that flow is
the separate test integration_kafkajs_group_consumer (argument `group`).
With `txn`, tests/clients/kafkajs_txn.js runs kafkajs' transactional
producer instead (issue #13): integration_kafkajs_transactions.
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
    b = ctx.broker()
    if ctx.args[:1] == ["txn"]:
        p = ctx.run([node, os.path.join(harness.CLIENTS, "kafkajs_txn.js"), str(b.port)], timeout=100,
                    cwd=harness.CLIENTS)
    else:
        p = ctx.run([node, os.path.join(harness.CLIENTS, "kafkajs_it.js"), str(b.port)] + ctx.args[:1],
                    timeout=100, cwd=harness.CLIENTS)
    print(p.stdout.decode(), end="")


if __name__ == "__main__":
    harness.run_test(main, total_timeout=130)
