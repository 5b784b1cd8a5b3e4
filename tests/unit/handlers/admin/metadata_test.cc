// tests/unit/handlers/admin/metadata_test.cc: Metadata v0-12: brokers,
// cluster id, controller, topic listing (all / named / by id), partitions,
// authorized operations, auto-creation on and off, errors.
#include <catch2/catch.hpp>

#include "broker/admin/cluster_info.h"
#include "protocol/generated/metadata.h"
#include "tests/unit/handlers/admin/admin_test_util.h"

using namespace ciuickafka;
using namespace ciuickafka::broker;
using protocol::ErrorCode;
using protocol::MetadataRequest;
using protocol::MetadataResponse;
using test::code;

namespace {

MetadataRequest named(std::vector<std::string> names, bool allow_create = true) {
  MetadataRequest req;
  req.topics = std::vector<MetadataRequest::MetadataRequestTopic>();
  for (auto& n : names) {
    MetadataRequest::MetadataRequestTopic t;
    t.name = n;
    req.topics->push_back(t);
  }
  req.allow_auto_topic_creation = allow_create;
  return req;
}

const MetadataResponse::MetadataResponseTopic* find(const MetadataResponse& r, const std::string& name) {
  for (const auto& t : r.topics)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace

TEST_CASE("Metadata describes this node as broker and controller at every version", "[admin][metadata]") {
  test::BrokerFixture f;
  for (int16_t v : {0, 1, 2, 5, 9, 10, 12}) {
    CAPTURE(v);
    MetadataRequest req;
    if (v == 0) req.topics = std::vector<MetadataRequest::MetadataRequestTopic>();
    else req.topics = std::nullopt;
    auto resp = f.call<MetadataResponse>(req, v);
    REQUIRE(resp.brokers.size() == 1);
    CHECK(resp.brokers[0].node_id == f.broker().node_id());
    CHECK(resp.brokers[0].host == "127.0.0.1");
    CHECK_FALSE(resp.brokers[0].rack.has_value());
    if (v >= 1) CHECK(resp.controller_id == f.broker().node_id());
    if (v >= 2) CHECK(resp.cluster_id == f.broker().cluster_id());
  }
}

TEST_CASE("Metadata lists every topic when topics is null (v1+) or empty (v0)", "[admin][metadata]") {
  test::BrokerFixture f;
  REQUIRE(test::create_topic(f, "alpha", 3).error_code == 0);
  REQUIRE(test::create_topic(f, "beta", 1).error_code == 0);
  for (int16_t v : {0, 4, 8, 12}) {
    CAPTURE(v);
    MetadataRequest req;
    if (v == 0) req.topics = std::vector<MetadataRequest::MetadataRequestTopic>();
    else req.topics = std::nullopt;
    auto resp = f.call<MetadataResponse>(req, v);
    REQUIRE(resp.topics.size() == 2);
    const auto* a = find(resp, "alpha");
    REQUIRE(a != nullptr);
    CHECK(a->error_code == 0);
    REQUIRE(a->partitions.size() == 3);
    for (int32_t i = 0; i < 3; ++i) {
      const auto& p = a->partitions[i];
      CHECK(p.partition_index == i);
      CHECK(p.leader_id == f.broker().node_id());
      CHECK(p.replica_nodes == std::vector<int32_t>{f.broker().node_id()});
      CHECK(p.isr_nodes == std::vector<int32_t>{f.broker().node_id()});
      CHECK(p.offline_replicas.empty());
      if (v >= 7) CHECK(p.leader_epoch == 0);
    }
    if (v >= 10) CHECK(a->topic_id == f.broker().topics().find("alpha")->id);
  }
  // v1+: an empty list means no topics at all.
  auto none = f.call<MetadataResponse>(named({}), 1);
  CHECK(none.topics.empty());
}

TEST_CASE("Metadata auto-creates unknown topics when enabled and allowed", "[admin][metadata]") {
  test::BrokerFixture f({"num.partitions=4"});
  auto resp = f.call<MetadataResponse>(named({"fresh"}), 12);
  REQUIRE(resp.topics.size() == 1);
  CHECK(resp.topics[0].error_code == 0);
  CHECK(resp.topics[0].partitions.size() == 4);
  CHECK_FALSE(resp.topics[0].topic_id.is_zero());
  REQUIRE(f.broker().topics().find("fresh"));
  // v0-3 have no allow flag: creation is always allowed.
  auto old = f.call<MetadataResponse>(named({"fresh-v0"}), 0);
  REQUIRE(old.topics.size() == 1);
  CHECK(old.topics[0].error_code == 0);
  CHECK(f.broker().topics().find("fresh-v0"));
}

TEST_CASE("Metadata does not create when the client disallows it (v4+)", "[admin][metadata]") {
  test::BrokerFixture f;
  for (int16_t v : {4, 9, 12}) {
    auto resp = f.call<MetadataResponse>(named({"nope"}, false), v);
    REQUIRE(resp.topics.size() == 1);
    CHECK(resp.topics[0].error_code == code(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
    CHECK(resp.topics[0].partitions.empty());
  }
  CHECK_FALSE(f.broker().topics().find("nope"));
}

TEST_CASE("Metadata does not create when auto.create.topics.enable=false", "[admin][metadata]") {
  test::BrokerFixture f({"auto.create.topics.enable=false"});
  for (int16_t v : {0, 3, 12}) {
    auto resp = f.call<MetadataResponse>(named({"nope"}), v);
    REQUIRE(resp.topics.size() == 1);
    CHECK(resp.topics[0].error_code == code(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  }
  CHECK_FALSE(f.broker().topics().find("nope"));
}

TEST_CASE("Metadata answers INVALID_TOPIC_EXCEPTION for an invalid name", "[admin][metadata]") {
  test::BrokerFixture f;
  for (bool allow : {true, false}) {
    auto resp = f.call<MetadataResponse>(named({"bad name!", "ok-topic"}, allow), 12);
    REQUIRE(resp.topics.size() == 2);
    CHECK(resp.topics[0].name == "bad name!");
    CHECK(resp.topics[0].error_code == code(ErrorCode::INVALID_TOPIC_EXCEPTION));
  }
  CHECK(f.broker().topics().list().size() == 1);  // only ok-topic
}

TEST_CASE("Metadata auto-creation failing reports the creation error", "[admin][metadata]") {
  test::BrokerFixture f({"default.replication.factor=3"});
  auto resp = f.call<MetadataResponse>(named({"rf3"}), 12);
  REQUIRE(resp.topics.size() == 1);
  CHECK(resp.topics[0].error_code == code(ErrorCode::INVALID_REPLICATION_FACTOR));
  CHECK_FALSE(f.broker().topics().find("rf3"));
}

TEST_CASE("Metadata v10+ looks topics up by id", "[admin][metadata]") {
  test::BrokerFixture f;
  REQUIRE(test::create_topic(f, "by-id", 2).error_code == 0);
  const auto id = f.broker().topics().find("by-id")->id;
  MetadataRequest req;
  req.topics = std::vector<MetadataRequest::MetadataRequestTopic>(2);
  (*req.topics)[0].name = std::nullopt;
  (*req.topics)[0].topic_id = id;
  (*req.topics)[1].name = std::nullopt;
  (*req.topics)[1].topic_id.bytes[0] = 0x42;  // unknown
  auto resp = f.call<MetadataResponse>(req, 12);
  REQUIRE(resp.topics.size() == 2);
  CHECK(resp.topics[0].error_code == 0);
  CHECK(resp.topics[0].name == "by-id");
  CHECK(resp.topics[0].partitions.size() == 2);
  CHECK(resp.topics[1].error_code == code(ErrorCode::UNKNOWN_TOPIC_ID));
  CHECK_FALSE(resp.topics[1].name.has_value());
}

TEST_CASE("Metadata authorized operations: full set when asked, INT32_MIN otherwise", "[admin][metadata]") {
  test::BrokerFixture f;
  REQUIRE(test::create_topic(f, "ops").error_code == 0);
  auto req = named({"ops"});
  auto plain = f.call<MetadataResponse>(req, 8);
  CHECK(plain.topics[0].topic_authorized_operations == INT32_MIN);
  CHECK(plain.cluster_authorized_operations == INT32_MIN);
  req.include_topic_authorized_operations = true;
  req.include_cluster_authorized_operations = true;
  auto asked = f.call<MetadataResponse>(req, 8);
  // READ WRITE CREATE DELETE ALTER DESCRIBE DESCRIBE_CONFIGS ALTER_CONFIGS
  CHECK(asked.topics[0].topic_authorized_operations == 3576);
  CHECK(asked.cluster_authorized_operations == 8096);
  req.include_cluster_authorized_operations = false;  // the field is gone in v11+
  auto v12 = f.call<MetadataResponse>(req, 12);
  CHECK(v12.topics[0].topic_authorized_operations == 3576);
}

TEST_CASE("Metadata marks __consumer_offsets internal and auto-creates it compacted", "[admin][metadata]") {
  test::BrokerFixture f({"offsets.topic.num.partitions=3"});
  auto resp = f.call<MetadataResponse>(named({"__consumer_offsets", "user"}), 12);
  REQUIRE(resp.topics.size() == 2);
  CHECK(resp.topics[0].is_internal);
  CHECK(resp.topics[0].partitions.size() == 3);
  CHECK_FALSE(resp.topics[1].is_internal);
  auto t = f.broker().topics().find("__consumer_offsets");
  REQUIRE(t);
  CHECK(t->configs.at("cleanup.policy") == "compact");
}

TEST_CASE("Metadata topics survive a restart with the same id and partitions", "[admin][metadata]") {
  test::BrokerFixture f;
  REQUIRE(test::create_topic(f, "durable", 5).error_code == 0);
  auto before = f.call<MetadataResponse>(named({"durable"}, false), 12);
  f.restart();
  auto after = f.call<MetadataResponse>(named({"durable"}, false), 12);
  REQUIRE(after.topics.size() == 1);
  CHECK(after.topics[0].error_code == 0);
  CHECK(after.topics[0].partitions.size() == 5);
  CHECK(after.topics[0].topic_id == before.topics[0].topic_id);
}

TEST_CASE("advertised endpoint: a listener bound to port 0 advertises the published bound port",
          "[admin][metadata]") {
  test::BrokerFixture f;
  f.broker().service<admin::BoundPorts>().set("PLAINTEXT", 19092);
  auto resp = f.call<MetadataResponse>(named({}), 12);
  REQUIRE(resp.brokers.size() == 1);
  CHECK(resp.brokers[0].port == 19092);
}

// Found by the differential test against Kafka 3.9.1 (tests/differential):
// Kafka reads the requested topics into a set, so a name (or id) asked for
// twice is answered once; we answered it twice.
TEST_CASE("Metadata answers a topic named twice once, as Kafka does", "[admin][metadata]") {
  test::BrokerFixture f;
  REQUIRE(test::create_topic(f, "twice", 2).error_code == 0);
  for (int16_t v : {1, 4, 9, 12}) {
    CAPTURE(v);
    auto resp = f.call<MetadataResponse>(named({"twice", "twice", "nope!", "nope!"}, v < 4), v);
    REQUIRE(resp.topics.size() == 2);
    CHECK(resp.topics[0].name == "twice");
    CHECK(resp.topics[0].partitions.size() == 2);
    CHECK(resp.topics[1].name == "nope!");
    CHECK(resp.topics[1].error_code == code(ErrorCode::INVALID_TOPIC_EXCEPTION));
  }
  auto ids = f.call<MetadataResponse>(named({"twice"}, false), 12);
  REQUIRE(ids.topics.size() == 1);
  MetadataRequest by_id;
  by_id.topics = std::vector<MetadataRequest::MetadataRequestTopic>(2);
  for (auto& t : *by_id.topics) {
    t.name = std::nullopt;
    t.topic_id = ids.topics[0].topic_id;
  }
  auto resp = f.call<MetadataResponse>(by_id, 12);
  REQUIRE(resp.topics.size() == 1);
  CHECK(resp.topics[0].name == "twice");
}
