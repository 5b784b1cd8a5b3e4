// broker/produce/acks_all_wait.cc: one waiting acks=all produce (see the
// header): a countdown over group-commit callbacks, raced by a timer.
#include "broker/produce/acks_all_wait.h"

#include <mutex>

#include "broker/broker.h"

namespace ciuickafka::broker::produce {
namespace {

class Waiter : public std::enable_shared_from_this<Waiter> {
 public:
  Waiter(Broker& broker, size_t n, AcksFinish finish)
      : broker_(broker),
        timer_(broker.background()),
        results_(n, protocol::ErrorCode::REQUEST_TIMED_OUT),
        remaining_(n),
        finish_(std::move(finish)) {}

  void start(std::vector<DurableTarget> targets, int32_t timeout_ms) {
    broker_.metrics().produce_purgatory().Increment();
    auto self = shared_from_this();
    timer_.expires_after(std::chrono::milliseconds(std::max(timeout_ms, 0)));
    timer_.async_wait([self](const boost::system::error_code& ec) {
      if (!ec) self->complete_by_timeout();
    });
    for (size_t i = 0; i < targets.size(); ++i) {
      broker_.logs().sync_to(std::move(targets[i].log), targets[i].end_offset,
                             [self, i](storage::Status s) { self->synced(i, s); });
    }
  }

 private:
  void synced(size_t i, const storage::Status& s) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (done_) return;
      results_[i] = s.is_ok() ? protocol::ErrorCode::NONE : protocol::ErrorCode::KAFKA_STORAGE_ERROR;
      if (--remaining_ > 0) return;
      done_ = true;
    }
    auto self = shared_from_this();
    asio::post(timer_.get_executor(), [self] { self->timer_.cancel(); });
    finish();
  }

  void complete_by_timeout() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (done_) return;
      done_ = true;
    }
    finish();
  }

  // Called once, after done_ was set; results_ no longer change.
  void finish() {
    broker_.metrics().produce_purgatory().Decrement();
    AcksFinish f = std::move(finish_);
    f(results_);
  }

  Broker& broker_;
  asio::steady_timer timer_;
  std::mutex mu_;
  std::vector<protocol::ErrorCode> results_;  // under mu_ until done_
  size_t remaining_;                          // under mu_
  bool done_ = false;                         // under mu_
  AcksFinish finish_;
};

}  // namespace

void wait_for_durability(Broker& broker, std::vector<DurableTarget> targets, int32_t timeout_ms,
                         AcksFinish finish) {
  if (targets.empty()) {
    finish({});
    return;
  }
  auto w = std::make_shared<Waiter>(broker, targets.size(), std::move(finish));
  w->start(std::move(targets), timeout_ms);
}

}  // namespace ciuickafka::broker::produce
