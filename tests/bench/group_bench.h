// tests/bench/group_bench.h: the consumer-group benchmark (issue #5).
//
// group_bench drives real librdkafka consumers (C API, one rd_kafka_t and
// one polling thread per member) against a running broker:
//   rebalance: 16 members over 64 partitions; the time from subscribe until
//     every member holds a disjoint share covering all 64 partitions, for a
//     cold start, a member leaving (close), a member joining (a child
//     process), and that child SIGKILLed (no LeaveGroup: its connections
//     just close);
//   commit: 64 members, each committing its partition's offset once every
//     100 ms (synchronous rd_kafka_commit) for a bounded time; commits/s,
//     commit latency and the broker's CPU seconds (/proc/<pid>/stat).
// Every phase is bounded in members, count and wall-clock time. Not a test:
// it prints figures, it asserts nothing about timing.
//
// Thread-safety: a Member's assignment is read by the main thread under its
// mutex; everything else belongs to the member's own thread.
#pragma once

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ckbench {

struct GroupOptions {
  std::string brokers;
  int broker_pid = 0;
  std::string topic = "group-bench";
  int partitions = 64;
  int members = 16;
  int commit_members = 64;
  double commit_seconds = 20;
  int commit_interval_ms = 100;
  double phase_timeout_s = 60;
};

// One consumer group member polling on its own thread.
class Member {
 public:
  Member(const GroupOptions& o, const std::string& group, int index, const std::string& extra_conf = "");
  ~Member();  // closes (LeaveGroup)
  bool ok() const { return rk_ != nullptr; }
  const std::string& error() const { return error_; }
  std::vector<int> assignment();
  void close();  // consumer close: LeaveGroup, then destroy
  rd_kafka_t* handle() { return rk_; }
  // Runs f on the member's thread between polls (the commit loop).
  void set_work(std::function<void(rd_kafka_t*)> f);

 private:
  static void on_rebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts,
                           void* opaque);
  void loop();
  rd_kafka_t* rk_ = nullptr;
  std::string error_;
  std::mutex mu_;
  std::vector<int> assigned_;
  std::function<void(rd_kafka_t*)> work_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Seconds until every member holds partitions, all disjoint, `total` of
// them together (all partitions, or all but another process's share), or
// -1 after timeout_s.
double wait_covered(std::vector<Member*> members, int total, double timeout_s);

struct CommitResult {
  long commits = 0, failed = 0;
  double secs = 0, broker_cpu_s = 0;
  double p50_ms = 0, p99_ms = 0, max_ms = 0;
  double join_s = 0;  // until all 64 members held a partition
  std::string first_error;
};
CommitResult run_commits(const GroupOptions& o);

}  // namespace ckbench
