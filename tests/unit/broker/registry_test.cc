// Registry: Kafka's defaults, parsing of each type, validation messages.
#include <catch2/catch.hpp>

#include <limits>
#include <set>

#include "broker/config/broker_config.h"
#include "broker/config/registry.h"

using namespace ciuickafka::broker::config;

namespace {

std::string error_of(std::string_view name, std::string_view raw) {
  const KeyDef* k = find_key(name);
  REQUIRE(k);
  auto v = parse_value(*k, raw);
  REQUIRE_FALSE(v);
  return v.error().message;
}

Value value_of(std::string_view name, std::string_view raw) {
  const KeyDef* k = find_key(name);
  REQUIRE(k);
  auto v = parse_value(*k, raw);
  INFO(name << "=" << raw);
  REQUIRE(v);
  return v.value();
}

}  // namespace

TEST_CASE("every default parses and validates - names are unique") {
  std::set<std::string_view> names, topic_names;
  for (const KeyDef& k : all_keys()) {
    INFO(k.name);
    CHECK(names.insert(k.name).second);
    if (!k.topic_name.empty()) CHECK(topic_names.insert(k.topic_name).second);
    if (k.default_value) CHECK(parse_value(k, *k.default_value).is_ok());
    CHECK_FALSE(k.doc.empty());
    if (!k.group.empty()) {
      REQUIRE(find_key(k.group));
      CHECK(find_key(k.group)->group.empty());  // groups point at their first key
    }
  }
  CHECK(all_keys().size() >= 90);
}

TEST_CASE("defaults are Kafka's") {
  BrokerConfig c = BrokerConfig::defaults();
  CHECK(c.node_id() == -1);
  CHECK(c.get_string("listeners") == "PLAINTEXT://:9092");
  CHECK(c.is_null("advertised.listeners"));
  CHECK(c.get_string("listener.security.protocol.map") ==
        "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL");
  CHECK(c.log_dirs() == List{"/tmp/kafka-logs"});
  CHECK(c.get_int("num.partitions") == 1);
  CHECK(c.get_int("default.replication.factor") == 1);
  CHECK(c.get_bool("auto.create.topics.enable"));
  CHECK(c.get_bool("delete.topic.enable"));
  CHECK(c.get_int("message.max.bytes") == 1048588);
  CHECK(c.get_int("socket.request.max.bytes") == 104857600);
  CHECK(c.get_int("socket.send.buffer.bytes") == 102400);
  // Kafka's is 102400; ours autotunes (broker/README.md).
  CHECK(c.get_int("socket.receive.buffer.bytes") == -1);
  CHECK(c.get_int("num.network.threads") == 3);
  CHECK(c.get_int("num.io.threads") == 8);
  // Kafka's default is -1 (unbounded); CiuicKafka bounds it (broker/README.md).
  CHECK(c.get_long("queued.max.request.bytes") == 268435456);
  CHECK(c.get_int("queued.max.requests") == 500);
  CHECK(c.get_long("connections.max.idle.ms") == 600000);
  CHECK(c.get_int("log.segment.bytes") == 1073741824);
  CHECK(c.log_roll_ms() == 168LL * 3600 * 1000);
  CHECK(c.log_retention_ms() == 168LL * 3600 * 1000);
  CHECK(c.get_long("log.retention.bytes") == -1);
  CHECK(c.get_long("log.retention.check.interval.ms") == 300000);
  CHECK(c.get_long("log.flush.interval.messages") == INT64_MAX);
  CHECK(c.log_flush_interval_ms() == INT64_MAX);
  CHECK(c.get_int("log.index.interval.bytes") == 4096);
  CHECK(c.get_int("log.index.size.max.bytes") == 10485760);
  CHECK_FALSE(c.get_bool("log.preallocate"));
  CHECK(c.get_list("log.cleanup.policy") == List{"delete"});
  CHECK(c.get_bool("log.cleaner.enable"));
  CHECK(c.get_double("log.cleaner.min.cleanable.ratio") == 0.5);
  CHECK(c.get_long("log.cleaner.delete.retention.ms") == 86400000);
  CHECK(c.get_long("log.segment.delete.delay.ms") == 60000);
  CHECK(c.get_string("compression.type") == "producer");
  CHECK(c.get_int("offsets.topic.num.partitions") == 50);
  CHECK(c.get_int("offsets.topic.replication.factor") == 3);
  CHECK(c.get_int("offsets.topic.segment.bytes") == 104857600);
  CHECK(c.offsets_retention_ms() == 10080LL * 60 * 1000);
  CHECK(c.get_int("offset.metadata.max.bytes") == 4096);
  CHECK(c.get_int("group.initial.rebalance.delay.ms") == 3000);
  CHECK(c.get_int("group.min.session.timeout.ms") == 6000);
  CHECK(c.get_int("group.max.session.timeout.ms") == 1800000);
  CHECK(c.get_int("group.max.size") == INT32_MAX);
  CHECK(c.get_int("transaction.state.log.num.partitions") == 50);
  CHECK(c.get_int("transaction.state.log.min.isr") == 2);
  CHECK(c.is_null("zookeeper.connect"));
  CHECK(c.get_int("zookeeper.session.timeout.ms") == 18000);
  CHECK(c.get_list("process.roles").empty());
  CHECK(c.get_list("controller.quorum.voters").empty());
  CHECK(c.is_null("cluster.id"));
  CHECK(c.get_int("min.insync.replicas") == 1);
  CHECK_FALSE(c.get_bool("unclean.leader.election.enable"));
  CHECK(c.get_long("replica.lag.time.max.ms") == 30000);
  CHECK(c.get_string("ciuic.metrics.listener") == "0.0.0.0:9644");
  CHECK(c.get_bool("ciuic.acks.all.fsync"));
  CHECK(c.source("num.partitions") == ConfigSource::kDefault);
  CHECK(c.entry("num.partitions").origin == "default");
}

TEST_CASE("integers: sign, whitespace, range, 32-bit overflow") {
  CHECK(std::get<int32_t>(value_of("num.partitions", " 12 ")) == 12);
  CHECK(std::get<int32_t>(value_of("num.partitions", "+3")) == 3);
  CHECK(std::get<int32_t>(value_of("socket.send.buffer.bytes", "-1")) == -1);
  CHECK(error_of("num.partitions", "abc") == "invalid value \"abc\" for num.partitions: expected an integer >= 1");
  CHECK(error_of("num.partitions", "0") == "invalid value \"0\" for num.partitions: expected an integer >= 1");
  CHECK(error_of("num.partitions", "1.5") == "invalid value \"1.5\" for num.partitions: expected an integer >= 1");
  CHECK(error_of("num.partitions", "") == "invalid value \"\" for num.partitions: expected an integer >= 1");
  CHECK(error_of("num.partitions", "3000000000") ==
        "invalid value \"3000000000\" for num.partitions: expected an integer >= 1 (a 32-bit integer)");
  CHECK(error_of("num.partitions", "++1") == "invalid value \"++1\" for num.partitions: expected an integer >= 1");
  CHECK(error_of("compression.lz4.level", "18") ==
        "invalid value \"18\" for compression.lz4.level: expected an integer in [1, 17]");
  CHECK(error_of("offset.metadata.max.bytes", "x") ==
        "invalid value \"x\" for offset.metadata.max.bytes: expected an integer");
}

TEST_CASE("longs take 64-bit values") {
  CHECK(std::get<int64_t>(value_of("log.retention.ms", "9223372036854775807")) == INT64_MAX);
  CHECK(std::get<int64_t>(value_of("log.retention.bytes", "-1")) == -1);
  CHECK(error_of("log.retention.check.interval.ms", "0") ==
        "invalid value \"0\" for log.retention.check.interval.ms: expected an integer >= 1");
  CHECK(error_of("log.retention.bytes", "9223372036854775808") ==
        "invalid value \"9223372036854775808\" for log.retention.bytes: expected an integer");
}

TEST_CASE("booleans are true or false in any case") {
  CHECK(std::get<bool>(value_of("log.preallocate", "TRUE")) == true);
  CHECK(std::get<bool>(value_of("log.preallocate", " False ")) == false);
  CHECK(error_of("log.preallocate", "yes") == "invalid value \"yes\" for log.preallocate: expected true or false");
  CHECK(error_of("log.preallocate", "1") == "invalid value \"1\" for log.preallocate: expected true or false");
}

TEST_CASE("doubles and their ranges") {
  CHECK(std::get<double>(value_of("log.cleaner.min.cleanable.ratio", "0.25")) == 0.25);
  CHECK(std::get<double>(value_of("log.cleaner.min.cleanable.ratio", "1")) == 1.0);
  CHECK(std::get<double>(value_of("log.cleaner.io.buffer.load.factor", "9e-1")) == 0.9);
  CHECK(error_of("log.cleaner.min.cleanable.ratio", "1.5") ==
        "invalid value \"1.5\" for log.cleaner.min.cleanable.ratio: expected a number in [0, 1]");
  CHECK(error_of("log.cleaner.io.buffer.load.factor", "half") ==
        "invalid value \"half\" for log.cleaner.io.buffer.load.factor: expected a number > 0 and <= 1");
  CHECK(error_of("log.cleaner.io.buffer.load.factor", "90") ==
        "invalid value \"90\" for log.cleaner.io.buffer.load.factor: expected a number > 0 and <= 1");
}

TEST_CASE("log.cleaner.io.max.bytes.per.second: Kafka's default is unthrottled, a rate must be > 0") {
  BrokerConfig c = BrokerConfig::defaults();
  CHECK(c.get_double("log.cleaner.io.max.bytes.per.second") == std::numeric_limits<double>::max());
  CHECK(std::get<double>(value_of("log.cleaner.io.max.bytes.per.second", "1048576")) == 1048576.0);
  CHECK(std::get<double>(value_of("log.cleaner.io.max.bytes.per.second", "2.5E7")) == 2.5e7);
  CHECK(error_of("log.cleaner.io.max.bytes.per.second", "0") ==
        "invalid value \"0\" for log.cleaner.io.max.bytes.per.second: expected a number > 0");
  CHECK(error_of("log.cleaner.io.max.bytes.per.second", "-1") ==
        "invalid value \"-1\" for log.cleaner.io.max.bytes.per.second: expected a number > 0");
  CHECK(error_of("log.cleaner.io.max.bytes.per.second", "fast") ==
        "invalid value \"fast\" for log.cleaner.io.max.bytes.per.second: expected a number > 0");
}

TEST_CASE("ciuic.log.max.open.files: 0 (the default) or a bound up to 1048576") {
  BrokerConfig c = BrokerConfig::defaults();
  CHECK(c.get_int("ciuic.log.max.open.files") == 0);
  CHECK(std::get<int32_t>(value_of("ciuic.log.max.open.files", "0")) == 0);
  CHECK(std::get<int32_t>(value_of("ciuic.log.max.open.files", "16")) == 16);
  CHECK(std::get<int32_t>(value_of("ciuic.log.max.open.files", "1048576")) == 1048576);
  CHECK(error_of("ciuic.log.max.open.files", "-1") ==
        "invalid value \"-1\" for ciuic.log.max.open.files: expected an integer in [0, 1048576]");
  CHECK(error_of("ciuic.log.max.open.files", "1048577") ==
        "invalid value \"1048577\" for ciuic.log.max.open.files: expected an integer in [0, 1048576]");
  CHECK(error_of("ciuic.log.max.open.files", "many") ==
        "invalid value \"many\" for ciuic.log.max.open.files: expected an integer in [0, 1048576]");
  // Through the loader, as the broker starts: the message names key and value.
  ConfigInput in;
  in.overrides = {"ciuic.log.max.open.files=-5"};
  auto r = load_config(in);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("ciuic.log.max.open.files") != std::string::npos);
  CHECK(r.error().message.find("\"-5\"") != std::string::npos);
}

TEST_CASE("strings: one-of is case-sensitive - custom formats") {
  CHECK(std::get<std::string>(value_of("compression.type", " zstd ")) == "zstd");
  CHECK(error_of("compression.type", "ZSTD") ==
        "invalid value \"ZSTD\" for compression.type: expected one of: uncompressed, zstd, lz4, snappy, gzip, "
        "producer");
  CHECK(std::get<std::string>(value_of("listeners", "PLAINTEXT://:9092,INTERNAL://10.0.0.1:9093")) ==
        "PLAINTEXT://:9092,INTERNAL://10.0.0.1:9093");
  CHECK(value_of("listeners", "PLAINTEXT://[::1]:9092, SSL://host.example:0").index() != 0);
  CHECK(error_of("listeners", "localhost:9092") ==
        "invalid value \"localhost:9092\" for listeners: expected a comma-separated list of NAME://host:port");
  CHECK(error_of("listeners", "PLAINTEXT://:99999").starts_with("invalid value \"PLAINTEXT://:99999\" for listeners"));
  CHECK(error_of("listeners", "") == "invalid value \"\" for listeners: expected a comma-separated list of NAME://host:port");
  CHECK(std::get<std::string>(value_of("advertised.listeners", "")).empty());
  CHECK(error_of("listener.security.protocol.map", "PLAINTEXT:PLAIN").find("PROTOCOL one of PLAINTEXT") !=
        std::string::npos);
  CHECK(error_of("ciuic.metrics.listener", "9644") ==
        "invalid value \"9644\" for ciuic.metrics.listener: expected an address host:port (empty host: all "
        "interfaces)");
  CHECK(std::get<int32_t>(value_of("compression.gzip.level", "-1")) == -1);
  CHECK(error_of("compression.gzip.level", "0") ==
        "invalid value \"0\" for compression.gzip.level: expected -1 or an integer in [1, 9]");
}

TEST_CASE("lists: commas with whitespace, empty list, one-of per element") {
  CHECK(std::get<List>(value_of("log.cleanup.policy", "compact , delete")) == List{"compact", "delete"});
  CHECK(std::get<List>(value_of("process.roles", "  ")).empty());
  CHECK(error_of("log.cleanup.policy", "compact,remove") ==
        "invalid value \"compact,remove\" for log.cleanup.policy: expected a comma-separated list of: compact, "
        "delete");
  CHECK(error_of("log.cleanup.policy", "compact,,delete").starts_with("invalid value \"compact,,delete\""));
}

TEST_CASE("passwords are never echoed - class names are accepted") {
  CHECK(std::get<std::string>(value_of("ssl.key.password", " s3cret ")) == "s3cret");
  CHECK(std::get<std::string>(value_of("authorizer.class.name", "kafka.security.authorizer.AclAuthorizer")) ==
        "kafka.security.authorizer.AclAuthorizer");
  const KeyDef* k = find_key("ssl.key.password");
  REQUIRE(k);
  KeyDef strict = *k;
  strict.validator = Validator::custom("nothing", [](const Value&) { return false; });
  auto v = parse_value(strict, "hunter2");
  REQUIRE_FALSE(v);
  CHECK(v.error().message == "invalid value [hidden] for ssl.key.password: expected nothing");
}

TEST_CASE("control characters in a bad value are escaped, keeping the message on one line") {
  CHECK(error_of("num.partitions", "1\n2") == "invalid value \"1\\x0a2\" for num.partitions: expected an integer >= 1");
}

TEST_CASE("topic-level names and synonym groups") {
  auto broker_name = [](std::string_view topic) {
    const KeyDef* k = find_by_topic_name(topic);
    return k ? std::string(k->name) : std::string("-");
  };
  CHECK(broker_name("retention.ms") == "log.retention.ms");
  CHECK(broker_name("segment.bytes") == "log.segment.bytes");
  CHECK(broker_name("segment.ms") == "log.roll.ms");
  CHECK(broker_name("compression.type") == "compression.type");
  CHECK(broker_name("max.message.bytes") == "message.max.bytes");
  CHECK(broker_name("cleanup.policy") == "log.cleanup.policy");
  CHECK(broker_name("file.delete.delay.ms") == "log.segment.delete.delay.ms");
  CHECK(broker_name("min.insync.replicas") == "min.insync.replicas");
  CHECK(broker_name("retention.bytes") == "log.retention.bytes");
  CHECK(broker_name("segment.index.bytes") == "log.index.size.max.bytes");
  CHECK(broker_name("message.timestamp.type") == "log.message.timestamp.type");
  CHECK(broker_name("min.cleanable.dirty.ratio") == "log.cleaner.min.cleanable.ratio");
  CHECK(broker_name("no.such") == "-");

  auto names = [](std::string_view key) {
    std::vector<std::string> out;
    for (const KeyDef* k : synonym_keys(key)) out.emplace_back(k->name);
    return out;
  };
  using Names = std::vector<std::string>;
  CHECK(names("log.retention.hours") == Names{"log.retention.ms", "log.retention.minutes", "log.retention.hours"});
  CHECK(names("log.retention.ms") == Names{"log.retention.ms", "log.retention.minutes", "log.retention.hours"});
  CHECK(names("broker.id") == Names{"node.id", "broker.id"});
  CHECK(names("log.dir") == Names{"log.dirs", "log.dir"});
  CHECK(names("log.roll.ms") == Names{"log.roll.ms", "log.roll.hours"});
  CHECK(names("num.partitions") == Names{"num.partitions"});
  CHECK(names("nope").empty());
}

TEST_CASE("DescribeConfigs source codes") {
  CHECK(describe_source(ConfigSource::kDefault) == DescribeSource::kDefaultConfig);
  CHECK(describe_source(ConfigSource::kFile) == DescribeSource::kStaticBrokerConfig);
  CHECK(describe_source(ConfigSource::kOverride) == DescribeSource::kStaticBrokerConfig);
  CHECK(describe_source(ConfigSource::kEnvironment) == DescribeSource::kStaticBrokerConfig);
  CHECK(static_cast<int>(DescribeSource::kStaticBrokerConfig) == 4);
  CHECK(static_cast<int>(DescribeSource::kDefaultConfig) == 5);
}

TEST_CASE("format_value writes Kafka's text") {
  CHECK(format_value(Value{}) == std::nullopt);
  CHECK(format_value(Value{true}) == "true");
  CHECK(format_value(Value{int64_t{-1}}) == "-1");
  CHECK(format_value(Value{0.9}) == "0.9");
  CHECK(format_value(Value{List{"compact", "delete"}}) == "compact,delete");
  CHECK(format_value(Value{List{}}) == "");
}
