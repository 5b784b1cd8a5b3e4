// tests/unit/handlers/fetch/fetch_wait_test.cc: long polling: a fetch short
// of min_bytes waits until an append (from another thread) brings data, or
// answers empty when max_wait_ms passes; the waiting room empties again.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "broker/fetch/waiting_room.h"
#include "protocol/generated/fetch.h"
#include "tests/unit/handlers/fetch/fetch_helpers.h"

using namespace ciuickafka;
using namespace ciuickafka::broker;
using namespace ciuickafka::broker::test;
using protocol::FetchResponse;
using Clock = std::chrono::steady_clock;

namespace {

// Waits (yielding, bounded) until pred holds; false on timeout.
template <class Pred>
bool wait_for_event(Pred pred, std::chrono::seconds limit = std::chrono::seconds(20)) {
  const auto end = Clock::now() + limit;
  while (!pred()) {
    if (Clock::now() >= end) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace

TEST_CASE("A long-polling fetch wakes on an append", "[handlers][fetch][wait]") {
  FetchFixture f;
  auto topic = create_topic(f, "t");
  auto partition = topic->partitions[0];
  auto req = fetch_request("t", {{0, 0}});
  req.min_bytes = 1;
  req.max_wait_ms = 60'000;

  // The append comes once the fetch is parked and has looked once more
  // (found nothing): only a wake can answer it before max_wait_ms.
  auto& room = f.broker().service<fetch::FetchWaitingRoom>();
  bool parked = false;
  std::thread writer([&room, &parked, partition] {
    parked = wait_for_event([&] { return room.size() == 1 && room.short_attempts() >= 1; });
    append(*partition, make_batch(3, 50));
  });
  const auto start = Clock::now();
  auto resp = f.call<FetchResponse>(req, 11);
  const auto waited = Clock::now() - start;
  writer.join();
  CHECK(parked);
  CHECK(waited < std::chrono::milliseconds(30'000));  // woken, not timed out
  const auto& d = resp.responses[0].partitions[0];
  CHECK(d.high_watermark == 3);
  CHECK(record_bytes(d.records) == log_bytes(*partition, 0));
  CHECK(f.broker().service<fetch::FetchWaitingRoom>().size() == 0);
  CHECK(f.broker().metrics().fetch_purgatory().Value() == 0);
}

TEST_CASE("A long-polling fetch answers empty after max_wait_ms", "[handlers][fetch][wait]") {
  FetchFixture f;
  auto topic = create_topic(f, "t");
  auto req = fetch_request("t", {{0, 0}});
  req.min_bytes = 1;
  req.max_wait_ms = 300;
  const auto start = Clock::now();
  auto resp = f.call<FetchResponse>(req, 11);
  const auto waited = Clock::now() - start;
  CHECK(waited >= std::chrono::milliseconds(280));
  CHECK(waited < std::chrono::milliseconds(3'000));
  CHECK(resp.responses[0].partitions[0].error_code == 0);
  CHECK(resp.responses[0].partitions[0].records.size() == 0);
  CHECK(f.broker().service<fetch::FetchWaitingRoom>().size() == 0);
}

TEST_CASE("A fetch short of min_bytes keeps waiting through small appends", "[handlers][fetch][wait]") {
  FetchFixture f;
  auto topic = create_topic(f, "t");
  auto partition = topic->partitions[0];
  const size_t one = make_batch(1, 100).size();
  auto req = fetch_request("t", {{0, 0}});
  req.min_bytes = static_cast<int32_t>(one * 2);
  req.max_wait_ms = 60'000;
  // One batch: the fetch re-reads, is still short and keeps waiting (it is
  // still parked after that re-read); the second batch answers it.
  auto& room = f.broker().service<fetch::FetchWaitingRoom>();
  bool parked = false, still_waiting = false;
  std::thread writer([&] {
    parked = wait_for_event([&] { return room.size() == 1 && room.short_attempts() >= 1; });
    const uint64_t before = room.short_attempts();
    append(*partition, make_batch(1, 100));
    still_waiting = wait_for_event([&] { return room.short_attempts() > before; }) && room.size() == 1;
    append(*partition, make_batch(1, 100));
  });
  const auto start = Clock::now();
  auto resp = f.call<FetchResponse>(req, 11);
  const auto waited = Clock::now() - start;
  writer.join();
  CHECK(parked);
  CHECK(still_waiting);
  CHECK(waited < std::chrono::milliseconds(30'000));  // woken, not timed out
  CHECK(resp.responses[0].partitions[0].records.size() == one * 2);
  CHECK(room.size() == 0);
}

TEST_CASE("Errors and max_wait_ms 0 answer at once", "[handlers][fetch][wait]") {
  FetchFixture f;
  create_topic(f, "t");
  auto req = fetch_request("t", {{0, 0}, {9, 0}});
  req.min_bytes = 1;
  req.max_wait_ms = 10'000;
  const auto start = Clock::now();
  auto resp = f.call<FetchResponse>(req, 11);
  CHECK(Clock::now() - start < std::chrono::milliseconds(2'000));
  CHECK(resp.responses[0].partitions[1].error_code != 0);
}

TEST_CASE("Shutdown answers a waiting fetch", "[handlers][fetch][wait]") {
  FetchFixture f;
  create_topic(f, "t");
  std::thread stopper([&f] {
    while (f.broker().service<fetch::FetchWaitingRoom>().size() == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    f.broker().shutdown();
  });
  auto req = fetch_request("t", {{0, 0}});
  req.min_bytes = 1;
  req.max_wait_ms = 30'000;
  const auto start = Clock::now();
  auto resp = f.call<FetchResponse>(req, 11);
  stopper.join();
  CHECK(Clock::now() - start < std::chrono::milliseconds(10'000));
  CHECK(resp.responses[0].partitions[0].records.size() == 0);
}
