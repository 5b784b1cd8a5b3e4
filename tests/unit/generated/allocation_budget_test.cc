// tests/unit/generated/allocation_budget_test.cc: the decoders' allocation
// budget (protocol/wire/reader.h). A ProduceRequest v9 topic with an empty
// name and no partitions is 3 bytes on the wire but a TopicProduceData of
// ~80 bytes in memory: without the budget a frame of such topics makes the
// decoder reserve (and touch) ~27 bytes per input byte.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/generated/api_versions.h"
#include "protocol/generated/produce.h"

namespace ciuickafka::protocol {
namespace {

void put_uvarint(std::vector<uint8_t>& b, uint32_t v) {
  while (v >= 0x80) {
    b.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  b.push_back(static_cast<uint8_t>(v));
}

// The body of a ProduceRequest v9 (flexible) naming n empty topics.
std::vector<uint8_t> produce_v9_of_empty_topics(uint32_t n) {
  std::vector<uint8_t> b;
  b.push_back(0);                    // transactional_id: null
  b.insert(b.end(), {0xff, 0xff});   // acks -1
  b.insert(b.end(), {0, 0, 0x75, 0x30});  // timeout 30000
  put_uvarint(b, n + 1);             // topic_data
  for (uint32_t i = 0; i < n; ++i) b.insert(b.end(), {1, 1, 0});  // "", no partitions, no tags
  b.push_back(0);                    // no tagged fields
  return b;
}

TEST_CASE("decoding charges arrays to the input's allocation budget", "[generated][budget]") {
  const uint64_t per_topic = sizeof(ProduceRequest::TopicProduceData);
  REQUIRE(per_topic > 3 * Reader::kBudgetPerInputByte);  // the case the budget exists for

  SECTION("within the budget the request decodes") {
    const auto body = produce_v9_of_empty_topics(50'000);
    Reader r(body);
    ProduceRequest req;
    req.decode(r, 9);
    CHECK(r.ok());
    CHECK(r.at_end());
    CHECK(req.topic_data.size() == 50'000);
    CHECK(r.budget() == Reader::kBudgetBase + Reader::kBudgetPerInputByte * body.size() - 50'000 * per_topic);
  }
  SECTION("past it the request is malformed and nothing is reserved") {
    // Enough topics that count x sizeof passes 4 x the input + 16 MiB.
    const uint32_t n = static_cast<uint32_t>(Reader::kBudgetBase / (per_topic - 3 * Reader::kBudgetPerInputByte)) + 1000;
    const auto body = produce_v9_of_empty_topics(n);
    Reader r(body);
    ProduceRequest req;
    req.decode(r, 9);
    CHECK(r.error() == WireError::kAllocationBudget);
    CHECK(req.topic_data.capacity() == 0);
  }
  SECTION("a smaller budget refuses what a bigger one accepts") {
    const auto body = produce_v9_of_empty_topics(1000);
    Reader tight(body, 999 * per_topic);
    ProduceRequest req;
    req.decode(tight, 9);
    CHECK(tight.error() == WireError::kAllocationBudget);
    Reader enough(body, 1000 * per_topic);
    ProduceRequest ok;
    ok.decode(enough, 9);
    CHECK(enough.ok());
    CHECK(enough.budget() == 0);
  }
}

TEST_CASE("a tagged field's arrays are charged to the same budget", "[generated][budget]") {
  // ApiVersionsResponse v3: supported_features (tag 0) of 2 features.
  ApiVersionsResponse resp;
  resp.error_code = 0;
  for (int i = 0; i < 2; ++i) {
    auto& f = resp.supported_features.emplace_back();
    f.name = "f" + std::to_string(i);
    f.min_version = 0;
    f.max_version = 1;
  }
  Writer w;
  resp.encode(w, 3);
  REQUIRE(w.ok());
  const auto bytes = w.release();
  const uint64_t per_feature = sizeof(ApiVersionsResponse::SupportedFeatureKey);
  Reader tight(bytes, 2 * per_feature - 1);
  ApiVersionsResponse a;
  a.decode(tight, 3);
  CHECK(tight.error() == WireError::kAllocationBudget);  // not hidden as a bad tag section
  Reader enough(bytes, 2 * per_feature + 7);
  ApiVersionsResponse b;
  b.decode(enough, 3);
  CHECK(enough.ok());
  CHECK(b.supported_features.size() == 2);
  CHECK(enough.budget() == 7);  // the sub-reader's charge reached the parent
}

}  // namespace
}  // namespace ciuickafka::protocol
