// tests/unit/handlers/fetch/fetch_legacy_test.cc: Fetch v0-v3 answer in
// message format v0 (Fetch v0-v1) or v1 (v2-v3), converted from the stored
// v2 batches, compressed ones included.
#include <catch2/catch.hpp>

#include <string>

#include "protocol/generated/fetch.h"
#include "protocol/records/legacy.h"
#include "tests/unit/handlers/fetch/fetch_helpers.h"

using namespace ciuickafka;
using namespace ciuickafka::broker;
using namespace ciuickafka::broker::test;
using protocol::FetchResponse;

TEST_CASE("Fetch v0-v3 down-converts to message sets v0/v1", "[handlers][fetch][legacy]") {
  FetchFixture f;
  auto topic = create_topic(f, "old");
  auto& p = *topic->partitions[0];
  append(p, make_batch(3, 20, 5'000));
  append(p, make_batch(2, 20, 6'000, protocol::Codec::kGzip));

  for (int16_t v = 0; v <= 3; ++v) {
    auto resp = f.call<FetchResponse>(fetch_request("old", {{0, 1}}), v);
    const auto& d = resp.responses[0].partitions[0];
    REQUIRE(d.error_code == 0);
    CHECK(d.high_watermark == 5);
    auto decoded = protocol::decode_message_set(d.records.bytes);
    REQUIRE(decoded.ok());
    const auto& msgs = decoded.value().messages;
    REQUIRE(msgs.size() == 5);  // the whole first batch, then the compressed one
    const int8_t magic = v <= 1 ? 0 : 1;
    for (size_t i = 0; i < msgs.size(); ++i) {
      CHECK(msgs[i].offset == static_cast<int64_t>(i));
      CHECK(msgs[i].magic == magic);
      REQUIRE(msgs[i].value.has_value());
      CHECK(msgs[i].value->size() == 20);
    }
    CHECK(msgs[3].wrapper_codec == protocol::Codec::kGzip);
    if (magic == 1) CHECK(msgs[0].timestamp == 5'000);
    CHECK(std::string(msgs[4].value->begin(), msgs[4].value->end()) == std::string(20, 'b'));
  }
}

TEST_CASE("Fetch v3 down-converts a batch over 64 MiB decompressed that the topic's produce accepts",
          "[handlers][fetch][legacy]") {
  // max.message.bytes 4 MiB: a produce may decompress to 128 MiB (32x).
  // One lz4 batch of 70 values of 1 MiB (70 MiB decompressed, a few
  // hundred KB stored) converts whole; before, down-conversion stopped at
  // 64 MiB and answered CORRUPT_MESSAGE.
  FetchFixture f;
  auto c = f.broker().topics().create("wide", 1, 1, {{"max.message.bytes", "4194304"}}, false, Broker::now_ms());
  REQUIRE(c.error.ok());
  append(*c.topic->partitions[0], make_batch(70, 1 << 20, 1'000, protocol::Codec::kLz4));
  auto req = fetch_request("wide", {{0, 0}});
  auto resp = f.call<FetchResponse>(req, 3);
  const auto& d = resp.responses.at(0).partitions.at(0);
  REQUIRE(d.error_code == 0);
  protocol::LegacyDecodeOptions o;
  o.max_decompressed_bytes = 128u << 20;
  auto decoded = protocol::decode_message_set(d.records.bytes, o);
  REQUIRE(decoded.ok());
  const auto& msgs = decoded.value().messages;
  REQUIRE(msgs.size() == 70);
  CHECK(msgs[0].wrapper_codec == protocol::Codec::kLz4);
  CHECK(msgs[69].offset == 69);
  REQUIRE(msgs[69].value.has_value());
  CHECK(msgs[69].value->size() == (1u << 20));
  CHECK((*msgs[69].value)[0] == static_cast<uint8_t>('a' + 69 % 26));
  // The default topic's limit (64 MiB) still holds for a batch past it.
  auto small = create_topic(f, "narrow");
  append(*small->partitions[0], make_batch(70, 1 << 20, 1'000, protocol::Codec::kLz4));
  resp = f.call<FetchResponse>(fetch_request("narrow", {{0, 0}}), 3);
  CHECK(resp.responses.at(0).partitions.at(0).error_code == protocol::to_wire(protocol::ErrorCode::CORRUPT_MESSAGE));
}

TEST_CASE("Fetch v3 cannot carry zstd: UNSUPPORTED_COMPRESSION_TYPE", "[handlers][fetch][legacy]") {
  FetchFixture f;
  auto topic = create_topic(f, "z");
  append(*topic->partitions[0], make_batch(2, 20, 1'000, protocol::Codec::kZstd));
  auto resp = f.call<FetchResponse>(fetch_request("z", {{0, 0}}), 3);
  CHECK(resp.responses[0].partitions[0].error_code ==
        protocol::to_wire(protocol::ErrorCode::UNSUPPORTED_COMPRESSION_TYPE));
  resp = f.call<FetchResponse>(fetch_request("z", {{0, 0}}), 10);
  CHECK(resp.responses[0].partitions[0].error_code == 0);
  CHECK(resp.responses[0].partitions[0].records.size() > 0);
}

TEST_CASE("fetch.max.bytes bounds every Fetch response, v0-v2 (no limit of their own) included",
          "[handlers][fetch][legacy]") {
  // 8 partitions of 3 batches of 10 records of 100 bytes (about 3.4 KiB
  // each); fetch.max.bytes=4096.
  BrokerFixture f({"ciuic.metrics.listener=127.0.0.1:0", "fetch.max.bytes=4096"});
  auto topic = create_topic(f, "big", 8);
  std::vector<std::pair<int32_t, int64_t>> all;
  size_t one_batch = 0;
  for (int32_t p = 0; p < 8; ++p) {
    for (int b = 0; b < 3; ++b) {
      auto batch = make_batch(10, 100);
      one_batch = batch.size();
      append(*topic->partitions[p], std::move(batch));
    }
    all.emplace_back(p, 0);
  }
  for (int16_t v : {0, 2, 3, 10}) {
    INFO("Fetch v" << v);
    // Each partition may have 1 MiB, the request 50 MiB (v3+).
    auto resp = f.call<FetchResponse>(fetch_request("big", all), v);
    size_t bytes = 0;
    int with_records = 0;
    for (const auto& d : resp.responses[0].partitions) {
      REQUIRE(d.error_code == 0);
      CHECK(d.high_watermark == 30);
      bytes += d.records.size();
      with_records += d.records.size() > 0;
      if (v <= 3 && d.records.size() > 0) {
        auto decoded = protocol::decode_message_set(d.records.bytes);
        REQUIRE(decoded.ok());
        CHECK(decoded.value().messages.size() % 10 == 0);  // whole batches
      }
    }
    // Without the bound all 8 partitions (about 27 KiB of batches, more
    // once converted) would come back. With it: the budget, overshot by at
    // most one batch (its message-set form is at most twice its size).
    CHECK(with_records >= 1);
    CHECK(with_records <= 2);
    CHECK(bytes <= 4096 + 2 * one_batch);
  }
}
