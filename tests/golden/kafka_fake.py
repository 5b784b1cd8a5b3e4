"""tests/golden/kafka_fake.py: a fake Kafka broker that records request frames.

Test tooling for the golden vectors (see tests/data/golden/README.md). It
listens on 127.0.0.1, stores every request frame a client sends (the bytes
after the 4-byte size prefix: request header + body), and answers only the
few APIs a producer needs before it sends Produce: ApiVersions (v0-v3),
Metadata (v0-v12), Produce (v0-v9), InitProducerId (v0-v4) and CreateTopics
(v0-v4). Anything else is recorded and the connection closed.

The encoders below are written from Kafka's message schemas
(/work/shared/kafka-protocol/messages/*Response.json) and are deliberately
small: every response advertises one broker (node 0, this listener) that
leads partition 0 of every topic asked for.

Python 3 standard library only. Thread-safety: one handler thread per
connection; the shared Recorder is guarded by a lock.
"""

import os
import socket
import struct
import threading

# Kafka API names, used in the stored file names.
API_NAMES = {
    0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 8: "OffsetCommit",
    9: "OffsetFetch", 10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat",
    13: "LeaveGroup", 14: "SyncGroup", 15: "DescribeGroups", 16: "ListGroups",
    17: "SaslHandshake", 18: "ApiVersions", 19: "CreateTopics", 20: "DeleteTopics",
    22: "InitProducerId", 29: "DescribeAcls", 32: "DescribeConfigs",
    36: "SaslAuthenticate", 37: "CreatePartitions", 42: "DeleteGroups",
    60: "DescribeCluster",
}

# What ApiVersions advertises: the APIs we answer, at the versions we can
# encode, plus the usual broker APIs at Kafka 3.x ranges so that clients that
# infer the broker release from this table (kafka-python) pick modern
# request versions. (key, min, max)
ADVERTISED = [
    (0, 0, 9), (1, 0, 12), (2, 0, 7), (3, 0, 12), (8, 0, 8), (9, 0, 8),
    (10, 0, 4), (11, 0, 9), (12, 0, 4), (13, 0, 5), (14, 0, 5), (15, 0, 5),
    (16, 0, 4), (17, 0, 1), (18, 0, 3), (19, 0, 4), (20, 0, 6), (22, 0, 4),
    (29, 0, 3), (32, 0, 4), (36, 0, 2), (37, 0, 3), (42, 0, 2), (60, 0, 1),
]

# First flexible version of each API we answer (response header v1 from
# there on, except ApiVersions, whose response header is always v0).
FIRST_FLEXIBLE = {0: 9, 3: 9, 18: 3, 19: 5, 22: 2}

UNSUPPORTED_VERSION = 35
PRODUCER_ID = 4242  # what InitProducerId hands out


class Enc:
    """Appends Kafka primitives; flexible=True selects compact forms."""

    def __init__(self, flexible=False):
        self.flex = flexible
        self.out = bytearray()

    def i8(self, v):
        self.out += struct.pack(">b", v)

    def i16(self, v):
        self.out += struct.pack(">h", v)

    def i32(self, v):
        self.out += struct.pack(">i", v)

    def i64(self, v):
        self.out += struct.pack(">q", v)

    def uvarint(self, v):
        while v >= 0x80:
            self.out.append((v & 0x7F) | 0x80)
            v >>= 7
        self.out.append(v)

    def string(self, s):
        """A string, or None for null (nullable fields only)."""
        if s is None:
            if self.flex:
                self.uvarint(0)
            else:
                self.i16(-1)
            return
        b = s.encode()
        if self.flex:
            self.uvarint(len(b) + 1)
        else:
            self.i16(len(b))
        self.out += b

    def array(self, items, each):
        if self.flex:
            self.uvarint(len(items) + 1)
        else:
            self.i32(len(items))
        for it in items:
            each(it)

    def tags(self):
        """An empty tagged-field section (flexible versions only)."""
        if self.flex:
            self.uvarint(0)


class Dec:
    """Just enough of a reader to pull topic names out of requests."""

    def __init__(self, buf, pos=0):
        self.buf = buf
        self.pos = pos

    def take(self, n):
        if self.pos + n > len(self.buf):
            raise ValueError("truncated")
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return b

    def i8(self):
        return struct.unpack(">b", self.take(1))[0]

    def i16(self):
        return struct.unpack(">h", self.take(2))[0]

    def i32(self):
        return struct.unpack(">i", self.take(4))[0]

    def uvarint(self):
        v, shift = 0, 0
        while True:
            b = self.take(1)[0]
            v |= (b & 0x7F) << shift
            if b < 0x80:
                return v
            shift += 7

    def string(self, flex):
        n = self.uvarint() - 1 if flex else self.i16()
        return None if n < 0 else self.take(n).decode()

    def array_len(self, flex):
        return self.uvarint() - 1 if flex else self.i32()

    def bytes_len(self, flex):
        return self.uvarint() - 1 if flex else self.i32()

    def skip_tags(self):
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())


def request_header_version(key, version):
    if key == 7 and version == 0:  # ControlledShutdown v0
        return 0
    flex = FIRST_FLEXIBLE.get(key)
    return 2 if flex is not None and version >= flex else 1


def parse_header(frame):
    """Returns (api_key, api_version, correlation_id, body_offset)."""
    d = Dec(frame)
    key, version, corr = d.i16(), d.i16(), d.i32()
    hv = request_header_version(key, version)
    if hv >= 1:
        d.string(False)  # client_id: always a classic nullable string
    if hv >= 2:
        d.skip_tags()
    return key, version, corr, d.pos


# ---------------------------------------------------------------- responses

def api_versions_body(version):
    if version > 3:
        # Kafka answers a too-new ApiVersions with a v0 body and error 35,
        # listing its own ApiVersions range so the client can retry.
        e = Enc(False)
        e.i16(UNSUPPORTED_VERSION)
        e.array([(18, 0, 3)], lambda k: (e.i16(k[0]), e.i16(k[1]), e.i16(k[2])))
        return e.out
    e = Enc(version >= 3)

    def entry(k):
        e.i16(k[0])
        e.i16(k[1])
        e.i16(k[2])
        e.tags()

    e.i16(0)
    e.array(ADVERTISED, entry)
    if version >= 1:
        e.i32(0)  # throttle_time_ms
    e.tags()
    return e.out


def metadata_topics(body, version):
    """Topic names a Metadata request asks for; None means all topics."""
    flex = version >= 9
    d = Dec(body)
    n = d.array_len(flex)
    if n < 0:
        return None
    names = []
    for _ in range(n):
        if version >= 10:
            d.take(16)  # topic_id
        names.append(d.string(flex))
        if flex:
            d.skip_tags()
    return names or None


def metadata_body(version, topics, port):
    e = Enc(version >= 9)
    if version >= 3:
        e.i32(0)  # throttle_time_ms

    def broker(_):
        e.i32(0)
        e.string("127.0.0.1")
        e.i32(port)
        if version >= 1:
            e.string(None)  # rack
        e.tags()

    e.array([0], broker)
    if version >= 2:
        e.string("ciuic-golden-cluster")
    if version >= 1:
        e.i32(0)  # controller_id

    def partition(_):
        e.i16(0)
        e.i32(0)  # partition_index
        e.i32(0)  # leader_id
        if version >= 7:
            e.i32(0)  # leader_epoch
        e.array([0], e.i32)  # replica_nodes
        e.array([0], e.i32)  # isr_nodes
        if version >= 5:
            e.array([], e.i32)  # offline_replicas
        e.tags()

    def topic(name):
        e.i16(0)
        e.string(name)
        if version >= 10:
            e.out += bytes(range(1, 17))  # topic_id: any non-zero uuid
        if version >= 1:
            e.i8(0)  # is_internal
        e.array([0], partition)
        if version >= 8:
            e.i32(-2147483648)  # topic_authorized_operations
        e.tags()

    e.array(topics, topic)
    if 8 <= version <= 10:
        e.i32(-2147483648)  # cluster_authorized_operations
    e.tags()
    return e.out


def produce_request_parts(body, version):
    """Returns (acks, [(topic, [partition, ...]), ...])."""
    flex = version >= 9
    d = Dec(body)
    if version >= 3:
        d.string(flex)  # transactional_id
    acks = d.i16()
    d.i32()  # timeout_ms
    topics = []
    for _ in range(d.array_len(flex)):
        name = d.string(flex)
        parts = []
        for _ in range(d.array_len(flex)):
            parts.append(d.i32())
            n = d.bytes_len(flex)
            if n > 0:
                d.take(n)
            if flex:
                d.skip_tags()
        if flex:
            d.skip_tags()
        topics.append((name, parts))
    return acks, topics


def produce_body(version, topics, next_offset):
    e = Enc(version >= 9)

    def partition(p):
        e.i32(p)
        e.i16(0)
        e.i64(next_offset())  # base_offset
        if version >= 2:
            e.i64(-1)  # log_append_time_ms: CreateTime topic
        if version >= 5:
            e.i64(0)  # log_start_offset
        if version >= 8:
            e.array([], None)  # record_errors
            e.string(None)  # error_message
        e.tags()

    def topic(t):
        e.string(t[0])
        e.array(t[1], partition)
        e.tags()

    e.array(topics, topic)
    if version >= 1:
        e.i32(0)  # throttle_time_ms
    e.tags()
    return e.out


def init_producer_id_body(version):
    e = Enc(version >= 2)
    e.i32(0)  # throttle_time_ms
    e.i16(0)
    e.i64(PRODUCER_ID)
    e.i16(0)  # producer_epoch
    e.tags()
    return e.out


def create_topics_body(version, body):
    d = Dec(body)
    names = []
    for _ in range(d.i32()):  # v0-v4 are not flexible
        names.append(d.string(False))
        d.i32()  # num_partitions
        d.i16()  # replication_factor
        for _ in range(d.i32()):  # assignments
            d.i32()
            d.take(4 * max(d.i32(), 0))
        for _ in range(d.i32()):  # configs
            d.string(False)
            d.string(False)
    e = Enc(False)
    if version >= 2:
        e.i32(0)  # throttle_time_ms

    def topic(n):
        e.string(n)
        e.i16(0)
        if version >= 1:
            e.string(None)  # error_message

    e.array(names, topic)
    return e.out


# ---------------------------------------------------------------- recording

class Recorder:
    """Stores frames as NN_<Api>_v<version>.hex, skipping repeats.

    A frame that differs from an earlier one only in its correlation id is a
    repeat (clients reconnect and ask again); at most `per_api` distinct frames
    are kept per (api, version).
    """

    def __init__(self, outdir, per_api=4):
        self.outdir = outdir
        self.per_api = per_api
        self.lock = threading.Lock()
        self.seen = set()
        self.count = {}
        self.files = []
        os.makedirs(outdir, exist_ok=True)

    def record(self, frame):
        key, version = struct.unpack(">hh", frame[:4])
        with self.lock:
            sig = frame[:4] + frame[8:]
            if sig in self.seen:
                return
            self.seen.add(sig)
            n = self.count.get((key, version), 0)
            if n >= self.per_api:
                return
            self.count[(key, version)] = n + 1
            name = "%02d_%s_v%d.hex" % (len(self.files),
                                        API_NAMES.get(key, "Api%d" % key), version)
            text = frame.hex()
            lines = [text[i:i + 64] for i in range(0, len(text), 64)] or [""]
            with open(os.path.join(self.outdir, name), "w") as f:
                f.write("\n".join(lines) + "\n")
            self.files.append(name)


class FakeBroker:
    def __init__(self, recorder, default_topic="golden", log=None):
        self.recorder = recorder
        self.default_topic = default_topic
        self.log = log or (lambda msg: None)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.offset_lock = threading.Lock()
        self.offset = 0
        self.stopping = False
        self.conns = []
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self.stopping = True
        self.sock.close()
        for c in list(self.conns):
            try:
                c.shutdown(socket.SHUT_RDWR)
                c.close()
            except OSError:
                pass

    def _next_offset(self):
        with self.offset_lock:
            o = self.offset
            self.offset += 1
            return o

    def _accept(self):
        while not self.stopping:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    @staticmethod
    def _read_exact(c, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = c.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return bytes(buf)

    def _serve(self, c):
        c.settimeout(60)
        try:
            while True:
                size = self._read_exact(c, 4)
                if size is None:
                    return
                frame = self._read_exact(c, struct.unpack(">i", size)[0])
                if frame is None:
                    return
                self.recorder.record(frame)
                reply = self._answer(frame)
                if reply is False:
                    return
                if reply is not None:
                    c.sendall(struct.pack(">i", len(reply)) + reply)
        except (OSError, ValueError) as exc:
            self.log("connection ended: %r" % exc)
        finally:
            c.close()

    def _answer(self, frame):
        """The response frame (without size), None for no reply, False to hang up."""
        key, version, corr, pos = parse_header(frame)
        body = frame[pos:]
        self.log("request %s v%d corr=%d (%d bytes)"
                 % (API_NAMES.get(key, key), version, corr, len(frame)))
        if key == 18:
            out = api_versions_body(version)
        elif key == 3 and version <= 12:
            topics = metadata_topics(body, version) or [self.default_topic]
            out = metadata_body(version, topics, self.port)
        elif key == 0 and version <= 9:
            acks, topics = produce_request_parts(body, version)
            if acks == 0:
                return None
            out = produce_body(version, topics, self._next_offset)
        elif key == 22 and version <= 4:
            out = init_producer_id_body(version)
        elif key == 19 and version <= 4:
            out = create_topics_body(version, body)
        else:
            self.log("not answering %s v%d: hanging up" % (API_NAMES.get(key, key), version))
            return False
        header = struct.pack(">i", corr)
        if key != 18 and version >= FIRST_FLEXIBLE.get(key, 1 << 15):
            header += b"\x00"  # response header v1: empty tagged fields
        return header + bytes(out)
