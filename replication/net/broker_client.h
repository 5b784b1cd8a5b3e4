// replication/net/broker_client.h: a blocking Kafka-protocol client over one
// TCP connection, for the broker's own dedicated threads (controller channel
// senders, replica fetchers, the AlterPartition sender); never for a network
// thread.
//
// connect() opens the connection and negotiates versions with ApiVersions
// (v3; when the broker answers UNSUPPORTED_VERSION with its own list, the
// highest version both sides know, else v0, on the same connection, as Kafka
// clients do). pick_version() then gives the version to use per API.
//
// call() sends one request (header v1, or v2 in flexible versions; the
// response header v0 or v1 by the same rule: protocol/generated/api_keys.h
// request_header_version / response_header_version) and waits for its
// response: one request in flight, in order. The response frame is bounded
// by max_response_bytes; its correlation id, header and body are checked and
// the whole frame must be consumed. call_raw() returns the body bytes
// undecoded, in one contiguous buffer (the fetcher appends Fetch records from
// it without re-encoding).
//
// Any I/O or protocol error kills the connection: ok() turns false, the
// socket is closed, and later calls fail with kNotConnected; the caller makes
// a new client (or uses ReconnectingClient).
//
// Thread-safety: one BrokerClient per thread. The exception is close(),
// which any thread may call while the client exists: it makes a call in
// progress (and every later one) return kClosed promptly. It never touches
// the socket's fd, so it cannot race with the owner. A shutdown path that
// may outlive the client holds interrupter() instead and triggers that.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "protocol/wire/reader.h"
#include "protocol/wire/writer.h"
#include "replication/net/error.h"
#include "replication/net/socket.h"

namespace ciuickafka::replication::net {

struct ClientOptions {
  std::string client_id = "ciuickafka";
  int32_t connect_timeout_ms = 10000;  // TCP connect plus the ApiVersions exchange
  int32_t request_timeout_ms = 30000;  // one request: send and whole response
  int32_t max_response_bytes = 100 * 1024 * 1024;  // frame size limit (after the prefix)
  // Shared with close(); made by connect() when null. ReconnectingClient
  // passes its own so that close() also stops a reconnect.
  std::shared_ptr<Interrupter> interrupter;
};

struct VersionRange {
  int16_t min = 0;
  int16_t max = -1;
};

// A response frame as received; body() is the part after the header.
struct RawResponse {
  std::vector<uint8_t> frame;
  size_t body_offset = 0;
  std::span<const uint8_t> body() const { return std::span<const uint8_t>(frame).subspan(body_offset); }
};

class BrokerClient {
 public:
  // The ApiVersions version connect() tries first.
  static constexpr int16_t kApiVersionsVersion = 3;

  static NetResult<std::unique_ptr<BrokerClient>> connect(const std::string& host, uint16_t port,
                                                          ClientOptions options);
  BrokerClient(const BrokerClient&) = delete;
  BrokerClient& operator=(const BrokerClient&) = delete;
  ~BrokerClient();

  // False after any error (or close()): make a new client.
  bool ok() const { return socket_ != nullptr && !options_.interrupter->triggered(); }
  const std::string& peer() const { return peer_; }

  // The broker's [min, max] for api_key; nullopt when it does not offer it.
  std::optional<VersionRange> broker_versions(int16_t api_key) const;
  // The highest version in both [our_min, our_max] and the broker's range.
  std::optional<int16_t> pick_version(int16_t api_key, int16_t our_max, int16_t our_min = 0) const;
  // The version ApiVersions was negotiated at (3 or a fallback).
  int16_t api_versions_version() const { return api_versions_version_; }

  // Sends req at `version` and decodes the answer into *resp. Records
  // fields of *resp point into this client's last response buffer: valid
  // until the next call on this client.
  template <class Req, class Resp>
  Status call(const Req& req, int16_t version, Resp* resp) {
    protocol::Writer w;
    const int32_t correlation_id = begin_request(w, Req::kApiKey, version);
    req.encode(w, version);
    NetResult<RawResponse> raw = exchange(w, Req::kApiKey, version, correlation_id, request_deadline());
    if (!raw) return raw.error();
    last_response_ = std::move(raw.value());
    protocol::Reader r(last_response_.body());
    resp->decode(r, version);
    return check_decoded(r, Req::kApiKey, version);
  }

  // Sends `body` (an encoded request body) and returns the response frame.
  NetResult<RawResponse> call_raw(int16_t api_key, int16_t version, std::span<const uint8_t> body);

  // Any thread: unblocks a call in progress; the client is dead after it.
  void close();
  // What close() triggers, to keep beyond the client's lifetime.
  std::shared_ptr<Interrupter> interrupter() const { return options_.interrupter; }

 private:
  BrokerClient(std::unique_ptr<TcpSocket> socket, ClientOptions options);

  // Reserves the size prefix and writes the request header; returns the
  // correlation id used.
  int32_t begin_request(protocol::Writer& w, int16_t api_key, int16_t version);
  // Sends the frame in w and reads the response; checks size, header and
  // correlation id. Kills the connection on failure.
  NetResult<RawResponse> exchange(protocol::Writer& w, int16_t api_key, int16_t version,
                                  int32_t correlation_id, Clock::time_point deadline);
  Clock::time_point request_deadline() const;
  // After a typed decode: the Reader's sticky error and trailing bytes.
  Status check_decoded(const protocol::Reader& r, int16_t api_key, int16_t version);
  Status negotiate(Clock::time_point deadline);
  NetError fail(NetErrorKind kind, std::string message);
  std::string describe(int16_t api_key, int16_t version) const;

  std::unique_ptr<TcpSocket> socket_;
  ClientOptions options_;
  std::string peer_;
  int32_t next_correlation_id_ = 0;
  std::vector<VersionRange> versions_;  // indexed by api key; max < min: not offered
  int16_t api_versions_version_ = kApiVersionsVersion;
  RawResponse last_response_;
};

}  // namespace ciuickafka::replication::net
