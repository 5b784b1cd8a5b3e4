// tests/unit/handlers/admin/delete_topics_test.cc: DeleteTopics v0-6: by
// name, by id (v6), unknown names and ids, internal topics, deletion
// disabled, duplicates, persistence across a restart.
#include <catch2/catch.hpp>

#include "protocol/generated/delete_topics.h"
#include "protocol/generated/metadata.h"
#include "tests/unit/handlers/admin/admin_test_util.h"

using namespace ciuickafka;
using namespace ciuickafka::broker;
using protocol::DeleteTopicsRequest;
using protocol::DeleteTopicsResponse;
using protocol::ErrorCode;
using test::code;

namespace {

DeleteTopicsRequest by_names(std::vector<std::string> names, int16_t version) {
  DeleteTopicsRequest req;
  for (auto& n : names) {
    if (version >= 6) {
      DeleteTopicsRequest::DeleteTopicState s;
      s.name = n;
      req.topics.push_back(s);
    } else {
      req.topic_names.push_back(n);
    }
  }
  return req;
}

}  // namespace

TEST_CASE("DeleteTopics deletes by name at every version", "[admin][delete_topics]") {
  test::BrokerFixture f;
  for (int16_t v : {0, 1, 3, 5, 6}) {
    CAPTURE(v);
    const std::string name = "gone" + std::to_string(v);
    REQUIRE(test::create_topic(f, name, 2).error_code == 0);
    auto resp = f.call<DeleteTopicsResponse>(by_names({name}, v), v);
    REQUIRE(resp.responses.size() == 1);
    CHECK(resp.responses[0].name == name);
    CHECK(resp.responses[0].error_code == 0);
    if (v >= 5) CHECK_FALSE(resp.responses[0].error_message.has_value());
    CHECK_FALSE(f.broker().topics().find(name));
  }
}

TEST_CASE("DeleteTopics v6 deletes by topic id and reports unknown ids", "[admin][delete_topics]") {
  test::BrokerFixture f;
  REQUIRE(test::create_topic(f, "by-id").error_code == 0);
  const auto id = f.broker().topics().find("by-id")->id;
  DeleteTopicsRequest req;
  DeleteTopicsRequest::DeleteTopicState known;
  known.topic_id = id;
  DeleteTopicsRequest::DeleteTopicState unknown;
  unknown.topic_id.bytes[3] = 7;
  req.topics = {known, unknown};
  auto resp = f.call<DeleteTopicsResponse>(req, 6);
  REQUIRE(resp.responses.size() == 2);
  CHECK(resp.responses[0].error_code == 0);
  CHECK(resp.responses[0].name == "by-id");
  CHECK(resp.responses[0].topic_id == id);
  CHECK(resp.responses[1].error_code == code(ErrorCode::UNKNOWN_TOPIC_ID));
  CHECK_FALSE(f.broker().topics().find("by-id"));
}

TEST_CASE("DeleteTopics v6 with both or neither name and id is INVALID_REQUEST", "[admin][delete_topics]") {
  test::BrokerFixture f;
  REQUIRE(test::create_topic(f, "both").error_code == 0);
  DeleteTopicsRequest req;
  DeleteTopicsRequest::DeleteTopicState both;
  both.name = "both";
  both.topic_id = f.broker().topics().find("both")->id;
  DeleteTopicsRequest::DeleteTopicState neither;
  req.topics = {both, neither};
  auto resp = f.call<DeleteTopicsResponse>(req, 6);
  REQUIRE(resp.responses.size() == 2);
  CHECK(resp.responses[0].error_code == code(ErrorCode::INVALID_REQUEST));
  CHECK(resp.responses[1].error_code == code(ErrorCode::INVALID_REQUEST));
  CHECK(f.broker().topics().find("both"));
}

TEST_CASE("DeleteTopics errors: unknown, internal, duplicate", "[admin][delete_topics]") {
  test::BrokerFixture f;
  REQUIRE(test::create_topic(f, "dup").error_code == 0);
  REQUIRE(f.broker().topics().create("__consumer_offsets", 1, 1, {}, false, 0).error.ok());
  for (int16_t v : {0, 4, 6}) {
    CAPTURE(v);
    // A topic named twice: one INVALID_REQUEST result for it (Kafka keys
    // results by name).
    auto resp = f.call<DeleteTopicsResponse>(by_names({"missing", "dup", "__consumer_offsets", "dup"}, v), v);
    REQUIRE(resp.responses.size() == 3);
    CHECK(resp.responses[0].error_code == code(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
    CHECK(resp.responses[1].name == "dup");
    CHECK(resp.responses[1].error_code == code(ErrorCode::INVALID_REQUEST));
    CHECK(resp.responses[2].error_code == code(ErrorCode::INVALID_TOPIC_EXCEPTION));
  }
  CHECK(f.broker().topics().find("__consumer_offsets"));
  CHECK(f.broker().topics().find("dup"));
}

TEST_CASE("DeleteTopics with delete.topic.enable=false", "[admin][delete_topics]") {
  test::BrokerFixture f({"delete.topic.enable=false"});
  REQUIRE(test::create_topic(f, "stays").error_code == 0);
  auto old = f.call<DeleteTopicsResponse>(by_names({"stays"}, 2), 2);
  CHECK(old.responses[0].error_code == code(ErrorCode::INVALID_REQUEST));
  for (int16_t v : {3, 6}) {
    auto resp = f.call<DeleteTopicsResponse>(by_names({"stays"}, v), v);
    CHECK(resp.responses[0].error_code == code(ErrorCode::TOPIC_DELETION_DISABLED));
  }
  CHECK(f.broker().topics().find("stays"));
}

TEST_CASE("A deleted topic stays deleted after a restart and can be recreated", "[admin][delete_topics]") {
  test::BrokerFixture f;
  REQUIRE(test::create_topic(f, "phoenix", 3).error_code == 0);
  test::append_record(f, "phoenix", 0, "hello");
  const auto old_id = f.broker().topics().find("phoenix")->id;
  REQUIRE(f.call<DeleteTopicsResponse>(by_names({"phoenix"}, 6), 6).responses[0].error_code == 0);
  f.restart();
  CHECK_FALSE(f.broker().topics().find("phoenix"));
  auto again = test::create_topic(f, "phoenix", 1);
  REQUIRE(again.error_code == 0);
  CHECK_FALSE(again.topic_id == old_id);
  CHECK(f.broker().topics().find("phoenix")->partitions[0]->log_end_offset() == 0);
}
