"""tests/integration/kafka_wire.py: the few Kafka requests the integration tests send by hand.

Integration tests that must not depend on a client library (the bad-input
test, the durability test, the harness's ApiVersions probe, checks on how a
batch was stored) speak the wire protocol directly through this module. It is
written from Kafka's message schemas and the record-batch format (facts, not
code, taken from Kafka) and covers only:

  ApiVersions v0, Metadata v1, Produce v3, Fetch v4, CreateTopics v2,
  ListOffsets v1, DescribeClientQuotas v0, AlterClientQuotas v0,
  RecordBatch v2 (with CRC32C), a record-batch walker.

All of these versions are "classic" (non-flexible): request header v1,
response header v0. Standard library only. Not thread-safe per Conn; use one
Conn per thread.
"""

import socket
import struct
import zlib

API_PRODUCE, API_FETCH, API_LIST_OFFSETS, API_METADATA = 0, 1, 2, 3
API_API_VERSIONS, API_CREATE_TOPICS = 18, 19
API_DESCRIBE_CLIENT_QUOTAS, API_ALTER_CLIENT_QUOTAS = 48, 49

# Kafka error codes the tests look at.
NONE = 0
OFFSET_OUT_OF_RANGE = 1
CORRUPT_MESSAGE = 2
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_TOPIC_EXCEPTION = 17
UNSUPPORTED_VERSION = 35
TOPIC_ALREADY_EXISTS = 36


# ------------------------------------------------------------------ CRC32C

def _crc32c_table():
    poly = 0x82F63B78  # Castagnoli, reflected
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    t = _CRC_TABLE
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283


# ------------------------------------------------------------------ encoding

def i8(v):
    return struct.pack(">b", v)


def i16(v):
    return struct.pack(">h", v)


def i32(v):
    return struct.pack(">i", v)


def i64(v):
    return struct.pack(">q", v)


def string(s):
    if s is None:
        return i16(-1)
    b = s.encode() if isinstance(s, str) else s
    return i16(len(b)) + b


def nbytes(b):
    if b is None:
        return i32(-1)
    return i32(len(b)) + b


def array(items, each):
    if items is None:
        return i32(-1)
    return i32(len(items)) + b"".join(each(x) for x in items)


def uvarint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def varint(v):
    """Zig-zag signed varint (works for varlong too)."""
    return uvarint((v << 1) ^ (v >> 63))


def request_frame(api_key, version, corr, body, client_id="ck-it"):
    """Size prefix + request header v1 + body."""
    payload = i16(api_key) + i16(version) + i32(corr) + string(client_id) + body
    return i32(len(payload)) + payload


# ------------------------------------------------------------------ decoding

class Truncated(Exception):
    pass


class Dec:
    def __init__(self, buf, pos=0):
        self.buf = bytes(buf)
        self.pos = pos

    def take(self, n):
        if n < 0 or self.pos + n > len(self.buf):
            raise Truncated("need %d bytes at %d of %d" % (n, self.pos, len(self.buf)))
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return b

    def i8(self):
        return struct.unpack(">b", self.take(1))[0]

    def i16(self):
        return struct.unpack(">h", self.take(2))[0]

    def i32(self):
        return struct.unpack(">i", self.take(4))[0]

    def u32(self):
        return struct.unpack(">I", self.take(4))[0]

    def i64(self):
        return struct.unpack(">q", self.take(8))[0]

    def string(self):
        n = self.i16()
        return None if n < 0 else self.take(n).decode("utf-8", "replace")

    def nbytes(self):
        n = self.i32()
        return None if n < 0 else self.take(n)

    def array(self, each):
        n = self.i32()
        if n < 0:
            return None
        return [each(self) for _ in range(n)]

    def uvarint(self):
        v, shift = 0, 0
        while True:
            b = self.take(1)[0]
            v |= (b & 0x7F) << shift
            if b < 0x80:
                return v
            shift += 7
            if shift > 63:
                raise Truncated("varint too long")

    def varint(self):
        u = self.uvarint()
        return (u >> 1) ^ -(u & 1)

    def done(self):
        return self.pos >= len(self.buf)


# ------------------------------------------------------------------ records

def record_batch(records, base_offset=0, timestamp_ms=0, producer_id=-1,
                 producer_epoch=-1, base_sequence=-1, corrupt_crc=False, transactional=False, gzip=False):
    """A RecordBatch v2, uncompressed or (gzip=True) gzip-compressed. records: [(key, value)] as bytes/None."""
    body = bytearray()
    for delta, (key, value) in enumerate(records):
        r = bytearray()
        r += i8(0)  # attributes
        r += varint(0)  # timestamp delta
        r += varint(delta)  # offset delta
        r += varint(-1) if key is None else varint(len(key)) + key
        r += varint(-1) if value is None else varint(len(value)) + value
        r += varint(0)  # headers
        body += varint(len(r)) + r
    if gzip:
        z = zlib.compressobj(6, zlib.DEFLATED, 31)  # wbits 31: the gzip format
        body = z.compress(bytes(body)) + z.flush()
    after_crc = (i16((0x10 if transactional else 0) | (1 if gzip else 0))  # attributes: codec, CreateTime, isTransactional
                 + i32(len(records) - 1)  # last offset delta
                 + i64(timestamp_ms) + i64(timestamp_ms)
                 + i64(producer_id) + i16(producer_epoch) + i32(base_sequence)
                 + i32(len(records)) + bytes(body))
    crc = crc32c(after_crc)
    if corrupt_crc:
        crc ^= 0xDEADBEEF
    tail = i32(-1) + i8(2) + struct.pack(">I", crc) + after_crc  # leader epoch, magic, crc
    return i64(base_offset) + i32(len(tail)) + tail


CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def walk_batches(data):
    """Batch headers in a records blob: [dict(base_offset, last_offset, magic,
    codec, count, crc_ok, payload)]. A trailing partial batch is ignored (as
    clients do). Magic 0/1 message sets are reported with magic only."""
    out = []
    pos = 0
    while pos + 12 <= len(data):
        base, length = struct.unpack(">qi", data[pos:pos + 12])
        end = pos + 12 + length
        if length < 0 or end > len(data):
            break
        magic = data[pos + 16] if length >= 5 else -1
        b = {"base_offset": base, "magic": magic, "size": 12 + length}
        if magic == 2:
            d = Dec(data[pos:end], 17)
            crc = d.u32()
            b["crc_ok"] = crc32c(data[pos + 21:end]) == crc
            attrs = d.i16()
            b["codec"] = CODECS.get(attrs & 7, attrs & 7)
            b["attributes"] = attrs
            b["last_offset"] = base + d.i32()
            b["first_timestamp"] = d.i64()
            b["max_timestamp"] = d.i64()
            b["producer_id"] = d.i64()
            b["producer_epoch"] = d.i16()
            b["base_sequence"] = d.i32()
            b["count"] = d.i32()
            b["payload"] = data[pos + 61:end]
        out.append(b)
        pos = end
    return out


def _decompress(codec, payload):
    if codec == "none":
        return payload
    if codec == "gzip":
        return zlib.decompress(payload, 47)  # gzip or zlib header
    raise ValueError("cannot decompress %s in stdlib" % codec)


def records_of(data, with_session=False):
    """[(offset, key, value)] of every record in v2 batches (none/gzip only);
    with_session adds the batch's producer session, "producerId:epoch"
    (None for a non-idempotent batch)."""
    out = []
    for b in walk_batches(data):
        if b["magic"] != 2:
            raise ValueError("magic %d batch at %d" % (b["magic"], b["base_offset"]))
        if not b["crc_ok"]:
            raise ValueError("bad CRC in batch at %d" % b["base_offset"])
        d = Dec(_decompress(b["codec"], b["payload"]))
        for _ in range(b["count"]):
            d.varint()  # length
            d.i8()
            d.varint()  # timestamp delta
            od = d.varint()
            kl = d.varint()
            key = None if kl < 0 else d.take(kl)
            vl = d.varint()
            value = None if vl < 0 else d.take(vl)
            for _ in range(d.varint()):
                d.take(d.varint())
                hl = d.varint()
                if hl >= 0:
                    d.take(hl)
            if with_session:
                session = None if b["producer_id"] < 0 else "%d:%d" % (b["producer_id"], b["producer_epoch"])
                out.append((b["base_offset"] + od, key, value, session))
            else:
                out.append((b["base_offset"] + od, key, value))
    return out


# ------------------------------------------------------------------ requests

def api_versions_v0():
    return b""


def metadata_v1(topics):
    """topics None = all topics."""
    return array(topics, string)


def produce_v3(acks, timeout_ms, topics, transactional_id=None):
    """topics: [(name, [(partition, records_bytes)])]"""
    def part(p):
        return i32(p[0]) + nbytes(p[1])

    def topic(t):
        return string(t[0]) + array(t[1], part)
    return string(transactional_id) + i16(acks) + i32(timeout_ms) + array(topics, topic)


def fetch_v4(topics, max_wait_ms=100, min_bytes=1, max_bytes=8 << 20):
    """topics: [(name, [(partition, offset, partition_max_bytes)])]"""
    def part(p):
        return i32(p[0]) + i64(p[1]) + i32(p[2])

    def topic(t):
        return string(t[0]) + array(t[1], part)
    return (i32(-1) + i32(max_wait_ms) + i32(min_bytes) + i32(max_bytes) + i8(0)
            + array(topics, topic))


def create_topics_v2(topics, timeout_ms=10000, validate_only=False):
    """topics: [(name, partitions, replication_factor)]"""
    def topic(t):
        return string(t[0]) + i32(t[1]) + i16(t[2]) + i32(0) + i32(0)
    return array(topics, topic) + i32(timeout_ms) + i8(1 if validate_only else 0)


def alter_client_quotas_v0(entries, validate_only=False):
    """entries: [([(entity_type, name or None)], [(key, value or None to remove)])]"""
    def entity(e):
        return string(e[0]) + string(e[1])

    def op(o):
        return string(o[0]) + struct.pack(">d", o[1] or 0.0) + i8(1 if o[1] is None else 0)

    def entry(e):
        return array(e[0], entity) + array(e[1], op)
    return array(entries, entry) + i8(1 if validate_only else 0)


def describe_client_quotas_v0(components, strict=False):
    """components: [(entity_type, match_type, match or None)]"""
    def comp(c):
        return string(c[0]) + i8(c[1]) + string(c[2])
    return array(components, comp) + i8(1 if strict else 0)


def list_offsets_v1(topics):
    """topics: [(name, [(partition, timestamp)])]; -1 latest, -2 earliest."""
    def part(p):
        return i32(p[0]) + i64(p[1])

    def topic(t):
        return string(t[0]) + array(t[1], part)
    return i32(-1) + array(topics, topic)


# ------------------------------------------------------------------ responses

def parse_api_versions_v0(d):
    err = d.i16()
    apis = d.array(lambda d: (d.i16(), d.i16(), d.i16()))
    return err, {k: (lo, hi) for k, lo, hi in (apis or [])}


def parse_metadata_v1(d):
    brokers = d.array(lambda d: (d.i32(), d.string(), d.i32(), d.string()))
    controller = d.i32()

    def part(d):
        err, idx, leader = d.i16(), d.i32(), d.i32()
        replicas = d.array(lambda d: d.i32())
        isr = d.array(lambda d: d.i32())
        return {"error": err, "partition": idx, "leader": leader,
                "replicas": replicas, "isr": isr}

    def topic(d):
        err, name, internal = d.i16(), d.string(), d.i8()
        return {"error": err, "name": name, "internal": internal,
                "partitions": d.array(part)}
    return {"brokers": brokers, "controller": controller, "topics": d.array(topic)}


def parse_alter_client_quotas_v0(d):
    """[(error, message, {entity_type: name})]"""
    d.i32()  # throttle

    def entry(d):
        err, msg = d.i16(), d.string()
        return err, msg, dict(d.array(lambda d: (d.string(), d.string())))
    return d.array(entry)


def parse_describe_client_quotas_v0(d):
    """(error, message, [({entity_type: name}, {key: value})] or None)"""
    d.i32()  # throttle
    err, msg = d.i16(), d.string()

    def entry(d):
        entity = dict(d.array(lambda d: (d.string(), d.string())))
        values = dict(d.array(lambda d: (d.string(), struct.unpack(">d", d.take(8))[0])))
        return entity, values
    return err, msg, d.array(entry)


def parse_produce_v3(d):
    """{(topic, partition): (error, base_offset, log_append_time)}"""
    out = {}
    for _ in range(d.i32()):
        name = d.string()
        for _ in range(d.i32()):
            p, err, base, lat = d.i32(), d.i16(), d.i64(), d.i64()
            out[(name, p)] = (err, base, lat)
    d.i32()  # throttle
    return out


def parse_fetch_v4(d):
    """{(topic, partition): dict(error, high_watermark, lso, records)}"""
    d.i32()  # throttle
    out = {}
    for _ in range(d.i32()):
        name = d.string()
        for _ in range(d.i32()):
            p, err, hw, lso = d.i32(), d.i16(), d.i64(), d.i64()
            d.array(lambda d: (d.i64(), d.i64()))  # aborted transactions
            recs = d.nbytes()
            out[(name, p)] = {"error": err, "high_watermark": hw, "lso": lso,
                              "records": recs}
    return out


def parse_create_topics_v2(d):
    d.i32()  # throttle
    return {t[0]: (t[1], t[2]) for t in d.array(lambda d: (d.string(), d.i16(), d.string()))}


def parse_list_offsets_v1(d):
    out = {}
    for _ in range(d.i32()):
        name = d.string()
        for _ in range(d.i32()):
            p, err, ts, off = d.i32(), d.i16(), d.i64(), d.i64()
            out[(name, p)] = (err, ts, off)
    return out


def incremental_alter_configs_v0(rtype, name, key, value):
    """IncrementalAlterConfigs v0 body: SET one key of one resource (rtype
    2: a topic; 4: a broker, name "" for every broker)."""
    return array([None], lambda _: i8(rtype) + string(name) +
                 array([None], lambda _: string(key) + i8(0) + string(value))) + i8(0)


def parse_incremental_alter_configs_v0(d):
    """[(error_code, error_message, resource_type, resource_name)]."""
    d.i32()
    return d.array(lambda d: (d.i16(), d.string(), d.i8(), d.string()))


# ------------------------------------------------------------------ connection

class ConnectionClosed(Exception):
    pass


class Conn:
    """One TCP connection; request() sends and waits for the matching answer."""

    def __init__(self, port, host="127.0.0.1", timeout=10.0, client_id="ck-it", source=None):
        self.sock = socket.create_connection((host, port), timeout=timeout,
                                             source_address=(source, 0) if source else None)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.corr = 0
        self.client_id = client_id

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send_raw(self, data):
        self.sock.sendall(data)

    def recv_exact(self, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionClosed("closed after %d of %d bytes" % (len(buf), n))
            buf += chunk
        return bytes(buf)

    def recv_frame(self):
        size = struct.unpack(">i", self.recv_exact(4))[0]
        if size < 4 or size > 256 << 20:
            raise ValueError("bad response size %d" % size)
        return self.recv_exact(size)

    def send(self, api_key, version, body):
        self.corr += 1
        self.send_raw(request_frame(api_key, version, self.corr, body, self.client_id))
        return self.corr

    def receive(self, corr):
        frame = self.recv_frame()
        got = struct.unpack(">i", frame[:4])[0]
        if got != corr:
            raise ValueError("correlation id %d, expected %d" % (got, corr))
        return Dec(frame, 4)

    def request(self, api_key, version, body):
        return self.receive(self.send(api_key, version, body))

    # Convenience wrappers.
    def api_versions(self):
        return parse_api_versions_v0(self.request(API_API_VERSIONS, 0, api_versions_v0()))

    def metadata(self, topics=None):
        return parse_metadata_v1(self.request(API_METADATA, 1, metadata_v1(topics)))

    def produce(self, topics, acks=-1, timeout_ms=10000):
        return parse_produce_v3(self.request(API_PRODUCE, 3, produce_v3(acks, timeout_ms, topics)))

    def fetch(self, topics, **kw):
        return parse_fetch_v4(self.request(API_FETCH, 4, fetch_v4(topics, **kw)))

    def create_topics(self, topics, **kw):
        return parse_create_topics_v2(self.request(API_CREATE_TOPICS, 2, create_topics_v2(topics, **kw)))

    def alter_client_quotas(self, entries, validate_only=False):
        return parse_alter_client_quotas_v0(self.request(API_ALTER_CLIENT_QUOTAS, 0,
                                                         alter_client_quotas_v0(entries, validate_only)))

    def describe_client_quotas(self, components, strict=False):
        return parse_describe_client_quotas_v0(self.request(API_DESCRIBE_CLIENT_QUOTAS, 0,
                                                            describe_client_quotas_v0(components, strict)))

    def list_offsets(self, topics):
        return parse_list_offsets_v1(self.request(API_LIST_OFFSETS, 1, list_offsets_v1(topics)))

    def fetch_all(self, topic, partition, start=0, deadline_s=10.0, with_session=False):
        """Every record of a partition from `start` up to the high watermark
        (with_session: see records_of)."""
        import time
        end_by = time.monotonic() + deadline_s
        out, offset, hw = [], start, None
        while time.monotonic() < end_by:
            r = self.fetch([(topic, [(partition, offset, 1 << 20)])])[(topic, partition)]
            if r["error"] != NONE:
                raise AssertionError("fetch %s-%d@%d: error %d" % (topic, partition, offset, r["error"]))
            hw = r["high_watermark"]
            recs = [x for x in records_of(r["records"] or b"", with_session) if x[0] >= offset]
            out += recs
            if recs:
                offset = recs[-1][0] + 1
            if offset >= hw:
                return out, hw
        raise AssertionError("fetch_all %s-%d: stuck at %d (hw %s)" % (topic, partition, offset, hw))
