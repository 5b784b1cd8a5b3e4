// broker/cluster/coordinator_write.h: a coordinator's append to its log
// (__consumer_offsets, __transaction_state) that never blocks a network
// thread on the write.
//
// CoordinatorWrite::append() assigns the offsets at once, so the records'
// order in the log is the order of the calls (made under the group's or
// the transactional id's lock), and queues the write on the calling
// thread's disk ring (server/disk_ring.h: a network thread's io_uring,
// submitted before it returns) as a produce does. Where the thread has no
// ring (the background executor, the I/O pool, io_uring refused or an
// in-memory file) the write is a blocking one, done before append()
// returns. then() runs its continuation once the write has completed: at
// once when it has, else on the thread that reaps the completion. The
// coordinators answer only after then(), so nothing is acknowledged before
// it is written.
//
// Thread-safety: then() may be called from any thread, once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "broker/cluster/partition.h"
#include "storage/log.h"

namespace ciuickafka::broker {

class CoordinatorWrite {
 public:
  struct Queued {
    storage::Status status;                  // not ok: nothing was written
    storage::AppendResult result;            // offsets, when status is ok
    std::shared_ptr<CoordinatorWrite> write;  // set when status is ok
  };

  // Appends batch (v2 batches built by the coordinator) to p.
  static Queued append(const std::shared_ptr<Partition>& p, std::vector<uint8_t> batch, int64_t now_ms);

  // fn(status of the write), once it has completed. At most one call.
  void then(std::function<void(storage::Status)> fn);

  // Whether the write has completed (tests).
  bool done() const {
    std::lock_guard<std::mutex> lock(mu_);
    return done_;
  }

 private:
  void complete(storage::Status s);

  mutable std::mutex mu_;
  bool done_ = false;
  storage::Status status_;
  std::function<void(storage::Status)> then_;
  std::shared_ptr<Partition> partition_;  // alive while the write is in flight
  std::vector<uint8_t> batch_;            // the bytes being written
};

}  // namespace ciuickafka::broker
