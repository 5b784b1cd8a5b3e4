"""tests/differential/records.py: record batches for the differential corpus, both ways.

Builds what the corpus produces (RecordBatch v2 with CRC32C, optionally
gzip-compressed, transactional or idempotent; legacy MessageSet v0/v1 with
CRC32 for Produce v0-2) and parses what a Fetch returns into plain dicts, so
two brokers' record data are compared field by field (base offset, epoch,
CRC, attributes, each record's offset, timestamp, key, value, headers)
rather than as opaque bytes. Written from the documented record format;
standard library only.
"""

import gzip
import struct
import time
import zlib

from schema_codec import Reader, Writer


# Record timestamps: an hour ago, fixed for the run (both brokers get the
# same bytes). Not a constant date: time-based retention (7 days by default)
# would delete older records on whichever broker checks first.
BASE_TS = (int(time.time()) - 3600) * 1000


def _crc32c_table():
    poly = 0x82F63B78
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        t.append(c)
    return t


_T = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _T[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def _varbytes(w, b):
    if b is None:
        w.varint(-1)
    else:
        w.varint(len(b))
        w.raw(b)


def batch(records, base_offset=0, timestamp=None, producer_id=-1, producer_epoch=-1,
          base_sequence=-1, transactional=False, codec=0, bad_crc=False, magic=2, leader_epoch=-1):
    """RecordBatch v2. records: [(key, value)] or [(key, value, headers)] with
    headers [(name str, value bytes|None)]; timestamps ascend by 1 ms."""
    timestamp = BASE_TS if timestamp is None else timestamp
    body = Writer()
    for i, rec in enumerate(records):
        key, value = rec[0], rec[1]
        headers = rec[2] if len(rec) > 2 else []
        r = Writer()
        r.pack("b", 0)
        r.varint(i)  # timestamp delta
        r.varint(i)  # offset delta
        _varbytes(r, key)
        _varbytes(r, value)
        r.varint(len(headers))
        for hk, hv in headers:
            _varbytes(r, hk.encode())
            _varbytes(r, hv)
        rb = r.bytes()
        body.varint(len(rb))
        body.raw(rb)
    payload = body.bytes()
    if codec == 1:
        payload = gzip.compress(payload, mtime=0)
    attrs = codec | (0x10 if transactional else 0)
    n = len(records)
    after = struct.pack(">hiqqqhii", attrs, n - 1, timestamp, timestamp + max(n - 1, 0),
                        producer_id, producer_epoch, base_sequence, n) + payload
    crc = crc32c(after)
    if bad_crc:
        crc ^= 0x5A5A5A5A
    tail = struct.pack(">ibI", leader_epoch, magic, crc) + after
    return struct.pack(">qi", base_offset, len(tail)) + tail


def legacy(records, magic=1, timestamp=None, bad_crc=False):
    """A MessageSet of uncompressed v0/v1 messages, offsets 0..n-1."""
    timestamp = BASE_TS if timestamp is None else timestamp
    out = []
    for i, (key, value) in enumerate(records):
        w = Writer()
        w.pack("b", magic)
        w.pack("b", 0)
        if magic == 1:
            w.pack("q", timestamp + i)
        for b in (key, value):
            if b is None:
                w.pack("i", -1)
            else:
                w.pack("i", len(b))
                w.raw(b)
        m = w.bytes()
        crc = zlib.crc32(m) & 0xFFFFFFFF
        if bad_crc:
            crc ^= 0x5A5A5A5A
        msg = struct.pack(">I", crc) + m
        out.append(struct.pack(">qi", i, len(msg)) + msg)
    return b"".join(out)


def _parse_v2_records(data, count):
    r = Reader(data)
    out = []
    for _ in range(count):
        size = r.varint()
        rr = Reader(r.take(size))
        rec = {"attributes": rr.unpack("b"), "timestamp_delta": rr.varint(), "offset_delta": rr.varint()}
        k = rr.varint()
        rec["key"] = None if k < 0 else rr.take(k).hex()
        v = rr.varint()
        rec["value"] = None if v < 0 else rr.take(v).hex()
        hs = []
        for _ in range(rr.varint()):
            hk = rr.varint()
            name = rr.take(hk).decode("utf-8", "replace")
            hv = rr.varint()
            hs.append([name, None if hv < 0 else rr.take(hv).hex()])
        rec["headers"] = hs
        out.append(rec)
    return out


def parse(data):
    """Records bytes -> [batch dict]. A trailing partial batch is reported
    as {"partial": n bytes} (a broker may cut the last batch at max bytes)."""
    if data is None:
        return None
    out, pos = [], 0
    while pos < len(data):
        if pos + 17 > len(data):
            out.append({"partial": len(data) - pos})
            break
        base, length = struct.unpack(">qi", data[pos:pos + 12])
        end = pos + 12 + length
        if end > len(data):
            out.append({"partial": len(data) - pos})
            break
        magic = data[pos + 16]
        body = data[pos + 12:end]
        if magic == 2:
            epoch, _, crc, attrs, lod, fts, mts, pid, pep, bseq, n = struct.unpack(">ibIhiqqqhii", body[:49])
            b = {"base_offset": base, "length": length, "leader_epoch": epoch, "magic": 2,
                 "crc": crc, "crc_ok": crc == crc32c(body[9:]), "attributes": attrs,
                 "last_offset_delta": lod, "first_timestamp": fts, "max_timestamp": mts,
                 "producer_id": pid, "producer_epoch": pep, "base_sequence": bseq, "count": n}
            if attrs & 0x20:
                # A control batch (COMMIT/ABORT marker): the broker writes it
                # with its own wall-clock time, so its timestamps (and the CRC
                # over them) differ between any two runs.
                b.update(first_timestamp="<time>", max_timestamp="<time>", crc="<crc>")
            payload = body[49:]
            codec = attrs & 7
            try:
                if codec == 1:
                    payload = gzip.decompress(payload)
                if codec in (0, 1):
                    b["records"] = _parse_v2_records(payload, n)
                else:
                    b["payload"] = payload.hex()
            except Exception as e:  # noqa: BLE001 - reported as a value
                b["records_error"] = repr(e)
        else:
            crc = struct.unpack(">I", body[:4])[0]
            r = Reader(body, 5)
            attrs = r.unpack("b")
            b = {"offset": base, "length": length, "magic": magic, "crc": crc,
                 "crc_ok": crc == (zlib.crc32(body[4:]) & 0xFFFFFFFF), "attributes": attrs}
            if magic == 1:
                b["timestamp"] = r.unpack("q")
            for name in ("key", "value"):
                n = r.unpack("i")
                b[name] = None if n < 0 else r.take(n).hex()
            if attrs & 7 == 1 and b["value"]:
                # A compressed wrapper: its bytes (and so its CRC) depend on
                # the compressor (gzip's header, level); what it holds is
                # compared instead.
                try:
                    b["inner"] = parse(gzip.decompress(bytes.fromhex(b.pop("value"))))
                    b.pop("crc")
                    b.pop("length")
                except Exception as e:  # noqa: BLE001 - reported as a value
                    b["inner_error"] = repr(e)
        out.append(b)
        pos = end
    return out
