// broker/admin_cli/client.h: a blocking Kafka client for the admin command.
//
// One TCP connection per broker node, opened on first use; each connection
// negotiates versions with ApiVersions once (retrying at the version the
// broker names when it refuses ours) and every call then uses the highest
// version both sides support (protocol/client/client_codec.h), optionally
// capped where the command does not fill later versions' fields. One request
// in flight per connection: send, then read the answer (correlation ids
// checked). Sends and reads are bounded by request.timeout.ms.
//
// Failures are CliError exceptions carrying the exit status: 3 when a broker
// cannot be reached or the connection breaks or times out, 1 for a malformed
// response or an API the broker lacks. This is a command-line tool, not a
// hot path: one failure ends the command with one line.
//
// Thread-safety: none; one thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "broker/admin_cli/args.h"
#include "protocol/client/client_codec.h"
#include "protocol/generated/api_keys.h"
#include "protocol/generated/metadata.h"

namespace ciuickafka::broker::admin_cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitKafkaError = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitConnect = 3;

struct CliError : std::runtime_error {
  CliError(int code, const std::string& message) : std::runtime_error(message), exit_code(code) {}
  int exit_code;
};

// Throws CliError(1) naming the Kafka error: "<context>: NAME (code): message".
[[noreturn]] void throw_kafka_error(const std::string& context, int16_t code,
                                    const std::optional<std::string>& message = std::nullopt);
// "NAME" of a Kafka error code ("UNKNOWN_ERROR_CODE" when we do not know it).
std::string error_name(int16_t code);

class Connection;

class KafkaClient {
 public:
  static constexpr int32_t kBootstrap = -1;  // node id of the bootstrap connection

  // connect_wait_ms: how long to keep retrying the first connection to the
  // bootstrap broker (0: one attempt).
  // bootstrap: tried in order until one answers.
  KafkaClient(std::vector<HostPort> bootstrap, ClientProperties props, int64_t connect_wait_ms = 0);
  ~KafkaClient();

  const ClientProperties& props() const { return props_; }

  // Sends `req` to `node` at the negotiated version (at most `cap` when
  // given) and decodes the answer into *resp; returns the version used.
  // Records fields of *resp are views into the client's last response
  // frame: valid until the next call.
  template <class Req, class Resp>
  int16_t call(int32_t node, const Req& req, Resp* resp, std::optional<int16_t> cap = std::nullopt) {
    const int16_t v = version_for(node, Req::kApiKey, Req::kLowestVersion,
                                  cap ? std::min<int16_t>(*cap, Req::kHighestVersion) : Req::kHighestVersion);
    protocol::WireError werr = protocol::WireError::kNone;
    const int32_t corr = next_correlation_++;
    auto frame = protocol::client::encode_request_frame(req, v, corr, props_.client_id, &werr);
    if (frame.empty()) throw CliError(kExitKafkaError, "cannot encode " + api_name(Req::kApiKey) + " v" +
                                                           std::to_string(v) + ": " +
                                                           std::string(protocol::to_string(werr)));
    last_frame_ = round_trip(node, frame, Req::kApiKey);
    auto res = protocol::client::decode_response_frame(last_frame_, v, corr, resp);
    if (!res.ok())
      throw CliError(kExitKafkaError, api_name(Req::kApiKey) + " v" + std::to_string(v) + " from " +
                                          node_label(node) + ": " + protocol::client::describe(res));
    return v;
  }

  // The version a call to `node` would use for `api_key`, or nullopt when
  // the broker lacks the API (connects if needed).
  std::optional<int16_t> supported(int32_t node, int16_t api_key, int16_t lo, int16_t hi);

  // Metadata for `topics` (nullopt: all topics; empty: none, brokers only),
  // from the bootstrap broker; learns every broker's address.
  protocol::MetadataResponse metadata(const std::optional<std::vector<std::string>>& topics);
  // The controller from the last metadata (the bootstrap broker when unknown).
  int32_t controller() const;
  // Node ids learned from metadata.
  std::vector<int32_t> nodes() const;
  // Drops the connection to `node` (after it broke); the next call reconnects.
  void forget(int32_t node);
  // Registers a node's address (from FindCoordinator, say).
  void learn(int32_t node, const std::string& host, int32_t port);

  static std::string api_name(int16_t key);

 private:
  int16_t version_for(int32_t node, int16_t api_key, int16_t lo, int16_t hi);
  Connection& conn(int32_t node);
  std::vector<uint8_t> round_trip(int32_t node, const std::vector<uint8_t>& frame, int16_t api_key);
  std::string node_label(int32_t node) const;

  using Address = HostPort;
  std::vector<Address> bootstrap_;
  std::map<int32_t, Address> addresses_;
  std::map<int32_t, std::unique_ptr<Connection>> conns_;
  std::map<int32_t, protocol::client::VersionTable> versions_;
  ClientProperties props_;
  int32_t controller_ = -1;
  int32_t next_correlation_ = 1;
  int64_t connect_wait_ms_ = 0;
  std::vector<uint8_t> last_frame_;  // what Records views of the last response point into
};

}  // namespace ciuickafka::broker::admin_cli
