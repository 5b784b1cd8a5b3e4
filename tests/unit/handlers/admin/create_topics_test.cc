// tests/unit/handlers/admin/create_topics_test.cc: CreateTopics v0-7:
// defaults, explicit assignments, configs, validate_only, v5+ result fields
// and every error path.
#include <catch2/catch.hpp>

#include "protocol/generated/create_topics.h"
#include "tests/unit/handlers/admin/admin_test_util.h"

using namespace ciuickafka;
using namespace ciuickafka::broker;
using protocol::CreateTopicsRequest;
using protocol::CreateTopicsResponse;
using protocol::ErrorCode;
using test::code;

namespace {

CreateTopicsRequest::CreatableTopic topic(std::string name, int32_t partitions, int16_t rf) {
  CreateTopicsRequest::CreatableTopic t;
  t.name = std::move(name);
  t.num_partitions = partitions;
  t.replication_factor = rf;
  return t;
}

CreateTopicsRequest::CreatableTopicConfig topic_config(std::string name, std::string value) {
  CreateTopicsRequest::CreatableTopicConfig c;
  c.name = std::move(name);
  c.value = std::move(value);
  return c;
}

CreateTopicsResponse call(test::BrokerFixture& f, std::vector<CreateTopicsRequest::CreatableTopic> topics,
                          int16_t version, bool validate_only = false) {
  CreateTopicsRequest req;
  req.topics = std::move(topics);
  req.validate_only = validate_only;
  return f.call<CreateTopicsResponse>(req, version);
}

}  // namespace

TEST_CASE("CreateTopics creates topics at every version", "[admin][create_topics]") {
  test::BrokerFixture f;
  for (int16_t v : {0, 1, 3, 4, 5, 7}) {
    CAPTURE(v);
    const std::string name = "t" + std::to_string(v);
    auto resp = call(f, {topic(name, 2, 1)}, v);
    REQUIRE(resp.topics.size() == 1);
    CHECK(resp.topics[0].name == name);
    CHECK(resp.topics[0].error_code == 0);
    if (v >= 1) CHECK_FALSE(resp.topics[0].error_message.has_value());
    auto t = f.broker().topics().find(name);
    REQUIRE(t);
    CHECK(t->partitions.size() == 2);
    if (v >= 5) {
      CHECK(resp.topics[0].num_partitions == 2);
      CHECK(resp.topics[0].replication_factor == 1);
      REQUIRE(resp.topics[0].configs.has_value());
      CHECK_FALSE(resp.topics[0].configs->empty());
    }
    if (v >= 7) CHECK(resp.topics[0].topic_id == t->id);
  }
}

TEST_CASE("CreateTopics v4+ takes -1 as the broker defaults", "[admin][create_topics]") {
  test::BrokerFixture f({"num.partitions=6"});
  auto resp = call(f, {topic("defaults", -1, -1)}, 5);
  REQUIRE(resp.topics[0].error_code == 0);
  CHECK(resp.topics[0].num_partitions == 6);
  CHECK(resp.topics[0].replication_factor == 1);
  CHECK(f.broker().topics().find("defaults")->partitions.size() == 6);
}

TEST_CASE("CreateTopics v5+ returns effective configs with sources", "[admin][create_topics]") {
  test::BrokerFixture f({"log.retention.hours=1"});
  auto t = topic("cfg", 1, 1);
  t.configs.push_back(topic_config("cleanup.policy", "compact"));
  auto resp = call(f, {t}, 7);
  REQUIRE(resp.topics[0].error_code == 0);
  REQUIRE(resp.topics[0].configs.has_value());
  const CreateTopicsResponse::CreatableTopicConfigs* cleanup = nullptr;
  const CreateTopicsResponse::CreatableTopicConfigs* retention = nullptr;
  const CreateTopicsResponse::CreatableTopicConfigs* segment = nullptr;
  for (const auto& c : *resp.topics[0].configs) {
    if (c.name == "cleanup.policy") cleanup = &c;
    if (c.name == "retention.ms") retention = &c;
    if (c.name == "segment.bytes") segment = &c;
  }
  REQUIRE(cleanup != nullptr);
  CHECK(cleanup->value == "compact");
  CHECK(cleanup->config_source == 1);  // TOPIC_CONFIG
  CHECK_FALSE(cleanup->read_only);
  CHECK_FALSE(cleanup->is_sensitive);
  REQUIRE(retention != nullptr);
  CHECK(retention->value == "3600000");
  // DEFAULT_CONFIG although the value is the static log.retention.hours':
  // Kafka takes the first synonym's source, and the synonyms of
  // log.retention.ms start at log.retention.ms (ConfigHelper.configSynonyms).
  CHECK(retention->config_source == 5);
  REQUIRE(segment != nullptr);
  CHECK(segment->config_source == 5);  // DEFAULT_CONFIG
  CHECK(f.broker().topics().find("cfg")->configs.at("cleanup.policy") == "compact");
}

TEST_CASE("CreateTopics validate_only creates nothing", "[admin][create_topics]") {
  test::BrokerFixture f;
  for (int16_t v : {1, 5, 7}) {
    auto resp = call(f, {topic("dry", 3, 1)}, v, true);
    CHECK(resp.topics[0].error_code == 0);
    if (v >= 5) CHECK(resp.topics[0].num_partitions == 3);
    if (v >= 7) CHECK(resp.topics[0].topic_id.is_zero());
    CHECK_FALSE(f.broker().topics().find("dry"));
  }
  // validate_only still reports errors.
  auto bad = call(f, {topic("dry", 0, 1)}, 5, true);
  CHECK(bad.topics[0].error_code == code(ErrorCode::INVALID_PARTITIONS));
}

TEST_CASE("CreateTopics errors", "[admin][create_topics]") {
  test::BrokerFixture f;
  REQUIRE(call(f, {topic("exists", 1, 1)}, 7).topics[0].error_code == 0);
  for (int16_t v : {0, 2, 7}) {
    CAPTURE(v);
    auto resp = call(f,
                     {topic("exists", 1, 1), topic("bad/name", 1, 1), topic("zero", 0, 1), topic("rf2", 1, 2),
                      topic("rf0", 1, 0)},
                     v);
    REQUIRE(resp.topics.size() == 5);
    CHECK(resp.topics[0].error_code == code(ErrorCode::TOPIC_ALREADY_EXISTS));
    CHECK(resp.topics[1].error_code == code(ErrorCode::INVALID_TOPIC_EXCEPTION));
    CHECK(resp.topics[2].error_code == code(ErrorCode::INVALID_PARTITIONS));
    CHECK(resp.topics[3].error_code == code(ErrorCode::INVALID_REPLICATION_FACTOR));
    CHECK(resp.topics[4].error_code == code(ErrorCode::INVALID_REPLICATION_FACTOR));
    if (v >= 1) {
      REQUIRE(resp.topics[3].error_message.has_value());
      CHECK_THAT(*resp.topics[3].error_message, Catch::Contains("larger than available brokers"));
    }
    if (v >= 5) CHECK(resp.topics[0].num_partitions == -1);
  }
  CHECK(f.broker().topics().list().size() == 1);
}

TEST_CASE("CreateTopics rejects invalid configs naming key and value", "[admin][create_topics]") {
  test::BrokerFixture f;
  auto t = topic("badcfg", 1, 1);
  t.configs.push_back(topic_config("retention.ms", "soon"));
  auto resp = call(f, {t}, 4);
  CHECK(resp.topics[0].error_code == code(ErrorCode::INVALID_CONFIG));
  REQUIRE(resp.topics[0].error_message.has_value());
  CHECK_THAT(*resp.topics[0].error_message, Catch::Contains("retention.ms") && Catch::Contains("soon"));
  auto u = topic("unknowncfg", 1, 1);
  u.configs.push_back(topic_config("no.such.config", "1"));
  CHECK(call(f, {u}, 4).topics[0].error_code == code(ErrorCode::INVALID_CONFIG));
  auto n = topic("nullcfg", 1, 1);
  CreateTopicsRequest::CreatableTopicConfig c;
  c.name = "retention.ms";
  c.value = std::nullopt;
  n.configs.push_back(c);
  CHECK(call(f, {n}, 4).topics[0].error_code == code(ErrorCode::INVALID_CONFIG));
  CHECK(f.broker().topics().list().empty());
}

TEST_CASE("CreateTopics with explicit assignments", "[admin][create_topics]") {
  test::BrokerFixture f;
  const int32_t node = f.broker().node_id();
  auto assigned = [&](std::string name, std::vector<std::vector<int32_t>> replicas) {
    auto t = topic(std::move(name), -1, -1);
    for (size_t i = 0; i < replicas.size(); ++i) {
      CreateTopicsRequest::CreatableReplicaAssignment a;
      a.partition_index = static_cast<int32_t>(i);
      a.broker_ids = replicas[i];
      t.assignments.push_back(a);
    }
    return t;
  };
  auto ok = call(f, {assigned("manual", {{node}, {node}, {node}})}, 5);
  CHECK(ok.topics[0].error_code == 0);
  CHECK(ok.topics[0].num_partitions == 3);
  CHECK(f.broker().topics().find("manual")->partitions.size() == 3);

  auto other = call(f, {assigned("other-node", {{node + 1}})}, 5);
  CHECK(other.topics[0].error_code == code(ErrorCode::INVALID_REPLICA_ASSIGNMENT));
  auto two = call(f, {assigned("two-replicas", {{node, node + 1}})}, 5);
  CHECK(two.topics[0].error_code == code(ErrorCode::INVALID_REPLICA_ASSIGNMENT));
  auto gap = assigned("gap", {{node}, {node}});
  gap.assignments[1].partition_index = 5;
  CHECK(call(f, {gap}, 5).topics[0].error_code == code(ErrorCode::INVALID_REPLICA_ASSIGNMENT));
  auto both = assigned("both", {{node}});
  both.num_partitions = 1;
  CHECK(call(f, {both}, 5).topics[0].error_code == code(ErrorCode::INVALID_REQUEST));
  CHECK(f.broker().topics().list().size() == 1);
}

TEST_CASE("CreateTopics answers INVALID_REQUEST for a name given twice", "[admin][create_topics]") {
  test::BrokerFixture f;
  auto resp = call(f, {topic("twice", 1, 1), topic("twice", 2, 1), topic("once", 1, 1)}, 7);
  REQUIRE(resp.topics.size() == 2);
  CHECK(resp.topics[0].name == "twice");
  CHECK(resp.topics[0].error_code == code(ErrorCode::INVALID_REQUEST));
  CHECK(resp.topics[1].error_code == 0);
  CHECK_FALSE(f.broker().topics().find("twice"));
}

TEST_CASE("Created topics and their configs survive a restart", "[admin][create_topics]") {
  test::BrokerFixture f;
  auto t = topic("kept", 4, 1);
  t.configs.push_back(topic_config("retention.ms", "12345"));
  auto resp = call(f, {t}, 7);
  REQUIRE(resp.topics[0].error_code == 0);
  f.restart();
  auto after = f.broker().topics().find("kept");
  REQUIRE(after);
  CHECK(after->partitions.size() == 4);
  CHECK(after->id == resp.topics[0].topic_id);
  CHECK(after->configs.at("retention.ms") == "12345");
  CHECK(call(f, {topic("kept", 1, 1)}, 7).topics[0].error_code == code(ErrorCode::TOPIC_ALREADY_EXISTS));
}
