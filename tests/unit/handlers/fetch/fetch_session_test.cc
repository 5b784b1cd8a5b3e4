// tests/unit/handlers/fetch/fetch_session_test.cc: fetch sessions (KIP-227):
// full and incremental fetches, forgotten partitions, epochs, eviction and
// the topic-id rules.
#include <catch2/catch.hpp>

#include "broker/fetch/session_cache.h"
#include "protocol/error_code.h"
#include "protocol/generated/fetch.h"
#include "tests/unit/handlers/fetch/fetch_helpers.h"

using namespace ciuickafka;
using namespace ciuickafka::broker;
using namespace ciuickafka::broker::test;
using protocol::ErrorCode;
using protocol::FetchRequest;
using protocol::FetchResponse;

namespace {

FetchRequest session_request(int32_t id, int32_t epoch, FetchRequest req) {
  req.session_id = id;
  req.session_epoch = epoch;
  return req;
}

size_t partitions_in(const FetchResponse& r) {
  size_t n = 0;
  for (const auto& t : r.responses) n += t.partitions.size();
  return n;
}

}  // namespace

TEST_CASE("A full fetch with epoch 0 opens a session - incremental fetches send only changes", "[handlers][fetch][session]") {
  FetchFixture f;
  auto topic = create_topic(f, "t", 2);
  auto& p0 = *topic->partitions[0];
  auto& p1 = *topic->partitions[1];
  append(p0, make_batch(2, 10));

  auto resp = f.call<FetchResponse>(session_request(0, 0, fetch_request("t", {{0, 0}, {1, 0}})), 11);
  REQUIRE(resp.error_code == 0);
  const int32_t id = resp.session_id;
  REQUIRE(id != 0);
  CHECK(partitions_in(resp) == 2);
  CHECK(resp.responses[0].partitions[0].records.size() > 0);

  // Incremental, nothing changed: the consumer moved p0 to offset 2 (listed);
  // p1 is remembered at 0 and has no news.
  resp = f.call<FetchResponse>(session_request(id, 1, fetch_request("t", {{0, 2}})), 11);
  REQUIRE(resp.error_code == 0);
  CHECK(resp.session_id == id);
  CHECK(partitions_in(resp) == 0);

  // New data on p1: the session reads it at the remembered offset 0.
  append(p1, make_batch(1, 10));
  resp = f.call<FetchResponse>(session_request(id, 2, FetchRequest{}), 11);
  REQUIRE(partitions_in(resp) == 1);
  CHECK(resp.responses[0].partitions[0].partition_index == 1);
  CHECK(record_bytes(resp.responses[0].partitions[0].records) == log_bytes(p1, 0));

  // Forget p1: later appends there are not reported.
  FetchRequest forget;
  FetchRequest::ForgottenTopic ft;
  ft.topic = "t";
  ft.partitions = {1};
  forget.forgotten_topics_data.push_back(ft);
  resp = f.call<FetchResponse>(session_request(id, 3, forget), 11);
  CHECK(resp.error_code == 0);
  append(p1, make_batch(1, 10));
  resp = f.call<FetchResponse>(session_request(id, 4, FetchRequest{}), 11);
  CHECK(partitions_in(resp) == 0);
  // But p0's new data is.
  append(p0, make_batch(1, 10));
  resp = f.call<FetchResponse>(session_request(id, 5, FetchRequest{}), 11);
  REQUIRE(partitions_in(resp) == 1);
  CHECK(resp.responses[0].partitions[0].partition_index == 0);
  CHECK(resp.responses[0].partitions[0].high_watermark == 3);
}

TEST_CASE("Session errors: unknown id, wrong epoch, closed sessions", "[handlers][fetch][session]") {
  FetchFixture f;
  create_topic(f, "t");
  auto resp = f.call<FetchResponse>(session_request(12345, 1, FetchRequest{}), 11);
  CHECK(resp.error_code == protocol::to_wire(ErrorCode::FETCH_SESSION_ID_NOT_FOUND));
  CHECK(resp.session_id == 0);

  resp = f.call<FetchResponse>(session_request(0, 0, fetch_request("t", {{0, 0}})), 7);
  const int32_t id = resp.session_id;
  REQUIRE(id != 0);
  resp = f.call<FetchResponse>(session_request(id, 5, FetchRequest{}), 7);
  CHECK(resp.error_code == protocol::to_wire(ErrorCode::INVALID_FETCH_SESSION_EPOCH));
  resp = f.call<FetchResponse>(session_request(id, 1, FetchRequest{}), 7);
  CHECK(resp.error_code == 0);

  // Epoch -1 with the id closes the session and fetches without one.
  resp = f.call<FetchResponse>(session_request(id, -1, fetch_request("t", {{0, 0}})), 7);
  CHECK(resp.error_code == 0);
  CHECK(resp.session_id == 0);
  resp = f.call<FetchResponse>(session_request(id, 2, FetchRequest{}), 7);
  CHECK(resp.error_code == protocol::to_wire(ErrorCode::FETCH_SESSION_ID_NOT_FOUND));
}

TEST_CASE("The session cache evicts the least recently used session", "[handlers][fetch][session]") {
  FetchFixture f;
  create_topic(f, "t");
  f.broker().service<fetch::FetchSessionCache>().set_capacity(2);
  const int32_t a = f.call<FetchResponse>(session_request(0, 0, fetch_request("t", {{0, 0}})), 11).session_id;
  const int32_t b = f.call<FetchResponse>(session_request(0, 0, fetch_request("t", {{0, 0}})), 11).session_id;
  // Use a so that b is the least recently used.
  CHECK(f.call<FetchResponse>(session_request(a, 1, FetchRequest{}), 11).error_code == 0);
  const int32_t c = f.call<FetchResponse>(session_request(0, 0, fetch_request("t", {{0, 0}})), 11).session_id;
  CHECK(c != 0);
  CHECK(f.broker().service<fetch::FetchSessionCache>().size() == 2);
  CHECK(f.call<FetchResponse>(session_request(b, 1, FetchRequest{}), 11).error_code ==
        protocol::to_wire(ErrorCode::FETCH_SESSION_ID_NOT_FOUND));
  CHECK(f.call<FetchResponse>(session_request(a, 2, FetchRequest{}), 11).error_code == 0);
  CHECK(f.call<FetchResponse>(session_request(c, 1, FetchRequest{}), 11).error_code == 0);
}

TEST_CASE("Sessions with topic ids (v13+) stay with topic ids", "[handlers][fetch][session]") {
  FetchFixture f;
  auto topic = create_topic(f, "t");
  append(*topic->partitions[0], make_batch(1, 10));
  auto req = fetch_request("", {{0, 0}});
  req.topics[0].topic_id = topic->id;
  auto resp = f.call<FetchResponse>(session_request(0, 0, req), 13);
  const int32_t id = resp.session_id;
  REQUIRE(id != 0);
  CHECK(resp.responses[0].topic_id == topic->id);

  append(*topic->partitions[0], make_batch(1, 10));
  auto inc = f.call<FetchResponse>(session_request(id, 1, FetchRequest{}), 13);
  REQUIRE(partitions_in(inc) == 1);
  CHECK(inc.responses[0].topic_id == topic->id);

  // The same session at v12 (names): FETCH_SESSION_TOPIC_ID_ERROR.
  inc = f.call<FetchResponse>(session_request(id, 2, FetchRequest{}), 12);
  CHECK(inc.error_code == protocol::to_wire(ErrorCode::FETCH_SESSION_TOPIC_ID_ERROR));
}
