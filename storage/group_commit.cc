// storage/group_commit.cc: the flusher thread behind group commit.
#include "storage/group_commit.h"

#include <optional>
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

void GroupCommitter::set_round_observer(RoundObserver fn) {
  auto p = fn ? std::make_shared<const RoundObserver>(std::move(fn)) : nullptr;
  std::lock_guard lock(mu_);
  observer_ = std::move(p);
}

void GroupCommitter::run() {
  auto ring = io::Ring::create(64);
  if (ring) {
    ring_ = std::move(ring).value();
    std::lock_guard lock(mu_);
    stats_.ring = true;
  }
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
    std::optional<Log::SyncPlan> plan;
    Status synced;  // the first failed fdatasync of the plan's files
  };
  std::unordered_map<Log*, PerLog> logs;
  for (const auto& r : round) {
    auto& p = logs[r.log.get()];
    p.wanted = std::max(p.wanted, r.offset);
  }
  uint64_t syncs = 0;
  const auto started = std::chrono::steady_clock::now();
  for (auto& [log, p] : logs) {
    if (log->recovery_point() >= p.wanted) {
      p.durable = log->recovery_point();
      continue;
    }
    auto plan = log->prepare_sync();
    if (!plan) {
      p.status = plan.status();
      continue;
    }
    if (!*plan) {
      p.durable = log->recovery_point();
      continue;
    }
    p.plan = std::move(**plan);
    ++syncs;
    for (const auto& f : p.plan->files) {
      PerLog* pp = &p;
      Status queued = ring_ && f->fd() >= 0
                          ? ring_->submit_fdatasync(f->fd(), [pp](Status s) {
                              if (!s.is_ok() && pp->synced.is_ok()) pp->synced = std::move(s);
                            })
                          : Status::unsupported(0, "no ring");
      if (queued.is_ok()) continue;
      Status s = f->sync();  // blocking fallback
      if (!s.is_ok() && p.synced.is_ok()) p.synced = std::move(s);
    }
  }
  if (ring_ && ring_->in_flight() > 0) {
    Status flushed = ring_->flush();
    while (ring_->in_flight() > 0) {
      auto n = ring_->wait_completions(ring_->in_flight());
      if (!n) {
        flushed = n.status();
        break;
      }
    }
    if (!flushed.is_ok()) {
      // The ring itself failed: nothing in this round can be promised, and
      // later rounds use blocking syncs (the ring's destructor waits for
      // what it still has in flight and drops those callbacks).
      ring_.reset();
      {
        std::lock_guard lock(mu_);
        stats_.ring = false;
      }
      for (auto& [log, p] : logs)
        if (p.plan && p.synced.is_ok()) p.synced = flushed;
    }
  }
  for (auto& [log, p] : logs) {
    if (!p.plan) continue;
    auto durable = log->finish_sync(*p.plan, p.synced);
    if (durable) {
      p.durable = *durable;
    } else {
      p.status = durable.status();
    }
  }
  const auto synced_at = std::chrono::steady_clock::now();
  std::shared_ptr<const RoundObserver> observer;
  {
    std::lock_guard lock(mu_);
    stats_.syncs += syncs;
    stats_.requests += round.size();
    observer = observer_;
  }
  if (observer && syncs > 0) {
    (*observer)(Round{round.size(), static_cast<size_t>(syncs),
                      std::chrono::duration_cast<std::chrono::nanoseconds>(synced_at - started)});
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
