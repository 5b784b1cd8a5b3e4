"""tests/integration/test_go_clients.py: today's Go clients (franz-go, IBM sarama).

Usage: test_go_clients.py --broker BIN --work DIR franz|sarama [--expect-versions ...]

Runs build/go/franz-it (tests/clients/franz_it: franz-go with kadm) or
build/go/sarama-it (tests/clients/sarama_new_it: IBM/sarama, Version
V3_9_0_0) against one broker: admin calls, acks=all produce, a direct
consumer, a committing group member and then two members resuming at its
commits, DeleteTopics (each program's header says exactly what it checks).
deploy/install-deps.sh builds both programs from their committed go.mod and
go.sum; a missing program fails the test (nothing is built at test time).
With --expect-versions the harness then checks, from the broker's request
counters, the request versions the client sent.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402

PROGRAMS = {"franz": "franz-it", "sarama": "sarama-it"}


def main(ctx):
    client = (ctx.args or ["franz"])[0]
    check(client in PROGRAMS, "unknown client %s" % client)
    exe = os.path.join(harness.REPO, "build", "go", PROGRAMS[client])
    check(os.access(exe, os.X_OK), "%s not built (run deploy/install-deps.sh)" % exe)
    b = ctx.broker({"group.initial.rebalance.delay.ms": "0"})
    p = ctx.run([exe, "-broker", b.bootstrap, "-n", "400"], timeout=110)
    print(p.stdout.decode(), end="")
    check(b"delete ok" in p.stdout, "%s did not reach its last step" % exe)


if __name__ == "__main__":
    harness.run_test(main, total_timeout=150)
