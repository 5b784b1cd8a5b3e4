// tests/bench/group_bench_commit.cc: the OffsetCommit phase of the group
// benchmark (see group_bench.h): 64 members, one synchronous commit per
// member per 100 ms, for a bounded time, with the broker's CPU seconds.
#include <algorithm>
#include <chrono>
#include <memory>

#include "tests/bench/broker_bench.h"
#include "tests/bench/group_bench.h"

namespace ckbench {

CommitResult run_commits(const GroupOptions& o) {
  CommitResult r;
  std::vector<std::unique_ptr<Member>> members;
  std::vector<Member*> raw;
  const std::string group = "group-bench-commits";
  for (int i = 0; i < o.commit_members; ++i) {
    members.push_back(std::make_unique<Member>(o, group, 1000 + i));
    if (!members.back()->ok() || !members.back()->error().empty()) {
      r.first_error = members.back()->error();
      return r;
    }
    raw.push_back(members.back().get());
  }
  r.join_s = wait_covered(raw, o.partitions, o.phase_timeout_s);
  if (r.join_s < 0) {
    r.first_error = "the 64 members did not all get partitions in time";
    return r;
  }
  struct Stats {
    std::mutex mu;
    std::vector<double> latency_ms;
    long ok = 0, failed = 0;
    std::string first_error;
  };
  auto stats = std::make_shared<Stats>();
  std::atomic<bool> running{true};
  const ProcStat before = read_proc(o.broker_pid);
  const double t0 = now_s();
  for (Member* m : raw) {
    auto next = std::make_shared<double>(now_s());
    auto offset = std::make_shared<int64_t>(0);
    m->set_work([m, next, offset, stats, &running, topic = o.topic,
                 interval = o.commit_interval_ms / 1000.0](rd_kafka_t* rk) {
      if (!running.load() || now_s() < *next) return;
      *next += interval;
      auto parts = m->assignment();
      if (parts.empty()) return;
      rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(static_cast<int>(parts.size()));
      ++*offset;
      for (int p : parts) rd_kafka_topic_partition_list_add(list, topic.c_str(), p)->offset = *offset;
      const double s = now_s();
      rd_kafka_resp_err_t err = rd_kafka_commit(rk, list, 0);
      const double ms = (now_s() - s) * 1000;
      // A per-partition error shows in the list.
      for (int i = 0; i < list->cnt && !err; ++i) err = list->elems[i].err;
      rd_kafka_topic_partition_list_destroy(list);
      std::lock_guard<std::mutex> lock(stats->mu);
      if (err) {
        ++stats->failed;
        if (stats->first_error.empty()) stats->first_error = rd_kafka_err2str(err);
      } else {
        ++stats->ok;
        stats->latency_ms.push_back(ms);
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(o.commit_seconds * 1000)));
  running = false;
  r.secs = now_s() - t0;
  const ProcStat after = read_proc(o.broker_pid);
  for (Member* m : raw) m->set_work(nullptr);
  {
    std::lock_guard<std::mutex> lock(stats->mu);
    r.commits = stats->ok;
    r.failed = stats->failed;
    r.first_error = stats->first_error;
    auto& l = stats->latency_ms;
    std::sort(l.begin(), l.end());
    if (!l.empty()) {
      r.p50_ms = l[l.size() / 2];
      r.p99_ms = l[std::min(l.size() - 1, l.size() * 99 / 100)];
      r.max_ms = l.back();
    }
  }
  if (before.ok && after.ok) r.broker_cpu_s = after.cpu_s - before.cpu_s;
  for (auto& m : members) m->close();
  return r;
}

}  // namespace ckbench
