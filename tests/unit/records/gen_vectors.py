#!/usr/bin/python3
"""Writes the record-batch and codec interop vectors under tests/data/records/.

Independent encoders: kafka-python's own record builders (DefaultRecordBatchBuilder
for v2, LegacyRecordBatchBuilder for v0/v1) and Debian's python3-snappy,
python3-lz4, python3-zstandard and zlib. The C++ tests (records_interop_test.cc,
compression_interop_test.cc) rebuild the same contents from the formulas below,
so keep the two in step.

Run with Debian's interpreter (the pyenv python3 lacks these modules):
    /usr/bin/python3 tests/unit/records/gen_vectors.py
Output is deterministic (gzip mtime 0), so rerunning changes nothing.
"""
import gzip
import io
import os
import struct

import lz4.frame
import snappy
import zstandard

from kafka import codec as kcodec
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

# kafka-python's gzip_encode leaves the gzip header's mtime to the clock; pin
# it so the vectors are reproducible.
class _Epoch:
    @staticmethod
    def time():
        return 0


gzip.time = _Epoch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data", "records")

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def v2_record(i):
    """Record i of every v2 vector (7 records)."""
    ts = 1700000000000 + i * 1000
    key = None if i == 3 else ("key-%d" % i).encode()
    value = None if i == 5 else (("value-%d-" % i) + "abcdefgh" * (i * 4)).encode()
    headers = [] if i % 2 else [("h-a", ("ha%d" % i).encode()), ("h-b", None)]
    return ts, key, value, headers


def legacy_record(magic, i):
    """Message i of every v0/v1 vector (4 messages)."""
    ts = 1600000000000 + i
    key = None if i == 2 else ("k%d" % i).encode()
    value = ("legacy-value-%d-" % i).encode() + b"z" * (i * 10)
    return ts, key, value


def write(name, data):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(bytes(data))


def v2_batch(codec, transactional=False):
    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=transactional,
                                  producer_id=1234, producer_epoch=5, base_sequence=42,
                                  batch_size=1 << 20)
    for i in range(7):
        ts, key, value, headers = v2_record(i)
        b.append(i, timestamp=ts, key=key, value=value, headers=headers)
    return bytes(b.build())


def legacy_set(magic, codec):
    b = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 20)
    for i in range(4):
        ts, key, value = legacy_record(magic, i)
        b.append(i, timestamp=ts, key=key, value=value)
    return bytes(b.build())


# --- an independent XXH32 for the magic-0 lz4 header checksum ---------------
def xxh32(data, seed=0):
    p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
    m = 0xFFFFFFFF
    rotl = lambda x, r: ((x << r) | (x >> (32 - r))) & m
    n, i = len(data), 0
    if n >= 16:
        v = [(seed + p1 + p2) & m, (seed + p2) & m, seed, (seed - p1) & m]
        while n - i >= 16:
            for k in range(4):
                lane = struct.unpack_from("<I", data, i)[0]
                v[k] = (rotl((v[k] + lane * p2) & m, 13) * p1) & m
                i += 4
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & m
    else:
        h = (seed + p5) & m
    h = (h + n) & m
    while n - i >= 4:
        h = (rotl((h + struct.unpack_from("<I", data, i)[0] * p3) & m, 17) * p4) & m
        i += 4
    while i < n:
        h = (rotl((h + data[i] * p5) & m, 11) * p1) & m
        i += 1
    h ^= h >> 15
    h = (h * p2) & m
    h ^= h >> 13
    h = (h * p3) & m
    h ^= h >> 16
    return h


def lz4_kafka_v0(payload):
    """An lz4 frame with Kafka's magic-0 header checksum (over magic + descriptor)."""
    frame = bytearray(kcodec.lz4_encode(payload))  # block_linked=False, content size stored
    assert frame[4] & 0x08
    assert frame[14] == (xxh32(bytes(frame[4:14])) >> 8) & 0xFF, "xxh32 self-check against lz4"
    # Old Kafka does not accept the content-size field: drop it, as kafka-python does.
    frame[4] &= ~0x08
    frame = frame[:6] + frame[14:]
    hc_pos = 6
    frame[hc_pos] = (xxh32(bytes(frame[0:hc_pos])) >> 8) & 0xFF
    return bytes(frame)


def legacy_v0_lz4():
    """kafka-python needs python3-xxhash for this; build it from parts instead:
    an uncompressed v0 inner set wrapped in a v0 message with the broken-checksum frame."""
    inner = legacy_set(0, 0)
    value = lz4_kafka_v0(inner)
    body = struct.pack(">bb", 0, 3) + struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    import zlib
    crc = zlib.crc32(body) & 0xFFFFFFFF
    msg = struct.pack(">I", crc) + body
    return struct.pack(">qi", 3, len(msg)) + msg  # wrapper offset = last inner offset


def payload():
    return b"".join(b"line %d: the quick brown fox jumps over the lazy dog\n" % i for i in range(400))


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, c in CODECS.items():
        write("v2_%s.bin" % name, v2_batch(c))
    write("v2_zstd_txn.bin", v2_batch(4, transactional=True))
    # A fetch-like blob: two whole batches and the first 100 bytes of a third.
    write("v2_fetch_partial.bin", v2_batch(0) + v2_batch(1) + v2_batch(2)[:100])

    for magic in (0, 1):
        for name in ("none", "gzip", "snappy", "lz4"):
            if magic == 0 and name == "lz4":
                write("legacy_v0_lz4.bin", legacy_v0_lz4())
                continue
            write("legacy_v%d_%s.bin" % (magic, name), legacy_set(magic, CODECS[name]))

    p = payload()
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as g:
        g.write(p)
    write("payload.gzip", buf.getvalue())
    write("payload.snappy_raw", snappy.compress(p))
    write("payload.snappy_xerial", kcodec.snappy_encode(p, xerial_compatible=True, xerial_blocksize=4096))
    write("payload.lz4", lz4.frame.compress(p))  # content size stored, linked blocks
    write("payload.lz4_kafka", kcodec.lz4_encode(p))
    write("payload.lz4_v0", lz4_kafka_v0(p))
    write("payload.zstd", zstandard.ZstdCompressor().compress(p))
    half = len(p) // 2
    cobj = zstandard.ZstdCompressor(write_content_size=False)
    write("payload.zstd_2frames", cobj.compress(p[:half]) + cobj.compress(p[half:]))


if __name__ == "__main__":
    main()
