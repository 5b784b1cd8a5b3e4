// replication/net/error.h: what the inter-broker client reports.
//
// Every failure of a BrokerClient call is a NetError value: a kind the
// caller can branch on (reconnect, back off, give up) and a message that says
// what happened and to whom ("127.0.0.1:9092: no response to Fetch v17 within
// 30000 ms"). Status is the empty-or-error result of calls that return no
// value. Nothing in replication/net throws.
//
// Thread-safety: plain value types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "replication/result.h"

namespace ciuickafka::replication::net {

enum class NetErrorKind : uint8_t {
  kConnectRefused,       // nobody listens there (ECONNREFUSED)
  kConnectFailed,        // resolution failed, unreachable, other socket errors
  kTimeout,              // no connection / no response before the deadline
  kConnectionClosed,     // the peer closed or reset the connection
  kClosed,               // close() was called on this client
  kMalformedResponse,    // a response frame we could not decode
  kCorrelationMismatch,  // a response for another request
  kResponseTooLarge,     // a response frame above max_response_bytes
  kEncode,               // the request cannot be encoded at that version
  kNotConnected,         // a call on a client whose connection is already dead
};
std::string_view to_string(NetErrorKind k);

struct NetError {
  NetErrorKind kind = NetErrorKind::kConnectFailed;
  std::string message;
};

template <class T>
using NetResult = Result<T, NetError>;

// Success, or the NetError that stopped the call.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(NetError e) : error_(std::move(e)) {}  // NOLINT: implicit by design
  static Status ok_status() { return Status(); }

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  // Only when !ok().
  const NetError& error() const { return *error_; }
  NetErrorKind kind() const { return error_->kind; }
  const std::string& message() const { return error_->message; }

 private:
  std::optional<NetError> error_;
};

}  // namespace ciuickafka::replication::net
