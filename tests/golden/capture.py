#!/usr/bin/python3
"""tests/golden/capture.py: records golden request frames from real Kafka clients.

For each scenario below it starts a fake broker (kafka_fake.py) on
127.0.0.1:<free port>, runs one real client against it with a time limit,
and stores every request frame the client sent as hex under
tests/data/golden/<client>/<scenario>/NN_<Api>_v<version>.hex. Produce
scenarios also get an expect.txt listing the codec and the records the
client was told to send, which golden_test.cc checks the batches against.

Usage (from anywhere; run with Debian's /usr/bin/python3, which has the
Python clients):
  tests/golden/capture.py                 # every scenario
  tests/golden/capture.py kcat sarama     # scenarios whose client/name contains a word
  tests/golden/capture.py --list
  tests/golden/capture.py --listen        # just the fake broker, printing requests
Needs kcat, node (with tests/clients/node_modules from `npm ci`), go and
Debian's sarama sources; see tests/data/golden/README.md.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CLIENTS = os.path.join(ROOT, "tests", "clients")
DATA = os.path.join(ROOT, "tests", "data", "golden")
sys.path.insert(0, HERE)
sys.path.insert(0, CLIENTS)

import golden_messages as gm  # noqa: E402
import kafka_fake  # noqa: E402

PY = "/usr/bin/python3"
TOPIC = "golden"
TIMEOUT_S = 40


def kcat_produce(codec):
    return (["kcat", "-b", "127.0.0.1:{port}", "-P", "-t", TOPIC, "-p", "0", "-K", ":",
             "-H", "client=kcat", "-H", "trace=golden",
             "-X", "client.id=kcat-golden", "-X", "broker.address.family=v4",
             "-X", "compression.codec=" + codec],
            "".join("%s:%s\n" % (gm.key(i), gm.value(i)) for i in range(gm.COUNT)))


# (client, scenario, (argv, stdin) or argv, produce expectation or None).
# An expectation is (codec, magic, header client tag or None[, producer id]).
def scenarios(sarama_bin):
    s = [("kcat", "metadata",
          ["kcat", "-b", "127.0.0.1:{port}", "-L", "-m", "10",
           "-X", "client.id=kcat-golden", "-X", "broker.address.family=v4"], None)]
    for c in ["none", "gzip", "snappy", "lz4", "zstd"]:
        s.append(("kcat", "produce-" + c, kcat_produce(c), (c, 2, "kcat")))
    for c in ["none", "gzip", "snappy", "lz4"]:
        s.append(("kafka-python", "produce-" + c,
                  [PY, "kafka_python_produce.py", "{port}", TOPIC, c], (c, 2, "kafka-python")))
    s.append(("kafka-python", "produce-legacy-gzip",
              [PY, "kafka_python_produce.py", "{port}", TOPIC, "gzip", "--legacy"],
              ("gzip", 1, None)))
    s.append(("kafka-python", "admin", [PY, "kafka_python_admin.py", "{port}"], None))
    s.append(("confluent-kafka-python", "produce-idempotent-zstd",
              [PY, "confluent_produce.py", "{port}", TOPIC, "zstd", "--idempotent"],
              ("zstd", 2, "confluent-kafka-python", kafka_fake.PRODUCER_ID)))
    for c in ["none", "gzip"]:
        s.append(("kafkajs", "produce-" + c,
                  ["node", "kafkajs_produce.js", "{port}", TOPIC, c], (c, 2, "kafkajs")))
    for version, c, magic in [("v2_2", "none", 2), ("v2_2", "zstd", 2), ("default", "none", 0)]:
        s.append(("sarama", "produce-%s-%s" % (version, c),
                  [sarama_bin, "-broker", "127.0.0.1:{port}", "-topic", TOPIC,
                   "-version", version, "-codec", c],
                  (c, magic, "sarama" if magic == 2 else None)))
    return s


def build_sarama(tmp):
    out = os.path.join(tmp, "sarama-golden")
    env = dict(os.environ, GOPATH="/usr/share/gocode", GO111MODULE="off",
               GOCACHE=os.path.join(tmp, "gocache"), GOFLAGS="")
    subprocess.run(["go", "build", "-o", out, "."], cwd=os.path.join(CLIENTS, "sarama"),
                   env=env, check=True, timeout=300)
    return out


def write_expect(path, client, scenario, expect):
    codec, magic, tag = expect[:3]
    lines = ["# Written by tests/golden/capture.py: what the client was told to send.",
             "client %s" % client, "scenario %s" % scenario, "topic %s" % TOPIC,
             "codec %s" % codec, "magic %d" % magic]
    if len(expect) > 3:
        lines.append("producer_id %d" % expect[3])
    for i in range(gm.COUNT):
        hdrs = " ".join("%s=%s" % kv for kv in gm.headers(tag)) if tag else ""
        lines.append(("record %s %s %s" % (gm.key(i), gm.value(i), hdrs)).rstrip())
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def run_scenario(client, scenario, cmd, expect, verbose):
    outdir = os.path.join(DATA, client, scenario)
    shutil.rmtree(outdir, ignore_errors=True)
    rec = kafka_fake.Recorder(outdir)
    log = (lambda m: print("    " + m)) if verbose else None
    broker = kafka_fake.FakeBroker(rec, default_topic=TOPIC, log=log)
    argv, stdin = cmd if isinstance(cmd, tuple) else (cmd, None)
    argv = [a.replace("{port}", str(broker.port)) for a in argv]
    start = time.time()
    try:
        p = subprocess.run(argv, cwd=CLIENTS, input=stdin, text=True, capture_output=True,
                           timeout=TIMEOUT_S)
        rc = p.returncode
        tail = (p.stdout + p.stderr).strip().splitlines()[-3:]
    except subprocess.TimeoutExpired:
        rc, tail = "timeout", []
    finally:
        broker.close()
    if expect:
        write_expect(os.path.join(outdir, "expect.txt"), client, scenario, expect)
    print("%-24s %-26s rc=%s %.1fs %s" % (client, scenario, rc, time.time() - start,
                                          " ".join(rec.files)))
    if rc != 0:
        for line in tail:
            print("    | " + line)
    return rc == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("filters", nargs="*", help="run scenarios whose client/name contains one")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--listen", action="store_true", help="run only the fake broker")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()

    if args.listen:
        outdir = tempfile.mkdtemp(prefix="golden-listen-")
        broker = kafka_fake.FakeBroker(kafka_fake.Recorder(outdir), log=print)
        print("listening on 127.0.0.1:%d, frames go to %s (Ctrl-C stops)" % (broker.port, outdir))
        try:
            while True:
                time.sleep(1)
        except KeyboardInterrupt:
            broker.close()
        return 0

    with tempfile.TemporaryDirectory(prefix="golden-capture-") as tmp:
        chosen = [s for s in scenarios(os.path.join(tmp, "sarama-golden"))
                  if not args.filters or any(f in s[0] + "/" + s[1] for f in args.filters)]
        if args.list:
            for s in chosen:
                print("%s/%s" % (s[0], s[1]))
            return 0
        if any(s[0] == "sarama" for s in chosen):
            build_sarama(tmp)
        failed = [s for s in chosen if not run_scenario(*s, verbose=args.verbose)]
    if failed:
        print("FAILED: " + ", ".join("%s/%s" % (s[0], s[1]) for s in failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
