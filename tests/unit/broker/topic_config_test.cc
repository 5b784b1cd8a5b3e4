// Topic-level configs: parsed with their broker key's rules, defaulted from
// the broker's effective value.
#include <catch2/catch.hpp>

#include "broker/config/topic_config.h"

using namespace ciuickafka::broker::config;

// A namespace of this file's own (tests/CMakeLists.txt: the tests are unity
// builds), so that its helpers do not clash with a sibling file's.
namespace CK_UNITY_ID {

namespace {

BrokerConfig load(std::string_view text) {
  ConfigInput in;
  in.file = parse_properties(text).value();
  auto r = load_config(in);
  REQUIRE(r);
  return r.value().config;
}

}  // namespace

TEST_CASE("topic values parse with the broker key's type and validator, errors name the topic config") {
  auto v = parse_topic_value("retention.ms", "86400000");
  REQUIRE(v);
  CHECK(std::get<int64_t>(v.value()) == 86400000);
  CHECK(std::get<List>(parse_topic_value("cleanup.policy", "compact,delete").value()) == List{"compact", "delete"});
  CHECK(parse_topic_value("segment.bytes", "1").error().message ==
        "invalid value \"1\" for segment.bytes: expected an integer >= 14");
  CHECK(parse_topic_value("compression.type", "brotli").error().message ==
        "invalid value \"brotli\" for compression.type: expected one of: uncompressed, zstd, lz4, snappy, gzip, "
        "producer");
  CHECK(parse_topic_value("max.message.bytes", "x").error().message ==
        "invalid value \"x\" for max.message.bytes: expected an integer >= 0");
  CHECK(parse_topic_value("log.retention.ms", "1").error().message ==
        "unknown topic configuration \"log.retention.ms\"");
}

TEST_CASE("topic defaults follow the broker, time groups in milliseconds") {
  BrokerConfig d = BrokerConfig::defaults();
  CHECK(topic_default(d, "retention.ms") == "604800000");
  CHECK(topic_default(d, "segment.ms") == "604800000");
  CHECK(topic_default(d, "flush.ms") == "9223372036854775807");
  CHECK(topic_default(d, "segment.bytes") == "1073741824");
  CHECK(topic_default(d, "cleanup.policy") == "delete");
  CHECK(topic_default(d, "compression.type") == "producer");
  CHECK(topic_default(d, "max.message.bytes") == "1048588");
  CHECK(topic_default(d, "min.cleanable.dirty.ratio") == "0.5");
  CHECK(topic_default(d, "no.such") == std::nullopt);

  BrokerConfig c = load("log.retention.minutes=10\nlog.roll.hours=1\nlog.cleanup.policy=compact\n"
                        "message.max.bytes=2000000\n");
  CHECK(topic_default(c, "retention.ms") == "600000");
  CHECK(topic_default(c, "segment.ms") == "3600000");
  CHECK(topic_default(c, "cleanup.policy") == "compact");
  CHECK(topic_default(c, "max.message.bytes") == "2000000");
  CHECK(topic_default(load("log.retention.hours=-1\n"), "retention.ms") == "-1");
}

TEST_CASE("message.format.version: Kafka 3.9's deprecated key, validated as a version and ignored") {
  // MetadataVersion.fromVersionString: "0.x" versions keep three parts,
  // others two; releases and their internal versions are known.
  for (const char* ok : {"0.8.0", "0.8.0.x", "0.10.0-IV1", "0.10.2", "0.11.0", "1.0", "1.0.1", "2.8", "2.8-IV1",
                         "2.8.1", "3.0-IV1", "3.9", "3.9-IV0", " 3.0 "}) {
    CAPTURE(ok);
    CHECK(parse_topic_value("message.format.version", ok).is_ok());
    CHECK(parse_value(*find_key("log.message.format.version"), ok).is_ok());
  }
  for (const char* bad : {"", "3", "0.8", "0.7.0", "2.9", "3.0-IV9", "4.0", "latest", "3.0-iv1"}) {
    CAPTURE(bad);
    auto v = parse_topic_value("message.format.version", bad);
    REQUIRE_FALSE(v);
    CHECK(v.error().message.starts_with("invalid value \""));
    CHECK_THAT(v.error().message, Catch::Contains("for message.format.version: expected a Kafka version"));
  }
  CHECK(topic_default(load(""), "message.format.version") == "3.0-IV1");
  CHECK(topic_default(load("log.message.format.version=2.8\n"), "message.format.version") == "2.8");
}

TEST_CASE("log.message.format.version loads with a warning that it is ignored") {
  ConfigInput in;
  in.file = parse_properties("log.message.format.version=2.8\n").value();
  auto r = load_config(in);
  REQUIRE(r);
  bool warned = false;
  for (const auto& w : r.value().warnings)
    warned = warned || w.starts_with("log.message.format.version is accepted but ignored");
  CHECK(warned);
  ConfigInput bad;
  bad.file = parse_properties("log.message.format.version=9.9\n").value();
  auto e = load_config(bad);
  REQUIRE_FALSE(e);
  CHECK_THAT(e.error().message, Catch::StartsWith("invalid value \"9.9\" for log.message.format.version"));
}

}  // namespace CK_UNITY_ID
