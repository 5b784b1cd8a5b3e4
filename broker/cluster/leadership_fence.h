// broker/cluster/leadership_fence.h: stops a leader that may be stale from
// serving (cluster mode).
//
// The case it exists for: a broker frozen (SIGSTOP, a VM pause, a stalled
// disk holding every thread) past its ZooKeeper session timeout. Meanwhile
// its session expired, the controller moved its leaderships and clients
// wrote to the new leaders. When it wakes, its network threads answer the
// requests already in their sockets before anything else runs: as a leader
// whose log is now behind, a consumer's fetch position is out of range
// (librdkafka then resets to the earliest offset: the chaos run saw a
// position go from 2815 back to 0), and a ListOffsets answers a stale end.
// Kafka in ZooKeeper mode has the same window (and newer clients close it
// with the leader epoch); this class closes it on the broker's side.
//
// Two fences, both checked by may_serve() on every leader read or write:
// - a pause: a ticker thread stamps the time every 100 ms; a gap of more
//   than pause_threshold_ms since the last stamp (noticed by the ticker or
//   by the request itself, whichever runs first) means this process did not
//   run for that long. Leaders stop serving until a ZooKeeper round trip
//   that started after the gap succeeds (sync_succeeded): then the session
//   outlived the pause, nobody moved a leadership, and serving resumes;
// - an expired session: from the expiry, a leader partition serves only
//   once the controller has spoken about it again (a LeaderAndIsr that
//   named it, confirmed_ms) after this broker registered anew: the
//   controller treats the broker as bounced and sends every partition's
//   state to it.
// A fenced leader answers NOT_LEADER_OR_FOLLOWER, which clients retry
// after a metadata refresh.
//
// Thread-safety: may_serve and the notifications may be called from any
// thread (atomics only); start/stop from one owner.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace ciuickafka::broker {

class LeadershipFence {
 public:
  // on_pause runs (on the thread that noticed the pause; it must be short)
  // once per pause: it asks the membership for a ZooKeeper round trip.
  LeadershipFence(int64_t pause_threshold_ms, std::function<void()> on_pause);
  ~LeadershipFence();
  LeadershipFence(const LeadershipFence&) = delete;
  LeadershipFence& operator=(const LeadershipFence&) = delete;

  void start();  // the ticker thread
  void stop();   // joins it; idempotent

  // Whether a leader partition whose last word from the controller came
  // at confirmed_ms (steady clock, ms) may serve now.
  bool may_serve(int64_t confirmed_ms);

  // The membership: a round trip that started at started_ms succeeded.
  void sync_succeeded(int64_t started_ms);
  // The membership: the session expired (the broker registers anew).
  void session_expired();
  // The membership: registered on a new session (after an expiry).
  void registered_anew();

  // Pauses noticed (metrics, tests).
  uint64_t pauses() const { return pauses_.load(std::memory_order_relaxed); }

  static int64_t steady_ms();

  // Tests: as if the process had not run since then (the next may_serve or
  // tick notices a gap).
  void simulate_pause_for_tests(int64_t ms) { last_tick_ms_.fetch_sub(ms); }

 private:
  void notice_gap(int64_t now);
  void run();

  const int64_t threshold_ms_;
  const std::function<void()> on_pause_;
  std::atomic<int64_t> last_tick_ms_;
  std::atomic<int64_t> paused_since_{0};   // 0: no pause fence
  std::atomic<int64_t> expired_since_{0};  // 0: no session expiry seen
  std::atomic<uint64_t> pauses_{0};
  std::mutex mu_;  // stop_, for the ticker's wait
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace ciuickafka::broker
