"""tests/integration/test_sarama.py: sarama 1.22.1 (Go, Debian's sources) against the real broker.

Usage: test_sarama.py --broker BIN --work DIR VERSION CODEC
  VERSION v2_2 (V2_2_0_0: Produce v7, Fetch v10, record batches v2) or
  v0_10_2 (V0_10_2_0: Produce v2 with message format v1, Fetch v3).

Builds tests/clients/sarama_it offline (GOPATH=/usr/share/gocode,
GO111MODULE=off) into the work root (once; a file lock serialises parallel
tests; rebuilt when main.go is newer) and runs it: a SyncProducer with
WaitForAll, then a PartitionConsumer per partition reading everything back
(see main.go). The topic is auto-created (num.partitions=2).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def main(ctx):
    version, codec = (ctx.args + ["v2_2", "none"])[:2] if len(ctx.args) < 2 else ctx.args[:2]
    exe = harness.go_build(ctx, "sarama_it", "sarama-it")
    b = ctx.broker({"num.partitions": "2", "auto.create.topics.enable": "true"})
    topic = "sarama-%s-%s" % (version.replace("_", ""), codec)
    p = ctx.run([exe, "-broker", b.bootstrap, "-topic", topic, "-version", version,
                 "-codec", codec, "-n", "400"], timeout=90)
    print(p.stdout.decode(), end="")


if __name__ == "__main__":
    harness.run_test(main, total_timeout=330)
