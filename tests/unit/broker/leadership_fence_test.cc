// tests/unit/broker/leadership_fence_test.cc: LeadershipFence, the pause
// and session-expiry fences on serving leaders (broker/cluster/
// leadership_fence.h). The clock is real; a pause is simulated by moving
// the last tick back, as if the process had not run since.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "broker/cluster/leadership_fence.h"

namespace ciuickafka::broker::test {

TEST_CASE("leadership fence: a pause stops leaders until a sync that started after it succeeds", "[fence]") {
  std::atomic<int> syncs_asked{0};
  LeadershipFence fence(500, [&] { ++syncs_asked; });
  const int64_t confirmed = LeadershipFence::steady_ms();
  CHECK(fence.may_serve(confirmed));
  CHECK(syncs_asked == 0);

  const int64_t before_pause = LeadershipFence::steady_ms() - 1;
  fence.simulate_pause_for_tests(2000);
  CHECK_FALSE(fence.may_serve(confirmed));  // the request itself notices the gap
  CHECK(syncs_asked == 1);
  CHECK(fence.pauses() == 1);
  CHECK_FALSE(fence.may_serve(confirmed));
  CHECK(syncs_asked == 1);  // one sync asked per pause

  fence.sync_succeeded(before_pause);  // a round trip from before the pause proves nothing
  CHECK_FALSE(fence.may_serve(confirmed));
  fence.sync_succeeded(LeadershipFence::steady_ms());
  CHECK(fence.may_serve(confirmed));
}

TEST_CASE("leadership fence: after a session expiry a leader serves once the controller spoke again", "[fence]") {
  LeadershipFence fence(60000, {});
  const int64_t old_confirmation = LeadershipFence::steady_ms() - 10;
  CHECK(fence.may_serve(old_confirmation));
  fence.session_expired();
  CHECK_FALSE(fence.may_serve(old_confirmation));
  fence.registered_anew();
  CHECK_FALSE(fence.may_serve(old_confirmation));
  // A LeaderAndIsr after the new registration confirms the partition.
  CHECK(fence.may_serve(LeadershipFence::steady_ms()));
  fence.sync_succeeded(LeadershipFence::steady_ms());  // does not lift the expiry fence
  CHECK_FALSE(fence.may_serve(old_confirmation));
}

TEST_CASE("leadership fence: the ticker notices a pause by itself", "[fence]") {
  std::atomic<int> syncs_asked{0};
  LeadershipFence fence(300, [&] { ++syncs_asked; });
  fence.start();
  fence.simulate_pause_for_tests(5000);
  const int64_t deadline = LeadershipFence::steady_ms() + 5000;
  while (syncs_asked == 0 && LeadershipFence::steady_ms() < deadline) std::this_thread::yield();
  CHECK(syncs_asked == 1);
  CHECK_FALSE(fence.may_serve(LeadershipFence::steady_ms()));
  fence.stop();
}

}  // namespace ciuickafka::broker::test
