// tests/unit/handlers/admin/alter_configs_test.cc: AlterConfigs v0-2 and
// IncrementalAlterConfigs v0-1: full replacement vs per-key operations,
// validate_only, list APPEND/SUBTRACT, broker resources, error paths,
// persistence across a restart; the operator log line of each change; the
// deprecated message.format.version, accepted as Kafka 3.9 accepts it.
#include <catch2/catch.hpp>
#include <mutex>
#include <string>
#include <vector>

#include "metrics/log/log.h"
#include "protocol/generated/alter_configs.h"
#include "protocol/generated/describe_configs.h"
#include "protocol/generated/incremental_alter_configs.h"
#include "tests/unit/handlers/admin/admin_test_util.h"

using namespace ciuickafka;
using namespace ciuickafka::broker;
using protocol::AlterConfigsRequest;
using protocol::AlterConfigsResponse;
using protocol::ErrorCode;
using protocol::IncrementalAlterConfigsRequest;
using protocol::IncrementalAlterConfigsResponse;
using test::code;

namespace {

AlterConfigsRequest::AlterConfigsResource alter_res(int8_t type, std::string name,
                                                    std::vector<std::pair<std::string, std::string>> kv) {
  AlterConfigsRequest::AlterConfigsResource r;
  r.resource_type = type;
  r.resource_name = std::move(name);
  for (auto& [k, v] : kv) {
    AlterConfigsRequest::AlterableConfig c;
    c.name = k;
    c.value = v;
    r.configs.push_back(c);
  }
  return r;
}

AlterConfigsResponse alter(test::BrokerFixture& f, std::vector<AlterConfigsRequest::AlterConfigsResource> rs,
                           int16_t v, bool validate_only = false) {
  AlterConfigsRequest req;
  req.resources = std::move(rs);
  req.validate_only = validate_only;
  return f.call<AlterConfigsResponse>(req, v);
}

struct Op {
  std::string name;
  int8_t op;
  std::optional<std::string> value;
};

IncrementalAlterConfigsRequest::AlterConfigsResource inc_res(int8_t type, std::string name, std::vector<Op> ops) {
  IncrementalAlterConfigsRequest::AlterConfigsResource r;
  r.resource_type = type;
  r.resource_name = std::move(name);
  for (auto& o : ops) {
    IncrementalAlterConfigsRequest::AlterableConfig c;
    c.name = o.name;
    c.config_operation = o.op;
    c.value = o.value;
    r.configs.push_back(c);
  }
  return r;
}

IncrementalAlterConfigsResponse inc(test::BrokerFixture& f,
                                    std::vector<IncrementalAlterConfigsRequest::AlterConfigsResource> rs, int16_t v,
                                    bool validate_only = false) {
  IncrementalAlterConfigsRequest req;
  req.resources = std::move(rs);
  req.validate_only = validate_only;
  return f.call<IncrementalAlterConfigsResponse>(req, v);
}

ConfigMap overrides(test::BrokerFixture& f, const std::string& topic) {
  return f.broker().topics().find(topic)->configs;
}

}  // namespace

TEST_CASE("AlterConfigs replaces a topic's overrides at every version", "[admin][alter_configs]") {
  test::BrokerFixture f;
  REQUIRE(test::create_topic(f, "t", 1, {{"retention.ms", "1000"}}).error_code == 0);
  for (int16_t v : {0, 1, 2}) {
    CAPTURE(v);
    const std::string seg = std::to_string(1048576 * (v + 1));
    auto resp = alter(f, {alter_res(2, "t", {{"segment.bytes", seg}})}, v);
    REQUIRE(resp.responses.size() == 1);
    CHECK(resp.responses[0].error_code == 0);
    CHECK(resp.responses[0].resource_type == 2);
    CHECK(resp.responses[0].resource_name == "t");
    CHECK_FALSE(resp.responses[0].error_message.has_value());
    CHECK(overrides(f, "t") == ConfigMap{{"segment.bytes", seg}});  // retention.ms dropped
  }
  f.restart();
  CHECK(overrides(f, "t") == ConfigMap{{"segment.bytes", "3145728"}});
}

TEST_CASE("AlterConfigs validate_only and errors", "[admin][alter_configs]") {
  test::BrokerFixture f;
  REQUIRE(test::create_topic(f, "t", 1, {{"retention.ms", "1000"}}).error_code == 0);
  auto dry = alter(f, {alter_res(2, "t", {{"retention.ms", "5"}})}, 1, true);
  CHECK(dry.responses[0].error_code == 0);
  CHECK(overrides(f, "t").at("retention.ms") == "1000");

  auto resp = alter(f,
                    {alter_res(2, "t", {{"retention.ms", "never"}}), alter_res(2, "missing", {}),
                     alter_res(2, "bad name", {}), alter_res(4, "", {{"num.partitions", "3"}}),
                     alter_res(4, "77", {}), alter_res(9, "x", {})},
                    2);
  REQUIRE(resp.responses.size() == 6);
  CHECK(resp.responses[0].error_code == code(ErrorCode::INVALID_CONFIG));
  CHECK_THAT(resp.responses[0].error_message.value_or(""), Catch::Contains("retention.ms") && Catch::Contains("never"));
  CHECK(resp.responses[1].error_code == code(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  CHECK(resp.responses[2].error_code == code(ErrorCode::INVALID_TOPIC_EXCEPTION));
  CHECK(resp.responses[3].error_code == code(ErrorCode::INVALID_REQUEST));
  CHECK_THAT(resp.responses[3].error_message.value_or(""), Catch::Contains("num.partitions"));
  CHECK(resp.responses[4].error_code == code(ErrorCode::INVALID_REQUEST));
  CHECK(resp.responses[5].error_code == code(ErrorCode::INVALID_REQUEST));
  // A broker resource with nothing to change is accepted.
  CHECK(alter(f, {alter_res(4, "", {})}, 1).responses[0].error_code == 0);
  CHECK(overrides(f, "t").at("retention.ms") == "1000");

  auto nulls = alter_res(2, "t", {});
  AlterConfigsRequest::AlterableConfig c;
  c.name = "retention.ms";
  c.value = std::nullopt;
  nulls.configs.push_back(c);
  CHECK(alter(f, {nulls}, 0).responses[0].error_code == code(ErrorCode::INVALID_REQUEST));
  auto dups = alter(f, {alter_res(2, "t", {}), alter_res(2, "t", {})}, 0);
  CHECK(dups.responses[0].error_code == code(ErrorCode::INVALID_REQUEST));
  CHECK(dups.responses[1].error_code == code(ErrorCode::INVALID_REQUEST));
  CHECK(overrides(f, "t").at("retention.ms") == "1000");
}

TEST_CASE("IncrementalAlterConfigs SET and DELETE edit single keys", "[admin][incremental_alter_configs]") {
  test::BrokerFixture f;
  REQUIRE(test::create_topic(f, "t", 1, {{"retention.ms", "1000"}, {"segment.ms", "60000"}}).error_code == 0);
  for (int16_t v : {0, 1}) {
    CAPTURE(v);
    auto resp = inc(f, {inc_res(2, "t", {{"retention.ms", 0, "2000"}, {"segment.ms", 1, std::nullopt}})}, v);
    REQUIRE(resp.responses.size() == 1);
    CHECK(resp.responses[0].error_code == 0);
    CHECK(overrides(f, "t") == ConfigMap{{"retention.ms", "2000"}});
    auto back = inc(f, {inc_res(2, "t", {{"segment.ms", 0, "60000"}})}, v);
    CHECK(back.responses[0].error_code == 0);
    CHECK(overrides(f, "t") == (ConfigMap{{"retention.ms", "2000"}, {"segment.ms", "60000"}}));
  }
  f.restart();
  CHECK(overrides(f, "t") == (ConfigMap{{"retention.ms", "2000"}, {"segment.ms", "60000"}}));
}

TEST_CASE("IncrementalAlterConfigs APPEND and SUBTRACT on list configs", "[admin][incremental_alter_configs]") {
  test::BrokerFixture f;
  REQUIRE(test::create_topic(f, "t").error_code == 0);  // cleanup.policy defaults to delete
  auto add = inc(f, {inc_res(2, "t", {{"cleanup.policy", 2, "compact"}})}, 1);
  CHECK(add.responses[0].error_code == 0);
  CHECK(overrides(f, "t").at("cleanup.policy") == "delete,compact");
  auto again = inc(f, {inc_res(2, "t", {{"cleanup.policy", 2, "compact"}})}, 1);  // no duplicates
  CHECK(again.responses[0].error_code == 0);
  CHECK(overrides(f, "t").at("cleanup.policy") == "delete,compact");
  auto sub = inc(f, {inc_res(2, "t", {{"cleanup.policy", 3, "delete"}})}, 0);
  CHECK(sub.responses[0].error_code == 0);
  CHECK(overrides(f, "t").at("cleanup.policy") == "compact");
}

TEST_CASE("IncrementalAlterConfigs validate_only and errors", "[admin][incremental_alter_configs]") {
  test::BrokerFixture f;
  REQUIRE(test::create_topic(f, "t", 1, {{"retention.ms", "1000"}}).error_code == 0);
  auto dry = inc(f, {inc_res(2, "t", {{"retention.ms", 0, "5"}})}, 1, true);
  CHECK(dry.responses[0].error_code == 0);
  CHECK(overrides(f, "t").at("retention.ms") == "1000");

  auto resp = inc(f,
                  {inc_res(2, "t", {{"retention.ms", 2, "5"}}), inc_res(2, "missing", {{"retention.ms", 0, "1"}}),
                   inc_res(4, "", {{"num.partitions", 0, "3"}}), inc_res(2, "bad name", {})},
                  1);
  REQUIRE(resp.responses.size() == 4);
  CHECK(resp.responses[0].error_code == code(ErrorCode::INVALID_CONFIG));  // append on a non-list
  CHECK(resp.responses[1].error_code == code(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  CHECK(resp.responses[2].error_code == code(ErrorCode::INVALID_REQUEST));
  CHECK(resp.responses[3].error_code == code(ErrorCode::INVALID_TOPIC_EXCEPTION));

  CHECK(inc(f, {inc_res(2, "t", {{"retention.ms", 0, "soon"}})}, 0).responses[0].error_code ==
        code(ErrorCode::INVALID_CONFIG));
  CHECK(inc(f, {inc_res(2, "t", {{"no.such", 0, "1"}})}, 0).responses[0].error_code ==
        code(ErrorCode::INVALID_CONFIG));
  CHECK(inc(f, {inc_res(2, "t", {{"retention.ms", 0, std::nullopt}})}, 0).responses[0].error_code ==
        code(ErrorCode::INVALID_REQUEST));
  CHECK(inc(f, {inc_res(2, "t", {{"retention.ms", 7, "1"}})}, 0).responses[0].error_code ==
        code(ErrorCode::INVALID_REQUEST));
  CHECK(inc(f, {inc_res(2, "t", {{"retention.ms", 0, "1"}, {"retention.ms", 1, std::nullopt}})}, 0)
            .responses[0]
            .error_code == code(ErrorCode::INVALID_REQUEST));
  CHECK(overrides(f, "t") == ConfigMap{{"retention.ms", "1000"}});
}

TEST_CASE("config changes are logged: the new overrides and the client id, refusals at WARN - validate_only not",
          "[admin][incremental_alter_configs][log]") {
  namespace lg = ciuickafka::metrics::log;
  std::vector<std::string> lines;
  std::mutex mu;
  lg::set_sink([&](std::string_view l) {
    std::lock_guard lock(mu);
    lines.emplace_back(l);
  });
  struct Restore {
    ~Restore() { lg::set_sink({}); }
  } restore;
  test::BrokerFixture f;
  REQUIRE(test::create_topic(f, "t", 1, {{"retention.ms", "1000"}}).error_code == 0);
  auto has = [&](const std::string& what) {
    std::lock_guard lock(mu);
    for (const auto& l : lines)
      if (l.find(what) != std::string::npos) return true;
    return false;
  };
  CHECK(inc(f, {inc_res(2, "t", {{"segment.ms", 0, "60000"}})}, 1).responses[0].error_code == 0);
  CHECK(has("[ciuickafka] INFO IncrementalAlterConfigs: topic t configs set to {retention.ms=1000, segment.ms=60000} "
            "client_id=fixture"));
  CHECK(alter(f, {alter_res(2, "t", {{"retention.ms", "5000"}})}, 1).responses[0].error_code == 0);
  CHECK(has("INFO AlterConfigs: topic t configs set to {retention.ms=5000}"));
  CHECK(alter(f, {alter_res(2, "t", {{"retention.ms", "soon"}})}, 1).responses[0].error_code != 0);
  CHECK(has("WARN AlterConfigs: topic t not changed: INVALID_CONFIG"));
  CHECK(alter(f, {alter_res(2, "t", {{"retention.ms", "7000"}})}, 1, true).responses[0].error_code == 0);
  CHECK_FALSE(has("retention.ms=7000"));
}

TEST_CASE("message.format.version is accepted as Kafka 3.9 accepts it: any known version, then ignored",
          "[admin][alter_configs][incremental_alter_configs]") {
  test::BrokerFixture f;
  // CreateTopics, AlterConfigs and IncrementalAlterConfigs take the key.
  REQUIRE(test::create_topic(f, "t", 1, {{"message.format.version", "0.10.2"}}).error_code == 0);
  CHECK(overrides(f, "t") == ConfigMap{{"message.format.version", "0.10.2"}});
  auto resp = alter(f, {alter_res(2, "t", {{"message.format.version", "2.8-IV1"}, {"retention.ms", "1000"}})}, 1);
  CHECK(resp.responses[0].error_code == 0);
  CHECK(overrides(f, "t") == (ConfigMap{{"message.format.version", "2.8-IV1"}, {"retention.ms", "1000"}}));
  auto set = inc(f, {inc_res(2, "t", {{"message.format.version", 0, "3.0-IV1"}})}, 1);
  CHECK(set.responses[0].error_code == 0);
  CHECK(overrides(f, "t").at("message.format.version") == "3.0-IV1");

  // An unknown version is INVALID_CONFIG naming key and value, as Kafka's
  // MetadataVersionValidator refuses it; nothing changes.
  auto bad = alter(f, {alter_res(2, "t", {{"message.format.version", "2.9"}})}, 1);
  CHECK(bad.responses[0].error_code == code(ErrorCode::INVALID_CONFIG));
  CHECK_THAT(bad.responses[0].error_message.value_or(""),
             Catch::Contains("message.format.version") && Catch::Contains("2.9"));
  CHECK(inc(f, {inc_res(2, "t", {{"message.format.version", 0, "latest"}})}, 1).responses[0].error_code ==
        code(ErrorCode::INVALID_CONFIG));
  CHECK(test::create_topic(f, "u", 1, {{"message.format.version", "0.7"}}).error_code ==
        code(ErrorCode::INVALID_CONFIG));
  CHECK(overrides(f, "t").at("message.format.version") == "3.0-IV1");

  // DescribeConfigs lists it: the override, or the broker's
  // log.message.format.version (3.0-IV1) as the default.
  REQUIRE(inc(f, {inc_res(2, "t", {{"message.format.version", 1, std::nullopt}})}, 1).responses[0].error_code == 0);
  protocol::DescribeConfigsRequest d;
  protocol::DescribeConfigsRequest::DescribeConfigsResource r;
  r.resource_type = 2;
  r.resource_name = "t";
  r.configuration_keys = std::vector<std::string>{"message.format.version"};
  d.resources.push_back(r);
  d.include_synonyms = true;
  auto described = f.call<protocol::DescribeConfigsResponse>(d, 4);
  REQUIRE(described.results.size() == 1);
  const auto* c = test::find_config(described.results[0], "message.format.version");
  REQUIRE(c);
  CHECK(c->value == "3.0-IV1");
  CHECK(c->config_source == 5);  // DEFAULT_CONFIG
  REQUIRE(c->synonyms.size() == 1);
  CHECK(c->synonyms[0].name == "log.message.format.version");
}
