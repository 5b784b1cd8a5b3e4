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

import fcntl
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402

SRC = os.path.join(harness.CLIENTS, "sarama_group")


def build(ctx):
    go = shutil.which("go")
    check(go is not None, "go not on PATH (apt-get install golang-go golang-github-shopify-sarama-dev)")
    root = os.path.dirname(ctx.work)
    out = os.path.join(root, "sarama-group")
    with open(os.path.join(root, "sarama-group.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        src = os.path.join(SRC, "main.go")
        if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(src):
            env = {"GOPATH": "/usr/share/gocode", "GO111MODULE": "off", "GOFLAGS": "",
                   "GOCACHE": os.path.join(root, "gocache")}
            ctx.run([go, "build", "-o", out + ".tmp", "."], timeout=240, env=env, cwd=SRC)
            os.replace(out + ".tmp", out)
    return out


def main(ctx):
    exe = build(ctx)
    b = ctx.broker({"num.partitions": "3", "auto.create.topics.enable": "true",
                    "group.initial.rebalance.delay.ms": "0"})
    p = ctx.run([exe, "-broker", b.bootstrap, "-topic", "sarama-group", "-group", "ck-it-sarama-group",
                 "-n", "900"], timeout=100)
    print(p.stdout.decode(), end="")


if __name__ == "__main__":
    harness.run_test(main, total_timeout=330)
