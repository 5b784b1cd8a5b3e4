"""tests/differential/schema_codec.py: a Kafka protocol codec driven by Kafka's JSON schemas.

The differential test's own encoder and decoder, independent of the
broker's generated C++ codecs: it reads the message schemas Kafka generates
its code from (`messages/*.json`, Kafka 3.9.1: $CK_SCHEMA_DIR, or
../shared/kafka-protocol beside the repository as deploy/test.sh finds it) and encodes a request /
decodes a response of any API key at any version the schema defines.

Values are plain Python: a message or struct is a dict keyed by the
schema's field names, arrays are lists, `records` and `bytes` are bytes,
`uuid` is 16 bytes, null is None. Encoding takes the fields the version has
(a missing one gets the schema default; a field the version lacks is left
out); decoding returns every field of the version, tagged fields with their
default when absent, and unknown tags under `_unknown_tags`.

Covered: every primitive type, nullable strings/bytes/arrays/structs,
flexible versions (compact lengths, tagged fields), per-field
flexibleVersions overrides (RequestHeader's ClientId), common structs,
request header v0-v2 and response header v0/v1 (ApiVersions responses
always use v0). Standard library only.
"""

import json
import os
import struct
import uuid as uuid_mod

_HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(_HERE, "..", ".."))


def schema_dir():
    """The directory of Kafka's message schemas, or None (the caller fails)."""
    cands = [os.environ.get("CK_SCHEMA_DIR", ""),  # ctest sets it from CMake's CK_SCHEMA_DIR
             os.path.join(REPO, "..", "shared", "kafka-protocol"),  # where deploy/test.sh looks
             os.path.join(REPO, "shared", "kafka-protocol")]
    for c in cands:
        if c and os.path.isdir(os.path.join(c, "messages")):
            return os.path.join(c, "messages")
    return None


# ------------------------------------------------------------------ schema loading

def _strip_comments(text):
    """JSON with // comments (Kafka's schema files) -> JSON; strings kept intact."""
    out, i, n, in_str = [], 0, len(text), False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            out.append(c)
        elif c == "/" and i + 1 < n and text[i + 1] == "/":
            while i < n and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


class Versions:
    """A schema version range: "0+", "3-5", "none"."""

    def __init__(self, spec):
        spec = (spec or "none").strip()
        if spec == "none":
            self.lo, self.hi = 1, 0
        elif spec.endswith("+"):
            self.lo, self.hi = int(spec[:-1]), 1 << 15
        elif "-" in spec:
            a, b = spec.split("-")
            self.lo, self.hi = int(a), int(b)
        else:
            self.lo = self.hi = int(spec)

    def __contains__(self, v):
        return self.lo <= v <= self.hi

    def __repr__(self):
        return "%d-%d" % (self.lo, self.hi)


class Field:
    def __init__(self, d, structs):
        self.name = d["name"]
        self.type = d["type"].strip()
        self.versions = Versions(d.get("versions"))
        self.nullable = Versions(d.get("nullableVersions"))
        self.tag = d.get("tag")
        self.tagged = Versions(d.get("taggedVersions")) if "tag" in d else None
        self.flexible_override = Versions(d["flexibleVersions"]) if "flexibleVersions" in d else None
        self.default = d.get("default")
        self.map_key = bool(d.get("mapKey"))
        self.is_array = self.type.startswith("[]")
        self.elem = self.type[2:] if self.is_array else self.type
        self.fields = None  # struct fields, for struct and struct-array types
        if "fields" in d:
            self.fields = [Field(x, structs) for x in d["fields"]]
            structs[self.elem] = self.fields
        self._structs = structs

    def struct_fields(self):
        if self.fields is not None:
            return self.fields
        return self._structs.get(self.elem)

    def is_struct(self):
        return self.elem not in PRIMITIVES

    def default_value(self, version):
        if self.is_array:
            return None if (self.default == "null" and version in self.nullable) else []
        if self.is_struct():
            return None if version in self.nullable and self.default == "null" else \
                {f.name: f.default_value(version) for f in self.struct_fields() if version in f.versions}
        t, d = self.elem, self.default
        if t == "bool":
            return d is True or d == "true"
        if t in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
            if d is None or d == "":
                return 0
            return int(d, 0) if isinstance(d, str) else int(d)
        if t == "float64":
            return float(d) if d not in (None, "") else 0.0
        if t == "string":
            if d == "null":
                return None
            return d if d is not None else ""
        if t in ("bytes", "records"):
            return None if (d == "null" or (t == "records" and version in self.nullable)) else b""
        if t == "uuid":
            return bytes(16)
        raise ValueError("no default for type " + t)


PRIMITIVES = {"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64",
              "string", "bytes", "records", "uuid"}


class Message:
    def __init__(self, d):
        self.name = d["name"]
        self.api_key = d.get("apiKey")
        self.kind = d["type"]
        self.valid = Versions(d.get("validVersions"))
        self.flexible = Versions(d.get("flexibleVersions"))
        self.structs = {}
        for s in d.get("commonStructs", []):
            self.structs[s["name"]] = None  # filled below; fields may refer to each other
        for s in d.get("commonStructs", []):
            self.structs[s["name"]] = [Field(x, self.structs) for x in s["fields"]]
        self.fields = [Field(x, self.structs) for x in d["fields"]]


class Schemas:
    """All messages of a schema directory, by (api_key, 'request'|'response') and by name."""

    def __init__(self, directory):
        self.by_key, self.by_name = {}, {}
        for fn in sorted(os.listdir(directory)):
            if not fn.endswith(".json"):
                continue
            with open(os.path.join(directory, fn)) as f:
                m = Message(json.loads(_strip_comments(f.read())))
            self.by_name[m.name] = m
            if m.api_key is not None and m.kind in ("request", "response"):
                self.by_key[(m.api_key, m.kind)] = m
        self.api_names = {k: m.name[:-len("Request")] for (k, kind), m in self.by_key.items() if kind == "request"}

    def request(self, key):
        return self.by_key[(key, "request")]

    def response(self, key):
        return self.by_key[(key, "response")]

    def request_header_version(self, key, version):
        if key == 7 and version == 0:
            return 0  # ControlledShutdown v0 has no client id
        return 2 if version in self.request(key).flexible else 1

    def response_header_version(self, key, version):
        if key == 18:
            return 0  # ApiVersions responses always use header v0 (KIP-511)
        return 1 if version in self.response(key).flexible else 0


# ------------------------------------------------------------------ writer

class Writer:
    def __init__(self):
        self.parts = []

    def raw(self, b):
        self.parts.append(b)

    def pack(self, fmt, v):
        self.parts.append(struct.pack(">" + fmt, v))

    def uvarint(self, v):
        if v < 0:
            raise ValueError("negative uvarint")
        out = bytearray()
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)
        self.parts.append(bytes(out))

    def varint(self, v):
        self.uvarint((v << 1) ^ (v >> 63))

    def bytes(self):
        return b"".join(self.parts)


def _uvarint_bytes(v):
    w = Writer()
    w.uvarint(v)
    return w.bytes()


class Truncated(Exception):
    pass


class Reader:
    def __init__(self, data, pos=0):
        self.data, self.pos = data, pos

    def take(self, n):
        if n < 0 or self.pos + n > len(self.data):
            raise Truncated("need %d bytes at %d of %d" % (n, self.pos, len(self.data)))
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def unpack(self, fmt):
        size = struct.calcsize(">" + fmt)
        return struct.unpack(">" + fmt, self.take(size))[0]

    def uvarint(self):
        shift, v = 0, 0
        for _ in range(10):
            b = self.take(1)[0]
            v |= (b & 0x7F) << shift
            if not b & 0x80:
                return v
            shift += 7
        raise ValueError("varint too long")

    def varint(self):
        u = self.uvarint()
        return (u >> 1) ^ -(u & 1)

    def remaining(self):
        return len(self.data) - self.pos


_FIXED = {"int8": "b", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I", "int64": "q", "float64": "d"}


# ------------------------------------------------------------------ encode

def _flex(field, version, flexible):
    if field.flexible_override is not None:
        return version in field.flexible_override
    return flexible


def _enc_value(w, field, value, version, flexible):
    flex = _flex(field, version, flexible)
    nullable = version in field.nullable
    if field.is_array:
        if value is None:
            if not nullable:
                raise ValueError("%s is not nullable at v%d" % (field.name, version))
            w.uvarint(0) if flex else w.pack("i", -1)
            return
        w.uvarint(len(value) + 1) if flex else w.pack("i", len(value))
        for item in value:
            _enc_single(w, field, item, version, flexible, flex, nullable=False)
        return
    _enc_single(w, field, value, version, flexible, flex, nullable)


def _enc_single(w, field, value, version, flexible, flex, nullable):
    t = field.elem
    if t in _FIXED:
        w.pack(_FIXED[t], value)
    elif t == "bool":
        w.pack("b", 1 if value else 0)
    elif t == "uuid":
        w.raw(bytes(value) if value is not None else bytes(16))
    elif t == "string":
        if value is None:
            if not nullable:
                raise ValueError("%s is not nullable at v%d" % (field.name, version))
            w.uvarint(0) if flex else w.pack("h", -1)
        else:
            b = value.encode("utf-8") if isinstance(value, str) else bytes(value)
            w.uvarint(len(b) + 1) if flex else w.pack("h", len(b))
            w.raw(b)
    elif t in ("bytes", "records"):
        if value is None:
            if not nullable:
                raise ValueError("%s is not nullable at v%d" % (field.name, version))
            w.uvarint(0) if flex else w.pack("i", -1)
        else:
            w.uvarint(len(value) + 1) if flex else w.pack("i", len(value))
            w.raw(bytes(value))
    else:  # struct
        if value is None:
            if not nullable:
                raise ValueError("%s is not nullable at v%d" % (field.name, version))
            w.pack("b", -1)
            return
        if nullable:
            w.pack("b", 1)
        _enc_struct(w, field.struct_fields(), value, version, flexible)


def _enc_struct(w, fields, value, version, flexible):
    tagged = []
    for f in fields:
        if version not in f.versions:
            continue
        v = value.get(f.name, f.default_value(version)) if value is not None else f.default_value(version)
        if f.tagged is not None and version in f.tagged:
            if flexible and v != f.default_value(version):
                sub = Writer()
                _enc_value(sub, f, v, version, flexible)
                tagged.append((f.tag, sub.bytes()))
            continue
        _enc_value(w, f, v, version, flexible)
    if flexible:
        extra = value.get("_unknown_tags", {}) if value else {}
        for tag, raw in extra.items():
            tagged.append((tag, raw))
        tagged.sort()
        w.uvarint(len(tagged))
        for tag, raw in tagged:
            w.uvarint(tag)
            w.uvarint(len(raw))
            w.raw(raw)


def encode_body(msg, value, version):
    w = Writer()
    _enc_struct(w, msg.fields, value, version, version in msg.flexible)
    return w.bytes()


def encode_request(schemas, key, version, correlation_id, body, client_id="ck-diff", raw_body=None,
                   header_version=None):
    """A whole frame (size prefix included) of request `key` at `version`.
    header_version: the version the header names instead (one the schema may
    not have: an unsupported-version request; its header has the format of
    the newest version the schema knows)."""
    named = version if header_version is None else header_version
    hv = schemas.request_header_version(key, min(named, schemas.request(key).valid.hi))
    hdr = schemas.by_name["RequestHeader"]
    h = {"RequestApiKey": key, "RequestApiVersion": named, "CorrelationId": correlation_id,
         "ClientId": client_id}
    w = Writer()
    _enc_struct(w, hdr.fields, h, hv, hv in hdr.flexible)
    head = w.bytes()
    payload = raw_body if raw_body is not None else encode_body(schemas.request(key), body, version)
    frame = head + payload
    return struct.pack(">i", len(frame)) + frame


# ------------------------------------------------------------------ decode

def _dec_value(r, field, version, flexible):
    flex = _flex(field, version, flexible)
    nullable = version in field.nullable
    if field.is_array:
        n = r.uvarint() - 1 if flex else r.unpack("i")
        if n < 0:
            if not nullable:
                raise ValueError("null array %s at v%d" % (field.name, version))
            return None
        if n > r.remaining():
            raise Truncated("array %s claims %d elements, %d bytes left" % (field.name, n, r.remaining()))
        return [_dec_single(r, field, version, flexible, flex, False) for _ in range(n)]
    return _dec_single(r, field, version, flexible, flex, nullable)


def _dec_single(r, field, version, flexible, flex, nullable):
    t = field.elem
    if t in _FIXED:
        return r.unpack(_FIXED[t])
    if t == "bool":
        return r.unpack("b") != 0
    if t == "uuid":
        return r.take(16)
    if t == "string":
        n = r.uvarint() - 1 if flex else r.unpack("h")
        if n < 0:
            if not nullable:
                raise ValueError("null string %s at v%d" % (field.name, version))
            return None
        return r.take(n).decode("utf-8", "replace")
    if t in ("bytes", "records"):
        n = r.uvarint() - 1 if flex else r.unpack("i")
        if n < 0:
            if not nullable:
                raise ValueError("null bytes %s at v%d" % (field.name, version))
            return None
        return r.take(n)
    if nullable:
        if r.unpack("b") < 0:
            return None
    return _dec_struct(r, field.struct_fields(), version, flexible)


def _dec_struct(r, fields, version, flexible):
    out = {}
    by_tag = {}
    for f in fields:
        if version not in f.versions:
            continue
        if f.tagged is not None and version in f.tagged:
            by_tag[f.tag] = f
            out[f.name] = f.default_value(version)
            continue
        out[f.name] = _dec_value(r, f, version, flexible)
    if flexible:
        for _ in range(r.uvarint()):
            tag = r.uvarint()
            size = r.uvarint()
            raw = r.take(size)
            f = by_tag.get(tag)
            if f is None:
                out.setdefault("_unknown_tags", {})[tag] = raw.hex()
                continue
            sub = Reader(raw)
            out[f.name] = _dec_value(sub, f, version, flexible)
            if sub.remaining():
                raise ValueError("tagged field %s: %d bytes left over" % (f.name, sub.remaining()))
    return out


def decode_response(schemas, key, version, frame):
    """(correlation_id, body dict) from a response frame without its size prefix.
    Raises on bytes left over: a response must decode exactly."""
    r = Reader(frame)
    hv = schemas.response_header_version(key, version)
    corr = r.unpack("i")
    if hv >= 1:
        n = r.uvarint()
        for _ in range(n):
            r.uvarint()
            r.take(r.uvarint())
    msg = schemas.response(key)
    body = _dec_struct(r, msg.fields, version, version in msg.flexible)
    if r.remaining():
        raise ValueError("%s v%d: %d bytes left over after decoding" % (msg.name, version, r.remaining()))
    return corr, body


def decode_request_body(schemas, key, version, data):
    msg = schemas.request(key)
    r = Reader(data)
    body = _dec_struct(r, msg.fields, version, version in msg.flexible)
    if r.remaining():
        raise ValueError("%d bytes left over" % r.remaining())
    return body


def map_key(field):
    """The mapKey field names of a struct-array field's element (Kafka's
    generated code keeps such arrays in a keyed collection)."""
    fs = field.struct_fields() if field.is_array and field.is_struct() else None
    return [f.name for f in fs if f.map_key] if fs else []


def uuid_str(b):
    return str(uuid_mod.UUID(bytes=bytes(b)))
