"""tests/integration/test_kafka_tools.py: Apache Kafka's own command-line tools against the real broker.

Usage: test_kafka_tools.py --broker BIN --work DIR VERSION

Kafka VERSION's tools (the kafka_2.13 and kafka-tools jars in
build/java/tools-VERSION, built by deploy/install-deps.sh for each `tools`
line of tests/clients/java/versions: 3.9.1 and 4.4.0) run through their
main classes in one JVM (tests/clients/java Tools.java), one batch while
the broker runs and one over its data directory after a clean stop:

  kafka-topics          create (with a config), list, describe, alter
                        partitions, delete
  kafka-configs         alter/describe/delete topic configs, describe a
                        broker's configs, set/describe/delete dynamic
                        broker configs (its own and every broker's;
                        background.threads and a listener's own
                        max.connections among them), client quotas
                        (clients, users with default clients, ips; every
                        key)
  console producer      keyed lines in; console consumer with a group out
  kafka-consumer-groups list, describe with lag, reset offsets, delete
  kafka-get-offsets     latest and earliest
  kafka-delete-records  then the earliest offset moved
  kafka-log-dirs        the JSON's partitions and sizes
  kafka-broker-api-versions  every API we advertise, usable, as ApiVersions says
  kafka-transactions    list, describe, describe-producers, find-hanging
  kafka-dump-log        (kafka.tools.DumpLogSegments) --deep-iteration over
                        our segments (plain, lz4, transactional with
                        control batches, a segment set the cleaner
                        compacted, __consumer_offsets with
                        --offsets-decoder, __transaction_state with
                        --transaction-log-decoder), our .index/.timeindex files
                        against the log (--verify-index-only) and with
                        --index-sanity-check, our .txnindex (aborted
                        transactions) and producer .snapshot files
  checkpoints           recovery-point / log-start-offset / cleaner offset
                        checkpoints, leader-epoch-checkpoint,
                        partition.metadata and meta.properties parsed by
                        Kafka's own readers

Each output is checked for what a Kafka user expects to see (names,
counts, offsets, lag, the tool's success lines). A missing build is a
failure, not a skip.
"""

import json
import os
import re
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402
from test_java_clients import JVM_TEST_FLAGS, java, java_dir  # noqa: E402

TOPICS = "org.apache.kafka.tools.TopicCommand"
CONFIGS = "kafka.admin.ConfigCommand"  # these four moved to org.apache.kafka.tools in 4.0: main_classes()
GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
PRODUCER = "kafka.tools.ConsoleProducer"
CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
OFFSETS = "org.apache.kafka.tools.GetOffsetShell"
DELETE_RECORDS = "org.apache.kafka.tools.DeleteRecordsCommand"
LOG_DIRS = "org.apache.kafka.tools.LogDirsCommand"
API_VERSIONS = "kafka.admin.BrokerApiVersionsCommand"
DUMP = "kafka.tools.DumpLogSegments"
TXNS = "org.apache.kafka.tools.TransactionsCommand"



def main_classes(version):
    """Kafka 4 moved the last Scala tools into org.apache.kafka.tools."""
    global CONFIGS, PRODUCER, API_VERSIONS, DUMP
    if int(version.split(".")[0]) >= 4:
        CONFIGS = "org.apache.kafka.tools.ConfigCommand"
        PRODUCER = "org.apache.kafka.tools.ConsoleProducer"
        API_VERSIONS = "org.apache.kafka.tools.BrokerApiVersionsCommand"
        DUMP = "org.apache.kafka.tools.DumpLogSegments"


T = "cli-t"      # 2 partitions, then 3; kept for kafka-dump-log
T2 = "cli-gone"  # created and deleted
G = "cli-g"
N = 30           # console-produced lines at first, then 5 more
COMPACT_KEYS, COMPACT_ROUNDS = 40, 20


class Batch:
    """One Tools.java run: commands in order, outputs read back by name."""

    def __init__(self, ctx, classpath, name):
        self.ctx, self.cp = ctx, classpath
        self.dir = os.path.join(ctx.work, name)
        os.makedirs(self.dir)
        self.lines = []

    def add(self, name, main, *args, stdin=None):
        check("\t" not in "".join(args), "no tabs in arguments")
        self.lines.append("\t".join((name, main) + args))
        if stdin is not None:
            with open(os.path.join(self.dir, name + ".in"), "w") as f:
                f.write(stdin)

    def file(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def run(self):
        script = self.file("script.tsv", "\n".join(self.lines) + "\n")
        log4j = os.path.join(harness.REPO, "tests", "clients", "java", "tools", "log4j.properties")
        p = self.ctx.run([java(), *JVM_TEST_FLAGS, "-Dlog4j.configuration=file:" + log4j, "-cp", self.cp,
                          "io.ciuic.kafka.it.Main", "tools", script, self.dir], timeout=150)
        print(p.stdout.decode("utf-8", "replace"), end="")

    def out(self, name, rc=0):
        with open(os.path.join(self.dir, name + ".rc")) as f:
            got = int(f.read())
        with open(os.path.join(self.dir, name + ".out"), encoding="utf-8") as f:
            text = f.read()
        with open(os.path.join(self.dir, name + ".err"), encoding="utf-8") as f:
            err = f.read()
        check(got == rc, "%s exited %d, want %d\nstdout:\n%s\nstderr:\n%s" % (name, got, rc, text[-3000:], err[-3000:]))
        return text


def version_major(classpath):
    """The major version of the tools on classpath (build/java/tools-X.Y.Z)."""
    return int(re.search(r"tools-(\d+)\.", classpath).group(1))


def table(text):
    """kafka-consumer-groups' column output as a list of dicts."""
    rows = [l.split() for l in text.splitlines() if l.strip()]
    for i, r in enumerate(rows):
        if r[:1] == ["GROUP"]:
            head = r
            return [dict(zip(head, x)) for x in rows[i + 1:] if len(x) >= len(head) - 3 and x[0] == G]
    return []


def online(ctx, b, cp):
    B = ["--bootstrap-server", b.bootstrap]
    k = Batch(ctx, cp, "online")
    k.add("topics_create", TOPICS, *B, "--create", "--topic", T, "--partitions", "2",
          "--replication-factor", "1", "--config", "retention.ms=86400000")
    k.add("topics_create2", TOPICS, *B, "--create", "--topic", T2, "--partitions", "1")
    k.add("topics_list", TOPICS, *B, "--list")
    k.add("topics_describe", TOPICS, *B, "--describe", "--topic", T)
    k.add("topics_alter", TOPICS, *B, "--alter", "--topic", T, "--partitions", "3")
    k.add("topics_describe2", TOPICS, *B, "--describe", "--topic", T)
    k.add("topics_delete", TOPICS, *B, "--delete", "--topic", T2)
    k.add("configs_alter", CONFIGS, *B, "--entity-type", "topics", "--entity-name", T, "--alter",
          "--add-config", "max.message.bytes=200000,segment.bytes=1048576")
    k.add("configs_describe", CONFIGS, *B, "--entity-type", "topics", "--entity-name", T, "--describe")
    k.add("configs_delete", CONFIGS, *B, "--entity-type", "topics", "--entity-name", T, "--alter",
          "--delete-config", "max.message.bytes")
    k.add("configs_describe2", CONFIGS, *B, "--entity-type", "topics", "--entity-name", T, "--describe")
    k.add("configs_broker", CONFIGS, *B, "--entity-type", "brokers", "--entity-name", "0", "--describe", "--all")
    # Dynamic broker configs: this broker's own and every broker's default,
    # described, refused for a static key, then deleted (nothing else here
    # depends on them: larger limits only).
    BRK, DFLT = ("--entity-type", "brokers", "--entity-name", "0"), ("--entity-type", "brokers", "--entity-default")
    k.add("configs_broker_alter", CONFIGS, *B, *BRK, "--alter", "--add-config",
          "message.max.bytes=2000000,background.threads=12,listener.name.plaintext.max.connections=1000")
    k.add("configs_default_alter", CONFIGS, *B, *DFLT, "--alter", "--add-config",
          "message.max.bytes=3000000,log.segment.delete.delay.ms=60001")
    k.add("configs_broker_dynamic", CONFIGS, *B, *BRK, "--describe")
    k.add("configs_default_describe", CONFIGS, *B, *DFLT, "--describe")
    k.add("configs_broker_static", CONFIGS, *B, *BRK, "--alter", "--add-config", "num.partitions=3")
    k.add("configs_broker_unset", CONFIGS, *B, *BRK, "--alter", "--delete-config",
          "message.max.bytes,background.threads,listener.name.plaintext.max.connections")
    k.add("configs_broker_after", CONFIGS, *B, *BRK, "--describe")
    k.add("configs_default_unset", CONFIGS, *B, *DFLT, "--alter", "--delete-config",
          "message.max.bytes,log.segment.delete.delay.ms")
    k.add("configs_default_after", CONFIGS, *B, *DFLT, "--describe")
    # Listeners changed live (single node, Kafka's DynamicListenerConfig): a
    # second listener added by Kafka's tool, used by Kafka's tool, described,
    # then removed (the broker's own listener is untouched throughout).
    extra = harness.free_port()
    listeners = "PLAINTEXT://127.0.0.1:%d,EXTRA://127.0.0.1:%d" % (b.port, extra)
    k.add("listeners_add", CONFIGS, *B, *BRK, "--alter", "--add-config",
          "listeners=[%s],listener.security.protocol.map=[PLAINTEXT:PLAINTEXT,EXTRA:PLAINTEXT]" % listeners)
    k.add("listeners_use", TOPICS, "--bootstrap-server", "127.0.0.1:%d" % extra, "--list")
    k.add("listeners_describe", CONFIGS, *B, *BRK, "--describe")
    k.add("listeners_remove", CONFIGS, *B, *BRK, "--alter", "--delete-config",
          "listeners,listener.security.protocol.map")
    # Client quotas (AlterClientQuotas / DescribeClientQuotas; --describe of
    # users also asks DescribeUserScramCredentials): a client id's, a user's
    # default client's and an address's, described, then deleted. Nobody here uses these ids.
    CLI, USR, IP = (("--entity-type", "clients", "--entity-name", "cli-c"),
                    ("--entity-type", "users", "--entity-name", "cli-u", "--entity-type", "clients", "--entity-default"),
                    ("--entity-type", "ips", "--entity-name", "127.0.0.3"))
    k.add("quotas_client_alter", CONFIGS, *B, *CLI, "--alter", "--add-config",
          "producer_byte_rate=1048576,consumer_byte_rate=2097152,request_percentage=200,controller_mutation_rate=50")
    k.add("quotas_user_alter", CONFIGS, *B, *USR, "--alter", "--add-config", "producer_byte_rate=4096")
    k.add("quotas_ip_alter", CONFIGS, *B, *IP, "--alter", "--add-config", "connection_creation_rate=50")
    k.add("quotas_clients", CONFIGS, *B, "--describe", "--entity-type", "clients")
    k.add("quotas_users", CONFIGS, *B, "--describe", "--entity-type", "users", "--entity-type", "clients")
    k.add("quotas_ips", CONFIGS, *B, "--describe", "--entity-type", "ips")
    k.add("quotas_client_delete", CONFIGS, *B, *CLI, "--alter", "--delete-config",
          "producer_byte_rate,consumer_byte_rate,request_percentage,controller_mutation_rate")
    k.add("quotas_user_delete", CONFIGS, *B, *USR, "--alter", "--delete-config", "producer_byte_rate")
    k.add("quotas_ip_delete", CONFIGS, *B, *IP, "--alter", "--delete-config", "connection_creation_rate")
    k.add("quotas_after", CONFIGS, *B, "--describe", "--entity-type", "clients")
    k.add("produce", PRODUCER, *B, "--topic", T, "--property", "parse.key=true", "--property", "key.separator=:",
          stdin="".join("k%d:v%d\n" % (i, i) for i in range(N)))
    k.add("consume", CONSUMER, *B, "--topic", T, "--group", G, "--from-beginning", "--max-messages", str(N),
          "--timeout-ms", "30000", "--property", "print.key=true", "--property", "print.offset=true",
          "--property", "print.partition=true")
    k.add("produce_more", PRODUCER, *B, "--topic", T, "--property", "parse.key=true", "--property",
          "key.separator=:", stdin="".join("m%d:w%d\n" % (i, i) for i in range(5)))
    k.add("groups_list", GROUPS, *B, "--list")
    k.add("groups_describe", GROUPS, *B, "--describe", "--group", G)
    k.add("groups_reset", GROUPS, *B, "--reset-offsets", "--group", G, "--topic", T, "--to-earliest", "--execute")
    k.add("groups_describe2", GROUPS, *B, "--describe", "--group", G)
    k.add("offsets_latest", OFFSETS, *B, "--topic", T)
    offsets = k.file("delete.json", json.dumps({"version": 1, "partitions": [
        {"topic": T, "partition": p, "offset": 2} for p in range(3)]}))
    k.add("delete_records", DELETE_RECORDS, *B, "--offset-json-file", offsets)
    k.add("offsets_earliest", OFFSETS, *B, "--topic", T, "--time", "-2")
    k.add("log_dirs", LOG_DIRS, *B, "--describe", "--topic-list", T)
    k.add("api_versions", API_VERSIONS, *B)
    k.add("txn_list", TXNS, *B, "list")
    k.add("txn_describe", TXNS, *B, "describe", "--transactional-id", "dump-open-tx")
    k.add("txn_producers", TXNS, *B, "describe-producers", "--topic", "dump-open", "--partition", "0")
    k.add("txn_producers_done", TXNS, *B, "describe-producers", "--topic", "dump-txn", "--partition", "0")
    k.add("txn_hanging", TXNS, *B, "find-hanging", "--broker-id", "0")
    k.add("groups_delete", GROUPS, *B, "--delete", "--group", G)
    k.add("groups_list2", GROUPS, *B, "--list")
    k.add("topics_list2", TOPICS, *B, "--list")
    k.run()

    check(k.out("topics_create").strip() == "Created topic %s." % T, "kafka-topics --create: " + k.out("topics_create"))
    check(T in k.out("topics_list").split() and T2 in k.out("topics_list").split(), "kafka-topics --list")
    d = k.out("topics_describe")
    check(re.search(r"Topic: %s\s+TopicId: \S+\s+PartitionCount: 2\s+ReplicationFactor: 1\s+Configs: .*retention.ms=86400000"
                    % T, d), "kafka-topics --describe header:\n" + d)
    for p in range(2):
        check(re.search(r"Topic: %s\s+Partition: %d\s+Leader: 0\s+Replicas: 0\s+Isr: 0" % (T, p), d),
              "kafka-topics --describe partition %d:\n%s" % (p, d))
    d2 = k.out("topics_describe2")
    check("PartitionCount: 3" in d2 and re.search(r"Partition: 2\s+Leader: 0", d2), "after --alter --partitions 3:\n" + d2)
    k.out("topics_delete")
    check(T2 not in k.out("topics_list2").split() and T in k.out("topics_list2").split(), "kafka-topics --delete")

    check(k.out("configs_alter").strip() == "Completed updating config for topic %s." % T, k.out("configs_alter"))
    c = k.out("configs_describe")
    check(c.startswith("Dynamic configs for topic %s are:" % T), "kafka-configs --describe:\n" + c)
    for key, v in (("max.message.bytes", "200000"), ("segment.bytes", "1048576"), ("retention.ms", "86400000")):
        check(re.search(r"^\s+%s=%s sensitive=false synonyms=\{DYNAMIC_TOPIC_CONFIG:%s=%s" % (key, v, key, v), c, re.M),
              "kafka-configs --describe shows %s=%s as a topic config:\n%s" % (key, v, c))
    c2 = k.out("configs_describe2")
    check("max.message.bytes" not in c2 and "segment.bytes=1048576" in c2, "after --delete-config:\n" + c2)
    cb = k.out("configs_broker")
    check(cb.startswith("All configs for broker 0 are:"), "broker configs:\n" + cb[:500])
    check(re.search(r"^\s+log\.dirs=%s sensitive=false" % re.escape(b.data_dir), cb, re.M),
          "broker configs show log.dirs=%s:\n%s" % (b.data_dir, cb[:3000]))
    check(k.out("configs_broker_alter").strip() == "Completed updating config for broker 0.", k.out("configs_broker_alter"))
    check(k.out("configs_default_alter").strip() == "Completed updating default config for brokers in the cluster.",
          k.out("configs_default_alter"))
    bd = k.out("configs_broker_dynamic")
    check(bd.startswith("Dynamic configs for broker 0 are:") and re.search(
        r"^\s+message\.max\.bytes=2000000 sensitive=false synonyms=\{DYNAMIC_BROKER_CONFIG:message\.max\.bytes=2000000, "
        r"DYNAMIC_DEFAULT_BROKER_CONFIG:message\.max\.bytes=3000000, DEFAULT_CONFIG:message\.max\.bytes=1048588\}$", bd, re.M),
          "kafka-configs --describe of broker 0's dynamic configs:\n" + bd)
    # The maintenance pool's size and a listener's own connection limit, set
    # live by Kafka's tool, with Kafka's synonyms.
    check(re.search(r"^\s+background\.threads=12 sensitive=false synonyms=\{DYNAMIC_BROKER_CONFIG:background\.threads=12, "
                    r"DEFAULT_CONFIG:background\.threads=10\}$", bd, re.M) and
          re.search(r"^\s+listener\.name\.plaintext\.max\.connections=1000 sensitive=false synonyms=\{"
                    r"DYNAMIC_BROKER_CONFIG:listener\.name\.plaintext\.max\.connections=1000, "
                    r"DEFAULT_CONFIG:max\.connections=2147483647\}$", bd, re.M),
          "kafka-configs --describe of broker 0's background.threads and listener override:\n" + bd)
    dd = k.out("configs_default_describe")
    check(dd.startswith("Default configs for brokers in the cluster are:") and
          re.search(r"^\s+message\.max\.bytes=3000000 sensitive=false synonyms=\{DYNAMIC_DEFAULT_BROKER_CONFIG:", dd, re.M) and
          re.search(r"^\s+log\.segment\.delete\.delay\.ms=60001 ", dd, re.M),
          "kafka-configs --describe --entity-default:\n" + dd)
    k.out("configs_broker_static", rc=1)
    with open(os.path.join(k.dir, "configs_broker_static.err"), encoding="utf-8") as f:
        st = f.read()
    check("InvalidRequestException" in st and "Cannot update num.partitions dynamically" in st,
          "a static key is refused (INVALID_REQUEST, naming it):\n" + st[-3000:])
    k.out("configs_broker_unset")
    check(k.out("configs_broker_after").strip() == "Dynamic configs for broker 0 are:",
          "nothing left of broker 0's dynamic configs:\n" + k.out("configs_broker_after"))
    k.out("configs_default_unset")
    check(k.out("configs_default_after").strip() == "Default configs for brokers in the cluster are:",
          "nothing left after --delete-config:\n" + k.out("configs_default_after"))
    k.out("listeners_add")
    check(T in k.out("listeners_use").split(), "kafka-topics --list through the listener added live:\n" +
          k.out("listeners_use"))
    ld = k.out("listeners_describe")
    check(re.search(r"^\s+listeners=%s sensitive=false synonyms=\{DYNAMIC_BROKER_CONFIG:listeners=%s, "
                    r"STATIC_BROKER_CONFIG:listeners=PLAINTEXT://127\.0\.0\.1:%d" %
                    (re.escape(listeners), re.escape(listeners), b.port), ld, re.M),
          "kafka-configs --describe of the listeners set live:\n" + ld)
    k.out("listeners_remove")
    with socket.socket() as s:  # the removed listener's port no longer listens
        check(s.connect_ex(("127.0.0.1", extra)) != 0, "127.0.0.1:%d still accepts after the listener's removal" % extra)

    check(k.out("quotas_client_alter").strip() == "Completed updating config for client cli-c.",
          k.out("quotas_client_alter"))
    check(k.out("quotas_user_alter").strip() == "Completed updating config for user cli-u.", k.out("quotas_user_alter"))
    check(k.out("quotas_ip_alter").strip() == "Completed updating config for ip 127.0.0.3.", k.out("quotas_ip_alter"))
    check(k.out("quotas_clients").strip() ==
          # (in the order the tool's Java HashMap of the keys gives)
          "Quota configs for client-id 'cli-c' are producer_byte_rate=1048576.0, consumer_byte_rate=2097152.0, "
          "controller_mutation_rate=50.0, request_percentage=200.0",
          "kafka-configs --describe --entity-type clients:\n" + k.out("quotas_clients"))
    check(k.out("quotas_users").strip() ==
          "Quota configs for user-principal 'cli-u', the default client-id are producer_byte_rate=4096.0",
          "kafka-configs --describe --entity-type users --entity-type clients:\n" + k.out("quotas_users"))
    check(k.out("quotas_ips").strip() == "Quota configs for ip '127.0.0.3' are connection_creation_rate=50.0",
          "kafka-configs --describe --entity-type ips:\n" + k.out("quotas_ips"))
    for name in ("quotas_client_delete", "quotas_user_delete", "quotas_ip_delete"):
        k.out(name)
    check(k.out("quotas_after").strip() == "", "client quotas left after --delete-config:\n" + k.out("quotas_after"))

    k.out("produce")
    got = [l.split("\t") for l in k.out("consume").splitlines() if l.startswith("Partition:")]
    check(len(got) == N, "console consumer printed %d records, want %d:\n%s" % (len(got), N, k.out("consume")))
    pairs = sorted((g[2], g[3]) for g in got)
    check(pairs == sorted(("k%d" % i, "v%d" % i) for i in range(N)), "console consumer keys/values: %s" % pairs[:5])
    per_part = {}
    for g in got:
        part, off = int(g[0].split(":")[1]), int(g[1].split(":")[1])
        per_part.setdefault(part, []).append(off)
    for part, offs in per_part.items():
        check(offs == list(range(len(offs))), "partition %d offsets %s" % (part, offs))

    check(G in k.out("groups_list").split(), "kafka-consumer-groups --list:\n" + k.out("groups_list"))
    rows = table(k.out("groups_describe"))
    check(len(rows) == 3, "describe: one row per partition:\n" + k.out("groups_describe"))
    ends = {int(r["PARTITION"]): int(r["LOG-END-OFFSET"]) for r in rows}
    check(sum(ends.values()) == N + 5, "log-end offsets add up to %d: %s" % (N + 5, ends))
    check(sum(int(r["LAG"]) for r in rows) == 5, "lag after 5 more records:\n" + k.out("groups_describe"))
    for r in rows:
        check(int(r["CURRENT-OFFSET"]) + int(r["LAG"]) == int(r["LOG-END-OFFSET"]), "row %s" % r)
    check("has no active members" in k.out("groups_describe") + open(os.path.join(k.dir, "groups_describe.err")).read(),
          "describe says the group has no active members")
    reset = k.out("groups_reset")
    check(re.search(r"GROUP\s+TOPIC\s+PARTITION\s+NEW-OFFSET", reset), "reset header:\n" + reset)
    # Kafka 3.9's tool prints the reset rows without line breaks (its printf
    # lacks %n, as against Apache Kafka): read them as 4-token groups.
    words = reset.split()
    rows_reset = [words[i:i + 4] for i in range(4, len(words), 4)]
    check(sorted(rows_reset) == [[G, T, str(p), "0"] for p in range(3)], "reset to 0 on 3 partitions:\n" + reset)
    rows2 = table(k.out("groups_describe2"))
    check(len(rows2) == 3 and all(int(r["CURRENT-OFFSET"]) == 0 for r in rows2) and
          sum(int(r["LAG"]) for r in rows2) == N + 5, "after reset:\n" + k.out("groups_describe2"))

    latest = dict(l.rsplit(":", 1)[0:2] for l in k.out("offsets_latest").split())
    check({p: int(v) for p, v in latest.items()} == {"%s:%d" % (T, p): ends[p] for p in range(3)},
          "kafka-get-offsets latest %s, want %s" % (latest, ends))
    dr = k.out("delete_records")
    check("Records delete operation completed:" in dr, "kafka-delete-records:\n" + dr)
    for p in range(3):
        want = 2 if ends[p] >= 2 else ends[p]
        check(re.search(r"partition: %s-%d\s+low_watermark: %d" % (T, p, want), dr), "low watermark %d:\n%s" % (p, dr))
    earliest = dict(l.rsplit(":", 1)[0:2] for l in k.out("offsets_earliest").split())
    check({p: int(v) for p, v in earliest.items()} == {"%s:%d" % (T, p): min(2, ends[p]) for p in range(3)},
          "kafka-get-offsets --time -2 after delete-records: %s" % earliest)

    ld = k.out("log_dirs").splitlines()
    check(ld[:2] == ["Querying brokers for log directories information",
                     "Received log directory information from brokers 0"], "kafka-log-dirs header: %s" % ld[:2])
    doc = json.loads(ld[2])
    dirs = doc["brokers"][0]["logDirs"]
    check(doc["brokers"][0]["broker"] == 0 and len(dirs) == 1 and dirs[0]["logDir"] == b.data_dir and dirs[0]["error"] is None,
          "kafka-log-dirs dirs: %s" % dirs)
    parts = {x["partition"]: x for x in dirs[0]["partitions"]}
    check(sorted(parts) == ["%s-%d" % (T, p) for p in range(3)], "kafka-log-dirs partitions: %s" % sorted(parts))
    for p in range(3):
        x = parts["%s-%d" % (T, p)]
        check((x["size"] > 0) == (ends[p] > 0) and x["offsetLag"] == 0 and x["isFuture"] is False, "log-dirs %s" % x)

    api = k.out("api_versions")
    check(re.match(r"127\.0\.0\.1:%d \(id: 0 rack: null( isFenced: false)?\) -> \(" % b.port, api),
          "api-versions header:\n" + api[:200])
    with b.conn() as conn:
        err, advertised = conn.api_versions()
    check(err == 0, "ApiVersions error %d" % err)
    shown = {int(m.group(1)): (int(m.group(2)), int(m.group(3) or m.group(2)), m.group(4) or m.group(5))
             for m in re.finditer(r"\((\d+)\): (\d+)(?: to (\d+))? \[(?:usable: (\d+)|unusable: ([^\]]+))\]", api)}
    want = dict(advertised)
    check({k_: v[:2] for k_, v in shown.items()} == want, "api-versions shows exactly our ApiVersions ranges:\n" + api)
    # Kafka 4's client has dropped ZooKeeper mode's inter-broker APIs
    # (LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown), which
    # our brokers still speak among themselves: it calls them unusable.
    zk_only = {4, 5, 6, 7} if version_major(k.cp) >= 4 else set()
    bad = {k_: v for k_, v in shown.items() if (v[2] != str(v[1])) != (k_ in zk_only)}
    check(not bad, "Kafka's tools use our newest version of every API they know: %s" % bad)
    txn_checks(k)
    check("Deletion of requested consumer groups ('%s') was successful." % G in k.out("groups_delete"),
          "kafka-consumer-groups --delete:\n" + k.out("groups_delete"))
    check(G not in k.out("groups_list2").split(), "group gone after --delete")
    return ends


def columns(text):
    """kafka-transactions' tab-separated table as a list of dicts."""
    rows = [[c.strip() for c in l.rstrip("\t").split("\t")] for l in text.splitlines() if l.strip()]
    return [dict(zip(rows[0], r)) for r in rows[1:]] if rows else []


def txn_checks(k):
    """kafka-transactions against what make_data left: dump-tx's three
    finished transactions and dump-open-tx's open one (1 record in dump-open-0)."""
    ls = {r["TransactionalId"]: r for r in columns(k.out("txn_list"))}
    check(set(ls) >= {"dump-tx", "dump-open-tx"} and ls["dump-open-tx"]["TransactionState"] == "Ongoing" and
          ls["dump-tx"]["TransactionState"] == "CompleteCommit" and ls["dump-tx"]["Coordinator"] == "0",
          "kafka-transactions list:\n" + k.out("txn_list"))
    d = columns(k.out("txn_describe"))
    check(len(d) == 1 and d[0]["TransactionState"] == "Ongoing" and d[0]["TopicPartitions"] == "dump-open-0" and
          d[0]["ProducerId"] == ls["dump-open-tx"]["ProducerId"] and d[0]["TransactionTimeoutMs"] == "60000" and
          int(d[0]["CurrentTransactionStartTimeMs"]) > 0, "kafka-transactions describe:\n" + k.out("txn_describe"))
    p = columns(k.out("txn_producers"))
    check(len(p) == 1 and p[0]["ProducerId"] == ls["dump-open-tx"]["ProducerId"] and
          p[0]["CurrentTransactionStartOffset"] == "0" and p[0]["LastSequence"] == "0",
          "describe-producers of the open transaction:\n" + k.out("txn_producers"))
    pd = columns(k.out("txn_producers_done"))
    check(len(pd) == 1 and pd[0]["ProducerId"] == ls["dump-tx"]["ProducerId"] and
          pd[0]["CurrentTransactionStartOffset"] == "None" and pd[0]["LastSequence"] == "29",
          "describe-producers after the last commit:\n" + k.out("txn_producers_done"))
    check(columns(k.out("txn_hanging")) == [] and k.out("txn_hanging").startswith("Topic\tPartition\tProducerId"),
          "find-hanging finds none:\n" + k.out("txn_hanging"))


def make_data(b):
    """Topics whose segments kafka-dump-log reads: lz4 batches, a transactional
    topic with commit and abort markers, and group offsets in __consumer_offsets;
    made with confluent-kafka (Debian's librdkafka). Returns a producer whose
    transaction (one record in dump-open) is still open, for kafka-transactions."""
    import confluent_kafka
    from confluent_kafka.admin import AdminClient, NewTopic
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    fs = a.create_topics([NewTopic("dump-lz4", 1, 1, config={"segment.bytes": "16384", "segment.index.bytes": "4096",
                                                             "index.interval.bytes": "256"}),
                          NewTopic("dump-txn", 1, 1), NewTopic("dump-open", 1, 1),
                          NewTopic("dump-compact", 1, 1, config={
                              "cleanup.policy": "compact", "segment.bytes": "4096", "index.interval.bytes": "256",
                              "min.cleanable.dirty.ratio": "0.01"})])
    for f in fs.values():
        f.result(30)
    p = confluent_kafka.Producer({"bootstrap.servers": b.bootstrap, "compression.type": "lz4", "linger.ms": 2,
                                  "enable.idempotence": True})
    for i in range(3000):
        p.produce("dump-lz4", key=b"k%d" % i, value=b"value-%d-" % i + b"x" * (i % 50), timestamp=1_700_000_000_000 + i)
        if i % 100 == 0:
            p.flush(30)
    check(p.flush(30) == 0, "lz4 produce flushed")
    t = confluent_kafka.Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "dump-tx"})
    t.init_transactions(30)
    for commit in (True, False, True):
        t.begin_transaction()
        for i in range(10):
            t.produce("dump-txn", key=b"t%d" % i, value=b"committed" if commit else b"aborted")
        check(t.flush(30) == 0, "transactional records sent")  # so the abort has records to mark
        if commit:
            t.commit_transaction(30)
        else:
            t.abort_transaction(30)
    c = confluent_kafka.Consumer({"bootstrap.servers": b.bootstrap, "group.id": "dump-g",
                                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.assign([confluent_kafka.TopicPartition("dump-lz4", 0, 0)])
    msg = c.poll(30)
    check(msg is not None and msg.error() is None, "consumed one record to commit")
    c.commit(offsets=[confluent_kafka.TopicPartition("dump-lz4", 0, 1234)], asynchronous=False)
    c.close()
    # A compacted topic: 40 keys x 20 values, then filler so that the keyed
    # records leave the active segment; the cleaner (every 100 ms here)
    # rewrites the segments and their indexes, which kafka-dump-log then reads.
    # batch.size below segment.bytes: a larger batch is refused, as Kafka does.
    q = confluent_kafka.Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0, "batch.size": 2000})
    failed = []

    def delivered(err, msg):
        if err is not None:
            failed.append(err)
    for r in range(COMPACT_ROUNDS):
        for key in range(COMPACT_KEYS):
            q.produce("dump-compact", key=b"key-%d" % key, value=b"round-%d-of-key-%d" % (r, key), on_delivery=delivered)
        q.flush(30)
    for i in range(200):
        q.produce("dump-compact", key=b"fill-%d" % i, value=b"filler-%d" % i, on_delivery=delivered)
    check(q.flush(30) == 0 and not failed, "compacted topic's records delivered (errors: %s)" % failed[:3])
    last = COMPACT_KEYS * COMPACT_ROUNDS + 200 - 1

    def keyed_left():
        """How many key-* records a reader sees now (40 once the cleaner is done)."""
        c = confluent_kafka.Consumer({"bootstrap.servers": b.bootstrap, "group.id": "dump-compact-reader",
                                      "enable.auto.commit": False, "fetch.wait.max.ms": 50})
        try:
            c.assign([confluent_kafka.TopicPartition("dump-compact", 0, confluent_kafka.OFFSET_BEGINNING)])
            n, end = 0, time.monotonic() + 10
            while time.monotonic() < end:
                m = c.poll(0.2)
                if m is None or m.error() is not None:
                    continue
                n += m.key().startswith(b"key-")
                if m.offset() == last:
                    return n
            return None
        finally:
            c.close()
    harness.wait_until(lambda: keyed_left() == COMPACT_KEYS, 30, "the cleaner to leave each key of dump-compact once",
                       interval=0.2)
    o = confluent_kafka.Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "dump-open-tx"})
    o.init_transactions(30)
    o.begin_transaction()
    o.produce("dump-open", value=b"open")
    check(o.flush(30) == 0, "open transaction's record sent")
    return o


def txn_states(text, txn_id):
    """(state, partitions) of each __transaction_state record of txn_id, from
    --transaction-log-decoder's text (3.x) or JSON (4.x) lines."""
    out = []
    for line in text.splitlines():
        m = re.search(r"key: transaction_metadata::transactionalId=%s payload: producerId:\d+,producerEpoch:\d+,"
                      r"state=(\w+),partitions=\[([^\]]*)\]" % re.escape(txn_id), line)
        if m:
            out.append((m.group(1), m.group(2)))
            continue
        m = re.search(r'key: (\{"type":"0".*?\}\}) payload: (\{.*\})\s*$', line)
        if m and json.loads(m.group(1))["data"]["transactionalId"] == txn_id:
            d = json.loads(m.group(2))["data"]
            parts = ",".join("%s-%d" % (t["topic"], p) for t in (d["transactionPartitions"] or []) for p in t["partitionIds"])
            out.append((d["transactionStatus"], parts))
    return out


def offline(ctx, b, cp):
    """After a clean stop: kafka-dump-log and the checkpoint readers over the data dir."""
    data = b.data_dir
    k = Batch(ctx, cp, "offline")

    def files(part, *suffixes):
        d = os.path.join(data, part)
        return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(suffixes))

    lz4_logs = files("dump-lz4-0", ".log")
    check(len(lz4_logs) >= 3, "dump-lz4 rolled several segments: %s" % lz4_logs)
    idx = (files("dump-lz4-0", ".index", ".timeindex") + files("dump-txn-0", ".index", ".timeindex") +
           files("dump-compact-0", ".index", ".timeindex"))
    k.add("dump_lz4", DUMP, "--deep-iteration", "--print-data-log", "--files", ",".join(lz4_logs))
    k.add("dump_txn", DUMP, "--deep-iteration", "--print-data-log", "--files", ",".join(files("dump-txn-0", ".log")))
    k.add("dump_compact", DUMP, "--deep-iteration", "--print-data-log", "--files",
          ",".join(files("dump-compact-0", ".log")))
    k.add("dump_cli", DUMP, "--deep-iteration", "--files", ",".join(files("%s-0" % T, ".log")))
    offsets_parts = [p for p in os.listdir(data) if p.startswith("__consumer_offsets-") and
                     any(os.path.getsize(f) > 0 for f in files(p, ".log"))]
    check(offsets_parts, "some __consumer_offsets partition holds data")
    k.add("dump_offsets", DUMP, "--deep-iteration", "--offsets-decoder", "--files",
          ",".join(f for p in offsets_parts for f in files(p, ".log")))
    txn_parts = [p for p in os.listdir(data) if p.startswith("__transaction_state-") and
                 any(os.path.getsize(f) > 0 for f in files(p, ".log"))]
    k.add("dump_txn_log", DUMP, "--deep-iteration", "--transaction-log-decoder", "--files",
          ",".join(f for p in txn_parts for f in files(p, ".log")))
    k.add("verify_index", DUMP, "--verify-index-only", "--files", ",".join(idx))
    k.add("index_sanity", DUMP, "--index-sanity-check", "--files", ",".join(idx))
    k.add("dump_index", DUMP, "--files", ",".join(files("dump-lz4-0", ".index", ".timeindex")[:2]))
    # Kafka's readers of the aborted-transaction index and the producer snapshots.
    txn_state_files = files("dump-txn-0", ".txnindex", ".snapshot") + files("dump-open-0", ".txnindex", ".snapshot")
    check(len(files("dump-txn-0", ".txnindex")) == 1 and len(files("dump-txn-0", ".snapshot")) == 1 and
          len(files("dump-open-0", ".txnindex")) == 1 and len(files("dump-open-0", ".snapshot")) == 1,
          "one .txnindex and one .snapshot in dump-txn-0 and dump-open-0: %s" % txn_state_files)
    k.add("dump_txn_state", DUMP, "--files", ",".join(txn_state_files))
    ckpts = [os.path.join(data, f) for f in ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint",
                                             "cleaner-offset-checkpoint", "replication-offset-checkpoint",
                                             "meta.properties") if os.path.exists(os.path.join(data, f))]
    ckpts += [os.path.join(data, p, f) for p in ("dump-lz4-0", "dump-txn-0", "%s-0" % T)
              for f in ("leader-epoch-checkpoint", "partition.metadata") if os.path.exists(os.path.join(data, p, f))]
    check(len(ckpts) >= 6, "checkpoint files present: %s" % ckpts)
    k.add("checkpoints", "ck.checkpoints", *ckpts)
    k.run()

    # Every record of every lz4 segment, offsets 0..2999 without a gap, each
    # batch's CRC valid and compression lz4, keys and values as produced.
    out = k.out("dump_lz4")
    check("isvalid: false" not in out and "Exception" not in out, "dump-log found an invalid batch:\n" + out[-2000:])
    recs = re.findall(r"\| offset: (\d+) .*?keySize: \d+ .*?key: (\S+) payload: (\S+)", out)
    check([int(o) for o, _, _ in recs] == list(range(3000)), "dump-log saw offsets 0..2999 once each (%d records)" % len(recs))
    check(all(key == "k%s" % o and pl.startswith("value-%s-" % o) for o, key, pl in recs), "keys and payloads as produced")
    batches = re.findall(r"baseOffset: \d+ lastOffset: \d+ count: \d+ .*?compresscodec: (\S+) .*?isvalid: (\S+)", out)
    # librdkafka leaves a batch uncompressed when lz4 would not make it smaller.
    check(batches and all(v == "true" for c, v in batches) and {c for c, _ in batches} <= {"lz4", "none"} and
          sum(c == "lz4" for c, _ in batches) > len(batches) // 2, "batches valid, mostly lz4: %s" % batches[:5])
    check(len(re.findall(r"isTransactional: false", out)) == len(batches), "plain batches")

    txn = k.out("dump_txn")
    check("isvalid: false" not in txn, "dump-log: invalid transactional batch\n" + txn[-2000:])
    markers = re.findall(r"endTxnMarker: (COMMIT|ABORT) coordinatorEpoch: \d+", txn)
    check(markers == ["COMMIT", "ABORT", "COMMIT"], "control records in order: %s" % markers)
    check(len(re.findall(r"isTransactional: true isControl: false", txn)) >= 3 and
          txn.count("payload: committed") == 20 and txn.count("payload: aborted") == 10,
          "transactional data batches with 20 committed and 10 aborted records:\n" + txn[-2000:])

    # The .txnindex, read by Kafka: the aborted transaction, from its first
    # record to its ABORT marker, as the segment dump shows them; the
    # .snapshot: the transactional producer, its transaction closed.
    recs_txn = [(int(o), pl) for o, pl in re.findall(r"\| offset: (\d+) .*?payload: (\S+)", txn)]
    abort_at = [int(o) for o in re.findall(r"\| offset: (\d+) .*?endTxnMarker: ABORT", txn)]
    first_aborted = min(o for o, pl in recs_txn if pl == "aborted")
    ts = k.out("dump_txn_state")
    check("orrupt" not in ts and "Exception" not in ts, "kafka-dump-log refused a .txnindex or .snapshot:\n" + ts[-3000:])
    aborted = [tuple(int(x) for x in m) for m in re.findall(
        r"version: 0 producerId: (\d+) firstOffset: (\d+) lastOffset: (\d+) lastStableOffset: (\d+)", ts)]
    check(len(aborted) == 2 and aborted[0][1:] == (first_aborted, abort_at[0], abort_at[0] + 1),
          "dump-txn-0's .txnindex: (pid, %d, %d, %d), then dump-open-0's: %s\n%s" %
          (first_aborted, abort_at[0], abort_at[0] + 1, aborted, ts[-3000:]))
    producers = re.findall(r"producerId: (\d+) producerEpoch: (\d+) coordinatorEpoch: (-?\d+) "
                           r"currentTxnFirstOffset: (\S+) lastTimestamp: -?\d+ firstSequence: (\d+) "
                           r"lastSequence: (\d+) lastOffset: (\d+)", ts)
    check({p[0] for p in producers} >= {str(aborted[0][0]), str(aborted[1][0])} and
          all(p[3] in ("OptionalLong.empty", "None", "-1") for p in producers) and
          any(int(p[6]) == max(o for o, pl in recs_txn if pl == "committed") for p in producers),
          "the .snapshot entries: the transactional producers, no transaction open, the last batch's offset:\n" + ts[-3000:])

    # The cleaner's output: each key once with its last value, at the offset
    # the producer got, offsets increasing across the rewritten segments.
    comp = k.out("dump_compact")
    check("isvalid: false" not in comp, "dump-log: invalid batch in a cleaned segment\n" + comp[-2000:])
    crecs = [(int(o), key, pl) for o, key, pl in re.findall(r"\| offset: (\d+) .*?key: (\S+) payload: (\S+)", comp)]
    offs = [o for o, _, _ in crecs]
    check(offs == sorted(set(offs)), "cleaned segments' offsets strictly increase")
    keyed = {key: (o, pl) for o, key, pl in crecs if key.startswith("key-")}
    check(len([1 for _, key, _ in crecs if key.startswith("key-")]) == COMPACT_KEYS and
          all(keyed["key-%d" % i] == ((COMPACT_ROUNDS - 1) * COMPACT_KEYS + i, "round-%d-of-key-%d" % (COMPACT_ROUNDS - 1, i))
              for i in range(COMPACT_KEYS)),
          "each key once, its last value at its original offset: %s" % sorted(keyed.items())[:5])
    check(len(files("dump-compact-0", ".log")) >= 2, "cleaned log has several segments")

    cli = k.out("dump_cli")
    check(re.search(r"baseOffset: \d+ lastOffset: \d+ count: \d+", cli) and "isvalid: false" not in cli,
          "console-produced segment readable:\n" + cli[-2000:])

    off = k.out("dump_offsets")
    check("isvalid: false" not in off, "dump-log: invalid __consumer_offsets batch")
    check(re.search(r'key: \{"type":"1","data":\{"group":"dump-g","topic":"dump-lz4","partition":0\}\} '
                    r'payload: \{"version":"\d+","data":\{"offset":1234,', off),
          "--offsets-decoder decodes dump-g's commit of 1234:\n" + off[-3000:])

    tl = k.out("dump_txn_log")
    check("isvalid: false" not in tl, "dump-log: invalid __transaction_state batch")
    states = txn_states(tl, "dump-tx")
    want = [("Empty", "")] + [("Ongoing", "dump-txn-0"), ("PrepareCommit", "dump-txn-0"), ("CompleteCommit", ""),
                              ("Ongoing", "dump-txn-0"), ("PrepareAbort", "dump-txn-0"), ("CompleteAbort", ""),
                              ("Ongoing", "dump-txn-0"), ("PrepareCommit", "dump-txn-0"), ("CompleteCommit", "")]
    check(states == want, "--transaction-log-decoder: dump-tx's states %s, want %s" % (states, want))
    check(txn_states(tl, "dump-open-tx")[-1:] == [("CompleteAbort", "")], "dump-open-tx aborted")

    vi = k.out("verify_index")
    check("Mismatches in" not in vi and "mismatch" not in vi.lower() and "out of order" not in vi.lower(),
          "kafka-dump-log --verify-index-only found mismatches in our index files:\n" + vi[-3000:])
    check(vi.count("Dumping ") == len(idx), "every index file verified:\n" + vi[-2000:])
    san = k.out("index_sanity")
    # An index of a log smaller than index.interval.bytes is empty, as Kafka's is.
    check(all(re.search(re.escape(f) + r" (passed sanity check|is empty)\.", san) for f in idx) and
          all(f + " passed sanity check." in san for f in idx if "dump-lz4" in f),
          "--index-sanity-check passed for each of %d files:\n%s" % (len(idx), san))
    di = k.out("dump_index")
    check(re.search(r"^offset: \d+ position: \d+$", di, re.M) and re.search(r"^timestamp: \d+ offset: \d+$", di, re.M),
          "index entries printed:\n" + di[-2000:])

    ck = k.out("checkpoints")
    check("REFUSED" not in ck, "Kafka's checkpoint readers refused a file:\n" + ck)
    check(re.search(r"recovery-point-offset-checkpoint: \d+ entries .*\(dump-lz4-0,3000\)", ck),
          "recovery point of dump-lz4-0 is 3000:\n" + ck[:3000])
    check(re.search(r"dump-lz4-0/leader-epoch-checkpoint: 1 entries \[EpochEntry[(\[]epoch=0, startOffset=0[)\]]\]", ck),
          "dump-lz4-0 leader epochs:\n" + ck[:3000])
    check(re.search(r"meta.properties: MetaProperties\(version=0, clusterId=\S+, nodeId=0\)", ck), "meta.properties:\n" + ck)
    print("[kafka-tools] dump-log read %d lz4 records in %d batches, %d index files verified, %d checkpoint files" %
          (len(recs), len(batches), len(idx), len(ckpts)))
    print("[kafka-tools] dump-log read the aborted transactions %s and %d producer snapshot entries, e.g. %s" %
          (aborted, len(producers), producers[-1]))


def main(ctx):
    check(len(ctx.args) == 1, "usage: test_kafka_tools.py ... VERSION")
    version = ctx.args[0]
    main_classes(version)
    tools = java_dir("tools", version)
    clients = java_dir("clients", version)
    cp = os.path.join(clients, "ck-java-it.jar") + os.pathsep + os.path.join(tools, "*")
    b = ctx.broker({"log.cleaner.backoff.ms": "100"})
    open_txn = make_data(b)
    online(ctx, b, cp)
    open_txn.abort_transaction(30)
    del open_txn  # librdkafka's handle goes before the broker does
    b.stop()
    offline(ctx, b, cp)


if __name__ == "__main__":
    harness.run_test(main, total_timeout=210)
