"""tests/integration/test_config.py: a bad configuration value stops start-up.

`ciuickafka --config FILE --override num.partitions=abc` must exit non-zero
(not by a signal) within 15 s, and its output must name the key
`num.partitions` and the value `abc`. The same value coming from the
properties file must be reported the same way; and nothing may be listening
on the configured port afterwards.
"""

import os
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402


def run_bad(b, extra, label):
    cmd = b.command() + extra
    print("[config] %s: %s" % (label, " ".join(cmd)), flush=True)
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=15, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise harness.TestFailure("%s: broker still running after 15s (it should refuse to start)" % label)
    out = (p.stderr + p.stdout).decode("utf-8", "replace")
    print("[config] exit %d, output:\n%s" % (p.returncode, out[-2000:]), flush=True)
    check(p.returncode > 0, "%s: exit status %d, want a non-zero exit (negative = signal)" % (label, p.returncode))
    check("num.partitions" in out, "%s: output does not name the key num.partitions" % label)
    check("abc" in out, "%s: output does not show the value abc" % label)
    check(len(out) < 20000, "%s: %d bytes of output for one bad value" % (label, len(out)))
    with socket.socket() as s:
        s.settimeout(1)
        check(s.connect_ex(("127.0.0.1", b.port)) != 0, "%s: something listens on port %d" % (label, b.port))


def main(ctx):
    b = ctx.broker(start=False)
    run_bad(b, ["--override", "num.partitions=abc"], "--override num.partitions=abc")
    with open(b.config_path, "a") as f:
        f.write("num.partitions=abc\n")
    run_bad(b, [], "num.partitions=abc in the file")


if __name__ == "__main__":
    harness.run_test(main, total_timeout=60)
