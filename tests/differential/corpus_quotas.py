"""tests/differential/corpus_quotas.py: the client quota scenario of the corpus (corpus.py
says how scenarios work): AlterClientQuotas, DescribeClientQuotas,
DescribeUserScramCredentials, and controller_mutation_rate met by a
CreateTopics. Kept apart so that corpus.py stays a readable size; it uses
corpus.py's API numbers and waits.
"""

import corpus as base


def client_quotas(c):
    """KIP-546 client quotas: sets (a client id's, a user's default client's,
    an address's), validate only, every refusal Kafka 3.9's controller makes,
    removal; DescribeClientQuotas' filters and their errors; and
    DescribeUserScramCredentials (no credentials on either broker). Each
    change is waited for (Kafka applies it through its controller's log)."""
    def entity(*parts):
        return [{"EntityType": t, "EntityName": n} for t, n in parts]

    def op(key, value=None):
        return {"Key": key, "Value": 0.0 if value is None else value, "Remove": value is None}

    def alter(v, case, ent, *ops, validate_only=False):
        c.step(base.ALTER_CLIENT_QUOTAS, v, case, {"Entries": [{"Entity": ent, "Ops": list(ops)}],
                                              "ValidateOnly": validate_only})

    def shown(name, present):
        def ready(side):
            out = side.send(base.DESCRIBE_CLIENT_QUOTAS, 0, {"Components": [
                {"EntityType": "client-id", "MatchType": 0, "Match": name}], "Strict": True})
            return out.kind == "answer" and out.body["ErrorCode"] == 0 and \
                bool(out.body["Entries"]) == present
        c.sync("quota of %s %s" % (name, "shown" if present else "gone"), ready)

    for v in c.versions(base.ALTER_CLIENT_QUOTAS):
        cid = "diff-cq-%d" % v
        alter(v, "validate only", entity(("client-id", cid)), op("producer_byte_rate", 1.0), validate_only=True)
        alter(v, "a client id's two quotas", entity(("client-id", cid)), op("producer_byte_rate", 1024.0),
              op("consumer_byte_rate", 2048.0))
        alter(v, "a user's default client", entity(("user", "diff-u-%d" % v), ("client-id", None)),
              op("producer_byte_rate", 4096.0))
        alter(v, "an address", entity(("ip", "10.11.12.%d" % v)), op("connection_creation_rate", 50.0))
        alter(v, "the default client id", entity(("client-id", None)), op("consumer_byte_rate", 1e9))
        shown(cid, True)
        alter(v, "empty entity", [], op("producer_byte_rate", 1.0))
        alter(v, "unknown entity type", entity(("group", "g")), op("producer_byte_rate", 1.0))
        alter(v, "empty client id", entity(("client-id", "")), op("producer_byte_rate", 1.0))
        alter(v, "ip with a user", entity(("ip", "10.0.0.1"), ("user", "u")), op("connection_creation_rate", 1.0))
        alter(v, "an ip that does not resolve", entity(("ip", "a..b")), op("connection_creation_rate", 1.0))
        alter(v, "unknown key", entity(("client-id", cid)), op("producer_rate", 1.0))
        alter(v, "a user key on an ip", entity(("ip", "10.0.0.2")), op("producer_byte_rate", 1.0))
        alter(v, "zero", entity(("client-id", cid)), op("producer_byte_rate", 0.0))
        alter(v, "negative", entity(("client-id", cid)), op("producer_byte_rate", -5.0))
        alter(v, "fractional long", entity(("client-id", cid)), op("producer_byte_rate", 10.5))
        alter(v, "int too large", entity(("ip", "10.0.0.3")), op("connection_creation_rate", 3e9))
        alter(v, "duplicate key", entity(("client-id", cid)), op("producer_byte_rate", 1.0),
              op("producer_byte_rate", 2.0))
        c.step(base.ALTER_CLIENT_QUOTAS, v, "duplicate entity", {"Entries": [
            {"Entity": entity(("client-id", cid + "-d")), "Ops": [op("producer_byte_rate", 5.0)]},
            {"Entity": entity(("client-id", cid + "-d")), "Ops": [op("producer_byte_rate", 6.0)]}],
            "ValidateOnly": False})
        alter(v, "remove a key never set", entity(("client-id", cid)), op("controller_mutation_rate"))
        # request_percentage and controller_mutation_rate, enforced by
        # both: set on an entity of its own, then removed from both.
        alter(v, "request_percentage", entity(("client-id", cid + "-rp")), op("request_percentage", 50.0))
        alter(v, "controller_mutation_rate", entity(("client-id", cid + "-rp")), op("controller_mutation_rate", 5.0))
        alter(v, "remove them again", entity(("client-id", cid + "-rp")), op("request_percentage"),
              op("controller_mutation_rate"))
        shown(cid + "-rp", False)
        shown(cid + "-d", True)

    for v in c.versions(base.DESCRIBE_CLIENT_QUOTAS):
        def describe(case, components, strict=False):
            c.step(base.DESCRIBE_CLIENT_QUOTAS, v, case, {"Components": [
                {"EntityType": t, "MatchType": m, "Match": n} for t, m, n in components], "Strict": strict})
        describe("everything", [])
        describe("everything, strict: nothing", [], strict=True)
        describe("one client id, strict", [("client-id", 0, "diff-cq-0")], strict=True)
        describe("client ids, strict", [("client-id", 2, None)], strict=True)
        describe("the default client id", [("client-id", 1, None)], strict=True)
        describe("a user, any client", [("user", 0, "diff-u-0"), ("client-id", 2, None)])
        describe("a user's default client, strict", [("user", 0, "diff-u-0"), ("client-id", 1, None)], strict=True)
        describe("users", [("user", 2, None)])
        describe("addresses", [("ip", 2, None)], strict=True)
        describe("an unknown client id", [("client-id", 0, "diff-nobody")])
        describe("empty entity type", [("", 2, None)])
        describe("a type twice", [("user", 2, None), ("user", 1, None)])
        describe("unknown entity type", [("group", 2, None)])
        describe("exact without a name", [("user", 0, None)])
        describe("default with a name", [("user", 1, "x")])
        describe("any with a name", [("user", 2, "x")])
        describe("unknown match type", [("user", 7, None)])
        describe("ip with client id", [("ip", 2, None), ("client-id", 2, None)])

    for v in c.versions(base.ALTER_CLIENT_QUOTAS):  # leave nothing behind
        cid = "diff-cq-%d" % v
        c.step(base.ALTER_CLIENT_QUOTAS, v, "remove everything", {"Entries": [
            {"Entity": entity(("client-id", cid)), "Ops": [op("producer_byte_rate"), op("consumer_byte_rate")]},
            {"Entity": entity(("user", "diff-u-%d" % v), ("client-id", None)), "Ops": [op("producer_byte_rate")]},
            {"Entity": entity(("ip", "10.11.12.%d" % v)), "Ops": [op("connection_creation_rate")]},
            {"Entity": entity(("client-id", None)), "Ops": [op("consumer_byte_rate")]},
            {"Entity": entity(("client-id", cid + "-d")), "Ops": [op("producer_byte_rate")]}],
            "ValidateOnly": False})
        shown(cid, False)

    # controller_mutation_rate enforced (KIP-599), on this corpus's own
    # client id: 1 partition per second fills Kafka's default bucket of 11
    # (controller.quota.window.num 11 of 1 s). In one strict CreateTopics
    # (v6+), the first topic (15 partitions) passes (the bucket was not
    # below zero), the next two are refused; a topic whose own check fails
    # keeps its own error. The answer's throttle (about 4 s, normalised)
    # mutes the connection on both; the quota is removed before anything
    # else creates a topic.
    mine = [("client-id", "ck-diff")]
    alter(0, "controller_mutation_rate on the corpus's client", entity(*mine), op("controller_mutation_rate", 1.0))
    shown("ck-diff", True)
    v = c.versions(base.CREATE_TOPICS)[-1]
    c.step(base.CREATE_TOPICS, v, "over controller_mutation_rate", {"Topics": [
        {"Name": n, "NumPartitions": p, "ReplicationFactor": 1, "Configs": []}
        for n, p in (("diff-mq-a", 15), ("diff-mq-b", 10), ("diff-mq-c", 1), ("diff-mq-d", 0))],
        "timeoutMs": 30000})
    alter(0, "controller_mutation_rate removed", entity(*mine), op("controller_mutation_rate"))
    shown("ck-diff", False)
    base.wait_topic(c, "diff-mq-a", 15)
    c.step(base.METADATA, 12, "after the throttled CreateTopics", {"Topics": [
        {"Name": n, "TopicId": bytes(16)} for n in ("diff-mq-a", "diff-mq-b", "diff-mq-c")],
        "AllowAutoTopicCreation": False})
    c.step(base.DELETE_TOPICS, 5, "the topic created under the quota", {"TopicNames": ["diff-mq-a"], "TimeoutMs": 10000})

    for v in c.versions(base.DESCRIBE_USER_SCRAM_CREDENTIALS):
        c.step(base.DESCRIBE_USER_SCRAM_CREDENTIALS, v, "every user", {"Users": None})
        c.step(base.DESCRIBE_USER_SCRAM_CREDENTIALS, v, "no users listed", {"Users": []})
        c.step(base.DESCRIBE_USER_SCRAM_CREDENTIALS, v, "a user without credentials", {"Users": [{"Name": "diff-u"}]})
        c.step(base.DESCRIBE_USER_SCRAM_CREDENTIALS, v, "two users", {"Users": [{"Name": "diff-a"}, {"Name": "diff-b"}]})
        c.step(base.DESCRIBE_USER_SCRAM_CREDENTIALS, v, "a user twice", {"Users": [{"Name": "diff-u"}, {"Name": "diff-u"}]})
