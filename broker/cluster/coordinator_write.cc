// broker/cluster/coordinator_write.cc: see coordinator_write.h.
#include "broker/cluster/coordinator_write.h"

#include <span>

#include "broker/server/disk_ring.h"
#include "metrics/log/log.h"

namespace ciuickafka::broker {

CoordinatorWrite::Queued CoordinatorWrite::append(const std::shared_ptr<Partition>& p, std::vector<uint8_t> batch,
                                                  int64_t now_ms) {
  Queued q;
  auto w = std::make_shared<CoordinatorWrite>();
  w->partition_ = p;
  w->batch_ = std::move(batch);
  storage::io::Ring* ring = DiskRing::current();
  auto r = p->append_async(
      std::span<uint8_t>(w->batch_), now_ms, ring, [w](storage::Status s) { w->complete(std::move(s)); },
      /*validated=*/false);
  if (!r.is_ok()) {  // nothing queued: the callback never runs
    q.status = r.status();
    return q;
  }
  if (ring != nullptr && ring->in_flight() > 0) {
    if (storage::Status flushed = ring->flush(); !flushed.is_ok())
      CK_LOG_ERROR("coordinator", "coordinator write: io_uring submit failed: %s", flushed.to_string().c_str());
  }
  q.result = r.value();
  q.write = std::move(w);
  return q;
}

void CoordinatorWrite::complete(storage::Status s) {
  std::function<void(storage::Status)> fn;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    status_ = s;
    fn = std::move(then_);
  }
  if (fn) fn(std::move(s));
}

void CoordinatorWrite::then(std::function<void(storage::Status)> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!done_) {
      then_ = std::move(fn);
      return;
    }
  }
  fn(status_);
}

}  // namespace ciuickafka::broker
