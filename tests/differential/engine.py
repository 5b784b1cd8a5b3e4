"""tests/differential/engine.py: sends the same requests to two brokers and compares the answers.

A `Side` is one broker (Apache Kafka or ours) behind one connection: it
encodes a request with the schema codec, sends it, and decodes the answer
(or notes that the broker closed the connection, or did not answer in time).
A `Step` is one request of the corpus: API key, version, case name and a
body (a dict, or a function of the side's state for bodies that need what
that broker answered earlier: its topic ids, member ids, producer ids).

`normalise()` turns a decoded response into what can be compared, and says
for each rule why the value legitimately differs between two correct
brokers. `diff()` walks two normalised answers and yields (path, kafka,
ours) for every difference. `Allowlist` holds the known differences
(known_differences.json), each with its reason.
"""

import fnmatch
import json
import socket
import struct
import time

import records as rec
import schema_codec as sc


class Step:
    def __init__(self, api, version, case, body=None, raw_body=None, capture=None, header_version=None,
                 timeout=None):
        self.api, self.version, self.case = api, version, case
        self.timeout = timeout  # seconds to wait for an answer, when not the side's default
        self.header_version = header_version  # the version the header names, when not `version`
        self.body = body if body is not None else {}
        self.raw_body = raw_body  # bytes or function(side) -> bytes: a hand-made (invalid) body
        self.capture = capture    # function(side, response dict) run after each side's answer


class Outcome:
    """What one side did with one request."""

    def __init__(self, kind, body=None, detail=None, elapsed=0.0):
        self.kind, self.body, self.detail, self.elapsed = kind, body, detail, elapsed


class Side:
    def __init__(self, name, port, schemas, timeout=15.0):
        self.name, self.port, self.schemas, self.timeout = name, port, schemas, timeout
        self.sock = None
        self.corr = 0
        self.state = {}            # what scenario steps captured from this broker's answers
        self.topic_ids = {}        # name -> uuid bytes, learned from answers
        self.symbols = {}          # (kind, value) -> symbolic name, in order of appearance
        self.requests = 0
        self.api = None            # the API being normalised
        self.last_request = None   # the body of the request last sent by run.py

    def connect(self):
        self.close()
        self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def close(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
            self.sock = None

    def _recv_exact(self, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed by the broker")
            buf += chunk
        return bytes(buf)

    def send(self, key, version, body, raw_body=None, header_version=None, timeout=None):
        if self.sock is None:
            self.connect()
        self.sock.settimeout(timeout or self.timeout)
        self.corr += 1
        self.requests += 1
        t0 = time.monotonic()
        try:
            frame = sc.encode_request(self.schemas, key, version, self.corr, body, raw_body=raw_body,
                                      header_version=header_version)
        except Exception as e:  # noqa: BLE001 - a corpus bug, reported as such
            return Outcome("encode_error", detail=repr(e))
        try:
            self.sock.sendall(frame)
            size = struct.unpack(">i", self._recv_exact(4))[0]
            data = self._recv_exact(size)
        except socket.timeout:
            self.close()
            return Outcome("no_answer", detail="no answer within %.0fs" % (timeout or self.timeout),
                           elapsed=time.monotonic() - t0)
        except (ConnectionError, OSError) as e:
            self.close()
            return Outcome("closed", detail=str(e), elapsed=time.monotonic() - t0)
        elapsed = time.monotonic() - t0
        try:
            corr, resp = sc.decode_response(self.schemas, key, version, data)
        except Exception as e:  # noqa: BLE001 - an undecodable answer is a finding
            self.close()
            return Outcome("undecodable", detail=repr(e))
        if corr != self.corr:
            self.close()
            return Outcome("undecodable", detail="correlation id %d, want %d" % (corr, self.corr))
        return Outcome("answer", body=resp, elapsed=elapsed)

    def symbol(self, kind, value):
        k = (kind, value)
        if k not in self.symbols:
            self.symbols[k] = "%s#%d" % (kind, 1 + sum(1 for x in self.symbols if x[0] == kind))
        return self.symbols[k]

    def topic_id(self, name):
        """This broker's id of topic `name` (asked with Metadata v12 if unknown)."""
        if name not in self.topic_ids:
            out = self.send(3, 12, {"Topics": [{"TopicId": bytes(16), "Name": name}],
                                    "AllowAutoTopicCreation": False})
            if out.kind == "answer":
                for t in out.body["Topics"]:
                    if t["ErrorCode"] == 0:
                        self.topic_ids[t["Name"]] = t["TopicId"]
        return self.topic_ids.get(name, bytes(16))


# ------------------------------------------------------------------ normalising

# Why each rule is legitimate (two correct brokers differ here):
#  ThrottleTimeMs        quota throttling is per broker and time-dependent.
#  ClusterId             each cluster has its own id.
#  Host, Port            each broker listens on its own free port.
#  uuid fields           topic ids are random per broker; replaced by the
#                        topic's name where known, else by order of appearance.
#  *ErrorMessage         free text (clients show it, never parse it); only
#                        whether there is one stays compared.
#  ProducerId, MemberId  allocated by each broker (counter / client id plus a
#                        random UUID); replaced by order of appearance, so a
#                        broker answering the same id twice still compares.
#  SessionId             fetch session ids are random; 0 (no session) kept.
#  LogDir, TotalBytes, UsableBytes  paths and free space of each machine.
#  TransactionStartTimeMs, LogAppendTimeMs (not -1), *TimestampMs of groups:
#                        wall-clock times of each run.
#  LastTimestamp (DescribeProducers) at or after the run began: the time of a
#                        COMMIT/ABORT marker, which each broker writes with
#                        its own clock; a data batch's (the corpus writes
#                        them an hour back, records.BASE_TS) stays compared.
ERROR_TEXT = ("ErrorMessage",)
IGNORED = {"ThrottleTimeMs"}
HOSTLIKE = {"Host": "<host>", "Port": "<port>", "ClusterId": "<cluster>", "LogDir": "<dir>"}
WALL_CLOCK = {"TransactionStartTimeMs"}
RUN_BEGAN_MS = rec.BASE_TS + 3600 * 1000 - 60 * 1000  # a minute of slack before the run's first request
MACHINE = {"TotalBytes", "UsableBytes"}
# Arrays of structs that name their elements (topics, partitions, groups,
# configs, transactions, resources) are matched by that name, as the
# schema's mapKey arrays are: Kafka's answers list them in hash-map order
# (DescribeLogDirs, OffsetFetch, DescribeTransactions, ListGroups, configs)
# and clients build maps from them, so order carries no meaning. A name that
# appears twice is still compared twice (a duplicate entry is a finding).
ELEMENT_KEYS = [("ResourceType", "ResourceName"), ("Name",), ("Topic",), ("TopicName",), ("TopicId",),
                ("GroupId",), ("TransactionalId",), ("PartitionIndex",), ("Partition",), ("Index",),
                ("MemberId",), ("ApiKey",), ("EntityType",), ("Key",), ("User",)]
# Struct arrays whose elements Kafka keeps in a map by their entity (client
# quota entries: a HashMap keyed by ClientQuotaEntity), matched by it.
ENTITY_KEYED = {(48, "Entries"), (49, "Entries")}
# Primitive arrays that are sets in Kafka (a partition set per topic).
UNORDERED = {(65, "Partitions")}


def _norm_uuid(side, v):
    if v is None:
        return None
    if v == bytes(16):
        return "uuid:zero"
    for name, u in side.topic_ids.items():
        if u == v:
            return "id(%s)" % name
    return side.symbol("uuid", bytes(v))


def _norm_value(side, f, v, version):
    name = f.name
    if v is None:
        return None
    if name in HOSTLIKE:
        return HOSTLIKE[name]
    if name.endswith(ERROR_TEXT):
        return "<text>" if v else v
    if f.elem == "uuid":
        return _norm_uuid(side, v)
    if f.elem == "records":
        try:
            return rec.parse(v)
        except Exception as e:  # noqa: BLE001
            return {"unparsable_records": repr(e), "hex": bytes(v).hex()[:200]}
    if f.elem == "bytes":
        return bytes(v).hex()
    if name == "ProducerId" and isinstance(v, int) and v >= 0:
        return side.symbol("pid", v)
    if name in ("MemberId", "LeaderId", "Leader") and f.elem == "string" and v:
        return side.symbol("member", v)
    if name == "SessionId" and isinstance(v, int) and v != 0:
        return "<session>"
    if name in WALL_CLOCK or (name == "LogAppendTimeMs" and v != -1):
        return "<time>"
    if name == "LastTimestamp" and isinstance(v, int) and v >= RUN_BEGAN_MS:
        return "<time>"
    if name in MACHINE and v >= 0:
        return "<bytes>"
    return v


def learn_ids(side, value):
    """Records topic name -> id from any struct of a response with both."""
    if isinstance(value, dict):
        n, t = value.get("Name", value.get("TopicName")), value.get("TopicId")
        if isinstance(n, str) and isinstance(t, (bytes, bytearray)) and t != bytes(16):
            side.topic_ids.setdefault(n, bytes(t))
        for v in value.values():
            learn_ids(side, v)
    elif isinstance(value, list):
        for v in value:
            learn_ids(side, v)


def _key_of(item, keys):
    return ",".join("%s=%s" % (k, item.get(k)) for k in keys)


def normalise_struct(side, fields, value, version):
    if value is None:
        return None
    out = {}
    failed = isinstance(value.get("ErrorCode"), int) and value["ErrorCode"] != 0
    for f in fields:
        if f.name not in value or f.name in IGNORED:
            continue
        if failed and f.name in ("ProducerId", "ProducerEpoch"):
            # an entry that failed carries no allocated id: its value is the
            # field's filler (0 on both), compared as is
            out[f.name] = value[f.name]
            continue
        v = value[f.name]
        if f.is_array and f.is_struct() and v is not None:
            keys = sc.map_key(f)
            if not keys:
                names = {x.name for x in f.struct_fields() if version in x.versions}
                keys = next((list(k) for k in ELEMENT_KEYS if all(n in names for n in k)), [])
            items = [normalise_struct(side, f.struct_fields(), x, version) for x in v]
            if keys:
                # mapKey arrays are keyed collections in Kafka's generated
                # code: their order carries no meaning, so match by key.
                d = {}
                for raw, x in zip(v, items):
                    k = "[%s]" % _key_of({kk: _norm_value(side, next(ff for ff in f.struct_fields()
                                                                     if ff.name == kk), raw.get(kk), version)
                                          for kk in keys}, keys)
                    while k in d:
                        k += "+"
                    d[k] = x
                out[f.name] = d
            elif (side.api, f.name) in ENTITY_KEYED:
                d = {}
                for x in items:
                    k = "[Entity=%s]" % json.dumps(x.get("Entity"), sort_keys=True, default=str)
                    while k in d:
                        k += "+"
                    d[k] = x
                out[f.name] = d
            else:
                out[f.name] = items
        elif f.is_array and v is not None:
            out[f.name] = [_norm_value(side, f, x, version) for x in v]
            if (side.api, f.name) in UNORDERED:
                out[f.name].sort(key=repr)
        elif f.is_struct() and not f.is_array:
            out[f.name] = normalise_struct(side, f.struct_fields(), v, version)
        else:
            out[f.name] = _norm_value(side, f, v, version)
    if "_unknown_tags" in value:
        out["_unknown_tags"] = value["_unknown_tags"]
    return out


def normalise(side, schemas, key, version, outcome, request=None):
    if outcome.kind != "answer":
        return {"<outcome>": outcome.kind}
    learn_ids(side, outcome.body)
    side.api = key
    out = normalise_struct(side, schemas.response(key).fields, outcome.body, version)
    if key == 1 and isinstance(request, dict):
        _trim_fetched(side, version, request, out)
    return out


def _trim_fetched(side, version, request, out):
    """Fetch: drops what a client discards, so that two brokers cutting
    record data at different (valid) places still compare: messages and
    batches wholly below the offset asked (a broker may answer from the start
    of the batch holding it; Kafka's down-conversion starts at the offset
    itself) and a partial message or batch at the end (a broker may cut the
    data at the size limit mid-record). Everything at or above the offset
    asked, up to the last whole record, is compared."""
    asked = {}
    for t in request.get("Topics") or []:
        tkey = ("[TopicId=%s]" % _norm_uuid(side, t.get("TopicId"))) if version >= 13 else \
            ("[Topic=%s]" % t.get("Topic"))
        for p in t.get("Partitions") or []:
            asked[(tkey, "[PartitionIndex=%s]" % p.get("Partition"))] = p.get("FetchOffset", 0)
    for tkey, topic in (out.get("Responses") or {}).items():
        for pkey, part in (topic.get("Partitions") or {}).items():
            recs = part.get("Records")
            if not isinstance(recs, list) or (tkey, pkey) not in asked:
                continue
            start = asked[(tkey, pkey)]
            kept = []
            for b in recs:
                if "partial" in b:
                    continue
                last = b["base_offset"] + b["last_offset_delta"] if "base_offset" in b else b.get("offset", 0)
                if last >= start:
                    kept.append(b)
            part["Records"] = kept


def diff(a, b, path=""):
    """Yields (path, a_value, b_value) for each difference."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a.keys()) + [k for k in b.keys() if k not in a]:
            p = "%s.%s" % (path, k) if path and not k.startswith("[") else path + k
            if k not in a:
                yield p, "<absent>", _short(b[k])
            elif k not in b:
                yield p, _short(a[k]), "<absent>"
            else:
                yield from diff(a[k], b[k], p)
        return
    if isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            p = "%s[%d]" % (path, i)
            if i >= len(a):
                yield p, "<absent>", _short(b[i])
            elif i >= len(b):
                yield p, _short(a[i]), "<absent>"
            else:
                yield from diff(a[i], b[i], p)
        return
    if a != b:
        yield path or "<response>", _short(a), _short(b)


def _short(v, limit=160):
    s = v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)
    return s if len(s) <= limit else s[:limit - 3] + "..."


# ------------------------------------------------------------------ known differences

class Allowlist:
    """known_differences.json: [{api, versions?, case?, path, kafka?, ours?, reason}].
    api/case/path are shell globs (path may be a list of them; a literal "["
    is written "[[]"); versions "lo-hi"; kafka/ours, when given, must match
    the shown values (globs too)."""

    def __init__(self, path):
        with open(path) as f:
            self.entries = json.load(f)
        for e in self.entries:
            if not e.get("reason"):
                raise ValueError("known difference without a reason: %r" % e)
            e.setdefault("used", 0)

    def match(self, api, version, case, path, kafka, ours):
        for e in self.entries:
            if not fnmatch.fnmatchcase(api, e.get("api", "*")):
                continue
            if "versions" in e and version not in sc.Versions(e["versions"]):
                continue
            if not fnmatch.fnmatchcase(case, e.get("case", "*")):
                continue
            paths = e.get("path", "*")
            if not any(fnmatch.fnmatchcase(path, p) for p in ([paths] if isinstance(paths, str) else paths)):
                continue
            if "kafka" in e and not fnmatch.fnmatchcase(str(kafka), str(e["kafka"])):
                continue
            if "ours" in e and not fnmatch.fnmatchcase(str(ours), str(e["ours"])):
                continue
            e["used"] += 1
            return e
        return None
