// tests/bench/group_bench.cc: the consumer-group benchmark's driver (issue
// #5; see group_bench.h). Run it through tests/bench/run_group_bench.sh,
// which starts a broker on 127.0.0.1 and passes --brokers and --pid.
//
//   group_bench --brokers 127.0.0.1:9092 --pid 1234 [--members 16] [--partitions 64]
//               [--commit-members 64] [--commit-seconds 20] [--heartbeat-ms 3000] [--only rebalance|commit]
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "tests/bench/broker_bench.h"
#include "tests/bench/group_bench.h"

using namespace ckbench;

namespace {

void print_phase(const char* what, double s) {
  if (s < 0) std::printf("  %-44s  did not complete within the phase limit\n", what);
  else std::printf("  %-44s  %7.3f s\n", what, s);
  std::fflush(stdout);
}

// Runs `group_bench --child-member ...` (one member until killed, at most 5 min).
pid_t spawn_member(const GroupOptions& o, const std::string& group, const std::string& conf) {
  std::vector<std::string> args = {"/proc/self/exe", "--child-member", o.brokers, o.topic, group, conf};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), environ) != 0) return -1;
  return pid;
}

int child_member(char** argv) {
  GroupOptions o;
  o.brokers = argv[2];
  o.topic = argv[3];
  Member m(o, argv[4], 999, argv[5]);
  if (!m.ok()) return 1;
  std::this_thread::sleep_for(std::chrono::minutes(5));
  return 0;
}

int rebalance_phase(const GroupOptions& o, const std::string& conf) {
  std::printf("== rebalance: %d members over %d partitions (range assignor, eager; client %s)\n", o.members,
              o.partitions, conf.c_str());
  std::vector<std::unique_ptr<Member>> members;
  auto live = [&members] {
    std::vector<Member*> out;
    for (auto& m : members)
      if (m && m->ok()) out.push_back(m.get());
    return out;
  };
  const std::string group = "group-bench-rebalance";
  const double t0 = now_s();
  for (int i = 0; i < o.members; ++i) {
    members.push_back(std::make_unique<Member>(o, group, i, conf));
    if (!members.back()->ok() || !members.back()->error().empty()) {
      std::printf("  member %d: %s\n", i, members.back()->error().c_str());
      return 1;
    }
  }
  const double cold = wait_covered(live(), o.partitions, o.phase_timeout_s);
  const double cold_total = cold < 0 ? -1 : now_s() - t0;  // from the first member's creation
  print_phase("cold start: subscribe -> all assigned", cold_total);
  if (cold < 0) return 1;

  // One member leaves (consumer close: LeaveGroup).
  double t = now_s();
  members.back()->close();
  members.back().reset();
  double s = wait_covered(live(), o.partitions, o.phase_timeout_s);
  print_phase("member leaves (close) -> 15 reassigned", s < 0 ? -1 : now_s() - t);

  // A new member joins: a child process (so that it can be SIGKILLed
  // below); the 15 here end up with all partitions but the child's share.
  t = now_s();
  const pid_t child = spawn_member(o, group, conf);
  if (child <= 0) {
    std::printf("  cannot start the child member\n");
    return 1;
  }
  s = wait_covered(live(), o.partitions - o.partitions / o.members, o.phase_timeout_s);
  print_phase("member joins -> 16 assigned", s < 0 ? -1 : now_s() - t);

  // The child is killed (SIGKILL): no LeaveGroup, its connections just close.
  t = now_s();
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  s = wait_covered(live(), o.partitions, o.phase_timeout_s);
  print_phase("member SIGKILLed -> 15 reassigned", s < 0 ? -1 : now_s() - t);
  for (auto& m : members)
    if (m) m->close();
  return 0;
}

int commit_phase(const GroupOptions& o) {
  std::printf("== commit: %d members, one synchronous OffsetCommit each per %d ms, %.0f s\n", o.commit_members,
              o.commit_interval_ms, o.commit_seconds);
  std::fflush(stdout);
  CommitResult r = run_commits(o);
  if (r.join_s < 0 || (r.commits == 0 && !r.first_error.empty())) {
    std::printf("  failed: %s\n", r.first_error.c_str());
    return 1;
  }
  const double rate = r.secs > 0 ? r.commits / r.secs : 0;
  const double target = o.commit_members * 1000.0 / o.commit_interval_ms;
  std::printf("  64 members assigned after                      %7.3f s\n", r.join_s);
  std::printf("  commits acknowledged                           %7ld  (%ld failed%s%s)\n", r.commits, r.failed,
              r.first_error.empty() ? "" : ", first: ", r.first_error.c_str());
  std::printf("  commits/s                                      %9.1f  (offered %.0f/s)\n", rate, target);
  std::printf("  commit latency p50 / p99 / max                 %.2f / %.2f / %.2f ms\n", r.p50_ms, r.p99_ms, r.max_ms);
  std::printf("  broker CPU                                     %.2f CPU-s in %.1f s = %.1f%% of a core, %.1f CPU-ms per 1000 commits\n",
              r.broker_cpu_s, r.secs, r.secs > 0 ? 100 * r.broker_cpu_s / r.secs : 0,
              r.commits > 0 ? 1e6 * r.broker_cpu_s / static_cast<double>(r.commits) : 0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 6 && std::strcmp(argv[1], "--child-member") == 0) return child_member(argv);
  GroupOptions o;
  std::string only;
  int heartbeat_ms = 3000;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--brokers") o.brokers = v;
    else if (k == "--pid") o.broker_pid = std::atoi(v.c_str());
    else if (k == "--members") o.members = std::atoi(v.c_str());
    else if (k == "--partitions") o.partitions = std::atoi(v.c_str());
    else if (k == "--commit-members") o.commit_members = std::atoi(v.c_str());
    else if (k == "--commit-seconds") o.commit_seconds = std::atof(v.c_str());
    else if (k == "--heartbeat-ms") heartbeat_ms = std::atoi(v.c_str());
    else if (k == "--only") only = v;
    else {
      std::fprintf(stderr, "group_bench: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (o.brokers.empty() || o.broker_pid <= 0) {
    std::fprintf(stderr, "usage: group_bench --brokers HOST:PORT --pid BROKER_PID [options]\n");
    return 2;
  }
  // Bounds: this is a load test; keep it one.
  o.members = std::min(std::max(o.members, 2), 64);
  o.commit_members = std::min(std::max(o.commit_members, 1), 256);
  o.commit_seconds = std::min(std::max(o.commit_seconds, 1.0), 120.0);
  if (std::string err = create_topic(o.brokers, o.topic, o.partitions); !err.empty()) {
    std::fprintf(stderr, "group_bench: %s\n", err.c_str());
    return 1;
  }
  const std::string conf = "heartbeat.interval.ms=" + std::to_string(heartbeat_ms);
  int rc = 0;
  if (only.empty() || only == "rebalance") rc |= rebalance_phase(o, conf);
  if (only.empty() || only == "commit") rc |= commit_phase(o);
  return rc;
}
