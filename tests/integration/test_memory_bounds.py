"""tests/integration/test_memory_bounds.py: the broker's memory stays bounded
while clients misbehave (issue #16, point 1's proof).

The real broker runs with max.connections.per.ip=40 and the default
queued.max.request.bytes (256 MiB) and queued.max.requests (500). A normal
client (confluent_kafka from 127.0.0.1) produces and consumes throughout,
while an attacker from 127.0.0.2:
  A. opens 200 connections: 40 are kept, the rest are closed at once;
  B. sends a complete 64 MiB Produce frame on each of 16 of them at the same
     time (1 GiB in all; without the byte budget the broker would hold all of
     it); each is answered;
  C. sends 100,000 unknown topic names in four Fetch requests;
  D. sends one 64 MiB Produce v9 frame of ~22 million empty topics: the
     decoders' allocation budget refuses it as malformed (connection closed);
  E. sends Fetch v0 (no response limit of its own; answered with message
     sets converted in memory) on 6 connections at once, each asking all 8
     partitions of a topic holding 24 MiB each for 32 MiB apiece: 1.1 GiB of
     batches, more once converted, without a bound. fetch.max.bytes (16 MiB
     here) bounds each answer.
Checked: the broker stays up, the refusals are counted, no per-topic series
appears for the unknown names, the normal client loses nothing and is never
stalled for long, and the broker's RSS (VmRSS from /proc, sampled every
50 ms, and VmHWM at the end) stays under baseline + 640 MiB: two 64 MiB frames
in flight under the budget, each up to twice its size while its buffer grows,
with ASan's redzones and a 32 MiB quarantine (set below) on top.

RSS, not `prlimit --as`: the ASan build reserves terabytes of shadow address
space, so an address-space limit cannot tell a leak from the sanitizer.
"""

import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, wait_until  # noqa: E402
import kafka_wire as kw  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

ATTACKER = "127.0.0.2"
PER_IP = 40
HUGE = 64 << 20
HUGE_CONNS = 16
RSS_BOUND_MIB = 640
OLD_PARTS = 8
OLD_PART_BYTES = 24 << 20
OLD_CONNS = 6
FETCH_MAX = 16 << 20


def rss_kib(pid, field="VmRSS"):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def attacker_conn(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((ATTACKER, 0))
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    return s



def scrape_text(b):
    import urllib.request
    return urllib.request.urlopen("http://127.0.0.1:%d/metrics" % b.metrics_port, timeout=10).read().decode()


def metric_sum(text, name):
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


class NormalClient(threading.Thread):
    """Produces one record every 10 ms and consumes them back."""

    def __init__(self, bootstrap):
        super().__init__(daemon=True)
        self.bootstrap = bootstrap
        self.stop = threading.Event()
        self.delivered = []  # monotonic times
        self.errors = []
        self.consumed = 0
        self.sent = 0

    def run(self):
        p = Producer({"bootstrap.servers": self.bootstrap, "acks": "1", "linger.ms": 0,
                      "message.timeout.ms": 30000})
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "ck-it-membound",
                      "enable.auto.commit": False, "fetch.wait.max.ms": 100})
        c.assign([TopicPartition("steady", 0, 0)])

        def on_delivery(err, msg):
            if err is not None:
                self.errors.append(str(err))
            else:
                self.delivered.append(time.monotonic())
        try:
            while not self.stop.is_set():
                p.produce("steady", b"v%d" % self.sent, on_delivery=on_delivery)
                self.sent += 1
                p.poll(0)
                m = c.poll(0.01)
                while m is not None:
                    if m.error() is None:
                        self.consumed += 1
                    m = c.poll(0)
            p.flush(30)
            end = time.monotonic() + 20
            while self.consumed < self.sent and time.monotonic() < end:
                m = c.poll(0.1)
                if m is not None and m.error() is None:
                    self.consumed += 1
        finally:
            c.close()


def test(ctx):
    os.environ["ASAN_OPTIONS"] = ":".join(filter(None, [os.environ.get("ASAN_OPTIONS", ""),
                                                        "quarantine_size_mb=32"]))
    b = ctx.broker({"max.connections.per.ip": str(PER_IP), "auto.create.topics.enable": "false",
                    "fetch.max.bytes": str(FETCH_MAX)})
    b.create_topic("steady", 1)
    # E's data, written before the baseline is taken.
    b.create_topic("old", OLD_PARTS)
    filler = Producer({"bootstrap.servers": b.bootstrap, "acks": "1", "linger.ms": 5, "batch.size": 1 << 20})
    value = b"o" * (256 << 10)
    for part in range(OLD_PARTS):
        for _ in range(OLD_PART_BYTES // len(value)):
            filler.produce("old", value, partition=part)
            filler.poll(0)
    check(filler.flush(60) == 0, "topic old not written")
    del filler
    pid = b.proc.pid
    samples = []
    sampling = threading.Event()

    def sample():
        while not sampling.is_set():
            try:
                samples.append(rss_kib(pid))
            except OSError:
                return
            time.sleep(0.05)

    client = NormalClient(b.bootstrap)
    client.start()
    wait_until(lambda: len(client.delivered) >= 20, 20, "the normal client's first deliveries")
    time.sleep(0.5)
    baseline = rss_kib(pid)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    print("[membound] baseline VmRSS %.1f MiB" % (baseline / 1024.0), flush=True)

    phases = []  # (name, start)
    # A. Many connections from one address.
    t0 = time.monotonic()
    phases.append(("A", t0))
    conns = [attacker_conn(b.port) for _ in range(200)]
    refused = wait_until(lambda: metric_sum(scrape_text(b), "ciuic_network_connections_refused_total") >= 160,
                         20, "160 refusals counted")
    kept = [s for s in conns if not harness.closed_within(s, 0.05)]
    check(len(kept) == PER_IP, "%d attacker connections kept open, want %d" % (len(kept), PER_IP))
    for s in conns:
        if s not in kept:
            s.close()
    print("[membound] A: 200 connections from %s, %d kept, %d refused (%.1fs)"
          % (ATTACKER, len(kept), 200 - len(kept), time.monotonic() - t0), flush=True)
    check(refused, "refusals")

    # B. 16 complete 64 MiB Produce frames at once: one partition of an
    # unknown topic whose records field is 64 MiB of junk (answered
    # UNKNOWN_TOPIC_OR_PARTITION; the junk is never parsed).
    t0 = time.monotonic()
    phases.append(("B", t0))
    junk = b"\x5a" * (HUGE - 64)
    frame = kw.request_frame(kw.API_PRODUCE, 3, 7, kw.produce_v3(1, 1000, [("junk-topic", [(0, junk)])]))
    send_errors = []

    def send_huge(s):
        try:
            s.settimeout(60)
            s.sendall(frame)
            size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
            answer = s.recv(size, socket.MSG_WAITALL)
            if len(answer) != size or struct.unpack(">i", answer[:4])[0] != 7:
                send_errors.append("bad answer of %d bytes" % len(answer))
        except OSError as e:
            send_errors.append(repr(e))
    senders = [threading.Thread(target=send_huge, args=(s,)) for s in kept[:HUGE_CONNS]]
    for t in senders:
        t.start()
    for t in senders:
        t.join(45)
    check(not any(t.is_alive() for t in senders), "huge frames still unanswered after 45 s")
    for s in kept[:HUGE_CONNS]:
        s.close()
    waits = metric_sum(scrape_text(b), "ciuic_network_request_waits_total")
    print("[membound] B: %d x %d MiB Produce frames answered in %.1fs; reading paused %d times for the budget"
          % (HUGE_CONNS, HUGE >> 20, time.monotonic() - t0, waits), flush=True)
    check(send_errors == [], "the huge frames failed: %s" % send_errors[:3])
    check(waits >= 1, "no connection ever waited for queued.max.request.bytes")

    # C. 100,000 unknown topic names in four Fetch requests.
    t0 = time.monotonic()
    phases.append(("C", t0))
    with kw.Conn(b.port, timeout=30) as c:
        for r in range(4):
            topics = [("unknown-%06d" % (r * 25000 + i), [(0, 0, 1024)]) for i in range(25000)]
            d = c.request(kw.API_FETCH, 4, kw.fetch_v4(topics, max_wait_ms=0, min_bytes=0))
            check(len(d.buf) > 25000 * 20, "Fetch with 25,000 unknown topics got a %d-byte answer" % len(d.buf))
    text = scrape_text(b)
    check("unknown-" not in text, "a per-topic series was created for an unknown topic name")
    print("[membound] C: 100,000 unknown topic names fetched in %.1fs; scrape %d bytes, no series for them"
          % (time.monotonic() - t0, len(text)), flush=True)

    # D. A 64 MiB Produce v9 frame of ~22 million empty topics (3 bytes each
    # on the wire, ~80 decoded): refused by the decoders' allocation budget
    # (4 bytes per input byte + 16 MiB) as malformed, the connection closed,
    # instead of reserving ~1.7 GB.
    t0 = time.monotonic()
    phases.append(("D", t0))
    n_topics = (HUGE - 64) // 3
    body = bytearray(b"\x00" + struct.pack(">hi", -1, 30000))
    n = n_topics + 1
    while n >= 0x80:  # the compact array's length, an unsigned varint
        body.append((n & 0x7f) | 0x80)
        n >>= 7
    body.append(n)
    body += b"\x01\x01\x00" * n_topics + b"\x00"
    header = struct.pack(">hhi", kw.API_PRODUCE, 9, 8) + kw.string("ck-it") + b"\x00"  # request header v2
    s = attacker_conn(b.port)
    s.settimeout(60)
    s.sendall(struct.pack(">i", len(header) + len(body)) + header + bytes(body))
    del body
    check(harness.closed_within(s, 30), "the 64 MiB frame of empty topics was not refused (no close in 30 s)")
    s.close()
    print("[membound] D: a %d MiB Produce v9 frame of %d empty topics refused in %.1fs"
          % (HUGE >> 20, n_topics, time.monotonic() - t0), flush=True)

    # E. Fetch v0 of every partition of "old", 32 MiB each, on 6 connections at once.
    t0 = time.monotonic()
    phases.append(("E", t0))
    v0_body = (kw.i32(-1) + kw.i32(0) + kw.i32(0)
               + kw.array([("old", list(range(OLD_PARTS)))],
                          lambda t: kw.string(t[0]) + kw.array(t[1], lambda p: kw.i32(p) + kw.i64(0) + kw.i32(32 << 20))))
    v0_frame = kw.request_frame(kw.API_FETCH, 0, 9, v0_body)
    sizes, fetch_errors = [], []

    def fetch_v0():
        try:
            with kw.Conn(b.port, timeout=60) as c:
                c.send_raw(v0_frame)
                size = struct.unpack(">i", c.recv_exact(4))[0]
                answer = c.recv_exact(size)
                if struct.unpack(">i", answer[:4])[0] != 9:
                    fetch_errors.append("wrong correlation id")
                sizes.append(size)
        except OSError as e:
            fetch_errors.append(repr(e))
    fetchers = [threading.Thread(target=fetch_v0) for _ in range(OLD_CONNS)]
    for t in fetchers:
        t.start()
    for t in fetchers:
        t.join(60)
    check(not any(t.is_alive() for t in fetchers), "Fetch v0 answers missing after 60 s")
    check(fetch_errors == [], "Fetch v0 failed: %s" % fetch_errors[:3])
    print("[membound] E: %d x Fetch v0 of %d x %d MiB answered in %.1fs, answers of %s MiB"
          % (OLD_CONNS, OLD_PARTS, OLD_PART_BYTES >> 20, time.monotonic() - t0,
             ", ".join("%.1f" % (x / 1048576.0) for x in sizes)), flush=True)
    # The budget, overshot by at most one converted batch (about 1 MiB here).
    check(all(FETCH_MAX // 2 <= x <= FETCH_MAX + (2 << 20) for x in sizes),
          "Fetch v0 answers of %s bytes, want about fetch.max.bytes (%d)" % (sizes, FETCH_MAX))

    phases.append(("end", time.monotonic()))
    for s in kept[HUGE_CONNS:]:
        s.close()
    time.sleep(0.5)
    client.stop.set()
    client.join(40)
    sampling.set()
    sampler.join(5)
    check(b.alive(), "the broker died")
    hwm = rss_kib(pid, "VmHWM")
    peak = max(samples) if samples else 0
    gaps = [t2 - t1 for t1, t2 in zip(client.delivered, client.delivered[1:])]
    for (name, start), (_, end) in zip(phases, phases[1:]):
        inside = [t2 - t1 for t1, t2 in zip(client.delivered, client.delivered[1:]) if t2 > start and t1 < end]
        print("[membound] phase %s: %.1fs, %d deliveries, longest gap %.2fs"
              % (name, end - start, len([t for t in client.delivered if start <= t < end]), max(inside or [0])),
              flush=True)
    print("[membound] normal client: %d sent, %d delivered, %d consumed, %d errors, longest gap %.2fs"
          % (client.sent, len(client.delivered), client.consumed, len(client.errors), max(gaps or [0])), flush=True)
    print("[membound] RSS: baseline %.1f MiB, peak sampled %.1f MiB, VmHWM %.1f MiB, bound baseline + %d MiB"
          % (baseline / 1024.0, peak / 1024.0, hwm / 1024.0, RSS_BOUND_MIB), flush=True)
    check(not client.errors, "normal client delivery errors: %s" % client.errors[:3])
    check(len(client.delivered) == client.sent, "%d of %d records delivered" % (len(client.delivered), client.sent))
    check(client.consumed >= client.sent, "%d of %d records consumed" % (client.consumed, client.sent))
    check(max(gaps or [0]) < 10, "the normal client stalled %.1fs" % max(gaps or [0]))
    check(peak - baseline < RSS_BOUND_MIB * 1024, "peak RSS %.1f MiB is over baseline + %d MiB"
          % (peak / 1024.0, RSS_BOUND_MIB))
    check(hwm - baseline < RSS_BOUND_MIB * 1024, "VmHWM %.1f MiB is over baseline + %d MiB"
          % (hwm / 1024.0, RSS_BOUND_MIB))


if __name__ == "__main__":
    harness.run_test(test, total_timeout=55)
