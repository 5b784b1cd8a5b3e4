// Loading: precedence of the four sources, warnings, errors with origins,
// ms/minutes/hours, synonyms for DescribeConfigs, the command line.
#include <catch2/catch.hpp>

#include <array>

#include "broker/config/broker_config.h"
#include "broker/config/command_line.h"

using namespace ciuickafka::broker::config;

namespace {

ConfigInput input(std::string_view file_text, std::vector<std::string> overrides = {}, Environment env = {}) {
  ConfigInput in;
  auto props = parse_properties(file_text, "server.properties");
  REQUIRE(props);
  in.file = props.value();
  in.file_name = "server.properties";
  in.overrides = std::move(overrides);
  in.environment = std::move(env);
  return in;
}

LoadedConfig load_ok(const ConfigInput& in) {
  auto r = load_config(in);
  INFO((r ? std::string() : r.error().message));
  REQUIRE(r);
  return r.value();
}

std::string load_error(const ConfigInput& in) {
  auto r = load_config(in);
  REQUIRE_FALSE(r);
  return r.error().message;
}

}  // namespace

TEST_CASE("precedence: env > override > file > default") {
  const std::string file = "num.partitions=2\nnum.io.threads=4\nnum.network.threads=5\n";
  LoadedConfig l = load_ok(input(file, {"num.partitions=3", "num.io.threads=6"}, {{"KAFKA_NUM_PARTITIONS", "7"}}));
  const BrokerConfig& c = l.config;
  CHECK(c.get_int("num.partitions") == 7);
  CHECK(c.source("num.partitions") == ConfigSource::kEnvironment);
  CHECK(c.entry("num.partitions").origin == "KAFKA_NUM_PARTITIONS");
  CHECK(c.get_int("num.io.threads") == 6);
  CHECK(c.source("num.io.threads") == ConfigSource::kOverride);
  CHECK(c.entry("num.io.threads").origin == "--override");
  CHECK(c.get_int("num.network.threads") == 5);
  CHECK(c.source("num.network.threads") == ConfigSource::kFile);
  CHECK(c.entry("num.network.threads").origin == "server.properties:3");
  CHECK(c.get_int("queued.max.requests") == 500);
  CHECK(c.source("queued.max.requests") == ConfigSource::kDefault);
  // num.io.threads sizes the I/O pool (server/io_pool.h): no warning.
  CHECK(l.warnings.empty());
}

TEST_CASE("Known keys that do nothing here warn at start-up - the ones that work do not") {
  const std::string file =
      "socket.send.buffer.bytes=65536\nsocket.receive.buffer.bytes=262144\nqueued.max.requests=100\n"
      "max.connections=1000\nmax.connections.per.ip=50\noffsets.commit.timeout.ms=4000\n"
      "transaction.state.log.min.isr=1\nnum.io.threads=4\nlog.cleaner.io.buffer.size=1000\n"
      "log.cleaner.io.buffer.load.factor=0.5\n";
  CHECK(load_ok(input(file, {})).warnings.empty());
  for (const char* inert : {"log.flush.start.offset.checkpoint.interval.ms=1000"}) {
    CAPTURE(inert);
    LoadedConfig l = load_ok(input(std::string(inert) + "\n", {}));
    REQUIRE(l.warnings.size() == 1);
    const std::string key = std::string(inert).substr(0, std::string(inert).find('='));
    CHECK_THAT(l.warnings[0], Catch::StartsWith(key + " is accepted but ignored: ") &&
                                  Catch::Contains("server.properties:1"));
  }
}

TEST_CASE("a bad value hidden by a higher source is not an error - the winner is checked") {
  CHECK(load_ok(input("num.partitions=abc\n", {"num.partitions=4"})).config.get_int("num.partitions") == 4);
  CHECK(load_error(input("num.partitions=4\n", {"num.partitions=abc"})) ==
        "invalid value \"abc\" for num.partitions: expected an integer >= 1 (from --override)");
  CHECK(load_error(input("", {}, {{"KAFKA_NUM_PARTITIONS", "0"}})) ==
        "invalid value \"0\" for num.partitions: expected an integer >= 1 (from KAFKA_NUM_PARTITIONS)");
  CHECK(load_error(input("x=1\nlog.preallocate = maybe\n")) ==
        "invalid value \"maybe\" for log.preallocate: expected true or false (from server.properties:2)");
}

TEST_CASE("ciuic.log.index.cache.bytes: 64 MiB by default, a bad value named with its key") {
  CHECK(load_ok(input("")).config.get_long("ciuic.log.index.cache.bytes") == 64 * 1024 * 1024);
  CHECK(load_ok(input("ciuic.log.index.cache.bytes=0\n")).config.get_long("ciuic.log.index.cache.bytes") == 0);
  CHECK(load_error(input("ciuic.log.index.cache.bytes=-5\n")) ==
        "invalid value \"-5\" for ciuic.log.index.cache.bytes: expected an integer >= 0 (from server.properties:1)");
  CHECK(load_error(input("", {"ciuic.log.index.cache.bytes=lots"})) ==
        "invalid value \"lots\" for ciuic.log.index.cache.bytes: expected an integer >= 0 (from --override)");
}

TEST_CASE("replica.selector.class: unset, empty or Kafka's rack-aware selector - another class named with its key") {
  CHECK(load_ok(input("")).config.is_null("replica.selector.class"));
  const std::string rack_aware = "org.apache.kafka.common.replica.RackAwareReplicaSelector";
  CHECK(load_ok(input("replica.selector.class=" + rack_aware + "\n")).config.get_string("replica.selector.class") ==
        rack_aware);
  CHECK(load_ok(input("replica.selector.class=\n")).config.get_string("replica.selector.class").empty());
  CHECK(load_error(input("replica.selector.class=com.example.MySelector\n")) ==
        "invalid value \"com.example.MySelector\" for replica.selector.class: expected "
        "org.apache.kafka.common.replica.RackAwareReplicaSelector or empty (from server.properties:1)");
}

TEST_CASE("later duplicates in one source win") {
  CHECK(load_ok(input("num.partitions=2\nnum.partitions=9\n")).config.get_int("num.partitions") == 9);
  CHECK(load_ok(input("", {"num.partitions=2", "num.partitions=8"})).config.get_int("num.partitions") == 8);
}

TEST_CASE("environment: KAFKA_CFG_ beats KAFKA_ - ignored variables say nothing") {
  Environment env = {{"KAFKA_CFG_NUM_PARTITIONS", "5"}, {"KAFKA_NUM_PARTITIONS", "6"},   {"KAFKA_HEAP_OPTS", "-Xmx1G"},
                     {"KAFKA_OPTS", "-Dx=y"},          {"KAFKA_JMX_PORT", "9999"},       {"KAFKA_LOG4J_OPTS", "z"},
                     {"KAFKA_VERSION", "3.9.0"},       {"KAFKA_HOME", "/opt/kafka"},     {"PATH", "/bin"},
                     {"KAFKA_LOG_RETENTION_MS", "1000"}};
  LoadedConfig l = load_ok(input("", {}, env));
  CHECK(l.config.get_int("num.partitions") == 5);
  CHECK(l.config.entry("num.partitions").origin == "KAFKA_CFG_NUM_PARTITIONS");
  CHECK(l.config.log_retention_ms() == 1000);
  CHECK(l.warnings.empty());
  // Order of the variables does not matter.
  std::swap(env[0], env[1]);
  CHECK(load_ok(input("", {}, env)).config.get_int("num.partitions") == 5);
}

TEST_CASE("unknown keys warn, naming where they came from") {
  LoadedConfig l = load_ok(input("foo.bar=1\n", {"no.such.key=2"}, {{"KAFKA_MADE_UP", "3"}}));
  REQUIRE(l.warnings.size() == 3);
  CHECK(l.warnings[0] == "unknown configuration key \"foo.bar\" (from server.properties:1); ignored");
  CHECK(l.warnings[1] == "unknown configuration key \"no.such.key\" (from --override); ignored");
  CHECK(l.warnings[2] == "unknown configuration key \"made.up\" (from KAFKA_MADE_UP); ignored");
}

TEST_CASE("ZooKeeper keys are taken - KRaft keys are accepted with a warning") {
  LoadedConfig l = load_ok(input("zookeeper.connect=zk:2181/kafka\nprocess.roles=broker,controller\n"
                                 "controller.quorum.voters=1@localhost:9093\nzookeeper.connection.timeout.ms=4000\n",
                                 {}, {{"CLUSTER_ID", "MkU3OEVBNTcwNTJENDM2Qk"}}));
  REQUIRE(l.warnings.size() == 3);
  CHECK(l.warnings[0] ==
        "process.roles is accepted but ignored: KRaft is not implemented: a cluster uses ZooKeeper "
        "(zookeeper.connect) (from server.properties:2)");
  CHECK(l.warnings[1].starts_with("controller.quorum.voters is accepted but ignored"));
  CHECK(l.warnings[2].starts_with("cluster.id is accepted but ignored"));
  CHECK(l.warnings[2].ends_with("(from CLUSTER_ID)"));
  CHECK(l.config.get_string("cluster.id") == "MkU3OEVBNTcwNTJENDM2Qk");
  CHECK(l.config.get_string("zookeeper.connect") == "zk:2181/kafka");
  CHECK(l.config.get_int("zookeeper.connection.timeout.ms") == 4000);
  CHECK(l.config.is_null(std::string_view("broker.rack")));
  // Empty values say nothing; bad ones are still errors, naming key and value.
  CHECK(load_ok(input("process.roles=\nauthorizer.class.name=\n")).warnings.empty());
  CHECK(load_error(input("process.roles=observer\n")).starts_with("invalid value \"observer\" for process.roles"));
  for (const char* bad : {"zk", ":2181", "zk:2181/kafka/", "zk:99999", "zk:2181,", "zk:2181//x"})
    CHECK(load_error(input(std::string("zookeeper.connect=") + bad + "\n"))
              .starts_with(std::string("invalid value \"") + bad + "\" for zookeeper.connect"));
  CHECK(load_ok(input("zookeeper.connect=a:1,b:2,[::1]:3/chroot/x\n")).warnings.empty());
  CHECK(load_error(input("zookeeper.session.timeout.ms=0\n")).starts_with("invalid value \"0\" for zookeeper.session.timeout.ms"));
}

TEST_CASE("a malformed --override is an error") {
  CHECK(load_error(input("", {"num.partitions"})) == "invalid --override \"num.partitions\": expected key=value");
  CHECK(load_error(input("", {"=3"})) == "invalid --override \"=3\": expected key=value");
  CHECK(load_ok(input("", {"advertised.listeners="})).config.get_string("advertised.listeners").empty());
  CHECK(load_ok(input("", {" num.partitions = 4 "})).config.get_int("num.partitions") == 4);
}

TEST_CASE("retention: ms wins over minutes over hours, across sources") {
  CHECK(load_ok(input("log.retention.hours=24\n")).config.log_retention_ms() == 24LL * 3600 * 1000);
  CHECK(load_ok(input("log.retention.hours=24\nlog.retention.minutes=30\n")).config.log_retention_ms() ==
        30LL * 60 * 1000);
  CHECK(load_ok(input("log.retention.ms=1234\nlog.retention.minutes=30\nlog.retention.hours=1\n"))
            .config.log_retention_ms() == 1234);
  // A lower-precedence unit set by a higher-precedence source still loses to ms.
  LoadedConfig l = load_ok(input("log.retention.ms=5000\n", {}, {{"KAFKA_LOG_RETENTION_HOURS", "2"}}));
  CHECK(l.config.log_retention_ms() == 5000);
  CHECK(l.config.effective_key("log.retention.hours").name == "log.retention.ms");
  CHECK(load_ok(input("log.retention.ms=-1\n")).config.log_retention_ms() == -1);
  CHECK(load_ok(input("log.retention.hours=-5\n")).config.log_retention_ms() == -1);
  CHECK(load_error(input("log.retention.minutes=0\n")) ==
        "invalid value \"0\" for log.retention.minutes: expected -1 (unlimited) or a positive retention (from "
        "server.properties:1)");
  CHECK(load_ok(input("log.roll.hours=2\n")).config.log_roll_ms() == 2LL * 3600 * 1000);
  CHECK(load_ok(input("log.roll.ms=100\nlog.roll.hours=2\n")).config.log_roll_ms() == 100);
  CHECK(load_ok(input("log.flush.scheduler.interval.ms=70\n")).config.log_flush_interval_ms() == 70);
  CHECK(load_ok(input("log.flush.interval.ms=50\nlog.flush.scheduler.interval.ms=70\n"))
            .config.log_flush_interval_ms() == 50);
  CHECK(load_ok(input("offsets.retention.minutes=2\n")).config.offsets_retention_ms() == 120000);
}

TEST_CASE("node.id and broker.id are one setting") {
  CHECK(load_ok(input("broker.id=3\n")).config.node_id() == 3);
  CHECK(load_ok(input("node.id=4\n")).config.node_id() == 4);
  CHECK(load_ok(input("node.id=5\nbroker.id=5\n")).config.node_id() == 5);
  CHECK(load_ok(input("", {}, {{"KAFKA_BROKER_ID", "6"}})).config.node_id() == 6);
  CHECK(load_error(input("node.id=1\nbroker.id=2\n")) ==
        "invalid value \"2\" for broker.id: expected the same value as node.id (1) (from server.properties:2)");
}

TEST_CASE("log.dirs wins over log.dir and is split on commas") {
  CHECK(load_ok(input("log.dir=/data/one\n")).config.log_dirs() == List{"/data/one"});
  CHECK(load_ok(input("log.dir=/data/one\nlog.dirs=/a, /b\n")).config.log_dirs() == List{"/a", "/b"});
}

TEST_CASE("synonyms and values as DescribeConfigs reports them") {
  LoadedConfig l = load_ok(input("log.retention.hours=24\nssl.key.password=secret\n", {"compression.type=zstd"}));
  const BrokerConfig& c = l.config;
  // Kafka's synonym list starts at the described key: log.retention.ms,
  // unset and without a default, lists nothing; .hours its file value and default.
  CHECK(c.synonyms("log.retention.ms").empty());
  auto syn = c.synonyms("log.retention.hours");
  REQUIRE(syn.size() == 2);
  CHECK(syn[0].name == "log.retention.hours");
  CHECK(syn[0].value == "24");
  CHECK(syn[0].source == ConfigSource::kFile);
  CHECK(syn[1].name == "log.retention.hours");
  CHECK(syn[1].value == "168");
  CHECK(syn[1].source == ConfigSource::kDefault);
  CHECK(c.describe_value("log.retention.ms") == std::nullopt);
  CHECK(c.describe_value("log.retention.hours") == "24");
  CHECK(c.describe_value("compression.type") == "zstd");
  CHECK(c.describe_value("log.cleanup.policy") == "delete");
  CHECK(c.describe_value("ssl.key.password") == std::nullopt);
  auto pw = c.synonyms("ssl.key.password");
  REQUIRE(pw.size() == 1);
  CHECK(pw[0].value == std::nullopt);
  CHECK(c.get_string("ssl.key.password") == "secret");
  CHECK(l.warnings.size() == 1);  // TLS not implemented
  auto one = c.synonyms("num.partitions");
  REQUIRE(one.size() == 1);
  CHECK(one[0].source == ConfigSource::kDefault);
}

TEST_CASE("command line: --config, FILE, --override, --help, --version, errors") {
  auto parse = [](std::initializer_list<std::string_view> args) {
    std::vector<std::string_view> v(args);
    return parse_command_line(v);
  };
  auto cl = parse({"--config", "a.properties", "--override", "num.partitions=3", "--override=log.dirs=/x"});
  REQUIRE(cl);
  CHECK(cl.value().config_path == "a.properties");
  CHECK(cl.value().overrides == std::vector<std::string>{"num.partitions=3", "log.dirs=/x"});
  CHECK(parse({"server.properties"}).value().config_path == "server.properties");
  CHECK(parse({"--config=b"}).value().config_path == "b");
  CHECK(parse({"--help"}).value().help);
  CHECK(parse({"-h"}).value().help);
  CHECK(parse({"--version"}).value().version);
  CHECK(parse({}).value().config_path == std::nullopt);
  CHECK(parse({"--config"}).error().message == "--config needs a value");
  CHECK(parse({"a", "b"}).error().message == "more than one config file given: a and b");
  CHECK(parse({"--override", "x"}).error().message == "invalid --override \"x\": expected key=value");
  CHECK(parse({"--bogus"}).error().message == "unknown option --bogus (try --help)");
}

TEST_CASE("log.level and ciuic.log.format: log4j names, KAFKA_LOG4J_ROOT_LOGLEVEL, bad values named") {
  CHECK(load_ok(input("")).config.get_string("log.level") == "INFO");
  CHECK(load_ok(input("")).config.get_string("ciuic.log.format") == "text");
  CHECK(load_ok(input("log.level=warn\n")).config.get_string("log.level") == "warn");
  LoadedConfig env = load_ok(input("log.level=INFO\n", {}, {{"KAFKA_LOG4J_ROOT_LOGLEVEL", "DEBUG"}}));
  CHECK(env.config.get_string("log.level") == "DEBUG");
  CHECK(env.config.entry("log.level").origin == "KAFKA_LOG4J_ROOT_LOGLEVEL");
  CHECK(env.warnings.empty());
  const std::string bad = load_error(input("", {"log.level=LOUD"}));
  CHECK(bad.find("log.level") != std::string::npos);
  CHECK(bad.find("LOUD") != std::string::npos);
  const std::string fmt = load_error(input("ciuic.log.format=xml\n"));
  CHECK(fmt.find("ciuic.log.format") != std::string::npos);
  CHECK(fmt.find("xml") != std::string::npos);
  CHECK(load_ok(input("ciuic.log.format=JSON\n")).config.get_string("ciuic.log.format") == "JSON");
}

TEST_CASE("listener overrides: listener.name.<l>.max.connections and .max.connection.creation.rate") {
  LoadedConfig l = load_ok(input("listeners=PLAINTEXT://127.0.0.1:9092,INTERNAL://127.0.0.1:9093\n"
                                 "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT\n"
                                 "inter.broker.listener.name=INTERNAL\n"
                                 "listener.name.internal.max.connections=7\n"
                                 "max.connections=50\n",
                                 {"listener.name.plaintext.max.connection.creation.rate=3"},
                                 {{"KAFKA_LISTENER_NAME_INTERNAL_MAX_CONNECTIONS", "8"}}));
  const BrokerConfig& c = l.config;
  CHECK(l.warnings.empty());
  // The environment beats the file; the listener's name in any case.
  CHECK(c.listener_int("INTERNAL", "max.connections") == 8);
  CHECK(c.listener_int("plaintext", "max.connection.creation.rate") == 3);
  CHECK(c.listener_int("PLAINTEXT", "max.connections") == std::nullopt);  // the broker's 50 applies
  CHECK(c.listener_overrides() == std::vector<std::string>{"listener.name.internal.max.connections",
                                                           "listener.name.plaintext.max.connection.creation.rate"});
  // Synonyms as Kafka lists them: the override, then its base key's.
  auto syn = c.synonyms("listener.name.internal.max.connections");
  REQUIRE(syn.size() == 3);
  CHECK(syn[0].name == "listener.name.internal.max.connections");
  CHECK(syn[0].value == "8");
  CHECK(syn[0].source == ConfigSource::kEnvironment);
  CHECK(syn[1].name == "max.connections");
  CHECK(syn[1].value == "50");
  CHECK(syn[2].source == ConfigSource::kDefault);
  // The base key does not list the overrides.
  REQUIRE(c.synonyms("max.connections").size() == 2);
  CHECK(c.synonyms("max.connections")[0].name == "max.connections");

  SECTION("a bad value names the whole key and the value") {
    CHECK(load_error(input("listener.name.plaintext.max.connections=0\n")) ==
          "invalid value \"0\" for listener.name.plaintext.max.connections: expected an integer >= 1 "
          "(from server.properties:1)");
    CHECK_THAT(load_error(input("", {"listener.name.plaintext.max.connection.creation.rate=fast"})),
               Catch::Contains("\"fast\"") && Catch::Contains("listener.name.plaintext.max.connection.creation.rate"));
  }
  SECTION("a listener this broker lacks, or a name not in lower case, warns") {
    LoadedConfig w = load_ok(input("listener.name.external.max.connections=5\nlistener.name.PLAINTEXT.max.connections=5\n"));
    REQUIRE(w.warnings.size() == 2);
    CHECK(w.warnings[0] ==
          "unknown configuration key \"listener.name.PLAINTEXT.max.connections\" (from server.properties:2); ignored "
          "(a listener override names its listener in lower case: listener.name.plaintext.max.connections)");
    CHECK(w.warnings[1] ==
          "listener.name.external.max.connections names no listener of this broker (PLAINTEXT); it has no effect "
          "(from server.properties:1)");
    CHECK(w.config.listener_int("PLAINTEXT", "max.connections") == std::nullopt);
  }
  SECTION("other listener-prefixed keys are not overrides") {
    CHECK_FALSE(parse_listener_key("listener.name.plaintext.num.partitions"));
    CHECK_FALSE(parse_listener_key("listener.name..max.connections"));
    CHECK_FALSE(parse_listener_key("listener.name.max.connections"));
    auto k = parse_listener_key("listener.name.client_1.max.connections");
    REQUIRE(k);
    CHECK(k->listener == "client_1");
    CHECK(k->base->name == "max.connections");
  }
  SECTION("dynamic: the broker's own beats the cluster default, which beats the static value") {
    BrokerConfig d = c;
    REQUIRE(d.set_dynamic({{"listener.name.internal.max.connections", "20"},
                           {"listener.name.other.max.connections", "4"}},
                          {{"listener.name.plaintext.max.connection.creation.rate", "9"}}));
    CHECK(d.listener_int("internal", "max.connections") == 20);
    CHECK(d.listener_int("plaintext", "max.connection.creation.rate") == 9);
    CHECK(d.listener_int("other", "max.connections") == 4);  // a cluster default may name another broker's listener
    auto ds = d.synonyms("listener.name.internal.max.connections");
    REQUIRE(ds.size() == 4);
    CHECK(ds[0].source == ConfigSource::kDynamicDefault);
    CHECK(ds[1].source == ConfigSource::kEnvironment);
    CHECK(ds[1].value == "8");
    CHECK(ds[2].name == "max.connections");
    // A bad value is refused, naming the key, and nothing changes.
    auto bad = d.set_dynamic({}, {{"listener.name.internal.max.connections", "-3"}});
    REQUIRE_FALSE(bad);
    CHECK_THAT(bad.error().message, Catch::Contains("listener.name.internal.max.connections") && Catch::Contains("-3"));
    CHECK(d.listener_int("internal", "max.connections") == 20);
    // Removed again: the static value is back.
    REQUIRE(d.set_dynamic({}, {}));
    CHECK(d.listener_int("internal", "max.connections") == 8);
    CHECK(d.listener_int("other", "max.connections") == std::nullopt);
  }
}
