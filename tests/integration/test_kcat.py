"""tests/integration/test_kcat.py: kcat (librdkafka 2.0.2) against the real broker.

Usage: test_kcat.py --broker BIN --work DIR metadata|gzip|snappy|lz4|zstd

metadata: `kcat -L -J` lists the broker (id, 127.0.0.1:port) and a topic
created beforehand with its 3 partitions, each led by that broker.

<codec>: `kcat -P -z <codec>` produces 1,000 keyed messages (key
delimiter ':') into an auto-created 3-partition topic; `kcat -C -e` (simple
consumer, no group) reads everything back. The multiset of (key, value) must
equal what was sent, exactly once each; every key lands in one partition;
offsets per partition are 0..n-1 without gaps. A raw Fetch then checks that
the stored batches carry the producer's codec (compression.type=producer
keeps batches as sent) and valid CRCs.
"""

import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402
import kafka_wire  # noqa: E402

COUNT = 1000
KCAT = "kcat"
COMMON = ["-X", "broker.address.family=v4", "-X", "socket.timeout.ms=10000"]


def messages():
    # Values vary in length and content so that every codec has work to do;
    # none contains the delimiters ':' or '\n'.
    out = []
    for i in range(COUNT):
        key = "key-%04d" % (i % 97)
        value = "value-%d-" % i + ("abcdefghij" * (i % 13)) + "-end"
        out.append((key, value))
    return out


def test_metadata(ctx):
    b = ctx.broker({"num.partitions": "3"})
    b.create_topic("kcat-meta", 3)
    p = ctx.run([KCAT, "-b", b.bootstrap, "-L", "-J"] + COMMON, timeout=30)
    md = json.loads(p.stdout)
    brokers = md.get("brokers", [])
    check(len(brokers) == 1, "kcat -L: want 1 broker, got %r" % brokers)
    check(brokers[0].get("name") == "127.0.0.1:%d" % b.port,
          "kcat -L: broker name %r, want 127.0.0.1:%d" % (brokers[0].get("name"), b.port))
    node = brokers[0].get("id")
    topics = {t["topic"]: t for t in md.get("topics", [])}
    check("kcat-meta" in topics, "kcat -L: topic kcat-meta missing from %r" % list(topics))
    t = topics["kcat-meta"]
    check(not t.get("error"), "kcat -L: topic error %r" % t.get("error"))
    parts = sorted(t["partitions"], key=lambda p: p["partition"])
    check([p["partition"] for p in parts] == [0, 1, 2], "kcat -L: partitions %r" % parts)
    for p in parts:
        check(p.get("leader") == node, "kcat -L: partition %d leader %r, want %r" % (p["partition"], p.get("leader"), node))
        check([r["id"] for r in p.get("replicas", [])] == [node], "kcat -L: replicas %r" % p.get("replicas"))
        check([r["id"] for r in p.get("isrs", [])] == [node], "kcat -L: isrs %r" % p.get("isrs"))


def test_codec(ctx, codec):
    b = ctx.broker({"num.partitions": "3", "auto.create.topics.enable": "true"})
    topic = "kcat-" + codec
    sent = messages()
    data = "".join("%s:%s\n" % kv for kv in sent).encode()
    ctx.run([KCAT, "-P", "-b", b.bootstrap, "-t", topic, "-K", ":", "-z", codec,
             "-X", "acks=all", "-X", "linger.ms=20"] + COMMON,
            timeout=60, input_bytes=data)
    p = ctx.run([KCAT, "-C", "-b", b.bootstrap, "-t", topic, "-o", "beginning", "-e",
                 "-f", "%p\t%o\t%k\t%s\n"] + COMMON, timeout=60)
    lines = p.stdout.decode().splitlines()
    got = []
    for line in lines:
        part, off, key, value = line.split("\t")
        got.append((int(part), int(off), key, value))
    check(len(got) == COUNT, "kcat -C read %d messages, want %d (stderr: %s)" %
          (len(got), COUNT, p.stderr.decode()[-2000:]))
    want_ms = collections.Counter(sent)
    got_ms = collections.Counter((k, v) for _, _, k, v in got)
    missing = want_ms - got_ms
    extra = got_ms - want_ms
    check(not missing and not extra, "key/value mismatch: missing %r extra %r" %
          (list(missing.items())[:5], list(extra.items())[:5]))
    key_part = {}
    per_part = collections.defaultdict(list)
    for part, off, key, _ in got:
        check(key_part.setdefault(key, part) == part, "key %s in partitions %d and %d" % (key, key_part[key], part))
        per_part[part].append(off)
    for part, offs in per_part.items():
        check(offs == list(range(len(offs))), "partition %d offsets not 0..n-1: %r" % (part, offs[:20]))
        # Per-key order within a partition is the send order.
    for key in set(k for k, _ in sent):
        sent_vals = [v for k, v in sent if k == key]
        got_vals = [v for _, _, k, v in sorted(got) if k == key]
        check(sent_vals == got_vals, "key %s: values out of order" % key)
    # How the batches were stored.
    with b.conn() as c:
        for part in per_part:
            r = c.fetch([(topic, [(part, 0, 4 << 20)])])[(topic, part)]
            check(r["error"] == 0, "raw Fetch v4 %s-%d: error %d" % (topic, part, r["error"]))
            batches = kafka_wire.walk_batches(r["records"] or b"")
            check(batches, "raw Fetch v4 %s-%d: no batches" % (topic, part))
            # librdkafka sends a batch uncompressed when compressing would
            # not make it smaller (small batches), so each stored batch is
            # the producer's codec or none, and the partition's batches
            # together must show the codec (the broker keeps what was sent).
            for bt in batches:
                check(bt["magic"] == 2, "stored batch magic %d" % bt["magic"])
                check(bt["crc_ok"], "stored batch at %d fails its CRC" % bt["base_offset"])
                check(bt["codec"] in (codec, "none"), "stored batch at %d has codec %s, producer sent %s" %
                      (bt["base_offset"], bt["codec"], codec))
            check(any(bt["codec"] == codec for bt in batches),
                  "%s-%d: no stored batch has codec %s" % (topic, part, codec))


def main(ctx):
    mode = ctx.args[0] if ctx.args else "metadata"
    if mode == "metadata":
        test_metadata(ctx)
    else:
        test_codec(ctx, mode)


if __name__ == "__main__":
    harness.run_test(main, total_timeout=150)
