"""tests/integration/test_java_clients.py: Apache Kafka's Java client against the real broker.

Usage: test_java_clients.py --broker BIN --work DIR VERSION

Runs `java -cp build/java/clients-VERSION/* io.ciuic.kafka.it.Main clients`
(tests/clients/java, built by deploy/install-deps.sh for each kafka-clients
version in tests/clients/java/versions) in one JVM against one broker. The
program's checks (Clients.java): describeCluster; a topic's create /
describe / describeConfigs / incrementalAlterConfigs (set, delete, a bad
value refused) / createPartitions / delete; the idempotent acks=all
producer with lz4, zstd, gzip and snappy, every acknowledged offset and every record
read back; listOffsets and deleteRecords; describeLogDirs; a consumer's
offsetsForTimes, seek, pause/resume; classic consumer groups with range
and cooperative-sticky (which partitions are revoked on a join),
commitSync / commitAsync, describeConsumerGroups, listConsumerGroupOffsets;
static membership (same generation and partitions after a rejoin);
alterConsumerGroupOffsets, deleteConsumerGroupOffsets, listConsumerGroups,
deleteConsumerGroups; a transactional copy with sendOffsetsToTransaction,
one transaction aborted; describeTransactions, listTransactions and
describeProducers of an open transaction, fencing by a second producer
with the same transactional.id; record headers (value, empty, null) and a
record over max.message.bytes refused; broker describeConfigs,
OffsetSpec.maxTimestamp, a preferred electLeaders that is not needed; a
controller_mutation_rate quota met by createTopics (refused with
ThrottlingQuotaExceededException when the client does not retry, created
when it does).
Each check asserts the values it got; this script asserts that every check
ran and passed. A missing build is a failure, not a skip.
"""

import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402

CHECKS = ["describe_cluster", "topic_lifecycle", "produce_lz4", "produce_zstd", "produce_gzip", "produce_snappy",
          "list_offsets_delete_records", "describe_log_dirs", "consumer_seek_times_pause",
          "group_range", "group_cooperative_sticky", "group_static_membership",
          "group_admin_offsets", "transactional_copy", "transaction_admin_fencing", "headers_and_limits",
          "broker_configs_elect_max_timestamp", "controller_mutation_quota"]


def java_dir(kind, version):
    """build/java/KIND-VERSION, which deploy/install-deps.sh builds; fails if absent."""
    d = os.path.join(harness.REPO, "build", "java", "%s-%s" % (kind, version))
    jar = os.path.join(d, "ck-java-it.jar" if kind == "clients" else "kafka-tools-%s.jar" % version)
    check(os.path.exists(jar), "%s missing: run deploy/install-deps.sh (it builds tests/clients/java)" % jar)
    return d


def java():
    j = shutil.which("java")
    check(j is not None, "java not on PATH (deploy/install-deps.sh installs openjdk-17-jdk-headless)")
    return j


# Options of every client and tool JVM the tests start: these JVMs live
# seconds, so the optimising compiler (C2) and the parallel collector's
# threads cost CPU they never pay back. Measured on the 2-core machine over
# the six Java client and tool tests: 65-73 CPU-s without, 57 with.
# The Java clients behave the same under either compiler.
JVM_TEST_FLAGS = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]


def main(ctx):
    check(len(ctx.args) == 1, "usage: test_java_clients.py ... VERSION")
    version = ctx.args[0]
    d = java_dir("clients", version)
    # No initial-rebalance delay: the group checks' joins complete at once.
    b = ctx.broker(overrides={"group.initial.rebalance.delay.ms": "0"})
    p = ctx.run([java(), *JVM_TEST_FLAGS, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", os.path.join(d, "*"),
                 "io.ciuic.kafka.it.Main", "clients", b.bootstrap, "v" + version.replace(".", "")],
                timeout=240, check_rc=False)
    out = p.stdout.decode("utf-8", "replace")
    print(out, end="")
    if p.stderr:
        print(p.stderr.decode("utf-8", "replace")[-4000:], end="")
    lines = out.splitlines()
    check(lines and lines[0].startswith("kafka-clients %s " % version),
          "the jar runs kafka-clients %s (first line: %r)" % (version, lines[:1]))
    passed = [l.split()[1] for l in lines if l.startswith("ok ")]
    failed = [l for l in lines if l.startswith("FAIL ")]
    check(not failed and p.returncode == 0, "%d Java client check(s) failed (exit %d): %s" % (
        len(failed), p.returncode, "; ".join(failed)))
    check(passed == CHECKS, "checks that passed %s, want %s" % (passed, CHECKS))


if __name__ == "__main__":
    harness.run_test(main, total_timeout=270)
