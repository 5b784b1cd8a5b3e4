// storage/group_commit.cc: the flusher thread behind group commit.
#include "storage/group_commit.h"

#include <unordered_map>

namespace ciuickafka::storage {

GroupCommitter::GroupCommitter() : thread_([this] { run(); }) {}

GroupCommitter::~GroupCommitter() { stop(); }

void GroupCommitter::sync_to(std::shared_ptr<Log> log, int64_t offset, Callback done) {
  {
    std::lock_guard lock(mu_);
    if (!stopping_) {
      pending_.push_back(Request{std::move(log), offset, std::move(done)});
      cv_.notify_one();
      return;
    }
  }
  done(Status::invalid_argument("group commit has stopped"));
}

void GroupCommitter::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    cv_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

GroupCommitter::Stats GroupCommitter::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void GroupCommitter::run() {
  std::vector<Request> round;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
      if (pending_.empty()) return;  // stopping, and everything answered
      round.swap(pending_);
      ++stats_.rounds;
    }
    serve(round);
    round.clear();
  }
}

void GroupCommitter::serve(std::vector<Request>& round) {
  // One sync per distinct log, covering the highest offset asked of it.
  struct PerLog {
    int64_t wanted = 0;
    Status status;
    int64_t durable = 0;
  };
  std::unordered_map<Log*, PerLog> logs;
  for (const auto& r : round) {
    auto& p = logs[r.log.get()];
    p.wanted = std::max(p.wanted, r.offset);
  }
  uint64_t syncs = 0;
  for (auto& [log, p] : logs) {
    if (log->recovery_point() >= p.wanted) {
      p.durable = log->recovery_point();
      continue;
    }
    auto durable = log->sync_data();
    ++syncs;
    if (durable) {
      p.durable = *durable;
    } else {
      p.status = durable.status();
    }
  }
  {
    std::lock_guard lock(mu_);
    stats_.syncs += syncs;
    stats_.requests += round.size();
  }
  for (auto& r : round) {
    const PerLog& p = logs[r.log.get()];
    if (!p.status.is_ok()) {
      r.done(p.status);
    } else if (p.durable < r.offset) {
      r.done(Status::invalid_argument(r.log->dir() + ": sync_to offset " + std::to_string(r.offset) +
                                      " is past the log end offset"));
    } else {
      r.done(Status::ok());
    }
  }
}

}  // namespace ciuickafka::storage
