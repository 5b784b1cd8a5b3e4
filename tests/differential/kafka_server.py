"""tests/differential/kafka_server.py: Apache Kafka 3.9.1 itself, single node, as the reference.

Runs Kafka's own broker (`kafka.Kafka`, from the kafka_2.13 jar and its
dependencies in build/java/tools-3.9.1, which deploy/install-deps.sh builds)
in KRaft combined mode: one process that is both controller and broker,
node id 0 (the id our harness gives its broker, so node ids need no
normalising), one log dir in the work directory, the client listener and the
controller listener on free 127.0.0.1 ports. Configuration is Kafka's
default but for what one node needs (the internal topics' replication factor
and min ISR 1) and the settings the differential run gives both brokers
alike (`SHARED_OVERRIDES`).

The storage is formatted with Kafka's StorageTool first; the broker is ready
when a Metadata request lists it (a KRaft broker accepts connections before it
has registered and been unfenced). A missing build is a failure.
"""

import os
import shutil
import signal

import subprocess
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, "..", "integration"))
import harness  # noqa: E402
import kafka_wire  # noqa: E402
from harness import check  # noqa: E402

KAFKA_VERSION = "3.9.1"
CLUSTER_ID = "ckDifferentialTest0001"  # 22 characters: a base64 UUID, as StorageTool wants

# Both brokers run with these (each is a Kafka key with Kafka's meaning): no
# 3 s wait for more members before the first rebalance, so JoinGroup answers
# at once on both sides.
SHARED_OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
}

# Only Kafka gets these: what a single KRaft node needs to work at all.
KRAFT_SINGLE_NODE = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
}


def tools_dir():
    d = os.path.join(harness.REPO, "build", "java", "tools-" + KAFKA_VERSION)
    jar = os.path.join(d, "kafka_2.13-%s.jar" % KAFKA_VERSION)
    check(os.path.exists(jar), "%s missing: run deploy/install-deps.sh (it builds tests/clients/java)" % jar)
    return d


def java():
    j = shutil.which("java")
    check(j is not None, "java not on PATH (deploy/install-deps.sh installs openjdk-17-jdk-headless)")
    return j


class KafkaBroker:
    def __init__(self, workdir, overrides=None, name="kafka", start_timeout=90.0):
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.data_dir = os.path.join(self.dir, "data")
        self.port = harness.free_port()
        self.controller_port = harness.free_port()
        self.start_timeout = start_timeout
        self.proc = None
        self.log_path = os.path.join(self.dir, "kafka.log")
        self.config_path = os.path.join(self.dir, "server.properties")
        props = {
            "process.roles": "broker,controller",
            "node.id": "0",
            "controller.quorum.voters": "0@127.0.0.1:%d" % self.controller_port,
            "listeners": "PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (self.port, self.controller_port),
            "advertised.listeners": "PLAINTEXT://127.0.0.1:%d" % self.port,
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": self.data_dir,
        }
        props.update(KRAFT_SINGLE_NODE)
        props.update(SHARED_OVERRIDES)
        props.update(overrides or {})
        with open(self.config_path, "w") as f:
            f.write("# written by tests/differential/kafka_server.py\n")
            for k, v in props.items():
                f.write("%s=%s\n" % (k, v))
        self.log4j = os.path.join(self.dir, "log4j.properties")
        with open(self.log4j, "w") as f:
            f.write("log4j.rootLogger=INFO, file\n"
                    "log4j.appender.file=org.apache.log4j.FileAppender\n"
                    "log4j.appender.file.File=%s\n"
                    "log4j.appender.file.layout=org.apache.log4j.PatternLayout\n"
                    "log4j.appender.file.layout.ConversionPattern=[%%d] %%p %%m (%%c)%%n\n"
                    "log4j.logger.kafka.request.logger=WARN\n" % os.path.join(self.dir, "server.log"))

    @property
    def bootstrap(self):
        return "127.0.0.1:%d" % self.port

    def _java_cmd(self, main, *args):
        return [java(), "-Xmx768m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Djava.awt.headless=true", "-Dlog4j.configuration=file:" + self.log4j,
                "-cp", os.path.join(tools_dir(), "*"), main] + list(args)

    def start(self):
        t0 = time.monotonic()
        fmt = subprocess.run(self._java_cmd("kafka.tools.StorageTool", "format", "-t", CLUSTER_ID,
                                            "-c", self.config_path),
                             capture_output=True, timeout=120)
        check(fmt.returncode == 0, "Kafka StorageTool format failed (%d): %s %s" % (
            fmt.returncode, fmt.stdout.decode()[-2000:], fmt.stderr.decode()[-2000:]))
        log = open(self.log_path, "wb")
        cmd = self._java_cmd("kafka.Kafka", self.config_path)
        print("[kafka] start: %s" % " ".join(cmd), flush=True)
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     cwd=self.dir, start_new_session=True)
        log.close()
        try:
            self._wait_ready()
        except BaseException:
            self.dump_log()
            self.kill()
            raise
        print("[kafka] Apache Kafka %s ready on %s in %.1fs" % (KAFKA_VERSION, self.bootstrap,
                                                               time.monotonic() - t0), flush=True)
        return self

    def _wait_ready(self):
        end = time.monotonic() + self.start_timeout
        last = None
        while time.monotonic() < end:
            rc = self.proc.poll()
            if rc is not None:
                raise harness.TestFailure("Kafka exited with status %d during start-up" % rc)
            try:
                with kafka_wire.Conn(self.port, timeout=2.0) as c:
                    md = c.metadata([])
                    if md["brokers"]:
                        return
                    last = "no broker registered yet"
            except (OSError, kafka_wire.ConnectionClosed, ValueError, kafka_wire.Truncated) as e:
                last = repr(e)
            time.sleep(0.1)
        raise harness.TestFailure("Kafka not ready within %.0fs (last: %s)" % (self.start_timeout, last))

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None

    def kill(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        self.proc = None

    def dump_log(self, lines=60):
        for path in (self.log_path, os.path.join(self.dir, "server.log")):
            if not os.path.exists(path):
                continue
            with open(path, "rb") as f:
                text = f.read().decode("utf-8", "replace").splitlines()
            print("[kafka] ---- %s (last %d of %d lines) ----" % (path, min(lines, len(text)), len(text)))
            for line in text[-lines:]:
                print("  | " + line)


class HarnessKafka(KafkaBroker):
    """Apache Kafka in our broker's place for an integration test run with
    --against-kafka (harness.Context.broker): it has the harness.Broker
    methods such scenarios call (bootstrap, conn, create_topic, stop, kill),
    so a scenario's checks can be judged on the reference too."""

    def __init__(self, workdir, overrides=None, name="kafka"):
        super().__init__(workdir, overrides, name=name)
        self.name = name

    conn = harness.Broker.conn
    create_topic = harness.Broker.create_topic
    leaders_ready = harness.Broker.leaders_ready
