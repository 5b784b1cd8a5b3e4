// tests/unit/handlers/groups/lag_metrics_test.cc: the lag collector covers
// every partition of a committed topic (uncommitted partitions count from
// the log start, labelled committed="false"); subscriptions decode from the
// consumer protocol's metadata; numgroups / numoffsets.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "broker/groups/lag_metrics.h"
#include "protocol/generated/consumer_protocol_subscription.h"
#include "protocol/wire/writer.h"
#include "tests/unit/handlers/fetch/fetch_helpers.h"
#include "tests/unit/handlers/groups/groups_test_util.h"

using namespace ciuickafka;
using namespace ciuickafka::broker;
using namespace ciuickafka::broker::test;

// A namespace of this file's own (tests/CMakeLists.txt: the tests are unity
// builds), so that its helpers do not clash with a sibling file's.
namespace CK_UNITY_ID {

namespace {

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

protocol::Bytes subscription(int16_t version, std::vector<std::string> topics) {
  protocol::ConsumerProtocolSubscription s;
  s.topics = std::move(topics);
  protocol::Writer w;
  w.write_int16(version);
  s.encode(w, version);
  return w.release();
}

}  // namespace

TEST_CASE("subscribed topics decode from consumer-protocol metadata - garbage adds nothing", "[groups][metrics]") {
  std::set<std::string> got;
  groups::add_subscribed_topics(subscription(0, {"a", "b"}), got);
  groups::add_subscribed_topics(subscription(3, {"c"}), got);
  CHECK(got == std::set<std::string>{"a", "b", "c"});
  groups::add_subscribed_topics(protocol::Bytes{}, got);
  groups::add_subscribed_topics(protocol::Bytes{0, 1, 0xff}, got);
  CHECK(got.size() == 3);
}

TEST_CASE("lag covers every partition of a committed topic - uncommitted ones from the log start",
          "[groups][metrics]") {
  BrokerFixture f({"offsets.topic.num.partitions=3", "group.initial.rebalance.delay.ms=0"});
  auto topic = create_topic(f, "t", 3);
  append(*topic->partitions[0], make_batch(10, 8));
  append(*topic->partitions[1], make_batch(7, 8));
  append(*topic->partitions[2], make_batch(4, 8));
  auto& coord = f.broker().service<groups::GroupCoordinator>();
  REQUIRE(coord.wait_loaded(10000));
  auto c = f.call<protocol::OffsetCommitResponse>(commit_request("g", "t", 0, 6, ""), 8);
  REQUIRE(c.topics.at(0).partitions.at(0).error_code == 0);

  const std::string text = f.broker().metrics_registry().text();
  CHECK(has_line(text, "kafka_consumergroup_current_offset{consumergroup=\"g\",partition=\"0\",topic=\"t\"} 6"));
  CHECK(has_line(text, "kafka_consumergroup_lag{committed=\"true\",consumergroup=\"g\",partition=\"0\",topic=\"t\"} 4"));
  CHECK(has_line(text, "kafka_consumergroup_lag{committed=\"false\",consumergroup=\"g\",partition=\"1\",topic=\"t\"} 7"));
  CHECK(has_line(text, "kafka_consumergroup_lag{committed=\"false\",consumergroup=\"g\",partition=\"2\",topic=\"t\"} 4"));
  CHECK(text.find("kafka_consumergroup_current_offset{consumergroup=\"g\",partition=\"1\"") == std::string::npos);
  CHECK(has_line(text, "kafka_consumergroup_lag_sum{consumergroup=\"g\",topic=\"t\"} 15"));
  CHECK(has_line(text, "kafka_coordinator_group_groupmetadatamanager_numgroups 1"));
  CHECK(has_line(text, "kafka_coordinator_group_groupmetadatamanager_numoffsets 1"));
}

}  // namespace CK_UNITY_ID
