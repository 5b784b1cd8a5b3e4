"""tests/integration/test_groups_sarama.py: sarama 1.22.1 ConsumerGroup (Go, Debian's sources).

Usage: test_groups_sarama.py --broker BIN --work DIR

Builds tests/clients/sarama_group offline (GOPATH=/usr/share/gocode,
GO111MODULE=off) into the work root (once; a file lock serialises parallel
tests; rebuilt when main.go is newer) and runs it (see main.go): a first
ConsumerGroup session reads half of 900 messages and marks them; the
committed offsets equal the marks; a second session starts exactly there,
and every message is read once over both; the group ends Empty, committed
at the end offsets.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def main(ctx):
    exe = harness.go_build(ctx, "sarama_group", "sarama-group")
    b = ctx.broker({"num.partitions": "3", "auto.create.topics.enable": "true",
                    "group.initial.rebalance.delay.ms": "0"})
    p = ctx.run([exe, "-broker", b.bootstrap, "-topic", "sarama-group", "-group", "ck-it-sarama-group",
                 "-n", "900"], timeout=100)
    print(p.stdout.decode(), end="")


if __name__ == "__main__":
    harness.run_test(main, total_timeout=330)
