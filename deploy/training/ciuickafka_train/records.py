"""ciuickafka_train/records.py: the fixed-layout token record and its decoders.

One record value is one sample:

    offset  size  field
    0       2     magic b"CT"
    2       1     layout version, 1
    3       1     token width in bytes: 2 (uint16 ids) or 4 (uint32 ids)
    4       4     n, the number of tokens (uint32, little-endian)
    8       n*w   the token ids, little-endian uint16 or uint32

`encode()` picks width 2 when every id fits in 16 bits, else 4. A batch of
records that share width and length decodes with one `numpy.frombuffer`
over the joined values (`decode_batch`); mixed lengths or widths fall back
to one header parse per record. JSON values (a list of ints, or an object
with "input_ids" or "tokens") and msgpack values (when the msgpack module is
installed) are accepted too, slower. A value that is none of these raises
RecordError naming the offset.

Pure functions, no shared state: thread-safe.
"""

import json
import struct

import numpy as np

MAGIC = b"CT"
VERSION = 1
HEADER = struct.Struct("<2sBBI")
HEADER_SIZE = HEADER.size  # 8

try:  # optional: the articles' msgpack payloads
    import msgpack  # type: ignore
except ImportError:  # pragma: no cover - depends on the machine
    msgpack = None


class RecordError(ValueError):
    """A record value that is not a token sample."""


def encode(token_ids, seq_len=None):
    """Packs token ids (a sequence or NumPy array of non-negative ints) into
    one record value. With seq_len, the sample must have exactly seq_len ids."""
    a = np.asarray(token_ids)
    if a.ndim != 1:
        raise ValueError("a sample is a 1-D sequence of token ids, got shape %s" % (a.shape,))
    if seq_len is not None and a.shape[0] != seq_len:
        raise ValueError("sample has %d tokens, the writer's seq_len is %d" % (a.shape[0], seq_len))
    if a.size and (a.dtype.kind not in "iu"):
        raise ValueError("token ids must be integers, got dtype %s" % a.dtype)
    if a.size and int(a.min()) < 0:
        raise ValueError("token ids must be non-negative")
    width = 2 if (a.size == 0 or int(a.max()) < 65536) else 4
    if a.size and int(a.max()) >= 1 << 32:
        raise ValueError("token id %d does not fit in 32 bits" % int(a.max()))
    body = a.astype("<u2" if width == 2 else "<u4", copy=False).tobytes()
    return HEADER.pack(MAGIC, VERSION, width, a.shape[0]) + body


def _other_format(value, where):
    """(width 4, uint32 ids) from a JSON or msgpack value."""
    obj = None
    c = value[:1]
    if c in (b"[", b"{", b" ", b"\n"):
        try:
            obj = json.loads(value)
        except ValueError as e:
            raise RecordError("%s: not a token record and not JSON (%s)" % (where, e))
    elif msgpack is not None:
        try:
            obj = msgpack.unpackb(value)
        except Exception as e:  # noqa: BLE001 - any decode failure is the same answer
            raise RecordError("%s: not a token record, JSON or msgpack (%s)" % (where, e))
    else:
        raise RecordError("%s: not a token record (magic %r) and not JSON" % (where, bytes(value[:2])))
    if isinstance(obj, dict):
        obj = obj.get("input_ids", obj.get("tokens"))
    if not isinstance(obj, (list, tuple)):
        raise RecordError("%s: JSON/msgpack sample must be a list of ids or have \"input_ids\"" % where)
    return np.asarray(obj, dtype="<u4")


def decode_one(value, where="record"):
    """(width, ids as a little-endian uint16/uint32 array) of one value."""
    if len(value) >= HEADER_SIZE and value[:2] == MAGIC:
        magic, ver, width, n = HEADER.unpack_from(value)
        if ver != VERSION or width not in (2, 4) or len(value) != HEADER_SIZE + n * width:
            raise RecordError("%s: bad token record header (version %d, width %d, %d ids, %d bytes)" %
                              (where, ver, width, n, len(value)))
        return width, np.frombuffer(value, dtype="<u2" if width == 2 else "<u4", offset=HEADER_SIZE)
    return 4, _other_format(value, where)


def decode_batch(values, where="batch"):
    """Decodes a list of values. Returns (width, lengths int32 array, token
    bytes as one uint8 array: the ids of every sample, concatenated)."""
    n = len(values)
    if n == 0:
        return 2, np.zeros(0, np.int32), np.zeros(0, np.uint8)
    first = values[0]
    size = len(first)
    if size >= HEADER_SIZE and first[:2] == MAGIC and all(len(v) == size for v in values):
        buf = np.frombuffer(b"".join(values), dtype=np.uint8).reshape(n, size)
        head = buf[:, :HEADER_SIZE]
        if (head == head[0]).all():
            _, ver, width, count = HEADER.unpack_from(first)
            if ver == VERSION and width in (2, 4) and size == HEADER_SIZE + count * width:
                return width, np.full(n, count, np.int32), np.ascontiguousarray(buf[:, HEADER_SIZE:]).reshape(-1)
    parts = [decode_one(v, "%s[%d]" % (where, i)) for i, v in enumerate(values)]
    width = max(w for w, _ in parts)
    dt = "<u2" if width == 2 else "<u4"
    lengths = np.fromiter((a.shape[0] for _, a in parts), np.int32, n)
    flat = np.concatenate([a.astype(dt, copy=False) for _, a in parts]) if n else np.zeros(0, dt)
    return width, lengths, flat.view(np.uint8)
