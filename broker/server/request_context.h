// broker/server/request_context.h: everything a handler gets for one request.
//
// The connection reads a frame, decodes its header and hands the handler a
// RequestContext by value. A handler answers by calling respond() exactly
// once, either before it returns (most APIs) or later from any thread
// (Produce waiting for its fsync, Fetch waiting for data): the connection
// then sends responses strictly in request order, whatever order they were
// completed in.
//
// The frame is shared and owned here, so decoded views into it (record data
// of a produce) stay valid for as long as the handler keeps the context. The
// handler owns the bytes: Produce rewrites its batches' offsets and leader
// epoch in place and writes them to the log from the frame (no copy).
//
// Thread-safety: a context belongs to one handler invocation; respond() may
// be called from any thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "broker/net/asio.h"
#include "broker/server/frame_bytes.h"
#include "broker/server/response.h"
#include "protocol/generated/headers.h"

namespace ciuickafka::broker {

class Broker;

// Time a request's work spent on other threads (the I/O pool, the admin
// worker) for the request_percentage quota: the finished tasks' total and
// when the running one began (0: none running). Set by dispatch only while
// client quotas are in use; WorkerTimer marks a task.
struct WorkerSpan {
  std::atomic<int64_t> done_ns{0};
  std::atomic<std::chrono::steady_clock::rep> running_since{0};
  // The time so far, counting a running task up to now.
  int64_t ns(std::chrono::steady_clock::time_point now) const {
    int64_t total = done_ns.load(std::memory_order_acquire);
    const auto since = running_since.load(std::memory_order_acquire);
    if (since != 0)
      total += std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        now - std::chrono::steady_clock::time_point(
                                                  std::chrono::steady_clock::duration(since)))
                                        .count());
    return total;
  }
};

class WorkerTimer {
 public:
  explicit WorkerTimer(WorkerSpan* span) : span_(span), start_(std::chrono::steady_clock::now()) {
    if (span_ != nullptr)
      span_->running_since.store(std::max<std::chrono::steady_clock::rep>(1, start_.time_since_epoch().count()),
                                 std::memory_order_release);
  }
  ~WorkerTimer() {
    if (span_ == nullptr) return;
    const auto ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count();
    span_->done_ns.fetch_add(ns, std::memory_order_acq_rel);
    span_->running_since.store(0, std::memory_order_release);
  }
  WorkerTimer(const WorkerTimer&) = delete;
  WorkerTimer& operator=(const WorkerTimer&) = delete;

 private:
  WorkerSpan* span_;
  std::chrono::steady_clock::time_point start_;
};

struct RequestContext {
  Broker* broker = nullptr;
  protocol::RequestHeader header;    // api key, version, correlation id, client id
  int16_t header_version = 1;
  std::shared_ptr<FrameBytes> frame;  // the request, size prefix excluded
  std::span<const uint8_t> body;      // the body inside *frame
  asio::any_io_executor executor;    // the connection's thread: timers, posting back
  std::string listener;              // the listener name it arrived on ("PLAINTEXT")
  std::string peer;                  // "127.0.0.1:53210"
  uint64_t connection_id = 0;
  std::chrono::steady_clock::time_point received;
  std::function<void(Response)> respond;  // call exactly once
  // For a handler that answers from another thread (the I/O pool): called
  // during dispatch, on the connection's thread, it makes the connection
  // dispatch none of its later requests until this one is answered, as
  // Kafka handles one request per connection at a time. Without it a
  // pipelined request could overtake this one: a produce handled on the
  // pool would be appended after the next produce of the same producer.
  // Empty where nothing is pipelined (test fixtures).
  std::function<void()> hold_later_requests;
  // Ends that hold before the answer; any thread may call it (it posts to
  // the connection's thread). A produce on the I/O pool calls it once its
  // records have their offsets: a later batch of the same producer can no
  // longer overtake them, so waiting for acks (fsync, replicas) does not
  // keep the producer's later requests from being dispatched. Answers
  // still go out in request order. Empty where nothing is pipelined.
  std::function<void()> release_later_requests;
  // For the request_percentage client quota (quotas/client_quotas.h,
  // handlers/codec.h): when dispatch called the handler, and when the
  // handler returned (steady-clock ticks, 0 until then; set by dispatch).
  // The time between is the time the request held a thread; an answer
  // given later (a long poll, acks=all) does not count its wait, but the
  // time its work held an I/O pool or admin worker thread does.
  std::chrono::steady_clock::time_point dispatched{};
  std::shared_ptr<const std::atomic<std::chrono::steady_clock::rep>> handler_returned;
  // The time its work then took on the I/O pool or the admin worker
  // (timed_work below); null while no client quota is set.
  std::shared_ptr<WorkerSpan> worker_span;
  // Not measured against request_percentage: a follower's fetch (Kafka
  // exempts cluster actions), or a request already counted (Fetch counts
  // before it decides to answer empty).
  bool quota_exempt = false;
  // Set by dispatch when a client quota applies to this client: it holds
  // the connection's later requests until this one is answered (one in
  // flight, as in Kafka), and release_later_requests must not end that.
  bool quota_held = false;

  int16_t api_key() const { return header.request_api_key; }
  int16_t api_version() const { return header.request_api_version; }
  int32_t correlation_id() const { return header.correlation_id; }

  // The writable bytes of a view into the frame (decoded record data), so
  // the handler can rewrite them in place; empty when the view is not inside
  // the frame (a request built in memory), and the caller copies instead.
  std::span<uint8_t> writable(std::span<const uint8_t> inside) const {
    if (!frame || inside.empty()) return {};
    const auto at = reinterpret_cast<uintptr_t>(inside.data());
    const auto begin = reinterpret_cast<uintptr_t>(frame->data());
    if (at < begin || at - begin > frame->size() || frame->size() - (at - begin) < inside.size()) return {};
    return std::span<uint8_t>(frame->data() + (at - begin), inside.size());
  }
};

// fn, wrapped so that the time it runs counts as ctx's work (WorkerSpan);
// for a request's work posted to another thread. fn itself when no span.
template <class Fn>
auto timed_work(const RequestContext& ctx, Fn fn) {
  return [span = ctx.worker_span, fn = std::move(fn)](auto&&... args) mutable {
    WorkerTimer timer(span.get());
    return fn(std::forward<decltype(args)>(args)...);
  };
}

}  // namespace ciuickafka::broker
