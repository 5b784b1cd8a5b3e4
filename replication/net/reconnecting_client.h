// replication/net/reconnecting_client.h: a BrokerClient that reconnects.
//
// For the long-lived senders (a controller channel's send thread, a replica
// fetcher): each call first makes sure there is a live connection, connecting
// again when the last one died, but not before the backoff since the last
// failure has passed (the call waits it out; close() cuts the wait short).
// The backoff doubles on each failure up to backoff_max_ms and is reset by a
// successful connect. A failed call is not retried here: the caller decides
// (a LeaderAndIsr is resent, a fetch is rebuilt from current state).
//
// Thread-safety: one thread makes the calls; close() may come from any
// thread and makes the current call and every later one return kClosed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "replication/net/broker_client.h"

namespace ciuickafka::replication::net {

struct BackoffOptions {
  int32_t backoff_ms = 100;       // Kafka's reconnect.backoff.ms
  int32_t backoff_max_ms = 1000;  // Kafka's reconnect.backoff.max.ms
};

class ReconnectingClient {
 public:
  // Does not connect: the first call does.
  ReconnectingClient(std::string host, uint16_t port, ClientOptions options, BackoffOptions backoff = {});

  // A live client (connecting if needed, after the backoff), or the error.
  NetResult<BrokerClient*> client();

  template <class Req, class Resp>
  Status call(const Req& req, int16_t version, Resp* resp) {
    NetResult<BrokerClient*> c = client();
    if (!c) return c.error();
    Status st = c.value()->call(req, version, resp);
    if (!st.ok() && !c.value()->ok()) note_failure();
    return st;
  }
  NetResult<RawResponse> call_raw(int16_t api_key, int16_t version, std::span<const uint8_t> body);

  // Whether a live connection exists now (no connect attempted).
  bool connected() const { return client_ != nullptr && client_->ok(); }
  // Connects made so far (successful ones).
  int64_t connects() const { return connects_; }
  // Any thread: stops the current call (connect, backoff wait or request)
  // and every later one.
  void close();
  // What close() triggers (null only if no eventfd could be made).
  std::shared_ptr<Interrupter> interrupter() const { return options_.interrupter; }

 private:
  void note_failure();

  std::string host_;
  uint16_t port_;
  ClientOptions options_;
  BackoffOptions backoff_;
  std::unique_ptr<BrokerClient> client_;
  std::string init_error_;
  int32_t current_backoff_ms_ = 0;  // 0: no failure yet
  Clock::time_point retry_at_{};
  int64_t connects_ = 0;
};

}  // namespace ciuickafka::replication::net
