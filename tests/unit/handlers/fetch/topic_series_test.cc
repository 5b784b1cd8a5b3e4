// tests/unit/handlers/fetch/topic_series_test.cc: per-topic metrics series
// exist only for topics that exist. A Fetch naming many unknown topics adds
// no series (it counts in the all-topics aggregate alone) and grows neither
// the scrape nor the table; a deleted topic's series leave the scrape.
#include <catch2/catch.hpp>

#include <string>

#include "protocol/generated/delete_topics.h"
#include "tests/unit/handlers/fetch/fetch_helpers.h"

using namespace ciuickafka;
using namespace ciuickafka::broker;
using namespace ciuickafka::broker::test;

namespace {

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// One Fetch (v12, by name) naming `count` topics that do not exist.
protocol::FetchRequest unknown_topics_fetch(int from, int count) {
  protocol::FetchRequest req = fetch_request("unknown-" + std::to_string(from), {{0, 0}});
  for (int i = from + 1; i < from + count; ++i) {
    protocol::FetchRequest::FetchTopic t = req.topics[0];
    t.topic = "unknown-" + std::to_string(i);
    req.topics.push_back(std::move(t));
  }
  return req;
}

}  // namespace

TEST_CASE("Fetches naming unknown topics create no per-topic series", "[handlers][metrics]") {
  FetchFixture f;
  create_topic(f, "real", 1);
  auto first = f.call<protocol::FetchResponse>(fetch_request("real", {{0, 0}}), 12);
  REQUIRE(first.responses.size() == 1);
  const std::string before = f.broker().metrics_registry().text();
  CHECK(count_of(before, "topic=\"real\"") > 0);
  for (int round = 0; round < 5; ++round) {
    auto resp = f.call<protocol::FetchResponse>(unknown_topics_fetch(round * 2000, 2000), 12);
    REQUIRE(resp.responses.size() == 2000);
    CHECK(resp.responses[1999].partitions[0].error_code == 3);  // UNKNOWN_TOPIC_OR_PARTITION
  }
  const std::string after = f.broker().metrics_registry().text();
  CHECK(count_of(after, "unknown-") == 0);
  // The aggregate counted them: 10,000 failed topic parts.
  CHECK(after.find("kafka_server_brokertopicmetrics_failedfetchrequests_total 10000") != std::string::npos);
  // The scrape did not grow with the names (only counter values changed).
  CHECK(after.size() < before.size() + 1024);
}

TEST_CASE("A deleted topic's per-topic series leave the scrape", "[handlers][metrics]") {
  FetchFixture f;
  auto topic = create_topic(f, "doomed", 1);
  append(*topic->partitions[0], make_batch(3, 50));
  auto resp = f.call<protocol::FetchResponse>(fetch_request("doomed", {{0, 0}}), 12);
  REQUIRE(resp.responses.size() == 1);
  REQUIRE(count_of(f.broker().metrics_registry().text(), "kafka_server_brokertopicmetrics_bytesout_total{topic=\"doomed\"}") == 1);
  protocol::DeleteTopicsRequest del;
  del.topic_names.push_back("doomed");
  del.timeout_ms = 10000;
  auto dr = f.call<protocol::DeleteTopicsResponse>(del, 3);
  REQUIRE(dr.responses.size() == 1);
  REQUIRE(dr.responses[0].error_code == 0);
  const std::string text = f.broker().metrics_registry().text();
  CHECK(count_of(text, "topic=\"doomed\"") == 0);
  // A fetch of the now-unknown name brings no series back.
  auto again = f.call<protocol::FetchResponse>(fetch_request("doomed", {{0, 0}}), 12);
  REQUIRE(again.responses.size() == 1);
  CHECK(count_of(f.broker().metrics_registry().text(), "topic=\"doomed\"") == 0);
}
