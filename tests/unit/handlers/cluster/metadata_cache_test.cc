// tests/unit/handlers/cluster/metadata_cache_test.cc: MetadataCache updates
// (full, partial, deletion, live brokers replaced), fencing, old
// UpdateMetadata versions through the real codec, and waiters.
#include <catch2/catch.hpp>

#include "broker/cluster/metadata_cache.h"
#include "protocol/wire/reader.h"
#include "protocol/wire/writer.h"
#include "tests/unit/handlers/cluster/cluster_fixture.h"

namespace ciuickafka::broker::test {
namespace {

using protocol::ErrorCode;

protocol::UpdateMetadataRequest round_trip(const protocol::UpdateMetadataRequest& in, int16_t version) {
  protocol::Writer w;
  in.encode(w, version);
  REQUIRE(w.ok());
  protocol::Reader r(w.buffer());
  protocol::UpdateMetadataRequest out;
  out.decode(r, version);
  REQUIRE(r.ok());
  return out;
}

TEST_CASE("metadata cache: a full update, then a partial one that names one partition") {
  MetadataCache cache;
  CHECK_FALSE(cache.initialized());
  CHECK(cache.snapshot()->topics.empty());
  auto full = update_metadata({{"a", 0, 1, 4, {1, 2}, {1, 2}}, {"a", 1, 2, 5, {2}, {2, 3}}, {"b", 0, 3, 1, {3}, {3}}},
                              {1, 2, 3});
  REQUIRE(cache.update(full, 8) == ErrorCode::NONE);
  CHECK(cache.initialized());
  auto s = cache.snapshot();
  CHECK(s->controller_id == 9);
  REQUIRE(s->brokers.size() == 3);
  REQUIRE(s->broker(2) != nullptr);
  REQUIRE(s->broker(2)->endpoint("plaintext") != nullptr);  // listener names are case-insensitive
  CHECK(s->broker(2)->endpoint("PLAINTEXT")->port == 9002);
  const CachedPartition* a1 = s->partition("a", 1);
  REQUIRE(a1 != nullptr);
  CHECK(a1->leader == 2);
  CHECK(a1->leader_epoch == 5);
  CHECK(a1->replicas == std::vector<int32_t>{2, 3});
  CHECK(a1->zk_version == 3);
  CHECK(s->topic("a")->id == uuid(7));
  // What a controlled shutdown of each broker moves: b-0 has no other replica.
  CHECK(s->topics_led_with_followers(1) == std::vector<std::string>{"a"});
  CHECK(s->topics_led_with_followers(2) == std::vector<std::string>{"a"});
  CHECK(s->topics_led_with_followers(3).empty());

  // Partial: only a-0 changes; broker 3 left, so the live list shrinks.
  auto partial = update_metadata({{"a", 0, 2, 6, {2}, {1, 2}}}, {1, 2}, 2);
  REQUIRE(cache.update(partial, 8) == ErrorCode::NONE);
  auto s2 = cache.snapshot();
  CHECK(s2->partition("a", 0)->leader == 2);
  CHECK(s2->partition("a", 0)->leader_epoch == 6);
  CHECK(s2->partition("a", 1)->leader_epoch == 5);  // untouched
  CHECK(s2->partition("b", 0) != nullptr);
  CHECK(s2->brokers.size() == 2);
  CHECK(s2->broker(3) == nullptr);
  // The old snapshot is unchanged (readers keep what they took).
  CHECK(s->partition("a", 0)->leader == 1);
  CHECK(s->brokers.size() == 3);
}

TEST_CASE("metadata cache: leader -2 (being deleted) removes the partitions, then the topic") {
  MetadataCache cache;
  REQUIRE(cache.update(update_metadata({{"t", 0}, {"t", 1}}, {1}), 8) == ErrorCode::NONE);
  std::vector<std::pair<std::string, int32_t>> deleted;
  REQUIRE(cache.update(update_metadata({{"t", 0, kLeaderDuringDelete}}, {1}), 8, &deleted) == ErrorCode::NONE);
  CHECK(deleted == std::vector<std::pair<std::string, int32_t>>{{"t", 0}});
  CHECK(cache.snapshot()->partition("t", 0) == nullptr);
  CHECK(cache.snapshot()->topic("t") != nullptr);
  REQUIRE(cache.update(update_metadata({{"t", 1, kLeaderDuringDelete}}, {1}), 8) == ErrorCode::NONE);
  CHECK(cache.snapshot()->topic("t") == nullptr);
  CHECK(cache.snapshot()->topic(uuid(7)) == nullptr);
}

TEST_CASE("metadata cache: controller epoch and broker epoch fencing") {
  MetadataCache cache;
  REQUIRE(cache.update(update_metadata({{"t", 0}}, {1}, 5), 8) == ErrorCode::NONE);
  CHECK(cache.controller_epoch() == 5);
  // An older controller: rejected, nothing changes.
  CHECK(cache.update(update_metadata({{"t", 0, 2}}, {1, 2}, 4), 8) == ErrorCode::STALE_CONTROLLER_EPOCH);
  CHECK(cache.snapshot()->partition("t", 0)->leader == 1);
  CHECK(cache.check_fence(4, -1, -1) == ErrorCode::STALE_CONTROLLER_EPOCH);
  CHECK(cache.check_fence(5, -1, -1) == ErrorCode::NONE);
  CHECK(cache.check_fence(6, -1, -1) == ErrorCode::NONE);
  // Broker epoch: -1 in the request is never stale; lower than ours is; a
  // higher one is accepted (the controller saw our new epoch first).
  CHECK(cache.check_fence(5, -1, 100) == ErrorCode::NONE);
  CHECK(cache.check_fence(5, 99, 100) == ErrorCode::STALE_BROKER_EPOCH);
  CHECK(cache.check_fence(5, 100, 100) == ErrorCode::NONE);
  CHECK(cache.check_fence(5, 101, 100) == ErrorCode::NONE);
}

TEST_CASE("metadata cache: a waiter runs once, after the update that makes its condition hold") {
  MetadataCache cache;
  auto led = [](const MetadataSnapshot& s) {
    const CachedPartition* p = s.partition("t", 0);
    return p != nullptr && p->leader >= 0;
  };
  int ran = 0;
  const MetadataCache::WaiterId id = cache.when(led, [&] { ++ran; });
  CHECK(id != 0);
  CHECK(cache.waiters() == 1);
  // An update that does not make it hold: still waiting.
  REQUIRE(cache.update(update_metadata({{"other", 0}}, {1}), 8) == ErrorCode::NONE);
  CHECK(ran == 0);
  // The one that does: run by update(), with the new snapshot already published.
  bool saw_it = false;
  const MetadataCache::WaiterId id2 = cache.when(led, [&] { saw_it = led(*cache.snapshot()); });
  REQUIRE(cache.update(update_metadata({{"t", 0, 2}}, {1, 2}), 8) == ErrorCode::NONE);
  CHECK(ran == 1);
  CHECK(saw_it);
  CHECK(cache.waiters() == 0);
  // Once only; and a waiter that has run cannot be cancelled.
  REQUIRE(cache.update(update_metadata({{"t", 0, 1}}, {1, 2}), 8) == ErrorCode::NONE);
  CHECK(ran == 1);
  CHECK_FALSE(cache.cancel(id));
  CHECK_FALSE(cache.cancel(id2));
  // A condition that holds already runs on the caller's thread at once: id 0.
  int at_once = 0;
  CHECK(cache.when(led, [&] { ++at_once; }) == 0);
  CHECK(at_once == 1);
  CHECK_FALSE(cache.cancel(0));
}

TEST_CASE("metadata cache: a cancelled waiter never runs") {
  MetadataCache cache;
  int ran = 0;
  const MetadataCache::WaiterId id =
      cache.when([](const MetadataSnapshot& s) { return s.partition("t", 0) != nullptr; }, [&] { ++ran; });
  REQUIRE(id != 0);
  CHECK(cache.cancel(id));
  CHECK_FALSE(cache.cancel(id));  // exactly one cancel wins
  REQUIRE(cache.update(update_metadata({{"t", 0}}, {1}), 8) == ErrorCode::NONE);
  CHECK(ran == 0);
  CHECK(cache.waiters() == 0);
}

TEST_CASE("metadata cache: UpdateMetadata v0 and v4 decode through the codec and apply") {
  MetadataCache cache;
  auto v0 = round_trip(update_metadata({{"old", 0, 2, 3, {2, 1}, {2, 1}}}, {1, 2}, 1, 0), 0);
  REQUIRE(cache.update(v0, 0) == ErrorCode::NONE);
  auto s = cache.snapshot();
  REQUIRE(s->broker(2) != nullptr);
  REQUIRE(s->broker(2)->endpoint("PLAINTEXT") != nullptr);
  CHECK(s->broker(2)->endpoint("PLAINTEXT")->host == "host2");
  CHECK(s->broker(2)->endpoint("PLAINTEXT")->port == 9002);
  REQUIRE(s->partition("old", 0) != nullptr);
  CHECK(s->partition("old", 0)->leader == 2);
  CHECK(s->partition("old", 0)->isr == std::vector<int32_t>{2, 1});
  CHECK(s->topic("old")->id.is_zero());  // no ids before v7

  auto v4 = round_trip(update_metadata({{"old", 0, 1, 4, {1}, {2, 1}}}, {1}, 1, 4), 4);
  REQUIRE(cache.update(v4, 4) == ErrorCode::NONE);
  CHECK(cache.snapshot()->partition("old", 0)->offline_replicas == std::vector<int32_t>{2});
  CHECK(cache.snapshot()->brokers.size() == 1);
}

}  // namespace
}  // namespace ciuickafka::broker::test
