"""tests/differential/corpus.py: the requests both brokers get, as small ordered scenarios.

Each scenario is a function `(c) -> None` that appends steps to the corpus
`c` through `c.step(...)` (one request, answered by both brokers and
compared) and `c.sync(...)` (a wait each broker goes through on its own
and that is not compared: "until the new topic has a leader", "until the
group coordinator is loaded"). `c.versions(api)` is the list of versions
the run covers for that API: all the versions both brokers advertise
(`--all`), or the bounded CI subset (lowest, first flexible, highest).

Order matters and is the same for both brokers: a topic is created before
it is produced to, produced to before it is fetched from, and so on. Each
scenario uses its own topic and group names (with the version in them where
each version needs fresh state), so one scenario's answer does not depend
on how another's ended.
"""

import records as rec
import corpus_quotas  # noqa: E402 - (it reads this module's names when its scenario runs)

# API keys by name (Kafka's numbering).
PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, JOIN_GROUP = 8, 9, 10, 11
HEARTBEAT, LEAVE_GROUP, SYNC_GROUP, DESCRIBE_GROUPS, LIST_GROUPS = 12, 13, 14, 15, 16
API_VERSIONS, CREATE_TOPICS, DELETE_TOPICS, DELETE_RECORDS = 18, 19, 20, 21
INIT_PRODUCER_ID, OFFSET_FOR_LEADER_EPOCH, ADD_PARTITIONS_TO_TXN = 22, 23, 24
ADD_OFFSETS_TO_TXN, END_TXN, WRITE_TXN_MARKERS, TXN_OFFSET_COMMIT = 25, 26, 27, 28
DESCRIBE_CONFIGS, ALTER_CONFIGS, DESCRIBE_LOG_DIRS, CREATE_PARTITIONS = 32, 33, 35, 37
DELETE_GROUPS, ELECT_LEADERS, INCREMENTAL_ALTER_CONFIGS, OFFSET_DELETE = 42, 43, 44, 47
DESCRIBE_CLUSTER, DESCRIBE_PRODUCERS, DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 60, 61, 65, 66
ALTER_PARTITION_REASSIGNMENTS, LIST_PARTITION_REASSIGNMENTS = 45, 46
DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS, DESCRIBE_USER_SCRAM_CREDENTIALS = 48, 49, 50

TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4

CONSUMER_META = b"\x00\x01\x00\x00\x00\x01\x00\x06diff-m\xff\xff\xff\xff"  # subscription v1 to diff-m


def vals(n, tag):
    return [(("k%d" % i).encode(), ("%s-%d" % (tag, i)).encode()) for i in range(n)]


def produce_records(version, recs, **kw):
    """The record format a client sends at this Produce version: MessageSet
    v1 below v3 (v0-2 predate RecordBatch), RecordBatch v2 from v3."""
    if version < 3:
        return rec.legacy([(k, v) for k, v, *_ in recs], magic=1)
    return rec.batch(recs, **kw)


def wait_topic(c, name, partitions):
    """Sync: until Metadata shows `partitions` partitions of `name` with leaders."""
    def ready(side):
        out = side.send(METADATA, 12, {"Topics": [{"Name": name, "TopicId": bytes(16)}],
                                       "AllowAutoTopicCreation": False})
        if out.kind != "answer":
            return False
        t = out.body["Topics"][0]
        return t["ErrorCode"] == 0 and len(t["Partitions"]) == partitions and \
            all(p["LeaderId"] >= 0 for p in t["Partitions"])
    c.sync("topic %s ready" % name, ready)


def create(c, name, partitions=1, configs=None, version=7, case=None):
    c.step(CREATE_TOPICS, version, case or "setup: create %s" % name, {
        "Topics": [{"Name": name, "NumPartitions": partitions, "ReplicationFactor": 1,
                    "Configs": [{"Name": k, "Value": v} for k, v in (configs or {}).items()]}],
        "timeoutMs": 30000})
    wait_topic(c, name, partitions)


NOT_READY = (14, 15, 16)  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


def wait_coordinator(c, key, key_type=0):
    """Sync: until the coordinator of group (or transactional id) `key` is
    found and has loaded its partition: Kafka loads the 50 partitions of
    __consumer_offsets (and those of __transaction_state) one by one after
    creating the topic, and answers NOT_COORDINATOR or
    COORDINATOR_LOAD_IN_PROGRESS for a key whose partition is not loaded."""
    def ready(side):
        out = side.send(FIND_COORDINATOR, 4, {"KeyType": key_type, "CoordinatorKeys": [key]})
        if out.kind != "answer" or out.body["Coordinators"][0]["ErrorCode"] != 0:
            return False
        if key_type == 0:
            out = side.send(DESCRIBE_GROUPS, 0, {"Groups": [key]})
            return out.kind == "answer" and out.body["Groups"][0]["ErrorCode"] not in NOT_READY
        out = side.send(DESCRIBE_TRANSACTIONS, 0, {"TransactionalIds": [key]})
        return out.kind == "answer" and out.body["TransactionStates"][0]["ErrorCode"] not in NOT_READY
    c.sync("coordinator of %s ready" % key, ready)


# ------------------------------------------------------------------ scenarios

def api_versions(c):
    for v in c.versions(API_VERSIONS):
        c.step(API_VERSIONS, v, "advertised", {"ClientSoftwareName": "ck-diff", "ClientSoftwareVersion": "1.0"})
    # An ApiVersions version beyond both: answered at v0, UNSUPPORTED_VERSION and the list (KIP-511).
    c.step(API_VERSIONS, 0, "unsupported version 99", raw_body=b"", header_version=99)
    c.step(API_VERSIONS, 3, "invalid client software name", {"ClientSoftwareName": "bad name!",
                                                             "ClientSoftwareVersion": "1.0"})


def metadata(c):
    create(c, "diff-m", 3)
    for v in c.versions(METADATA):
        c.step(METADATA, v, "one topic", {"Topics": [{"Name": "diff-m"}], "AllowAutoTopicCreation": False})
        c.step(METADATA, v, "duplicate topic", {"Topics": [{"Name": "diff-m"}, {"Name": "diff-m"}],
                                                "AllowAutoTopicCreation": False})
        c.step(METADATA, v, "invalid topic name", {"Topics": [{"Name": "bad name!"}],
                                                   "AllowAutoTopicCreation": False})
        if v >= 4:
            c.step(METADATA, v, "unknown topic, no auto-create", {"Topics": [{"Name": "diff-none"}],
                                                                  "AllowAutoTopicCreation": False})
        if v >= 1:
            c.step(METADATA, v, "empty topic list", {"Topics": [], "AllowAutoTopicCreation": False})
        if v >= 8 and v <= 10:
            c.step(METADATA, v, "authorized operations", {
                "Topics": [{"Name": "diff-m"}], "IncludeClusterAuthorizedOperations": True,
                "IncludeTopicAuthorizedOperations": True})
    # Auto-creation (v0-3 always ask for it): the first answer and the topic it made.
    for v in c.versions(METADATA):
        name = "diff-auto-v%d" % v
        c.step(METADATA, v, "auto-create", {"Topics": [{"Name": name}], "AllowAutoTopicCreation": True})
        wait_topic(c, name, 1)
        c.step(METADATA, v, "auto-created topic", {"Topics": [{"Name": name}], "AllowAutoTopicCreation": False})


def create_topics(c):
    for v in c.versions(CREATE_TOPICS):
        t = "diff-ct-v%d" % v
        topic = {"Name": t, "NumPartitions": 2, "ReplicationFactor": 1}
        c.step(CREATE_TOPICS, v, "create", {"Topics": [dict(topic, Configs=[{"Name": "retention.ms",
                                                                          "Value": "3600000"}])],
                                            "timeoutMs": 30000})
        wait_topic(c, t, 2)
        c.step(CREATE_TOPICS, v, "already exists", {"Topics": [topic], "timeoutMs": 30000})
        c.step(CREATE_TOPICS, v, "invalid names", {"Topics": [
            dict(topic, Name="bad name!"), dict(topic, Name=".."), dict(topic, Name="x" * 250),
            dict(topic, Name="")], "timeoutMs": 30000})
        c.step(CREATE_TOPICS, v, "bad config value", {"Topics": [dict(topic, Name=t + "-bad", Configs=[
            {"Name": "cleanup.policy", "Value": "bogus"}])], "timeoutMs": 30000})
        c.step(CREATE_TOPICS, v, "unknown config", {"Topics": [dict(topic, Name=t + "-bad", Configs=[
            {"Name": "no.such.config", "Value": "1"}])], "timeoutMs": 30000})
        c.step(CREATE_TOPICS, v, "replication factor 3 on one broker", {"Topics": [dict(
            topic, Name=t + "-rf", ReplicationFactor=3)], "timeoutMs": 30000})
        c.step(CREATE_TOPICS, v, "zero partitions", {"Topics": [dict(topic, Name=t + "-zero", NumPartitions=0)],
                                                     "timeoutMs": 30000})
        c.step(CREATE_TOPICS, v, "duplicate entry", {"Topics": [dict(topic, Name=t + "-dup"),
                                                                dict(topic, Name=t + "-dup")],
                                                     "timeoutMs": 30000})
        c.step(CREATE_TOPICS, v, "empty list", {"Topics": [], "timeoutMs": 30000})
        c.step(CREATE_TOPICS, v, "assignment to an unknown broker", {"Topics": [dict(
            topic, Name=t + "-asg", NumPartitions=-1, ReplicationFactor=-1,
            Assignments=[{"PartitionIndex": 0, "BrokerIds": [7]}])], "timeoutMs": 30000})
        if v >= 1:
            c.step(CREATE_TOPICS, v, "validate only", {"Topics": [dict(topic, Name=t + "-vo")],
                                                       "timeoutMs": 30000, "validateOnly": True})
        if v >= 4:
            c.step(CREATE_TOPICS, v, "broker defaults (-1)", {"Topics": [dict(
                topic, Name=t + "-def", NumPartitions=-1, ReplicationFactor=-1)], "timeoutMs": 30000})
            wait_topic(c, t + "-def", 1)


def produce(c):
    # Valid produces go to diff-p (fetched back below); cases one broker may
    # accept and the other refuse go to diff-pi, so that one finding does
    # not shift every later offset of diff-p.
    create(c, "diff-p", 2)
    create(c, "diff-pi", 3)
    for v in c.versions(PRODUCE):
        recs = vals(3, "p%d" % v)
        c.step(PRODUCE, v, "3 records, acks=-1", {"Acks": -1, "TimeoutMs": 10000, "TopicData": [
            {"Name": "diff-p", "PartitionData": [{"Index": 0, "Records": produce_records(v, recs)}]}]})
        c.step(PRODUCE, v, "acks=1 to partition 1", {"Acks": 1, "TimeoutMs": 10000, "TopicData": [
            {"Name": "diff-p", "PartitionData": [{"Index": 1, "Records": produce_records(v, recs[:1])}]}]})
        c.step(PRODUCE, v, "unknown topic", {"Acks": -1, "TimeoutMs": 10000, "TopicData": [
            {"Name": "diff-none", "PartitionData": [{"Index": 0, "Records": produce_records(v, recs)}]}]})
        c.step(PRODUCE, v, "unknown partition", {"Acks": -1, "TimeoutMs": 10000, "TopicData": [
            {"Name": "diff-p", "PartitionData": [{"Index": 7, "Records": produce_records(v, recs)}]}]})
        c.step(PRODUCE, v, "invalid acks 2", {"Acks": 2, "TimeoutMs": 10000, "TopicData": [
            {"Name": "diff-p", "PartitionData": [{"Index": 0, "Records": produce_records(v, recs)}]}]})
        c.step(PRODUCE, v, "empty topic list", {"Acks": -1, "TimeoutMs": 10000, "TopicData": []})
        c.step(PRODUCE, v, "duplicate partition", {"Acks": -1, "TimeoutMs": 10000, "TopicData": [
            {"Name": "diff-pi", "PartitionData": [{"Index": 1, "Records": produce_records(v, recs[:1])},
                                                 {"Index": 1, "Records": produce_records(v, recs[:1])}]}]})
        # Kafka 3.9.1 does not answer this one at all (the connection stays open): --all only.
        c.step(PRODUCE, v, "null records", {"Acks": -1, "TimeoutMs": 10000, "TopicData": [
            {"Name": "diff-pi", "PartitionData": [{"Index": 1, "Records": None}]}]}, timeout=3, full_only=True)
        big = [(b"big", b"x" * (1024 * 1024 + 100))]
        c.step(PRODUCE, v, "record over message.max.bytes", {"Acks": -1, "TimeoutMs": 10000, "TopicData": [
            {"Name": "diff-pi", "PartitionData": [{"Index": 1, "Records": produce_records(v, big)}]}]})
        bad = rec.legacy(recs, magic=1, bad_crc=True) if v < 3 else rec.batch(recs, bad_crc=True)
        c.step(PRODUCE, v, "wrong CRC", {"Acks": -1, "TimeoutMs": 10000, "TopicData": [
            {"Name": "diff-pi", "PartitionData": [{"Index": 1, "Records": bad}]}]})
        c.step(PRODUCE, v, "invalid topic name", {"Acks": -1, "TimeoutMs": 10000, "TopicData": [
            {"Name": "bad name!", "PartitionData": [{"Index": 0, "Records": produce_records(v, recs)}]}]})
        if v >= 3:
            c.step(PRODUCE, v, "magic 1 message set at v3+", {"Acks": -1, "TimeoutMs": 10000, "TopicData": [
                {"Name": "diff-pi", "PartitionData": [{"Index": 1, "Records": rec.legacy(recs, magic=1)}]}]})
            c.step(PRODUCE, v, "gzip batch with headers", {"Acks": -1, "TimeoutMs": 10000, "TopicData": [
                {"Name": "diff-p", "PartitionData": [{"Index": 0, "Records": rec.batch(
                    [(b"h", b"v", [("h1", b"a"), ("h2", None)])], codec=1)}]}]})
            c.step(PRODUCE, v, "transactional id without a transaction", {
                "TransactionalId": "diff-no-txn", "Acks": -1, "TimeoutMs": 10000, "TopicData": [
                    {"Name": "diff-pi", "PartitionData": [{"Index": 0, "Records": rec.batch(recs)}]}]})
            c.step(PRODUCE, v, "non-zero base offset", {"Acks": -1, "TimeoutMs": 10000, "TopicData": [
                {"Name": "diff-pi", "PartitionData": [{"Index": 2, "Records": rec.batch(recs, base_offset=5)}]}]})


def fetch_body(side, v, topic, parts, **kw):
    body = {"ReplicaId": -1, "MaxWaitMs": 0, "MinBytes": 0, "MaxBytes": kw.get("max_bytes", 1 << 20),
            "IsolationLevel": kw.get("isolation", 0), "SessionId": 0, "SessionEpoch": -1,
            "ReplicaState": {"ReplicaId": -1, "ReplicaEpoch": -1},
            "Topics": [{"Topic": topic, "TopicId": side.topic_id(topic) if v >= 13 else bytes(16),
                        "Partitions": [{"Partition": p, "FetchOffset": off, "CurrentLeaderEpoch": -1,
                                        "LastFetchedEpoch": -1, "LogStartOffset": -1,
                                        "PartitionMaxBytes": kw.get("partition_max", 1 << 20)}
                                       for p, off in parts]}],
            "ForgottenTopicsData": [], "RackId": ""}
    if "session" in kw:
        body["SessionId"], body["SessionEpoch"] = kw["session"]
    return body


def fetch(c):
    # diff-p holds what produce() wrote; fetch it back at every version
    # (v0-3 answers are down-converted to message format v0/v1).
    for v in c.versions(FETCH):
        c.step(FETCH, v, "from offset 0", lambda s, v=v: fetch_body(s, v, "diff-p", [(0, 0), (1, 0)]))
        c.step(FETCH, v, "from the middle", lambda s, v=v: fetch_body(s, v, "diff-p", [(0, 4)]))
        c.step(FETCH, v, "offset out of range", lambda s, v=v: fetch_body(s, v, "diff-p", [(0, 100000)]))
        c.step(FETCH, v, "negative offset", lambda s, v=v: fetch_body(s, v, "diff-p", [(0, -5)]))
        c.step(FETCH, v, "unknown partition", lambda s, v=v: fetch_body(s, v, "diff-p", [(9, 0)]))
        c.step(FETCH, v, "unknown topic", lambda s, v=v: fetch_body(s, v, "diff-none", [(0, 0)]))
        c.step(FETCH, v, "small partition max bytes", lambda s, v=v: fetch_body(
            s, v, "diff-p", [(0, 0)], partition_max=10))
        c.step(FETCH, v, "empty topic list", lambda s, v=v: dict(fetch_body(s, v, "diff-p", []), Topics=[]))
        if v >= 4:
            c.step(FETCH, v, "read_committed", lambda s, v=v: fetch_body(s, v, "diff-p", [(0, 0)], isolation=1))
        if v >= 7:
            c.step(FETCH, v, "new session", lambda s, v=v: fetch_body(s, v, "diff-p", [(0, 0)], session=(0, 0)),
                   capture=lambda s, r: s.state.__setitem__("fetch_session", r["SessionId"]))
            c.step(FETCH, v, "incremental session, nothing new", lambda s, v=v: dict(
                fetch_body(s, v, "diff-p", [], session=(s.state.get("fetch_session", 0), 1)), Topics=[]))
            c.step(FETCH, v, "unknown session id", lambda s, v=v: fetch_body(
                s, v, "diff-p", [(0, 0)], session=(123456789, 1)))
            c.step(FETCH, v, "session epoch out of order", lambda s, v=v: dict(
                fetch_body(s, v, "diff-p", [], session=(s.state.get("fetch_session", 0), 5)), Topics=[]))
            c.step(FETCH, v, "close session", lambda s, v=v: dict(
                fetch_body(s, v, "diff-p", [], session=(s.state.get("fetch_session", 0), -1)), Topics=[]))
        if v >= 13:
            c.step(FETCH, v, "unknown topic id", lambda s, v=v: dict(fetch_body(s, v, "diff-p", [(0, 0)]), Topics=[
                {"TopicId": b"\x01" * 16, "Partitions": [{"Partition": 0, "FetchOffset": 0, "CurrentLeaderEpoch": -1,
                                                         "LastFetchedEpoch": -1, "LogStartOffset": -1,
                                                         "PartitionMaxBytes": 1024}]}]))
        if v >= 9:
            c.step(FETCH, v, "fenced leader epoch", lambda s, v=v: _with_epoch(fetch_body(s, v, "diff-p", [(0, 0)]), 5))


def _with_epoch(body, epoch):
    body["Topics"][0]["Partitions"][0]["CurrentLeaderEpoch"] = epoch
    return body


def list_offsets(c):
    for v in c.versions(LIST_OFFSETS):
        def body(parts, topic="diff-p", v=v):
            return {"ReplicaId": -1, "IsolationLevel": 0, "Topics": [{"Name": topic, "Partitions": [
                {"PartitionIndex": p, "CurrentLeaderEpoch": -1, "Timestamp": ts, "MaxNumOffsets": 1}
                for p, ts in parts]}]}
        c.step(LIST_OFFSETS, v, "earliest", body([(0, -2), (1, -2)]))
        c.step(LIST_OFFSETS, v, "latest", body([(0, -1), (1, -1)]))
        c.step(LIST_OFFSETS, v, "by timestamp", body([(0, rec.BASE_TS + 1)]))
        c.step(LIST_OFFSETS, v, "timestamp after every record", body([(0, rec.BASE_TS + 86400000)]))
        c.step(LIST_OFFSETS, v, "unknown partition", body([(5, -1)]))
        c.step(LIST_OFFSETS, v, "unknown topic", body([(0, -1)], topic="diff-none"))
        c.step(LIST_OFFSETS, v, "duplicate partition", body([(0, -1), (0, -2)]))
        c.step(LIST_OFFSETS, v, "invalid timestamp -9", body([(0, -9)]))
        if v >= 7:
            c.step(LIST_OFFSETS, v, "max timestamp", body([(0, -3)]))
        if v >= 2:
            b = body([(0, -1)])
            b["IsolationLevel"] = 1
            c.step(LIST_OFFSETS, v, "read_committed latest", b)
        if v >= 4:
            b = body([(0, -1)])
            b["Topics"][0]["Partitions"][0]["CurrentLeaderEpoch"] = 9
            c.step(LIST_OFFSETS, v, "future leader epoch", b)


def offset_for_leader_epoch(c):
    for v in c.versions(OFFSET_FOR_LEADER_EPOCH):
        def body(parts, topic="diff-p"):
            return {"ReplicaId": -1, "Topics": [{"Topic": topic, "Partitions": [
                {"Partition": p, "CurrentLeaderEpoch": -1, "LeaderEpoch": e} for p, e in parts]}]}
        c.step(OFFSET_FOR_LEADER_EPOCH, v, "epoch 0", body([(0, 0), (1, 0)]))
        c.step(OFFSET_FOR_LEADER_EPOCH, v, "future epoch", body([(0, 7)]))
        c.step(OFFSET_FOR_LEADER_EPOCH, v, "unknown partition", body([(4, 0)]))
        c.step(OFFSET_FOR_LEADER_EPOCH, v, "unknown topic", body([(0, 0)], topic="diff-none"))
        if v >= 2:
            b = body([(0, 0)])
            b["Topics"][0]["Partitions"][0]["CurrentLeaderEpoch"] = 3
            c.step(OFFSET_FOR_LEADER_EPOCH, v, "fenced current epoch", b)
        if v >= 3:
            b = body([(0, 0)])
            b["ReplicaId"] = 5
            c.step(OFFSET_FOR_LEADER_EPOCH, v, "from a replica id", b)


def delete_records(c):
    for v in c.versions(DELETE_RECORDS):
        t = "diff-dr-v%d" % v
        create(c, t, 2)
        c.step(PRODUCE, 9, "setup: 5 records", {"Acks": -1, "TimeoutMs": 10000, "TopicData": [
            {"Name": t, "PartitionData": [{"Index": 0, "Records": rec.batch(vals(5, "dr"))}]}]})

        def body(parts, topic=t):
            return {"Topics": [{"Name": topic, "Partitions": [{"PartitionIndex": p, "Offset": o}
                                                               for p, o in parts]}], "TimeoutMs": 10000}
        c.step(DELETE_RECORDS, v, "before offset 2", body([(0, 2)]))
        c.step(DELETE_RECORDS, v, "to the high watermark (-1)", body([(0, -1)]))
        c.step(DELETE_RECORDS, v, "beyond the high watermark", body([(0, 99)]))
        c.step(DELETE_RECORDS, v, "below the log start offset", body([(0, 1)]))
        c.step(DELETE_RECORDS, v, "empty partition", body([(1, 0)]))
        c.step(DELETE_RECORDS, v, "unknown partition", body([(3, 0)]))
        c.step(DELETE_RECORDS, v, "unknown topic", body([(0, 0)], topic="diff-none"))
        c.step(DELETE_RECORDS, v, "invalid offset -5", body([(0, -5)]))
        c.step(LIST_OFFSETS, 9, "after DeleteRecords: earliest", {"ReplicaId": -1, "Topics": [
            {"Name": t, "Partitions": [{"PartitionIndex": 0, "CurrentLeaderEpoch": -1, "Timestamp": -2}]}]})


def create_partitions(c):
    for v in c.versions(CREATE_PARTITIONS):
        t = "diff-cp-v%d" % v
        create(c, t, 1)

        def body(topics, validate=False):
            return {"Topics": [{"Name": n, "Count": k, "Assignments": a} for n, k, a in topics],
                    "TimeoutMs": 10000, "ValidateOnly": validate}
        c.step(CREATE_PARTITIONS, v, "validate only 1 -> 3", body([(t, 3, None)], validate=True))
        c.step(CREATE_PARTITIONS, v, "1 -> 3", body([(t, 3, None)]))
        wait_topic(c, t, 3)
        c.step(CREATE_PARTITIONS, v, "same count", body([(t, 3, None)]))
        c.step(CREATE_PARTITIONS, v, "fewer", body([(t, 2, None)]))
        c.step(CREATE_PARTITIONS, v, "unknown topic", body([("diff-none", 3, None)]))
        c.step(CREATE_PARTITIONS, v, "duplicate topic", body([(t, 4, None), (t, 5, None)]))
        c.step(CREATE_PARTITIONS, v, "assignment to an unknown broker", body([(t, 4, [{"BrokerIds": [9]}])]))
        c.step(CREATE_PARTITIONS, v, "assignment count mismatch", body([(t, 5, [{"BrokerIds": [0]}])]))
        c.step(CREATE_PARTITIONS, v, "empty list", body([]))


def delete_topics(c):
    for v in c.versions(DELETE_TOPICS):
        t = "diff-dt-v%d" % v
        create(c, t, 1)
        if v >= 6:
            c.step(DELETE_TOPICS, v, "by topic id", lambda s, t=t: {
                "Topics": [{"Name": None, "TopicId": s.topic_id(t)}], "TimeoutMs": 10000})
            c.step(DELETE_TOPICS, v, "unknown topic id", {
                "Topics": [{"Name": None, "TopicId": b"\x02" * 16}], "TimeoutMs": 10000})
            c.step(DELETE_TOPICS, v, "both name and id", lambda s: {
                "Topics": [{"Name": "diff-m", "TopicId": s.topic_id("diff-m")}], "TimeoutMs": 10000})
            c.step(DELETE_TOPICS, v, "unknown name", {
                "Topics": [{"Name": "diff-none", "TopicId": bytes(16)}], "TimeoutMs": 10000})
        else:
            c.step(DELETE_TOPICS, v, "by name", {"TopicNames": [t], "TimeoutMs": 10000})
            c.step(DELETE_TOPICS, v, "unknown name", {"TopicNames": ["diff-none"], "TimeoutMs": 10000})
            c.step(DELETE_TOPICS, v, "invalid name", {"TopicNames": ["bad name!"], "TimeoutMs": 10000})
            c.step(DELETE_TOPICS, v, "duplicate name", {"TopicNames": ["diff-none", "diff-none"],
                                                        "TimeoutMs": 10000})
        c.step(DELETE_TOPICS, v, "empty list", {"TopicNames": [], "Topics": [], "TimeoutMs": 10000})
        c.step(METADATA, 12, "after DeleteTopics", {"Topics": [{"Name": t, "TopicId": bytes(16)}],
                                                    "AllowAutoTopicCreation": False})


def configs(c):
    create(c, "diff-cfg", 1, {"retention.ms": "7200000"})
    keys = ["cleanup.policy", "retention.ms", "max.message.bytes", "segment.bytes", "min.insync.replicas"]
    for v in c.versions(DESCRIBE_CONFIGS):
        def body(res, synonyms=False, docs=False):
            return {"Resources": [{"ResourceType": rt, "ResourceName": n, "ConfigurationKeys": k}
                                  for rt, n, k in res], "IncludeSynonyms": synonyms, "IncludeDocumentation": docs}
        c.step(DESCRIBE_CONFIGS, v, "topic keys", body([(TOPIC_RESOURCE, "diff-cfg", keys)]))
        if v >= 1:
            c.step(DESCRIBE_CONFIGS, v, "topic keys with synonyms", body([(TOPIC_RESOURCE, "diff-cfg", keys)], True))
        c.step(DESCRIBE_CONFIGS, v, "unknown topic", body([(TOPIC_RESOURCE, "diff-none", keys)]))
        c.step(DESCRIBE_CONFIGS, v, "unknown key", body([(TOPIC_RESOURCE, "diff-cfg", ["no.such.key"])]))
        c.step(DESCRIBE_CONFIGS, v, "empty key list", body([(TOPIC_RESOURCE, "diff-cfg", [])]))
        c.step(DESCRIBE_CONFIGS, v, "broker keys", body([(BROKER_RESOURCE, "0", [
            "num.partitions", "log.retention.hours", "auto.create.topics.enable", "message.max.bytes"])]))
        c.step(DESCRIBE_CONFIGS, v, "another broker id", body([(BROKER_RESOURCE, "5", ["num.partitions"])]))
        c.step(DESCRIBE_CONFIGS, v, "broker id not a number", body([(BROKER_RESOURCE, "x", ["num.partitions"])]))
        c.step(DESCRIBE_CONFIGS, v, "unknown resource type 9", body([(9, "x", None)]))
        c.step(DESCRIBE_CONFIGS, v, "no resources", body([]))
        c.step(DESCRIBE_CONFIGS, v, "all keys of a topic", body([(TOPIC_RESOURCE, "diff-cfg", None)]))
    for v in c.versions(ALTER_CONFIGS):
        def body(res, validate=False):
            return {"Resources": [{"ResourceType": rt, "ResourceName": n,
                                   "Configs": [{"Name": k, "Value": x} for k, x in cfg.items()]}
                                  for rt, n, cfg in res], "ValidateOnly": validate}
        c.step(ALTER_CONFIGS, v, "set two keys", body([(TOPIC_RESOURCE, "diff-cfg", {
            "retention.ms": "3600000", "max.message.bytes": "200000"})]))
        c.step(DESCRIBE_CONFIGS, 4, "after AlterConfigs", {"Resources": [
            {"ResourceType": TOPIC_RESOURCE, "ResourceName": "diff-cfg", "ConfigurationKeys": keys}]})
        c.step(ALTER_CONFIGS, v, "bad value", body([(TOPIC_RESOURCE, "diff-cfg", {"retention.ms": "abc"})]))
        c.step(ALTER_CONFIGS, v, "unknown key", body([(TOPIC_RESOURCE, "diff-cfg", {"no.such.key": "1"})]))
        c.step(ALTER_CONFIGS, v, "null value", body([(TOPIC_RESOURCE, "diff-cfg", {"retention.ms": None})]))
        c.step(ALTER_CONFIGS, v, "unknown topic", body([(TOPIC_RESOURCE, "diff-none", {"retention.ms": "1000"})]))
        c.step(ALTER_CONFIGS, v, "validate only", body([(TOPIC_RESOURCE, "diff-cfg", {"retention.ms": "1000"})],
                                                       True))
        c.step(ALTER_CONFIGS, v, "deprecated message.format.version",
               body([(TOPIC_RESOURCE, "diff-cfg", {"message.format.version": "2.8"})]))
        # Kafka 3.9.1 does not answer this one at all: --all only.
        c.step(ALTER_CONFIGS, v, "duplicate resource", body([(TOPIC_RESOURCE, "diff-cfg", {"retention.ms": "1000"}),
                                                             (TOPIC_RESOURCE, "diff-cfg", {"retention.ms": "2000"})]),
               timeout=3, full_only=True)
        c.step(ALTER_CONFIGS, v, "no resources", body([]))
    for v in c.versions(INCREMENTAL_ALTER_CONFIGS):
        def body(res, validate=False):
            return {"Resources": [{"ResourceType": rt, "ResourceName": n,
                                   "Configs": [{"Name": k, "ConfigOperation": op, "Value": x} for k, op, x in cfg]}
                                  for rt, n, cfg in res], "ValidateOnly": validate}
        c.step(INCREMENTAL_ALTER_CONFIGS, v, "set", body([(TOPIC_RESOURCE, "diff-cfg", [("retention.ms", 0, "4000000")])]))
        c.step(INCREMENTAL_ALTER_CONFIGS, v, "delete", body([(TOPIC_RESOURCE, "diff-cfg", [("retention.ms", 1, None)])]))
        c.step(INCREMENTAL_ALTER_CONFIGS, v, "append to a list", body([(TOPIC_RESOURCE, "diff-cfg", [
            ("cleanup.policy", 2, "compact")])]))
        c.step(INCREMENTAL_ALTER_CONFIGS, v, "subtract from a list", body([(TOPIC_RESOURCE, "diff-cfg", [
            ("cleanup.policy", 3, "compact")])]))
        c.step(INCREMENTAL_ALTER_CONFIGS, v, "append to a non-list", body([(TOPIC_RESOURCE, "diff-cfg", [
            ("retention.ms", 2, "5")])]))
        c.step(INCREMENTAL_ALTER_CONFIGS, v, "invalid operation 7", body([(TOPIC_RESOURCE, "diff-cfg", [
            ("retention.ms", 7, "5")])]))
        c.step(INCREMENTAL_ALTER_CONFIGS, v, "bad value", body([(TOPIC_RESOURCE, "diff-cfg", [("segment.bytes", 0, "1")])]))
        c.step(INCREMENTAL_ALTER_CONFIGS, v, "unknown key", body([(TOPIC_RESOURCE, "diff-cfg", [("no.such.key", 0, "1")])]))
        c.step(INCREMENTAL_ALTER_CONFIGS, v, "duplicate key", body([(TOPIC_RESOURCE, "diff-cfg", [
            ("retention.ms", 0, "1000"), ("retention.ms", 0, "2000")])]))
        c.step(INCREMENTAL_ALTER_CONFIGS, v, "unknown topic", body([(TOPIC_RESOURCE, "diff-none", [("retention.ms", 0, "1")])]))
        c.step(INCREMENTAL_ALTER_CONFIGS, v, "validate only", body([(TOPIC_RESOURCE, "diff-cfg", [
            ("retention.ms", 0, "1000")])], True))
        c.step(DESCRIBE_CONFIGS, 4, "after IncrementalAlterConfigs", {"Resources": [
            {"ResourceType": TOPIC_RESOURCE, "ResourceName": "diff-cfg", "ConfigurationKeys": keys}]})


def dynamic_configs(c):
    """Dynamic broker configs (issue #15 part 5): IncrementalAlterConfigs and
    AlterConfigs on the broker ("0") and on every broker (""), what
    DescribeConfigs then says of the broker and of a topic that inherits
    the values, and the refusals. Kafka applies a change when its broker
    replays the metadata log, after answering: each change is followed by a
    wait until DescribeConfigs shows it (not compared). Everything set here
    is deleted again at the end."""
    create(c, "diff-dyn", 1)
    keys = ["log.retention.ms", "log.retention.hours", "message.max.bytes", "num.partitions"]

    def inc(case, name, ops, validate=False, v=1):
        c.step(INCREMENTAL_ALTER_CONFIGS, v, case, {"Resources": [
            {"ResourceType": BROKER_RESOURCE, "ResourceName": name,
             "Configs": [{"Name": k, "ConfigOperation": op, "Value": x} for k, op, x in ops]}],
            "ValidateOnly": validate})

    def shows(name, key, value, absent=False):
        def ready(side):
            out = side.send(DESCRIBE_CONFIGS, 4, {"Resources": [
                {"ResourceType": BROKER_RESOURCE, "ResourceName": name, "ConfigurationKeys": [key]}],
                "IncludeSynonyms": False, "IncludeDocumentation": False})
            if out.kind != "answer":
                return False
            got = [e["Value"] for e in out.body["Results"][0]["Configs"] if e["Name"] == key]
            return got == ([] if absent else [value])
        c.sync("broker %r shows %s=%s" % (name, key, "(absent)" if absent else value), ready)

    def describe(case, name, ks, synonyms=True, v=4):
        c.step(DESCRIBE_CONFIGS, v, case, {"Resources": [
            {"ResourceType": BROKER_RESOURCE, "ResourceName": name, "ConfigurationKeys": ks}],
            "IncludeSynonyms": synonyms, "IncludeDocumentation": False})

    for v in c.versions(INCREMENTAL_ALTER_CONFIGS):
        inc("broker: set a dynamic key v%d" % v, "0", [("log.retention.ms", 0, "3600000")], v=v)
        shows("0", "log.retention.ms", "3600000")
    inc("every broker: set a dynamic key", "", [("message.max.bytes", 0, "4096")])
    shows("", "message.max.bytes", "4096")
    inc("broker: its own value over the default", "0", [("message.max.bytes", 0, "2048")])
    shows("0", "message.max.bytes", "2048")
    for v in c.versions(DESCRIBE_CONFIGS):
        describe("broker keys after dynamic changes", "0", keys, synonyms=v >= 1, v=v)
    describe("the default resource", "", None)
    c.step(DESCRIBE_CONFIGS, 4, "a topic inheriting dynamic values", {"Resources": [
        {"ResourceType": TOPIC_RESOURCE, "ResourceName": "diff-dyn",
         "ConfigurationKeys": ["retention.ms", "max.message.bytes"]}], "IncludeSynonyms": True,
        "IncludeDocumentation": False})
    inc("broker: a static key", "0", [("num.partitions", 0, "3")])
    inc("broker: an unknown key", "0", [("no.such.key", 0, "1")])
    inc("broker: a bad value", "0", [("log.retention.ms", 0, "soon")])
    inc("broker: validate only", "0", [("log.retention.ms", 0, "60000")], validate=True)
    inc("another broker id", "5", [("log.retention.ms", 0, "60000")])
    for v in c.versions(ALTER_CONFIGS):
        c.step(ALTER_CONFIGS, v, "every broker: replace the set v%d" % v, {"Resources": [
            {"ResourceType": BROKER_RESOURCE, "ResourceName": "",
             "Configs": [{"Name": "message.max.bytes", "Value": str(5000 + v)}]}], "ValidateOnly": False})
        shows("", "message.max.bytes", str(5000 + v))
    # A listener's own connection limits (listener.name.<l>.max.connections):
    # per broker and for every broker, described with their synonyms.
    listener_key = "listener.name.plaintext.max.connections"
    inc("broker: a listener override", "0", [(listener_key, 0, "500")])
    shows("0", listener_key, "500")
    inc("every broker: a listener override", "", [("listener.name.plaintext.max.connection.creation.rate", 0, "400")])
    shows("", "listener.name.plaintext.max.connection.creation.rate", "400")
    describe("a listener override", "0", [listener_key, "listener.name.plaintext.max.connection.creation.rate",
                                          "max.connections"])
    inc("broker: a listener override below 1", "0", [(listener_key, 0, "0")])
    inc("broker: a listener override not a number", "0", [(listener_key, 0, "many")])
    inc("broker: delete a listener override", "0", [(listener_key, 1, None)])
    shows("0", listener_key, None, absent=True)
    inc("every broker: delete a listener override", "",
        [("listener.name.plaintext.max.connection.creation.rate", 1, None)])
    shows("", "listener.name.plaintext.max.connection.creation.rate", None, absent=True)
    # The listeners (Kafka's DynamicListenerConfig): per broker only, and a
    # listener keeps its security protocol (both refused; what a change
    # does to the sockets is tested against the broker alone).
    inc("every broker: listeners", "", [("listeners", 0, "PLAINTEXT://127.0.0.1:0")])
    inc("broker: a listener's security protocol", "0",
        [("listener.security.protocol.map", 0, "PLAINTEXT:SSL,CONTROLLER:PLAINTEXT")])
    inc("broker: delete", "0", [("log.retention.ms", 1, None), ("message.max.bytes", 1, None)])
    inc("every broker: delete", "", [("message.max.bytes", 1, None)])
    shows("", "message.max.bytes", None, absent=True)
    shows("0", "message.max.bytes", "1048588")
    shows("0", "log.retention.ms", None)
    describe("broker keys after deleting", "0", keys)
    describe("the default resource, empty", "", None)


def cluster_info(c):
    for v in c.versions(DESCRIBE_CLUSTER):
        c.step(DESCRIBE_CLUSTER, v, "cluster", {"IncludeClusterAuthorizedOperations": False, "EndpointType": 1})
        c.step(DESCRIBE_CLUSTER, v, "with authorized operations", {"IncludeClusterAuthorizedOperations": True,
                                                                   "EndpointType": 1})
        if v >= 1:
            c.step(DESCRIBE_CLUSTER, v, "controller endpoints", {"EndpointType": 2})
            c.step(DESCRIBE_CLUSTER, v, "invalid endpoint type", {"EndpointType": 9})
    for v in c.versions(DESCRIBE_LOG_DIRS):
        c.step(DESCRIBE_LOG_DIRS, v, "one topic", {"Topics": [{"Topic": "diff-p", "Partitions": [0, 1]}]})
        c.step(DESCRIBE_LOG_DIRS, v, "unknown topic", {"Topics": [{"Topic": "diff-none", "Partitions": [0]}]})
        c.step(DESCRIBE_LOG_DIRS, v, "empty list", {"Topics": []})
    for v in c.versions(ELECT_LEADERS):
        def body(parts, etype=0):
            return {"ElectionType": etype, "TopicPartitions": parts, "TimeoutMs": 10000}
        c.step(ELECT_LEADERS, v, "preferred, already leader", body([{"Topic": "diff-m", "Partitions": [0, 1]}]))
        c.step(ELECT_LEADERS, v, "unknown topic", body([{"Topic": "diff-none", "Partitions": [0]}]))
        c.step(ELECT_LEADERS, v, "unknown partition", body([{"Topic": "diff-m", "Partitions": [8]}]))
        c.step(ELECT_LEADERS, v, "empty list", body([]))
        if v >= 1:
            c.step(ELECT_LEADERS, v, "unclean", body([{"Topic": "diff-m", "Partitions": [0]}], 1))
            c.step(ELECT_LEADERS, v, "invalid election type", body([{"Topic": "diff-m", "Partitions": [0]}], 5))


def reassignments(c):
    """KIP-455 on one broker: the only possible replica list is [0], a no-op
    move; another broker is not alive; cancelling finds nothing in progress."""
    for v in c.versions(ALTER_PARTITION_REASSIGNMENTS):
        def body(parts, topic="diff-m"):
            return {"TimeoutMs": 10000, "Topics": [{"Name": topic, "Partitions": [
                {"PartitionIndex": p, "Replicas": r} for p, r in parts]}]}
        c.step(ALTER_PARTITION_REASSIGNMENTS, v, "to the broker it is on", body([(0, [0])]))
        c.step(ALTER_PARTITION_REASSIGNMENTS, v, "to a broker not alive", body([(0, [5])]))
        c.step(ALTER_PARTITION_REASSIGNMENTS, v, "duplicate replica", body([(0, [0, 0])]))
        c.step(ALTER_PARTITION_REASSIGNMENTS, v, "empty replica list", body([(0, [])]))
        c.step(ALTER_PARTITION_REASSIGNMENTS, v, "cancel, nothing in progress", body([(1, None)]))
        c.step(ALTER_PARTITION_REASSIGNMENTS, v, "unknown partition", body([(9, [0])]))
        c.step(ALTER_PARTITION_REASSIGNMENTS, v, "unknown topic", body([(0, [0])], topic="diff-none"))
        c.step(ALTER_PARTITION_REASSIGNMENTS, v, "empty topic list", {"TimeoutMs": 10000, "Topics": []})
    for v in c.versions(LIST_PARTITION_REASSIGNMENTS):
        c.step(LIST_PARTITION_REASSIGNMENTS, v, "all (null)", {"TimeoutMs": 10000, "Topics": None})
        c.step(LIST_PARTITION_REASSIGNMENTS, v, "named partitions", {"TimeoutMs": 10000, "Topics": [
            {"Name": "diff-m", "PartitionIndexes": [0, 1]}, {"Name": "diff-none", "PartitionIndexes": [0]}]})
        c.step(LIST_PARTITION_REASSIGNMENTS, v, "empty list", {"TimeoutMs": 10000, "Topics": []})


def groups(c):
    """The classic group protocol, one group per version step: join (v4+:
    MEMBER_ID_REQUIRED first), sync, heartbeat, commit, fetch, describe,
    leave, delete, with the invalid cases between."""
    wait_coordinator(c, "diff-g-warmup")
    # Step i runs each group API at version min(i, its newest): every version
    # of each with --all, and each API's own subset versions in CI.
    apis = (JOIN_GROUP, SYNC_GROUP, HEARTBEAT, LEAVE_GROUP, OFFSET_COMMIT, OFFSET_FETCH, DESCRIBE_GROUPS,
            FIND_COORDINATOR, LIST_GROUPS, DELETE_GROUPS)
    steps = sorted(set().union(*[set(c.versions(a)) for a in apis]))
    for i in steps:
        jv, sv, hv, lv = (c.clamp(JOIN_GROUP, i), c.clamp(SYNC_GROUP, i), c.clamp(HEARTBEAT, i),
                          c.clamp(LEAVE_GROUP, i))
        cv, fv, dv = c.clamp(OFFSET_COMMIT, i), c.clamp(OFFSET_FETCH, i), c.clamp(DESCRIBE_GROUPS, i)
        fcv = c.clamp(FIND_COORDINATOR, i)
        g = "diff-g-%d" % i
        tag = "(group step %d)" % i
        for name in (g, g + "-simple", "diff-none"):
            wait_coordinator(c, name)
        if fcv >= 4:
            c.step(FIND_COORDINATOR, fcv, "group " + tag, {"KeyType": 0, "CoordinatorKeys": [g, "diff-g-other"]})
        else:
            c.step(FIND_COORDINATOR, fcv, "group " + tag, {"Key": g, "KeyType": 0})
        join = {"GroupId": g, "SessionTimeoutMs": 30000, "RebalanceTimeoutMs": 30000, "MemberId": "",
                "GroupInstanceId": None, "ProtocolType": "consumer",
                "Protocols": [{"Name": "range", "Metadata": CONSUMER_META}], "Reason": "differential"}

        def keep_member(s, r):
            if r["MemberId"]:
                s.state["member"] = r["MemberId"]
            s.state["generation"] = r.get("GenerationId", -1)
        c.step(JOIN_GROUP, jv, "invalid session timeout " + tag, dict(join, SessionTimeoutMs=1))
        c.step(JOIN_GROUP, jv, "join " + tag, join, capture=keep_member)
        if jv >= 4:
            c.step(JOIN_GROUP, jv, "join with the assigned member id " + tag,
                   lambda s, join=join: dict(join, MemberId=s.state["member"]), capture=keep_member)
        c.step(JOIN_GROUP, jv, "unknown member id " + tag, dict(join, MemberId="nobody"))
        c.step(JOIN_GROUP, jv, "inconsistent protocol type " + tag, dict(join, MemberId="", ProtocolType="connect"))
        c.step(SYNC_GROUP, sv, "leader sync " + tag, lambda s, g=g: {
            "GroupId": g, "GenerationId": s.state["generation"], "MemberId": s.state["member"],
            "GroupInstanceId": None, "ProtocolType": "consumer", "ProtocolName": "range",
            "Assignments": [{"MemberId": s.state["member"], "Assignment": b"\x00\x01\x00\x00\x00\x00\xff\xff\xff\xff"}]})
        c.step(SYNC_GROUP, sv, "wrong generation " + tag, lambda s, g=g: {
            "GroupId": g, "GenerationId": 99, "MemberId": s.state["member"], "ProtocolType": "consumer",
            "ProtocolName": "range", "Assignments": []})
        c.step(SYNC_GROUP, sv, "unknown group " + tag, {"GroupId": "diff-none", "GenerationId": 1,
                                                        "MemberId": "m", "ProtocolType": "consumer",
                                                        "ProtocolName": "range", "Assignments": []})
        if sv >= 5:
            c.step(SYNC_GROUP, sv, "empty protocol type and name " + tag, lambda s, g=g: {
                "GroupId": g, "GenerationId": 99, "MemberId": s.state["member"], "ProtocolType": "",
                "ProtocolName": "", "Assignments": []})
        if sv >= 5:
            c.step(SYNC_GROUP, sv, "wrong protocol name " + tag, lambda s, g=g: {
                "GroupId": g, "GenerationId": s.state["generation"], "MemberId": s.state["member"],
                "ProtocolType": "consumer", "ProtocolName": "roundrobin", "Assignments": []})
        c.step(HEARTBEAT, hv, "member " + tag, lambda s, g=g: {
            "GroupId": g, "GenerationId": s.state["generation"], "MemberId": s.state["member"]})
        c.step(HEARTBEAT, hv, "unknown member " + tag, lambda s, g=g: {
            "GroupId": g, "GenerationId": s.state["generation"], "MemberId": "nobody"})
        c.step(HEARTBEAT, hv, "wrong generation " + tag, lambda s, g=g: {
            "GroupId": g, "GenerationId": 42, "MemberId": s.state["member"]})
        c.step(HEARTBEAT, hv, "unknown group " + tag, {"GroupId": "diff-none", "GenerationId": 1, "MemberId": "m"})

        def commit(s, g=g, gen=None, member=None, topic="diff-m", parts=(0, 1)):
            return {"GroupId": g, "GenerationIdOrMemberEpoch": s.state["generation"] if gen is None else gen,
                    "MemberId": s.state["member"] if member is None else member, "GroupInstanceId": None,
                    "RetentionTimeMs": -1, "Topics": [{"Name": topic, "Partitions": [
                        {"PartitionIndex": p, "CommittedOffset": 5 + p, "CommittedLeaderEpoch": -1,
                         "CommitTimestamp": -1, "CommittedMetadata": "meta"} for p in parts]}]}
        c.step(OFFSET_COMMIT, cv, "member commit " + tag, commit)
        c.step(OFFSET_COMMIT, cv, "unknown topic " + tag, lambda s, commit=commit: commit(s, topic="diff-none"))
        c.step(OFFSET_COMMIT, cv, "unknown partition " + tag, lambda s, commit=commit: commit(s, parts=(0, 9)))
        if cv >= 1:
            c.step(OFFSET_COMMIT, cv, "wrong generation " + tag, lambda s, commit=commit: commit(s, gen=77))
            c.step(OFFSET_COMMIT, cv, "unknown member " + tag, lambda s, commit=commit: commit(s, member="nobody"))
        c.step(OFFSET_COMMIT, cv, "simple (no member) to a fresh group " + tag,
               lambda s, g=g: commit(s, g=g + "-simple", gen=-1, member=""))
        c.step(OFFSET_COMMIT, cv, "metadata too long " + tag, lambda s, commit=commit: dict(commit(s), Topics=[
            {"Name": "diff-m", "Partitions": [{"PartitionIndex": 0, "CommittedOffset": 1,
                                               "CommittedMetadata": "m" * 5000}]}]))

        def ofetch(s, g=g, topics=(("diff-m", [0, 1, 2]),), v=fv):
            ts = None if topics is None else [{"Name": n, "PartitionIndexes": p} for n, p in topics]
            return {"GroupId": g, "Topics": ts, "RequireStable": False,
                    "Groups": [{"GroupId": g, "MemberId": None, "MemberEpoch": -1, "Topics": ts}]}
        c.step(OFFSET_FETCH, fv, "committed " + tag, ofetch)
        c.step(OFFSET_FETCH, fv, "unknown group " + tag, lambda s, ofetch=ofetch: ofetch(s, g="diff-none"))
        c.step(OFFSET_FETCH, fv, "unknown topic " + tag, lambda s, ofetch=ofetch: ofetch(s, topics=(("diff-none", [0]),)))
        if fv >= 2:
            c.step(OFFSET_FETCH, fv, "all topics (null) " + tag, lambda s, ofetch=ofetch: ofetch(s, topics=None))
        if fv >= 8:
            c.step(OFFSET_FETCH, fv, "two groups " + tag, lambda s, g=g: {
                "Groups": [{"GroupId": g, "Topics": None}, {"GroupId": g + "-simple", "Topics": None},
                           {"GroupId": "diff-none", "Topics": None}], "RequireStable": True})
        c.step(DESCRIBE_GROUPS, dv, "stable group " + tag, {"Groups": [g, "diff-none"],
                                                            "IncludeAuthorizedOperations": False})
        c.step(LIST_GROUPS, c.clamp(LIST_GROUPS, i), "list " + tag, {"StatesFilter": [], "TypesFilter": []},
               capture=None)
        c.step(DELETE_GROUPS, c.clamp(DELETE_GROUPS, i), "non-empty group " + tag, {"GroupsNames": [g]})
        if c.has(OFFSET_DELETE):
            c.step(OFFSET_DELETE, 0, "partition the group consumes " + tag, {
                "GroupId": g, "Topics": [{"Name": "diff-m", "Partitions": [{"PartitionIndex": 0}]}]})
        if lv >= 3:
            c.step(LEAVE_GROUP, lv, "leave " + tag, lambda s, g=g: {"GroupId": g, "Members": [
                {"MemberId": s.state["member"], "GroupInstanceId": None, "Reason": "done"},
                {"MemberId": "nobody", "GroupInstanceId": None}]})
        else:
            c.step(LEAVE_GROUP, lv, "leave " + tag, lambda s, g=g: {"GroupId": g, "MemberId": s.state["member"]})
        c.step(LEAVE_GROUP, lv, "unknown group " + tag, {"GroupId": "diff-none", "MemberId": "m",
                                                         "Members": [{"MemberId": "m"}]})
        c.step(DESCRIBE_GROUPS, dv, "empty group " + tag, {"Groups": [g]})
        if c.has(OFFSET_DELETE):
            c.step(OFFSET_DELETE, 0, "empty group " + tag, {
                "GroupId": g, "Topics": [{"Name": "diff-m", "Partitions": [{"PartitionIndex": 0}]},
                                         {"Name": "diff-none", "Partitions": [{"PartitionIndex": 0}]}]})
        c.step(DELETE_GROUPS, c.clamp(DELETE_GROUPS, i), "empty, unknown, duplicate " + tag,
               {"GroupsNames": [g, "diff-none", g + "-simple", g + "-simple"]})
    for v in c.versions(LIST_GROUPS):
        c.step(LIST_GROUPS, v, "states filter", {"StatesFilter": ["Stable"], "TypesFilter": []})
        if v >= 5:
            c.step(LIST_GROUPS, v, "types filter", {"StatesFilter": [], "TypesFilter": ["classic"]})
    for v in c.versions(FIND_COORDINATOR):
        body = {"Key": "diff-x", "KeyType": 5, "CoordinatorKeys": ["diff-x"]}
        c.step(FIND_COORDINATOR, v, "invalid key type", body)
        if v >= 4:
            c.step(FIND_COORDINATOR, v, "no keys", dict(body, KeyType=0, CoordinatorKeys=[]))


def transactions(c):
    wait_coordinator(c, "diff-tx-warmup", 1)

    def pid_ready(side):  # a KRaft broker answers COORDINATOR_LOAD_IN_PROGRESS until it has a block of ids
        out = side.send(INIT_PRODUCER_ID, 0, {"TransactionalId": None, "TransactionTimeoutMs": -1})
        return out.kind == "answer" and out.body["ErrorCode"] == 0
    c.sync("producer ids available", pid_ready)
    for v in c.versions(FIND_COORDINATOR):
        if v >= 1:
            c.step(FIND_COORDINATOR, v, "transaction coordinator", {"Key": "diff-tx-warmup", "KeyType": 1,
                                                                    "CoordinatorKeys": ["diff-tx-warmup"]})
    create(c, "diff-tx", 2)
    for name in ("diff-txg", "diff-txg-other"):
        wait_coordinator(c, name)
    wait_coordinator(c, "diff-none", 1)
    wait_coordinator(c, "diff-tx-big", 1)
    for v in c.versions(INIT_PRODUCER_ID):
        c.step(INIT_PRODUCER_ID, v, "idempotent", {"TransactionalId": None, "TransactionTimeoutMs": -1,
                                                   "ProducerId": -1, "ProducerEpoch": -1})
        c.step(INIT_PRODUCER_ID, v, "timeout over the maximum", {
            "TransactionalId": "diff-tx-big", "TransactionTimeoutMs": 3600001, "ProducerId": -1, "ProducerEpoch": -1})
        if v >= 3:
            c.step(INIT_PRODUCER_ID, v, "bump an unknown producer", {
                "TransactionalId": None, "TransactionTimeoutMs": -1, "ProducerId": 999999, "ProducerEpoch": 3})
    txv = max(c.versions(INIT_PRODUCER_ID))
    steps = sorted(set().union(*[set(c.versions(a)) for a in (ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN,
                                                               END_TXN, TXN_OFFSET_COMMIT)]))
    for i in steps:
        tid = "diff-tx-%d" % i
        tag = "(txn step %d)" % i
        av, ov, ev, tv = (c.clamp(ADD_PARTITIONS_TO_TXN, i), c.clamp(ADD_OFFSETS_TO_TXN, i),
                          c.clamp(END_TXN, i), c.clamp(TXN_OFFSET_COMMIT, i))
        wait_coordinator(c, tid, 1)

        def keep(s, r):
            s.state["pid"], s.state["epoch"] = r["ProducerId"], r["ProducerEpoch"]
        c.step(INIT_PRODUCER_ID, txv, "transactional " + tag, {
            "TransactionalId": tid, "TransactionTimeoutMs": 60000, "ProducerId": -1, "ProducerEpoch": -1},
            capture=keep)

        def add(s, tid=tid, av=av, pid=None, epoch=None, parts=((0, 1),), topic="diff-tx", verify=False):
            topics = [{"Name": topic, "Partitions": list(p)} for p in parts]
            pid = s.state["pid"] if pid is None else pid
            epoch = s.state["epoch"] if epoch is None else epoch
            return {"V3AndBelowTransactionalId": tid, "V3AndBelowProducerId": pid,
                    "V3AndBelowProducerEpoch": epoch, "V3AndBelowTopics": topics,
                    "Transactions": [{"TransactionalId": tid, "ProducerId": pid, "ProducerEpoch": epoch,
                                      "VerifyOnly": verify, "Topics": topics}]}
        c.step(ADD_PARTITIONS_TO_TXN, av, "add two partitions " + tag, add)
        c.step(ADD_PARTITIONS_TO_TXN, av, "wrong epoch " + tag, lambda s, add=add: add(s, epoch=s.state["epoch"] + 3))
        c.step(ADD_PARTITIONS_TO_TXN, av, "unknown producer id " + tag, lambda s, add=add: add(s, pid=424242))
        c.step(ADD_PARTITIONS_TO_TXN, av, "unknown topic " + tag, lambda s, add=add: add(s, topic="diff-none"))
        c.step(PRODUCE, 9, "transactional batch " + tag, lambda s, tid=tid: {
            "TransactionalId": tid, "Acks": -1, "TimeoutMs": 10000, "TopicData": [
                {"Name": "diff-tx", "PartitionData": [{"Index": 0, "Records": rec.batch(
                    vals(2, "tx"), producer_id=s.state["pid"], producer_epoch=s.state["epoch"], base_sequence=0,
                    transactional=True)}]}]})
        c.step(PRODUCE, 9, "transactional batch to a partition not added " + tag, lambda s, tid=tid: {
            "TransactionalId": tid, "Acks": -1, "TimeoutMs": 10000, "TopicData": [
                {"Name": "diff-p", "PartitionData": [{"Index": 0, "Records": rec.batch(
                    vals(1, "tx"), producer_id=s.state["pid"], producer_epoch=s.state["epoch"], base_sequence=0,
                    transactional=True)}]}]})
        c.step(ADD_OFFSETS_TO_TXN, ov, "add the group " + tag, lambda s, tid=tid: {
            "TransactionalId": tid, "ProducerId": s.state["pid"], "ProducerEpoch": s.state["epoch"],
            "GroupId": "diff-txg"})
        c.step(TXN_OFFSET_COMMIT, tv, "commit offsets " + tag, lambda s, tid=tid: {
            "TransactionalId": tid, "GroupId": "diff-txg", "ProducerId": s.state["pid"],
            "ProducerEpoch": s.state["epoch"], "GenerationId": -1, "MemberId": "", "GroupInstanceId": None,
            "Topics": [{"Name": "diff-tx", "Partitions": [{"PartitionIndex": 0, "CommittedOffset": 1,
                                                           "CommittedLeaderEpoch": -1, "CommittedMetadata": ""}]}]})
        c.step(TXN_OFFSET_COMMIT, tv, "group not added " + tag, lambda s, tid=tid: {
            "TransactionalId": tid, "GroupId": "diff-txg-other", "ProducerId": s.state["pid"],
            "ProducerEpoch": s.state["epoch"], "GenerationId": -1, "MemberId": "",
            "Topics": [{"Name": "diff-tx", "Partitions": [{"PartitionIndex": 0, "CommittedOffset": 1}]}]})
        if c.has(DESCRIBE_TRANSACTIONS):
            c.step(DESCRIBE_TRANSACTIONS, 0, "ongoing " + tag, {"TransactionalIds": [tid, "diff-none"]})
        if c.has(DESCRIBE_PRODUCERS):
            c.step(DESCRIBE_PRODUCERS, 0, "open transaction " + tag, {"Topics": [
                {"Name": "diff-tx", "PartitionIndexes": [0, 1, 7]}, {"Name": "diff-none", "PartitionIndexes": [0]}]})
        c.step(END_TXN, ev, "wrong epoch " + tag, lambda s, tid=tid: {
            "TransactionalId": tid, "ProducerId": s.state["pid"], "ProducerEpoch": s.state["epoch"] + 1,
            "Committed": True})
        c.step(END_TXN, ev, "commit " + tag, lambda s, tid=tid: {
            "TransactionalId": tid, "ProducerId": s.state["pid"], "ProducerEpoch": s.state["epoch"],
            "Committed": i % 2 == 0})
        c.sync("transaction %s complete" % tid, lambda side, tid=tid: txn_settled(side, tid))
        c.step(END_TXN, ev, "again, no transaction " + tag, lambda s, tid=tid: {
            "TransactionalId": tid, "ProducerId": s.state["pid"], "ProducerEpoch": s.state["epoch"],
            "Committed": True})
        c.step(END_TXN, ev, "unknown transactional id " + tag, {
            "TransactionalId": "diff-none", "ProducerId": 5, "ProducerEpoch": 0, "Committed": True})
    if c.has(LIST_TRANSACTIONS):
        for v in c.versions(LIST_TRANSACTIONS):
            c.step(LIST_TRANSACTIONS, v, "all", {"StateFilters": [], "ProducerIdFilters": [], "DurationFilter": -1})
            c.step(LIST_TRANSACTIONS, v, "state filter", {"StateFilters": ["Ongoing"], "ProducerIdFilters": []})
            c.step(LIST_TRANSACTIONS, v, "unknown state", {"StateFilters": ["Bogus"], "ProducerIdFilters": []})
    if c.has(DESCRIBE_TRANSACTIONS):
        c.step(DESCRIBE_TRANSACTIONS, 0, "finished", {"TransactionalIds": ["diff-tx-0", "diff-tx-1"]})
    for v in c.versions(FETCH)[-1:]:
        c.step(FETCH, v, "read_committed over markers", lambda s, v=v: fetch_body(s, v, "diff-tx", [(0, 0)],
                                                                                    isolation=1))
        c.step(FETCH, v, "read_uncommitted over markers", lambda s, v=v: fetch_body(s, v, "diff-tx", [(0, 0)]))
    for v in c.versions(WRITE_TXN_MARKERS):
        c.step(WRITE_TXN_MARKERS, v, "unknown topic", {"Markers": [{
            "ProducerId": 5, "ProducerEpoch": 0, "TransactionResult": True, "CoordinatorEpoch": 0,
            "Topics": [{"Name": "diff-none", "PartitionIndexes": [0]}]}]})


def txn_settled(side, tid):
    out = side.send(DESCRIBE_TRANSACTIONS, 0, {"TransactionalIds": [tid]})
    return out.kind == "answer" and out.body["TransactionStates"][0]["TransactionState"] in (
        "CompleteCommit", "CompleteAbort", "Empty")


def deleted_topic(c):
    """What a consumer sees right after its topic is deleted (issue #15 part
    5: a librdkafka consumer hung after its subscribed topic was deleted
    during a cooperative rebalance): Metadata, Fetch (plain and in a
    session), ListOffsets, OffsetForLeaderEpoch, OffsetCommit and OffsetFetch
    of the group for the deleted partitions, and a group member's Heartbeat
    and rejoin."""
    t, g = "diff-del", "diff-g-del"
    create(c, t, 2)
    c.step(PRODUCE, 9, "setup: records before the delete", {"Acks": -1, "TimeoutMs": 10000, "TopicData": [
        {"Name": t, "PartitionData": [{"Index": 0, "Records": rec.batch(vals(3, "del"))}]}]})
    wait_coordinator(c, g)
    sub = b"\x00\x01\x00\x00\x00\x01\x00\x08diff-del\xff\xff\xff\xff"
    join = {"GroupId": g, "SessionTimeoutMs": 30000, "RebalanceTimeoutMs": 30000, "MemberId": "",
            "ProtocolType": "consumer", "Protocols": [{"Name": "cooperative-sticky", "Metadata": sub}]}

    def keep(s, r):
        if r["MemberId"]:
            s.state["del_member"] = r["MemberId"]
        s.state["del_gen"] = r["GenerationId"]
    c.step(JOIN_GROUP, 9, "deleted topic: join", join, capture=keep)
    c.step(JOIN_GROUP, 9, "deleted topic: join with member id", lambda s: dict(join, MemberId=s.state["del_member"]),
           capture=keep)
    c.step(SYNC_GROUP, 5, "deleted topic: sync", lambda s: {
        "GroupId": g, "GenerationId": s.state["del_gen"], "MemberId": s.state["del_member"],
        "ProtocolType": "consumer", "ProtocolName": "cooperative-sticky",
        "Assignments": [{"MemberId": s.state["del_member"], "Assignment": b"\x00\x01\x00\x00\x00\x00\xff\xff\xff\xff"}]})

    def commit(s, offset=2):
        return {"GroupId": g, "GenerationIdOrMemberEpoch": s.state["del_gen"], "MemberId": s.state["del_member"],
                "Topics": [{"Name": t, "Partitions": [{"PartitionIndex": p, "CommittedOffset": offset,
                                                       "CommittedLeaderEpoch": -1, "CommittedMetadata": ""}
                                                      for p in (0, 1)]}]}
    c.step(OFFSET_COMMIT, 9, "deleted topic: commit before", commit)
    c.step(FETCH, 12, "deleted topic: open a session", lambda s: fetch_body(s, 12, t, [(0, 0), (1, 0)], session=(0, 0)),
           capture=lambda s, r: s.state.__setitem__("del_session", r["SessionId"]))
    c.step(DELETE_TOPICS, 6, "deleted topic: delete", {"Topics": [{"Name": t, "TopicId": bytes(16)}], "TimeoutMs": 10000})

    def gone(side):
        out = side.send(METADATA, 12, {"Topics": [{"Name": t, "TopicId": bytes(16)}], "AllowAutoTopicCreation": False})
        return out.kind == "answer" and out.body["Topics"][0]["ErrorCode"] == 3
    c.sync("topic %s gone" % t, gone)
    c.step(METADATA, 12, "deleted topic: metadata", {"Topics": [{"Name": t, "TopicId": bytes(16)}],
                                                     "AllowAutoTopicCreation": False})
    c.step(METADATA, 12, "deleted topic: all topics", {"Topics": None, "AllowAutoTopicCreation": False})
    for v in (4, 12, 17):
        c.step(FETCH, v, "deleted topic: fetch", lambda s, v=v: fetch_body(s, v, t, [(0, 0), (1, 0)]))
    c.step(FETCH, 12, "deleted topic: incremental fetch in the session", lambda s: dict(
        fetch_body(s, 12, t, [], session=(s.state.get("del_session", 0), 1)), Topics=[]))
    c.step(LIST_OFFSETS, 7, "deleted topic: list offsets", {"ReplicaId": -1, "Topics": [
        {"Name": t, "Partitions": [{"PartitionIndex": 0, "CurrentLeaderEpoch": -1, "Timestamp": -1}]}]})
    c.step(OFFSET_FOR_LEADER_EPOCH, 4, "deleted topic: offset for leader epoch", {"ReplicaId": -1, "Topics": [
        {"Topic": t, "Partitions": [{"Partition": 0, "CurrentLeaderEpoch": -1, "LeaderEpoch": 0}]}]})
    c.step(OFFSET_FETCH, 8, "deleted topic: committed offsets", {"Groups": [
        {"GroupId": g, "Topics": [{"Name": t, "PartitionIndexes": [0, 1]}]}], "RequireStable": True})
    c.step(OFFSET_FETCH, 8, "deleted topic: all committed offsets", {"Groups": [{"GroupId": g, "Topics": None}],
                                                                     "RequireStable": True})
    c.step(OFFSET_COMMIT, 9, "deleted topic: commit after", lambda s: commit(s, 3))
    c.step(HEARTBEAT, 4, "deleted topic: heartbeat", lambda s: {
        "GroupId": g, "GenerationId": s.state["del_gen"], "MemberId": s.state["del_member"]})
    c.step(DESCRIBE_GROUPS, 5, "deleted topic: describe group", {"Groups": [g]})
    c.step(LEAVE_GROUP, 5, "deleted topic: leave", lambda s: {"GroupId": g, "Members": [
        {"MemberId": s.state["del_member"], "GroupInstanceId": None}]})


def protocol_errors(c):
    """Frames no broker can parse: the connection is closed (both must do the same)."""
    c.step(METADATA, 13, "unsupported version 13", raw_body=b"\x00\x00\x00\x00\x00", header_version=13)
    c.step(METADATA, 1, "truncated body", raw_body=b"\x00\x00\x00\x05\x00\x03ab")
    c.step(PRODUCE, 3, "records length past the frame", raw_body=(
        b"\xff\xff" + b"\xff\xff" + b"\x00\x00\x27\x10" + b"\x00\x00\x00\x01" + b"\x00\x06diff-p" +
        b"\x00\x00\x00\x01" + b"\x00\x00\x00\x00" + b"\x00\x10\x00\x00"))
    c.step(API_VERSIONS, 3, "after the closed connections", {"ClientSoftwareName": "ck-diff",
                                                             "ClientSoftwareVersion": "1.0"})


SCENARIOS = [api_versions, metadata, create_topics, produce, fetch, list_offsets, offset_for_leader_epoch,
             delete_records, create_partitions, delete_topics, configs, dynamic_configs, cluster_info, corpus_quotas.client_quotas, reassignments, groups, transactions,
             deleted_topic, protocol_errors]
