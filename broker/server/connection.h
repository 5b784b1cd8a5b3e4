// broker/server/connection.h: one client connection: frames in, responses
// out in request order.
//
// Reading: 4-byte big-endian size, then the frame. A size below 0 or above
// socket.request.max.bytes stops reading; the connection closes once the
// requests before it are answered. Before the body is read its size is
// taken from the broker-wide RequestBudget (queued.max.request.bytes, and
// queued.max.requests for a request pipelined behind another); when the
// budget is spent reading pauses until responses give room back. Once the
// budget holds it, the frame's buffer is reserved at its full size (up to
// 16 MiB; a larger frame doubles from there with what arrives, so a 2 GiB
// size prefix costs 16 MiB of untouched address space until bytes come) and
// never zero-filled (FrameBytes): address space only, a page becomes memory
// when bytes arrive in it, and a frame up to 16 MiB is never copied to grow
// its buffer.
//
// Pipelining: each complete frame is dispatched at once, and gets a slot in
// a queue in arrival order. respond() (any thread) posts the Response to this
// connection's thread, which fills the slot; slots at the head are written
// as soon as they are ready, so responses leave strictly in request order
// whatever order handlers finish in. kNoResponse slots are skipped; kClose
// closes once everything before it has been written. With max_in_flight
// slots open, reading pauses (a slow reader therefore holds at most that
// many responses, and a response holds slice handles, never record data).
//
// A handler whose answer comes from another thread may hold the
// connection's later requests until it is answered
// (RequestContext::hold_later_requests): frames after it are not
// dispatched meanwhile, so nothing overtakes it. Each stop of reading for
// max_in_flight or a hold is counted (ConnectionOptions::pipeline_pauses).
//
// Throttling: a response with a throttle_ms (a client over its quota,
// quotas/client_quotas.h) is sent at once, then the connection dispatches
// no request for that long, reading nothing more than its input buffer
// holds (Kafka mutes the channel, KIP-219). A client under a quota has one
// request in flight at a time (dispatch holds the later ones), so the mute
// stops its very next request.
//
// Closing: on a read or write error, a bad frame, a kClose response, idle
// for connections.max.idle.ms with nothing in flight, or Server::stop. At
// end of stream (the client half-closed or went away) reading stops and the
// connection closes once the responses owed are written. drain() does the
// same for a graceful shutdown. End of stream, an error or close() also
// report the connection gone to Broker::connection_events(), once.
//
// Thread-safety: all methods run on the connection's io_context thread,
// except the respond callbacks handed to handlers (any thread).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "broker/net/asio.h"
#include "broker/server/post_gate.h"
#include "broker/server/request_budget.h"
#include "broker/server/request_context.h"
#include "broker/server/response_writer.h"

namespace ciuickafka::broker {

class Broker;

// The per-connection pipelining depth. The Java client's default
// max.in.flight.requests.per.connection is 5 (librdkafka's is 1,000,000; it
// simply waits when the broker stops reading); 16 covers it plus a consumer's
// group and offset requests sharing the connection.
inline constexpr size_t kMaxInFlightPerConnection = 16;

struct ConnectionOptions {
  Broker* broker = nullptr;
  std::string listener;                     // "PLAINTEXT"
  int32_t max_request_bytes = 104857600;    // socket.request.max.bytes
  std::chrono::milliseconds idle_timeout{600000};  // connections.max.idle.ms; <= 0: never
  // Requests dispatched but not yet written, on this connection. Kafka
  // reads one request per connection at a time; pipelining a few more lets
  // a producer keep its in-flight window without a round trip per request. The broker-wide bound is queued.max.requests (request_budget.h);
  // Server passes min(kMaxInFlightPerConnection, queued.max.requests).
  size_t max_in_flight = kMaxInFlightPerConnection;
  RequestBudget* budget = nullptr;          // queued.max.request.bytes (shared)
  // Counts each time this connection stops reading because max_in_flight
  // requests are unanswered on it or one holds the later ones (shared).
  std::atomic<uint64_t>* pipeline_pauses = nullptr;
  std::shared_ptr<PostGate> gate;           // posts to this connection's thread
  std::function<void(uint64_t id)> on_closed;  // called once, on this thread
  // Dispatches a complete frame; dispatch_frame() unless a test swaps it.
  std::function<void(RequestContext)> dispatch;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using tcp = asio::ip::tcp;

  Connection(tcp::socket socket, uint64_t id, ConnectionOptions options);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Starts reading; call once, on the connection's thread.
  void start();
  // Stops reading; closes once the responses owed are written.
  void drain();
  // Closes now: pending responses are dropped.
  void close(const char* why);

  uint64_t id() const { return id_; }
  bool closed() const { return closed_; }
  // When it last read or finished writing (steady clock, ns); any thread.
  int64_t last_activity_ns() const { return last_activity_ns_.load(std::memory_order_relaxed); }
  asio::any_io_executor executor() { return socket_.get_executor(); }

 private:
  struct Slot {
    uint64_t seq = 0;
    uint64_t budget_bytes = 0;  // held in the RequestBudget until answered
    bool budgeted = false;      // budget_bytes (and, if counted, a request) are held
    bool counted = false;       // holds one of queued.max.requests
    std::optional<Response> response;
  };

  // Reading.
  void process_input();
  bool start_frame();
  void dispatch_frame_now();
  void start_read();
  void on_read(const boost::system::error_code& ec, size_t n, bool into_frame);
  void on_budget();
  // Writing.
  void on_response(uint64_t seq, Response r);
  void pump();
  void on_writable(const boost::system::error_code& ec);
  void maybe_finish();
  // Tells the broker's ConnectionEvents, once (end of stream, error, close).
  void report_gone();
  // Idle timer.
  // A response carrying a client quota's throttle time mutes the
  // connection: no further request is read or dispatched until it is over
  // (Kafka mutes the channel the same way, KIP-219). muted() arms the timer
  // that resumes reading.
  void mute_for(std::chrono::steady_clock::time_point now, int64_t ms);
  bool muted();

  void arm_idle_timer();
  void on_idle_timer(const boost::system::error_code& ec);

  tcp::socket socket_;
  const uint64_t id_;
  ConnectionOptions opt_;
  std::string peer_;
  asio::steady_timer idle_timer_;
  asio::steady_timer mute_timer_;
  std::chrono::steady_clock::time_point muted_until_{};  // {}: not muted
  bool mute_armed_ = false;
  std::chrono::steady_clock::time_point last_activity_;
  std::atomic<int64_t> last_activity_ns_{0};  // last_activity_ for other threads (the LRU choice)
  void touch() {
    last_activity_ = std::chrono::steady_clock::now();
    last_activity_ns_.store(last_activity_.time_since_epoch().count(), std::memory_order_relaxed);
  }

  // Input: bytes read but not yet parsed, [in_begin_, in_end_) of in_.
  std::vector<uint8_t> in_;
  size_t in_begin_ = 0, in_end_ = 0;
  // The frame being read: announced size (-1: still reading the prefix),
  // its bytes so far, whether its budget is held.
  int64_t frame_size_ = -1;
  std::shared_ptr<FrameBytes> frame_;
  size_t frame_filled_ = 0;
  bool frame_budgeted_ = false;
  bool frame_counted_ = false;  // its budget includes a request slot

  bool reading_ = false;         // an async read is outstanding
  bool waiting_budget_ = false;  // a budget waiter is registered
  bool input_done_ = false;      // end of stream, or draining: read no more
  bool closed_ = false;
  bool gone_reported_ = false;

  std::deque<Slot> slots_;
  uint64_t next_seq_ = 0;
  // A request that holds the later ones (hold_later_requests): nothing more
  // is dispatched until it is answered.
  std::optional<uint64_t> held_by_;
  bool pipeline_paused_ = false;  // stopped by max_in_flight or held_by_ (counted once)
  std::optional<ResponseWriter> writer_;  // the response being written
  Response::Timing writer_timing_;        // its request-time metrics (response.h)
  std::chrono::steady_clock::time_point writing_since_{};
  bool waiting_writable_ = false;
};

}  // namespace ciuickafka::broker
