"""tests/integration/test_docs.py: what the READMEs say is there (issue #18, point 5).

Usage: test_docs.py --broker BIN --work DIR

- broker/README.md's "The APIs served" table equals a running broker's
  ApiVersions v0 answer (every key with its min and max version, no key
  missing or extra), and every handler file the table names exists.
- Every repository path README.md names in backticks or links (under
  broker/, protocol/, storage/, replication/, metrics/, tests/, deploy/,
  .ci/) exists: as written, or as the source of the binary it names
  (tests/bench/group_bench -> group_bench.cc).
- deploy/run.sh with `--override listeners=PLAINTEXT://127.0.0.1:P` (another
  port than its default) advertises P in Metadata, not 9092, and serves
  metrics on the loopback address given; SIGTERM stops it with exit 0.
"""

import os
import re
import signal
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import kafka_wire  # noqa: E402
from harness import check, wait_until  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOPS = ("broker/", "protocol/", "storage/", "replication/", "metrics/", "tests/", "deploy/", ".ci/")


def api_table():
    """(key, min, max) -> handler path, from broker/README.md."""
    text = open(os.path.join(REPO, "broker", "README.md")).read()
    start = text.index("## The APIs served")
    rows = {}
    for line in text[start:].splitlines()[1:]:
        if line.startswith("## "):
            break
        m = re.match(r"\|\s*(\d+)\s*\|\s*(\w+)\s*\|\s*(\d+)-(\d+)\s*\|\s*`([^`]+)`\s*\|", line)
        if m:
            rows[int(m.group(1))] = (int(m.group(3)), int(m.group(4)), m.group(2), m.group(5))
    return rows


def readme_paths():
    text = open(os.path.join(REPO, "README.md")).read()
    toks = set(re.findall(r"`([^`\s]+)`", text)) | set(re.findall(r"\]\(([^)\s#]+)", text))
    out = set()
    for t in toks:
        t = t.rstrip(".,:;")
        if t.startswith(TOPS) and not any(c in t for c in "*<>{}$="):
            out.add(t.split(":")[0])
    return sorted(out)


def exists(path):
    p = os.path.join(REPO, path)
    return any(os.path.exists(p + ext) for ext in ("", ".cc", ".py", ".sh"))


def run_sh(ctx):
    port, mport = harness.free_port(), harness.free_port()
    data = os.path.join(ctx.work, "test_docs-run-sh")
    env = dict(os.environ, CIUIC_BIN=ctx.binary, DATA_DIR=data)
    log = open(os.path.join(ctx.work, "test_docs-run-sh.log"), "wb")
    proc = subprocess.Popen([os.path.join(REPO, "deploy", "run.sh"),
                             "--override", "listeners=PLAINTEXT://127.0.0.1:%d" % port,
                             "--override", "ciuic.metrics.listener=127.0.0.1:%d" % mport],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        md = []

        def answered():
            try:
                with kafka_wire.Conn(port, timeout=2.0) as c:
                    md.append(c.metadata())
                return True
            except OSError:
                check(proc.poll() is None, "run.sh exited %s" % proc.returncode)
                return False
        wait_until(answered, 30, "run.sh's broker to answer on port %d" % port, interval=0.1)
        brokers = md[-1]["brokers"]
        check([(h, p) for _, h, p, _ in brokers] == [("127.0.0.1", port)],
              "run.sh's broker advertises %s, not the 127.0.0.1:%d it listens on" % (brokers, port))
        body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mport, timeout=5).read().decode()
        check("kafka_server" in body, "no broker metrics on 127.0.0.1:%d" % mport)
        proc.send_signal(signal.SIGTERM)
        check(proc.wait(30) == 0, "run.sh's broker exited %s on SIGTERM" % proc.returncode)
        print("[test] run.sh: advertises 127.0.0.1:%d, metrics on 127.0.0.1:%d, clean exit" % (port, mport))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()


def main(ctx):
    table = api_table()
    check(len(table) >= 30, "broker/README.md's API table has only %d rows" % len(table))
    b = ctx.broker()
    with kafka_wire.Conn(b.port) as c:
        err, apis = c.api_versions()
    check(err == 0, "ApiVersions error %d" % err)
    served = dict(apis)
    documented = {k: (v[0], v[1]) for k, v in table.items()}
    missing = sorted(k for k in served if k not in documented)
    extra = sorted(k for k in documented if k not in served)
    wrong = sorted((k, documented[k], served[k]) for k in served if k in documented and served[k] != documented[k])
    check(not missing and not extra and not wrong,
          "broker/README.md's API table is not what the broker serves: undocumented %s, not served %s, "
          "versions differ (key, README, broker) %s" % (missing, extra, wrong))
    for k, (_, _, name, handler) in table.items():
        check(os.path.exists(os.path.join(REPO, "broker", handler)), "%s (%d): no file broker/%s" % (name, k, handler))
    print("[test] API table: %d APIs, as served" % len(table))

    paths = readme_paths()
    gone = [p for p in paths if not exists(p)]
    check(not gone, "README.md names paths that do not exist: %s" % gone)
    print("[test] README.md: %d repository paths, all present" % len(paths))
    run_sh(ctx)


if __name__ == "__main__":
    harness.run_test(main, total_timeout=60)
