// storage/group_commit.h: group commit: acknowledge appends once they are
// fdatasync'd, with concurrent requests sharing one fdatasync.
//
// A GroupCommitter owns one flusher thread. sync_to(log, offset, done)
// queues a request; the thread takes every request queued so far, syncs
// each distinct log once (one fdatasync of the active segment's .log,
// outside the log's append lock, so appends go on), then calls every
// callback of that round. Requests that arrive while a sync runs form the
// next round, so under load one fdatasync covers many appends. A request
// already covered by the log's recovery point costs no sync.
//
// The fdatasyncs of one round go through the thread's own io_uring
// (storage/io/ring.h): every log's sync is submitted at once and the kernel
// runs them in parallel, so a round over many partitions costs about one
// fdatasync of wall time, not one per partition. Where io_uring is refused
// (or for in-memory files) the syncs are blocking calls, one after another.
//
// Guarantee: done(ok) is called only after every record of the log below
// `offset` is durable. done(error) when the sync failed (sticky per log, see
// Log::sync_data), when offset is past the log end, or when the committer
// has stopped. Callbacks run on the flusher thread (or, after stop(), on the
// caller's): they must be short and must not call sync_to re-entrantly in a
// way that waits.
//
// set_round_observer installs a function called on the flusher thread after
// every round that issued at least one fdatasync, with the round's request
// count, sync count and the wall time of its syncs (the broker feeds its
// flush-latency histogram from it); it must be short and must not block.
//
// Thread-safety: sync_to, stats and set_round_observer may be called from
// any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "storage/io/ring.h"
#include "storage/log.h"
#include "storage/status.h"

namespace ciuickafka::storage {

class GroupCommitter {
 public:
  using Callback = std::function<void(Status)>;

  struct Stats {
    uint64_t requests = 0;  // sync_to calls answered
    uint64_t syncs = 0;     // fdatasyncs issued (Log::sync_data calls that synced)
    uint64_t rounds = 0;    // batches of requests taken by the flusher
    bool ring = false;      // the syncs go through io_uring
  };

  struct Round {
    size_t requests = 0;               // sync_to calls the round answered
    size_t syncs = 0;                  // logs it fdatasync'd (>= 1)
    std::chrono::nanoseconds sync_time{0};  // from the first sync's submission to the last one's finish
  };
  using RoundObserver = std::function<void(const Round&)>;

  GroupCommitter();
  ~GroupCommitter();  // stop()
  GroupCommitter(const GroupCommitter&) = delete;
  GroupCommitter& operator=(const GroupCommitter&) = delete;

  // done is called once every record of log below offset (pass the append's
  // last_offset + 1) is durable, or with the error that prevents it.
  void sync_to(std::shared_ptr<Log> log, int64_t offset, Callback done);
  // Answers every queued request, then ends the thread. Idempotent.
  void stop();
  Stats stats() const;
  // Replaces the observer (an empty function removes it).
  void set_round_observer(RoundObserver fn);

 private:
  struct Request {
    std::shared_ptr<Log> log;
    int64_t offset;
    Callback done;
  };
  void run();
  void serve(std::vector<Request>& round);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Request> pending_;  // under mu_
  bool stopping_ = false;         // under mu_
  Stats stats_;                   // under mu_
  std::shared_ptr<const RoundObserver> observer_;  // under mu_ (the pointer)
  std::unique_ptr<io::Ring> ring_;  // the flusher thread's; null when refused
  std::thread thread_;
};

}  // namespace ciuickafka::storage
