// tests/unit/handlers/fetch/fetch_read_test.cc: Fetch without waiting or
// sessions: whole batches, size rules, errors, zero-copy bytes, topic ids.
#include <catch2/catch.hpp>

#include "protocol/error_code.h"
#include "protocol/generated/fetch.h"
#include "tests/unit/handlers/fetch/fetch_helpers.h"

using namespace ciuickafka;
using namespace ciuickafka::broker;
using namespace ciuickafka::broker::test;
using protocol::ErrorCode;
using protocol::FetchResponse;

TEST_CASE("Fetch at an offset inside a batch returns that whole batch, bytes as in the segment", "[handlers][fetch]") {
  FetchFixture f;
  auto topic = create_topic(f, "t");
  auto& p = *topic->partitions[0];
  append(p, make_batch(5, 10));   // offsets 0-4
  append(p, make_batch(5, 10));   // offsets 5-9
  for (int16_t v : {4, 11, 12}) {
    auto resp = f.call<FetchResponse>(fetch_request("t", {{0, 7}}), v);
    REQUIRE(resp.responses.size() == 1);
    REQUIRE(resp.responses[0].partitions.size() == 1);
    const auto& d = resp.responses[0].partitions[0];
    CHECK(d.error_code == 0);
    CHECK(d.high_watermark == 10);
    CHECK(d.last_stable_offset == 10);
    if (v >= 5) CHECK(d.log_start_offset == 0);
    CHECK_FALSE(d.aborted_transactions.has_value());  // read_uncommitted: null, as Kafka sends it
    CHECK(d.preferred_read_replica == -1);
    CHECK(record_bytes(d.records) == log_bytes(p, 5));
    // The batch starts at offset 5 (base offset field).
    REQUIRE(d.records.bytes.size() > 8);
    CHECK(d.records.bytes[7] == 5);
  }
}

TEST_CASE("Fetch honours partition and response max_bytes with the first-batch rule", "[handlers][fetch]") {
  FetchFixture f;
  auto topic = create_topic(f, "t", 2);
  auto& p0 = *topic->partitions[0];
  auto& p1 = *topic->partitions[1];
  for (int i = 0; i < 3; ++i) append(p0, make_batch(1, 1000));
  append(p1, make_batch(1, 1000));
  const size_t one = log_bytes(p0, 0, 1).size();  // one batch
  REQUIRE(one > 1000);

  SECTION("partition_max_bytes bounds a partition to whole batches") {
    auto resp = f.call<FetchResponse>(fetch_request("t", {{0, 0}}, static_cast<int32_t>(one * 2 + 10)), 11);
    CHECK(resp.responses[0].partitions[0].records.size() == one * 2);
  }
  SECTION("a first batch larger than every limit is still returned") {
    auto resp = f.call<FetchResponse>(fetch_request("t", {{0, 0}, {1, 0}}, 10, 10), 11);
    const auto& parts = resp.responses[0].partitions;
    REQUIRE(parts.size() == 2);
    CHECK(parts[0].records.size() == one);
    CHECK(record_bytes(parts[0].records) == log_bytes(p0, 0, 1));
    CHECK(parts[1].records.size() == 0);  // later partitions respect what is left
    CHECK(parts[1].error_code == 0);
    CHECK(parts[1].high_watermark == 1);
  }
  SECTION("the response max_bytes is shared across partitions") {
    auto resp = f.call<FetchResponse>(fetch_request("t", {{0, 0}, {1, 0}}, 1 << 20, static_cast<int32_t>(one * 3 + 100)), 11);
    const auto& parts = resp.responses[0].partitions;
    CHECK(parts[0].records.size() == one * 3);
    CHECK(parts[1].records.size() == 0);
    resp = f.call<FetchResponse>(fetch_request("t", {{0, 1}, {1, 0}}, 1 << 20, static_cast<int32_t>(one * 3 + 100)), 11);
    CHECK(resp.responses[0].partitions[0].records.size() == one * 2);
    CHECK(record_bytes(resp.responses[0].partitions[1].records) == log_bytes(p1, 0));
  }
}

TEST_CASE("Fetch errors: offsets out of range, unknown topics and partitions, empty records", "[handlers][fetch]") {
  FetchFixture f;
  auto topic = create_topic(f, "t");
  append(*topic->partitions[0], make_batch(3, 10));

  auto resp = f.call<FetchResponse>(fetch_request("t", {{0, 4}}), 11);
  auto d = resp.responses[0].partitions[0];
  CHECK(d.error_code == protocol::to_wire(ErrorCode::OFFSET_OUT_OF_RANGE));
  CHECK(d.high_watermark == -1);
  CHECK_FALSE(d.records.null);
  CHECK_FALSE(d.aborted_transactions.has_value());  // a read's error: null, as Kafka

  resp = f.call<FetchResponse>(fetch_request("t", {{0, 3}}), 11);  // at the end: nothing yet, no error
  d = resp.responses[0].partitions[0];
  CHECK(d.error_code == 0);
  CHECK(d.records.size() == 0);
  CHECK_FALSE(d.records.null);

  resp = f.call<FetchResponse>(fetch_request("t", {{7, 0}}), 11);
  CHECK(resp.responses[0].partitions[0].error_code == protocol::to_wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  // A partition not known: an empty list, as Kafka (its answer before any read).
  REQUIRE(resp.responses[0].partitions[0].aborted_transactions.has_value());
  CHECK(resp.responses[0].partitions[0].aborted_transactions->empty());
  const uint64_t failed_before = f.broker().metrics().all_topics().aggregate()->failed_fetch.load();
  resp = f.call<FetchResponse>(fetch_request("nope", {{0, 0}}), 4);
  CHECK(resp.responses[0].partitions[0].error_code == protocol::to_wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  // An unknown topic counts in the all-topics aggregate only: no series for a name that does not exist.
  CHECK(f.broker().metrics().all_topics().aggregate()->failed_fetch.load() == failed_before + 1);
  CHECK(f.broker().metrics_registry().text().find("topic=\"nope\"") == std::string::npos);

  auto req = fetch_request("t", {{0, 0}});
  req.topics[0].partitions[0].current_leader_epoch = topic->partitions[0]->leader_epoch() + 1;
  resp = f.call<FetchResponse>(req, 11);
  CHECK(resp.responses[0].partitions[0].error_code == protocol::to_wire(ErrorCode::UNKNOWN_LEADER_EPOCH));
}

TEST_CASE("Fetch v13+ names topics by id - an unknown id is UNKNOWN_TOPIC_ID", "[handlers][fetch]") {
  FetchFixture f;
  auto topic = create_topic(f, "t");
  append(*topic->partitions[0], make_batch(2, 10));
  auto req = fetch_request("", {{0, 0}});
  req.topics[0].topic_id = topic->id;
  auto resp = f.call<FetchResponse>(req, 13);
  REQUIRE(resp.responses.size() == 1);
  CHECK(resp.responses[0].topic_id == topic->id);
  CHECK(record_bytes(resp.responses[0].partitions[0].records) == log_bytes(*topic->partitions[0], 0));

  req.topics[0].topic_id.bytes[0] ^= 0xff;
  resp = f.call<FetchResponse>(req, 17);
  CHECK(resp.responses[0].partitions[0].error_code == protocol::to_wire(ErrorCode::UNKNOWN_TOPIC_ID));
  REQUIRE(resp.responses[0].partitions[0].aborted_transactions.has_value());
  CHECK(resp.responses[0].partitions[0].aborted_transactions->empty());
}

TEST_CASE("Fetch counts bytes out per topic", "[handlers][fetch]") {
  FetchFixture f;
  auto topic = create_topic(f, "m");
  append(*topic->partitions[0], make_batch(2, 100));
  auto resp = f.call<FetchResponse>(fetch_request("m", {{0, 0}}), 11);
  const uint64_t n = resp.responses[0].partitions[0].records.size();
  REQUIRE(n > 0);
  CHECK(f.broker().metrics().topic("m").counters()->bytes_out.load() == n);
}

TEST_CASE("Fetch from a replica is NOT_LEADER_OR_FOLLOWER on a single node", "[handlers][fetch]") {
  FetchFixture f;
  create_topic(f, "t");
  auto req = fetch_request("t", {{0, 0}});
  req.replica_id = 2;
  auto resp = f.call<FetchResponse>(req, 11);
  CHECK(resp.responses[0].partitions[0].error_code == protocol::to_wire(ErrorCode::NOT_LEADER_OR_FOLLOWER));
}
