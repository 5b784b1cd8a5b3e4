"""tests/integration/test_bad_input.py: hostile bytes over raw sockets do no harm.

While a well-behaved raw client keeps producing (acks=-1) and fetching its
own records back on topic "good", other connections send:

  * a size prefix of 2 GiB - 1 (0x7fffffff) and one of 0x80000000 (negative
    as int32): the connection is closed;
  * 1,000 garbage frames (seeded random bytes, sizes 1..4096, half with a
    plausible request header), reconnecting whenever the broker closes;
  * truncated requests: a size prefix promising more than is sent, then a
    close; a Metadata v1 whose array count runs past the frame's end; a
    header cut inside its client id;
  * an unknown API key (1000) and an unsupported version (Metadata v99):
    an error response with the same correlation id, or a closed connection;
  * a Produce v3 whose RecordBatch has a wrong CRC: CORRUPT_MESSAGE (2) for
    that partition, nothing appended;
  * Produce v3 and CreateTopics v2 with illegal topic names ("bad topic!",
    "a/b", "..", 250 characters): INVALID_TOPIC_EXCEPTION (17) (Produce may
    answer UNKNOWN_TOPIC_OR_PARTITION (3)); none of them ever exists.

Afterwards: the broker process is alive, answers ApiVersions, the good
client had no failure, the records written before the attack are intact,
and SIGTERM still exits 0.
"""

import os
import random
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402
import kafka_wire as kw  # noqa: E402

GOOD = "good"
SEED = 20240611



class GoodClient(threading.Thread):
    """Produces one batch, fetches it back, repeats; counts what went wrong."""

    def __init__(self, b):
        super().__init__(daemon=True)
        self.b = b
        self.stop = threading.Event()
        self.rounds = 0
        self.failures = []
        self.written = []  # (offset, key, value)

    def run(self):
        n = 0
        try:
            with self.b.conn(timeout=10) as c:
                while not self.stop.is_set():
                    recs = [(b"g%06d" % (n + i), b"good-value-%06d" % (n + i)) for i in range(5)]
                    res = c.produce([(GOOD, [(0, kw.record_batch(recs))])], acks=-1)
                    err, base, _ = res[(GOOD, 0)]
                    if err != 0:
                        self.failures.append("produce error %d at round %d" % (err, self.rounds))
                        return
                    r = c.fetch([(GOOD, [(0, base, 1 << 20)])], max_wait_ms=50)[(GOOD, 0)]
                    got = [x for x in kw.records_of(r["records"] or b"") if x[0] >= base][:5]
                    want = [(base + i, k, v) for i, (k, v) in enumerate(recs)]
                    if r["error"] != 0 or got != want:
                        self.failures.append("fetch at %d: error %d, got %r" % (base, r["error"], got[:2]))
                        return
                    self.written += want
                    n += 5
                    self.rounds += 1
        except Exception as e:  # noqa: BLE001 - any failure of the good client is the finding
            self.failures.append("good client: %r after %d rounds" % (e, self.rounds))


def huge_prefix(b):
    for prefix in (0x7FFFFFFF, 0x80000000):
        s = socket.create_connection(("127.0.0.1", b.port), timeout=5)
        s.sendall(struct.pack(">I", prefix) + b"\x00\x12\x00\x00" + b"\x00" * 60)
        check(harness.closed_within(s, 5), "size prefix 0x%08x: connection still open after 5s" % prefix)
        s.close()


def garbage(b):
    rng = random.Random(SEED)
    s = None
    closes = 0
    for i in range(1000):
        size = rng.randint(1, 4096)
        if i % 2:
            body = struct.pack(">hhi", rng.randint(-5, 100), rng.randint(-2, 20), i) + \
                rng.randbytes(max(0, size - 8))
            body = body[:size]
        else:
            body = rng.randbytes(size)
        frame = struct.pack(">i", len(body)) + body
        for _ in range(2):
            if s is None:
                s = socket.create_connection(("127.0.0.1", b.port), timeout=5)
                s.setblocking(True)
            try:
                s.sendall(frame)
                break
            except OSError:
                s.close()
                s = None
                closes += 1
        # Drain whatever came back, without waiting.
        if s is not None:
            s.setblocking(False)
            try:
                while True:
                    d = s.recv(65536)
                    if not d:
                        s.close()
                        s = None
                        closes += 1
                        break
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                s.close()
                s = None
                closes += 1
            if s is not None:
                s.setblocking(True)
    if s is not None:
        s.close()
    print("[bad_input] 1000 garbage frames sent (seed %d), %d connections closed by the broker" % (SEED, closes),
          flush=True)


def truncated(b):
    # A frame promising 100 bytes, 30 sent, then the client goes away.
    s = socket.create_connection(("127.0.0.1", b.port), timeout=5)
    s.sendall(struct.pack(">i", 100) + kw.request_frame(3, 1, 7, kw.metadata_v1(None))[4:34])
    s.close()
    # A Metadata v1 whose topic array claims 5 entries that are not there.
    s = socket.create_connection(("127.0.0.1", b.port), timeout=5)
    s.sendall(kw.request_frame(3, 1, 8, kw.i32(5)))
    check(harness.closed_within(s, 5), "Metadata v1 with a truncated topic array: connection not closed")
    s.close()
    # A header cut inside its client id (length 50, 3 bytes present).
    s = socket.create_connection(("127.0.0.1", b.port), timeout=5)
    payload = kw.i16(18) + kw.i16(0) + kw.i32(9) + kw.i16(50) + b"abc"
    s.sendall(kw.i32(len(payload)) + payload)
    check(harness.closed_within(s, 5), "request header truncated inside client_id: connection not closed")
    s.close()
    # A Produce v3 whose records field runs past the frame.
    s = socket.create_connection(("127.0.0.1", b.port), timeout=5)
    batch = kw.record_batch([(b"k", b"v")])
    body = kw.produce_v3(1, 5000, [(GOOD, [(0, batch)])])
    body = body[:-(len(batch) // 2)]
    s.sendall(kw.request_frame(0, 3, 10, body))
    check(harness.closed_within(s, 5), "Produce v3 with records cut short: connection not closed")
    s.close()


def answered_or_closed(b, api_key, version, body, want_error):
    """Sends one request; returns 'closed' or the error code of the answer."""
    with b.conn(timeout=5) as c:
        corr = c.send(api_key, version, body)
        try:
            d = c.receive(corr)
        except (kw.ConnectionClosed, ConnectionResetError):
            return "closed"
        except socket.timeout:
            raise harness.TestFailure("api %d v%d: neither an answer nor a close within 5s" % (api_key, version))
        # ApiVersions-style answers start with the error code; other APIs put it
        # elsewhere, so look for it in the first bytes of the body.
        head = d.buf[d.pos:d.pos + 8]
        check(struct.pack(">h", want_error) in head,
              "api %d v%d: answer without error %d: %s" % (api_key, version, want_error, head.hex()))
        return want_error


def unknown_api(b):
    r1 = answered_or_closed(b, 1000, 0, b"", kw.UNSUPPORTED_VERSION)
    r2 = answered_or_closed(b, kw.API_METADATA, 99, kw.metadata_v1(None), kw.UNSUPPORTED_VERSION)
    print("[bad_input] unknown api key 1000 -> %s; Metadata v99 -> %s" % (r1, r2), flush=True)


def wrong_crc(b):
    with b.conn() as c:
        # End offsets from Fetch's high watermark, so this phase needs nothing but Produce and Fetch.
        before = c.fetch([(GOOD, [(1, 0, 1)])], max_wait_ms=0)[(GOOD, 1)]["high_watermark"]
        batch = kw.record_batch([(b"bad-crc", b"must not be stored")], corrupt_crc=True)
        res = c.produce([(GOOD, [(1, batch)])], acks=-1)
        err = res[(GOOD, 1)][0]
        check(err == kw.CORRUPT_MESSAGE, "Produce v3 with a wrong CRC: error %d, want CORRUPT_MESSAGE (2)" % err)
        after = c.fetch([(GOOD, [(1, 0, 1)])], max_wait_ms=0)[(GOOD, 1)]["high_watermark"]
        check(after == before, "wrong-CRC batch changed partition 1's end offset %d -> %d" % (before, after))


BAD_NAMES = ["bad topic!", "a/b", "..", "x" * 250]


def illegal_names(b):
    with b.conn() as c:
        for name in BAD_NAMES:
            res = c.produce([(name, [(0, kw.record_batch([(b"k", b"v")]))])], acks=1)
            err = res.get((name, 0), (None,))[0]
            check(err in (kw.INVALID_TOPIC_EXCEPTION, kw.UNKNOWN_TOPIC_OR_PARTITION),
                  "Produce v3 to %r: error %r, want 17 or 3" % (name[:20], err))
            res = c.create_topics([(name, 1, 1)])
            err = res.get(name, (None, None))
            check(err[0] == kw.INVALID_TOPIC_EXCEPTION,
                  "CreateTopics v2 %r: %r, want INVALID_TOPIC_EXCEPTION (17)" % (name[:20], err))
        md = c.metadata(None)
        names = {t["name"] for t in md["topics"]}
        check(not (names & set(BAD_NAMES)), "illegal topics exist: %r" % (names & set(BAD_NAMES)))


def main(ctx):
    b = ctx.broker({"num.partitions": "2", "auto.create.topics.enable": "true"})
    b.create_topic(GOOD, 2)
    # Data written before the attack.
    with b.conn() as c:
        early = [(b"early-%d" % i, b"before the attack %d" % i) for i in range(50)]
        res = c.produce([(GOOD, [(1, kw.record_batch(early))])], acks=-1)
        check(res[(GOOD, 1)][0] == 0, "initial produce: %r" % (res,))
    good = GoodClient(b)
    good.start()
    phases = [("2 GiB size prefix", huge_prefix), ("garbage frames", garbage),
              ("truncated requests", truncated), ("unknown API", unknown_api),
              ("wrong CRC", wrong_crc), ("illegal topic names", illegal_names)]
    results = []
    for name, fn in phases:
        try:
            fn(b)
            results.append((name, "ok"))
        except Exception as e:  # noqa: BLE001 - every phase runs; failures reported together
            results.append((name, "FAILED: %s" % e))
        check(b.alive(), "broker died during phase '%s' (exit %s)" % (name, b.proc.poll()))
        print("[bad_input] %s: %s" % results[-1], flush=True)
    # Under load the phases can end before the good client's first round
    # (a connection and an acks=-1 produce): the attack goes on (garbage
    # frames) until it has made one while it lasts, 60 s at most.
    deadline = time.monotonic() + 60
    while good.rounds == 0 and not good.failures and good.is_alive() and time.monotonic() < deadline:
        garbage(b)
        check(b.alive(), "broker died during the prolonged attack (exit %s)" % b.proc.poll())
    rounds_during = good.rounds
    time.sleep(0.5)
    good.stop.set()
    good.join(15)
    check(b.alive(), "broker is not running after the attack")
    check(not good.failures, "the well-behaved client failed: %s" % good.failures)
    with b.conn() as c:
        err, apis = c.api_versions()
        check(err == 0 and apis, "ApiVersions after the attack: error %d" % err)
        recs, _ = c.fetch_all(GOOD, 1)
        check([(k, v) for _, k, v in recs[:50]] == early, "records written before the attack changed")
        recs0, _ = c.fetch_all(GOOD, 0)
        check(recs0 == good.written, "good client's %d records: read back %d, differ" % (len(good.written), len(recs0)))
    failed = [r for r in results if r[1] != "ok"]
    check(rounds_during > 0, "the well-behaved client made no progress during the attack")
    check(not failed, "; ".join("%s: %s" % r for r in failed))


if __name__ == "__main__":
    harness.run_test(main, total_timeout=150)
