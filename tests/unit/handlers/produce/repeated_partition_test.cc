// tests/unit/handlers/produce/repeated_partition_test.cc: a partition named
// twice in one Produce request is appended once, with the records of its
// last mention, and answered once, as Kafka's handleProduceRequest (a map
// keyed by topic-partition) does; a topic named twice answers as one topic.
#include <catch2/catch.hpp>

#include "tests/unit/handlers/produce/produce_helpers.h"

namespace ciuickafka::broker::test {
namespace {

protocol::ProduceRequest::PartitionProduceData part(int32_t index, const std::vector<uint8_t>& records) {
  protocol::ProduceRequest::PartitionProduceData pd;
  pd.index = index;
  pd.records = protocol::Records(std::span<const uint8_t>(records));
  return pd;
}

TEST_CASE("A partition named twice in one Produce is appended once and answered once") {
  BrokerFixture f;
  create_topic(f, "t", 2);
  auto first = make_batch({.records = 2, .value_prefix = "first-"});
  auto last = make_batch({.records = 3, .value_prefix = "last-"});
  auto other = make_batch({.records = 1, .value_prefix = "other-"});
  protocol::ProduceRequest req;
  req.acks = 1;
  req.timeout_ms = 30000;
  protocol::ProduceRequest::TopicProduceData a;
  a.name = "t";
  a.partition_data.push_back(part(0, first));
  a.partition_data.push_back(part(1, other));
  a.partition_data.push_back(part(0, last));  // the same partition again, in the same topic entry
  req.topic_data.push_back(a);
  protocol::ProduceRequest::TopicProduceData b;
  b.name = "t";  // the same topic again
  b.partition_data.push_back(part(1, other));
  req.topic_data.push_back(b);

  for (int16_t version : {3, 9}) {
    INFO("version " << version);
    auto resp = f.call<protocol::ProduceResponse>(req, version);
    REQUIRE(resp.responses.size() == 1);
    CHECK(resp.responses[0].name == "t");
    REQUIRE(resp.responses[0].partition_responses.size() == 2);
    CHECK(resp.responses[0].partition_responses[0].index == 0);
    CHECK(resp.responses[0].partition_responses[0].error_code == 0);
    CHECK(resp.responses[0].partition_responses[1].index == 1);
    CHECK(resp.responses[0].partition_responses[1].error_code == 0);
  }
  // Partition 0 holds the last mention's records once per request.
  auto recs = stored_records(f, "t");
  REQUIRE(recs.size() == 6);
  CHECK(recs[0].value == "last-0");
  CHECK(recs[3].value == "last-0");
  CHECK(recs[3].offset == 3);
  CHECK(f.broker().topics().partition("t", 1)->log_end_offset() == 2);
}

}  // namespace
}  // namespace ciuickafka::broker::test
