// broker/server/connection.cc: reading frames, the in-order response queue,
// writing, idle timeout.
#include "broker/server/connection.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <cstdio>
#include <cstring>

#include "broker/broker.h"
#include "broker/server/busy_time.h"
#include "broker/server/connection_events.h"
#include "metrics/log/log.h"

namespace ciuickafka::broker {
namespace {

constexpr size_t kInputBuffer = 16u << 10;  // prefixes and small pipelined frames
// A frame up to this size is reserved whole once its budget is granted; a
// larger one (up to socket.request.max.bytes) starts here and doubles with
// what arrives, so a huge size prefix costs address space only for bytes
// that come.
constexpr size_t kReserveWhole = 16u << 20;

std::string endpoint_string(const asio::ip::tcp::endpoint& ep) {
  const std::string a = ep.address().to_string();
  return (ep.address().is_v6() ? "[" + a + "]" : a) + ":" + std::to_string(ep.port());
}

// Records a written (or dropped, or closing) response's request times.
void record_times(Response::Timing& t, std::chrono::steady_clock::time_point now, bool sent_from_writer,
                  std::chrono::steady_clock::time_point writing_since) {
  if (!t.metrics.valid()) return;
  if (sent_from_writer) t.times.response_send = now - writing_since;
  t.metrics.observe(t.times);
  t.metrics = {};
}

}  // namespace

Connection::Connection(tcp::socket socket, uint64_t id, ConnectionOptions options)
    : socket_(std::move(socket)),
      id_(id),
      opt_(std::move(options)),
      idle_timer_(socket_.get_executor()),
      mute_timer_(socket_.get_executor()),
      in_(kInputBuffer) {
  touch();
  boost::system::error_code ec;
  socket_.set_option(tcp::no_delay(true), ec);
  socket_.non_blocking(true, ec);
  const tcp::endpoint remote = socket_.remote_endpoint(ec);
  peer_ = ec ? std::string("unknown") : endpoint_string(remote);
  if (opt_.broker != nullptr) opt_.broker->metrics().connection_opened(opt_.listener);
}

Connection::~Connection() {
  if (closed_) return;
  // Destroyed without close() (the server stopped its threads first).
  if (opt_.budget != nullptr) {
    for (const Slot& s : slots_)
      if (s.budgeted) opt_.budget->release(s.budget_bytes, s.counted);
    if (frame_budgeted_) opt_.budget->release(static_cast<uint64_t>(frame_size_), frame_counted_);
  }
  if (opt_.broker != nullptr) opt_.broker->metrics().connection_closed(opt_.listener);
}

void Connection::start() {
  BusyScope busy;
  touch();
  arm_idle_timer();
  process_input();
}

void Connection::drain() {
  input_done_ = true;
  maybe_finish();
}

void Connection::close(const char* why) {
  if (closed_) return;
  closed_ = true;
  if (why != nullptr)
    CK_LOG_INFO("network", "closing connection %llu from %s: %s",
                static_cast<unsigned long long>(id_), peer_.c_str(), why);
  boost::system::error_code ec;
  idle_timer_.cancel(ec);
  mute_timer_.cancel(ec);
  socket_.shutdown(tcp::socket::shutdown_both, ec);
  socket_.close(ec);
  if (opt_.budget != nullptr) {
    for (const Slot& s : slots_)
      if (s.budgeted) opt_.budget->release(s.budget_bytes, s.counted);
    if (frame_budgeted_) opt_.budget->release(static_cast<uint64_t>(frame_size_), frame_counted_);
  }
  frame_budgeted_ = false;
  frame_counted_ = false;
  frame_.reset();
  slots_.clear();
  writer_.reset();
  if (opt_.broker != nullptr) opt_.broker->metrics().connection_closed(opt_.listener);
  report_gone();
  if (opt_.on_closed) opt_.on_closed(id_);
}

void Connection::report_gone() {
  if (gone_reported_) return;
  gone_reported_ = true;
  if (opt_.broker != nullptr) opt_.broker->service<ConnectionEvents>().closed(id_);
}

// --- reading

void Connection::process_input() {
  while (!closed_ && !input_done_) {
    if (frame_size_ < 0) {
      if (slots_.size() >= opt_.max_in_flight || held_by_) {  // pump() resumes
        if (!pipeline_paused_ && opt_.pipeline_pauses != nullptr)
          opt_.pipeline_pauses->fetch_add(1, std::memory_order_relaxed);
        pipeline_paused_ = true;
        return;
      }
      pipeline_paused_ = false;
      if (muted()) return;  // a client quota's throttle: the timer resumes
      if (in_end_ - in_begin_ < 4) break;
      const uint8_t* p = in_.data() + in_begin_;
      const int32_t size = static_cast<int32_t>((uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
                                                (uint32_t{p[2]} << 8) | uint32_t{p[3]});
      in_begin_ += 4;
      if (size < 0 || size > opt_.max_request_bytes) {
        // Read no more; answer what came before, then close (like kClose).
        CK_LOG_WARN("network",
                    "closing connection %llu from %s: frame size %d outside 0..%d "
                    "(socket.request.max.bytes)",
                    static_cast<unsigned long long>(id_), peer_.c_str(), size, opt_.max_request_bytes);
        input_done_ = true;
        maybe_finish();
        return;
      }
      frame_size_ = size;
      frame_filled_ = 0;
      frame_ = std::make_shared<FrameBytes>();
    }
    if (!frame_budgeted_ && opt_.budget != nullptr) {
      if (waiting_budget_) return;
      std::weak_ptr<Connection> weak = weak_from_this();
      auto gate = opt_.gate;
      auto waiter = [gate, weak] {
        gate->post([weak] {
          if (auto c = weak.lock()) c->on_budget();
        });
      };
      // A connection's only request in flight is never held back by
      // queued.max.requests (request_budget.h); pipelined ones are.
      const bool counted = !slots_.empty();
      if (!opt_.budget->try_acquire(static_cast<uint64_t>(frame_size_), counted, std::move(waiter))) {
        waiting_budget_ = true;
        return;
      }
      frame_counted_ = counted;
    }
    if (!frame_budgeted_) {
      // Its whole size at once (up to kReserveWhole), now that the budget
      // holds it: address space only (the allocator does not zero it), each
      // page touched when bytes arrive in it, and no reallocation copies
      // what came.
      frame_->reserve(std::min(static_cast<size_t>(frame_size_), kReserveWhole));
      frame_budgeted_ = true;
    }
    const size_t want = static_cast<size_t>(frame_size_) - frame_filled_;
    const size_t take = std::min(want, in_end_ - in_begin_);
    if (take > 0) {
      if (frame_->size() < frame_filled_ + take) frame_->resize(frame_filled_ + take);
      std::memcpy(frame_->data() + frame_filled_, in_.data() + in_begin_, take);
      frame_filled_ += take;
      in_begin_ += take;
    }
    if (frame_filled_ < static_cast<size_t>(frame_size_)) break;
    dispatch_frame_now();
  }
  start_read();
}

void Connection::on_budget() {
  BusyScope busy;
  waiting_budget_ = false;
  process_input();
}

void Connection::dispatch_frame_now() {
  frame_->resize(frame_filled_);
  const uint64_t seq = next_seq_++;
  Slot slot;
  slot.seq = seq;
  slot.budget_bytes = opt_.budget != nullptr ? static_cast<uint64_t>(frame_size_) : 0;
  slot.budgeted = opt_.budget != nullptr && frame_budgeted_;
  slot.counted = frame_counted_;
  slots_.push_back(std::move(slot));

  RequestContext ctx;
  ctx.broker = opt_.broker;
  ctx.frame = std::move(frame_);
  ctx.executor = socket_.get_executor();
  ctx.listener = opt_.listener;
  ctx.peer = peer_;
  ctx.connection_id = id_;
  ctx.received = std::chrono::steady_clock::now();
  // The answer goes to this connection's thread. Every copy of respond
  // shares one Answer: when the last copy goes without having been called
  // (a handler dropped the request, or async work holding it threw and was
  // unwound), the request is answered with a close, so its slot can never
  // stall the connection (a busy slot also keeps the idle timer off).
  struct Answer {
    std::shared_ptr<PostGate> gate;
    std::weak_ptr<Connection> weak;
    uint64_t seq = 0;
    std::atomic<bool> given{false};
    void give(Response r) {
      given.store(true, std::memory_order_relaxed);
      gate->post([weak = weak, seq = seq, r = std::move(r)]() mutable {
        BusyScope busy;
        if (auto c = weak.lock()) c->on_response(seq, std::move(r));
      });
    }
    ~Answer() {
      if (given.load(std::memory_order_relaxed)) return;
      if (weak.expired()) return;  // the connection is gone (shutdown): nothing to answer
      CK_LOG_ERROR("network", "a request was dropped unanswered (a handler bug); closing its connection");
      give(Response::close());
    }
  };
  auto answer = std::make_shared<Answer>();
  answer->gate = opt_.gate;
  answer->weak = weak_from_this();
  answer->seq = seq;
  ctx.respond = [answer](Response r) { answer->give(std::move(r)); };
  ctx.hold_later_requests = [weak = weak_from_this(), seq] {
    if (auto c = weak.lock(); c && !c->closed_) c->held_by_ = seq;
  };
  ctx.release_later_requests = [gate = opt_.gate, weak = weak_from_this(), seq] {
    gate->post([weak, seq] {
      BusyScope busy;
      auto c = weak.lock();
      if (!c || c->closed_ || c->held_by_ != seq) return;  // answered already, or another holds now
      c->held_by_.reset();
      c->pump();  // dispatches what waited (process_input), reads on
    });
  };
  frame_.reset();
  frame_size_ = -1;
  frame_filled_ = 0;
  frame_budgeted_ = false;
  frame_counted_ = false;
  try {
    opt_.dispatch(std::move(ctx));
  } catch (const std::exception& e) {  // a handler bug must not take the thread down
    CK_LOG_ERROR("network", "a handler threw: %s", e.what());
    on_response(seq, Response::close());  // (its Answer may close it too: the first answer stands)
  } catch (...) {
    CK_LOG_ERROR("network", "a handler threw");
    on_response(seq, Response::close());
  }
}

void Connection::start_read() {
  if (reading_ || closed_ || input_done_) return;
  reading_ = true;
  auto self = shared_from_this();
  if (frame_size_ >= 0 && frame_budgeted_ && in_begin_ == in_end_) {
    // A large frame: read straight into it, within what is reserved
    // (resize does not zero-fill); past kReserveWhole it doubles when full.
    if (frame_->size() == frame_filled_) {
      const size_t room = frame_->capacity() > frame_filled_ ? frame_->capacity()
                                                             : std::max(2 * frame_->capacity(), kInputBuffer);
      frame_->resize(std::min(static_cast<size_t>(frame_size_), room));
    }
    socket_.async_read_some(
        asio::buffer(frame_->data() + frame_filled_, frame_->size() - frame_filled_),
        [self](const boost::system::error_code& ec, size_t n) { self->on_read(ec, n, true); });
    return;
  }
  if (in_begin_ == in_end_) {
    in_begin_ = in_end_ = 0;
  } else if (in_begin_ > 0) {
    std::memmove(in_.data(), in_.data() + in_begin_, in_end_ - in_begin_);
    in_end_ -= in_begin_;
    in_begin_ = 0;
  }
  socket_.async_read_some(asio::buffer(in_.data() + in_end_, in_.size() - in_end_),
                          [self](const boost::system::error_code& ec, size_t n) { self->on_read(ec, n, false); });
}

void Connection::on_read(const boost::system::error_code& ec, size_t n, bool into_frame) {
  BusyScope busy;
  reading_ = false;
  if (closed_ || input_done_) {
    maybe_finish();
    return;
  }
  if (ec) {
    if (ec == asio::error::eof) {
      input_done_ = true;  // answer what was asked, then close
      report_gone();       // held answers (a JoinGroup) may be dropped now
      maybe_finish();
    } else if (ec != asio::error::operation_aborted) {
      close(nullptr);
    }
    return;
  }
  touch();
  if (into_frame) {
    frame_filled_ += n;
    if (frame_filled_ == static_cast<size_t>(frame_size_)) dispatch_frame_now();
  } else {
    in_end_ += n;
  }
  process_input();
}

// --- writing

void Connection::on_response(uint64_t seq, Response r) {
  if (closed_ || slots_.empty() || seq < slots_.front().seq) return;
  const uint64_t idx = seq - slots_.front().seq;
  if (idx >= slots_.size()) return;
  Slot& s = slots_[idx];
  if (s.response) return;  // answered twice: the first answer stands
  s.response = std::move(r);
  if (held_by_ == seq) held_by_.reset();  // later requests may go (pump() reads on)
  if (opt_.budget != nullptr && s.budgeted) opt_.budget->release(s.budget_bytes, s.counted);
  s.budget_bytes = 0;
  s.budgeted = false;
  pump();
}

void Connection::pump() {
  for (;;) {
    if (closed_) return;
    if (writer_) {
      if (waiting_writable_) return;
      std::error_code ec;
      // Before the bytes go, not after: once a client holds its answer,
      // the connection's activity is on record, so what max.connections
      // closes as least recently active follows the order clients saw
      // (a touch after the send could land after another connection's
      // next request, on a thread descheduled in between).
      touch();
      const ResponseWriter::Status st = writer_->write_some(ec);
      if (st == ResponseWriter::Status::kFailed) {
        close(ec == std::errc::io_error ? "a file slice ended early" : nullptr);
        return;
      }
      if (st == ResponseWriter::Status::kWouldBlock) {
        waiting_writable_ = true;
        socket_.async_wait(tcp::socket::wait_write, [self = shared_from_this()](
                                                        const boost::system::error_code& e) { self->on_writable(e); });
        return;
      }
      writer_.reset();
      record_times(writer_timing_, std::chrono::steady_clock::now(), true, writing_since_);
      continue;
    }
    if (slots_.empty() || !slots_.front().response) break;
    Response r = std::move(*slots_.front().response);
    slots_.pop_front();
    const auto now = std::chrono::steady_clock::now();
    Response::Timing timing = r.timing;
    if (timing.metrics.valid()) timing.times.response_queue = now - timing.answered;
    if (r.action == Response::Action::kNoResponse) {
      if (r.throttle_ms > 0) mute_for(now, r.throttle_ms);  // an acks=0 produce over its quota
      record_times(timing, now, false, now);
      continue;
    }
    if (r.action == Response::Action::kClose) {
      record_times(timing, now, false, now);
      close(nullptr);  // dispatch said why
      return;
    }
    if (r.throttle_ms > 0) mute_for(now, r.throttle_ms);
    writer_timing_ = timing;
    writing_since_ = now;
    writer_.emplace(socket_.native_handle(), std::move(r));
  }
  process_input();  // slots were freed: reading may resume
  maybe_finish();
}

void Connection::on_writable(const boost::system::error_code& ec) {
  BusyScope busy;
  waiting_writable_ = false;
  if (closed_) return;
  if (ec) {
    close(nullptr);
    return;
  }
  pump();
}

void Connection::maybe_finish() {
  if (!closed_ && input_done_ && slots_.empty() && !writer_) close(nullptr);
}

// --- client quota throttling (KIP-219)

void Connection::mute_for(std::chrono::steady_clock::time_point now, int64_t ms) {
  muted_until_ = std::max(muted_until_, now + std::chrono::milliseconds(ms));
}

bool Connection::muted() {
  if (muted_until_ == std::chrono::steady_clock::time_point{}) return false;
  if (std::chrono::steady_clock::now() >= muted_until_) {
    muted_until_ = {};
    return false;
  }
  if (!mute_armed_) {
    mute_armed_ = true;
    mute_timer_.expires_at(muted_until_);
    mute_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      BusyScope busy;
      self->mute_armed_ = false;
      if (ec == asio::error::operation_aborted || self->closed_) return;
      self->process_input();
    });
  }
  return true;
}

// --- idle timeout

void Connection::arm_idle_timer() {
  if (opt_.idle_timeout.count() <= 0 || closed_) return;
  const auto now = std::chrono::steady_clock::now();
  // Busy (a request in flight, a response being written) counts as active.
  const auto from = (slots_.empty() && !writer_) ? last_activity_ : now;
  idle_timer_.expires_at(from + opt_.idle_timeout);
  idle_timer_.async_wait(
      [self = shared_from_this()](const boost::system::error_code& ec) { self->on_idle_timer(ec); });
}

void Connection::on_idle_timer(const boost::system::error_code& ec) {
  if (closed_ || ec == asio::error::operation_aborted) return;
  const auto now = std::chrono::steady_clock::now();
  if (slots_.empty() && !writer_ && now - last_activity_ >= opt_.idle_timeout) {
    close(nullptr);
    return;
  }
  arm_idle_timer();
}

}  // namespace ciuickafka::broker
