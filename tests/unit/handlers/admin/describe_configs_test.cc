// tests/unit/handlers/admin/describe_configs_test.cc: DescribeConfigs v0-4
// for topics and the broker: values, sources, is_default, synonyms, types,
// documentation, key subsets, passwords and the error paths.
#include <catch2/catch.hpp>

#include "broker/config/registry.h"
#include "protocol/generated/describe_configs.h"
#include "tests/unit/handlers/admin/admin_test_util.h"

using namespace ciuickafka;
using namespace ciuickafka::broker;
using protocol::DescribeConfigsRequest;
using protocol::DescribeConfigsResponse;
using protocol::ErrorCode;
using test::code;

namespace {

DescribeConfigsRequest::DescribeConfigsResource resource(int8_t type, std::string name,
                                                         std::optional<std::vector<std::string>> keys = std::nullopt) {
  DescribeConfigsRequest::DescribeConfigsResource r;
  r.resource_type = type;
  r.resource_name = std::move(name);
  r.configuration_keys = std::move(keys);
  return r;
}

DescribeConfigsResponse call(test::BrokerFixture& f, std::vector<DescribeConfigsRequest::DescribeConfigsResource> rs,
                             int16_t v, bool synonyms = false, bool docs = false) {
  DescribeConfigsRequest req;
  req.resources = std::move(rs);
  req.include_synonyms = synonyms;
  req.include_documentation = docs;
  return f.call<DescribeConfigsResponse>(req, v);
}

}  // namespace

TEST_CASE("DescribeConfigs topic: every known config with value and source", "[admin][describe_configs]") {
  test::BrokerFixture f({"log.retention.hours=2"});
  REQUIRE(test::create_topic(f, "t", 1, {{"cleanup.policy", "compact"}}).error_code == 0);
  for (int16_t v : {0, 1, 2, 3, 4}) {
    CAPTURE(v);
    auto resp = call(f, {resource(2, "t")}, v);
    REQUIRE(resp.results.size() == 1);
    const auto& r = resp.results[0];
    CHECK(r.error_code == 0);
    CHECK(r.resource_type == 2);
    CHECK(r.resource_name == "t");
    CHECK(r.configs.size() >= 20);
    const auto* cleanup = test::find_config(r, "cleanup.policy");
    const auto* retention = test::find_config(r, "retention.ms");
    const auto* segment = test::find_config(r, "segment.bytes");
    REQUIRE(cleanup);
    REQUIRE(retention);
    REQUIRE(segment);
    CHECK(cleanup->value == "compact");
    CHECK(retention->value == "7200000");
    CHECK_FALSE(cleanup->read_only);
    CHECK_FALSE(cleanup->is_sensitive);
    CHECK(cleanup->synonyms.empty());  // not asked for
    if (v == 0) {
      CHECK_FALSE(cleanup->is_default);
      CHECK(segment->is_default);
    } else {
      CHECK(cleanup->config_source == 1);    // TOPIC_CONFIG
      CHECK(retention->config_source == 5);  // Kafka's first-synonym rule (see below)
      CHECK(segment->config_source == 5);    // DEFAULT_CONFIG
    }
  }
}

TEST_CASE("DescribeConfigs topic synonyms: override, then the broker keys", "[admin][describe_configs]") {
  // Kafka's order (ConfigHelper.configSynonyms): the topic's override, then
  // the broker group's values from the described broker key on.
  test::BrokerFixture f({"log.retention.ms=7200000"});
  REQUIRE(test::create_topic(f, "syn", 1, {{"retention.ms", "1000"}}).error_code == 0);
  auto resp = call(f, {resource(2, "syn", std::vector<std::string>{"retention.ms"})}, 1, true);
  const auto& r = resp.results[0];
  REQUIRE(r.configs.size() == 1);
  const auto& c = r.configs[0];
  CHECK(c.value == "1000");
  CHECK(c.config_source == 1);
  REQUIRE(c.synonyms.size() == 3);
  CHECK(c.synonyms[0].name == "retention.ms");
  CHECK(c.synonyms[0].value == "1000");
  CHECK(c.synonyms[0].source == 1);
  CHECK(c.synonyms[1].name == "log.retention.ms");
  CHECK(c.synonyms[1].value == "7200000");
  CHECK(c.synonyms[1].source == 4);
  CHECK(c.synonyms[2].name == "log.retention.hours");
  CHECK(c.synonyms[2].value == "168");
  CHECK(c.synonyms[2].source == 5);
}

TEST_CASE("DescribeConfigs topic source follows Kafka's first-synonym rule", "[admin][describe_configs]") {
  // A static log.retention.hours is not among log.retention.ms's synonyms
  // from log.retention.ms on: Kafka lists none and says DEFAULT_CONFIG,
  // with the hours' value.
  test::BrokerFixture f({"log.retention.hours=2"});
  REQUIRE(test::create_topic(f, "inherits").error_code == 0);
  auto resp = call(f, {resource(2, "inherits", std::vector<std::string>{"retention.ms"})}, 1, true);
  const auto& c = resp.results[0].configs.at(0);
  CHECK(c.value == "7200000");
  CHECK(c.config_source == 5);
  CHECK(c.synonyms.empty());
}

TEST_CASE("DescribeConfigs v3+ returns types and documentation when asked", "[admin][describe_configs]") {
  test::BrokerFixture f;
  REQUIRE(test::create_topic(f, "docs").error_code == 0);
  auto keys = std::vector<std::string>{"retention.ms", "cleanup.policy", "preallocate"};
  auto with = call(f, {resource(2, "docs", keys)}, 4, false, true);
  REQUIRE(with.results[0].configs.size() == 3);
  const auto* retention = test::find_config(with.results[0], "retention.ms");
  REQUIRE(retention);
  CHECK(retention->config_type == 5);  // LONG
  REQUIRE(retention->documentation.has_value());
  CHECK_FALSE(retention->documentation->empty());
  CHECK(test::find_config(with.results[0], "cleanup.policy")->config_type == 7);  // LIST
  CHECK(test::find_config(with.results[0], "preallocate")->config_type == 1);     // BOOLEAN
  auto without = call(f, {resource(2, "docs", keys)}, 3, false, false);
  CHECK_FALSE(test::find_config(without.results[0], "retention.ms")->documentation.has_value());
}

TEST_CASE("DescribeConfigs with requested keys returns only those that exist", "[admin][describe_configs]") {
  test::BrokerFixture f;
  REQUIRE(test::create_topic(f, "sub").error_code == 0);
  auto resp = call(f, {resource(2, "sub", std::vector<std::string>{"segment.ms", "no.such.key"})}, 2);
  REQUIRE(resp.results[0].configs.size() == 1);
  CHECK(resp.results[0].configs[0].name == "segment.ms");
}

TEST_CASE("DescribeConfigs topic errors", "[admin][describe_configs]") {
  test::BrokerFixture f;
  for (int16_t v : {0, 4}) {
    auto resp = call(f, {resource(2, "missing"), resource(2, "bad name"), resource(99, "x")}, v);
    REQUIRE(resp.results.size() == 3);
    CHECK(resp.results[0].error_code == code(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
    CHECK(resp.results[1].error_code == code(ErrorCode::INVALID_TOPIC_EXCEPTION));
    CHECK(resp.results[2].error_code == code(ErrorCode::INVALID_REQUEST));
    CHECK(resp.results[0].configs.empty());
  }
}

TEST_CASE("DescribeConfigs broker: every registry key, read-only, with sources", "[admin][describe_configs]") {
  test::BrokerFixture f({"num.partitions=7"});
  const std::string node = std::to_string(f.broker().node_id());
  for (int16_t v : {0, 1, 4}) {
    CAPTURE(v);
    // The default resource ("") lists only the dynamic defaults: none here.
    CHECK(call(f, {resource(4, "")}, v, v >= 1).results[0].configs.empty());
    for (const std::string& name : {node}) {
      auto resp = call(f, {resource(4, name)}, v, v >= 1);
      const auto& r = resp.results[0];
      CHECK(r.error_code == 0);
      CHECK(r.configs.size() == config::all_keys().size());
      const auto* np = test::find_config(r, "num.partitions");
      REQUIRE(np);
      CHECK(np->value == "7");
      CHECK(np->read_only);
      if (v >= 1) {
        CHECK(np->config_source == 4);
        REQUIRE_FALSE(np->synonyms.empty());
        CHECK(np->synonyms[0].value == "7");
      } else {
        CHECK_FALSE(np->is_default);
      }
      const auto* dr = test::find_config(r, "default.replication.factor");
      REQUIRE(dr);
      if (v >= 1) CHECK(dr->config_source == 5);
      else CHECK(dr->is_default);
    }
  }
}

TEST_CASE("DescribeConfigs broker: passwords are null and sensitive", "[admin][describe_configs]") {
  test::BrokerFixture f;
  const config::KeyDef* pw = nullptr;
  for (const auto& k : config::all_keys())
    if (k.type == config::ConfigType::kPassword) {
      pw = &k;
      break;
    }
  REQUIRE(pw != nullptr);  // the registry has password keys (ssl.*.password)
  auto resp = call(f, {resource(4, std::to_string(f.broker().node_id()), std::vector<std::string>{std::string(pw->name)})}, 3);
  REQUIRE(resp.results[0].configs.size() == 1);
  CHECK(resp.results[0].configs[0].is_sensitive);
  CHECK_FALSE(resp.results[0].configs[0].value.has_value());
  CHECK(resp.results[0].configs[0].config_type == 9);
}

TEST_CASE("DescribeConfigs broker: another node id is INVALID_REQUEST - loggers are empty", "[admin][describe_configs]") {
  test::BrokerFixture f;
  auto resp = call(f, {resource(4, std::to_string(f.broker().node_id() + 1)), resource(8, "")}, 2);
  REQUIRE(resp.results.size() == 2);
  CHECK(resp.results[0].error_code == code(ErrorCode::INVALID_REQUEST));
  CHECK(resp.results[1].error_code == 0);
  CHECK(resp.results[1].configs.empty());
}
