// replication/net/broker_client.cc: see broker_client.h.
#include "replication/net/broker_client.h"

#include <algorithm>
#include <limits>

#include "protocol/error_code.h"
#include "protocol/generated/api_keys.h"
#include "protocol/generated/api_versions.h"
#include "protocol/generated/headers.h"
#include "protocol/wire/frame.h"

namespace ciuickafka::replication::net {
namespace {

using protocol::ApiVersionsRequest;
using protocol::ApiVersionsResponse;

constexpr char kSoftwareName[] = "ciuickafka";
constexpr char kSoftwareVersion[] = "1.0";

bool version_in_schema(int16_t api_key, int16_t version) {
  const protocol::ApiInfo* api = protocol::find_api(api_key);
  return api != nullptr && version >= api->min_version && version <= api->max_version;
}

// Kafka's fallback: a broker that does not know our ApiVersions version
// answers with a v0 body (UNSUPPORTED_VERSION and its list), so a body that
// does not decode at the version we sent is tried again as v0.
bool decode_api_versions(std::span<const uint8_t> body, int16_t version, ApiVersionsResponse& out) {
  {
    protocol::Reader r(body);
    out = ApiVersionsResponse{};
    out.decode(r, version);
    if (r.ok() && r.at_end()) return true;
  }
  if (version == 0) return false;
  protocol::Reader r(body);
  out = ApiVersionsResponse{};
  out.decode(r, 0);
  return r.ok() && r.at_end();
}

}  // namespace

BrokerClient::BrokerClient(std::unique_ptr<TcpSocket> socket, ClientOptions options)
    : socket_(std::move(socket)), options_(std::move(options)), peer_(socket_->peer()) {}

BrokerClient::~BrokerClient() = default;

NetResult<std::unique_ptr<BrokerClient>> BrokerClient::connect(const std::string& host, uint16_t port,
                                                               ClientOptions options) {
  if (!options.interrupter) {
    std::string err;
    options.interrupter = Interrupter::create(&err);
    if (!options.interrupter) return NetError{NetErrorKind::kConnectFailed, err};
  }
  const Clock::time_point deadline =
      Clock::now() + std::chrono::milliseconds(std::max<int32_t>(options.connect_timeout_ms, 0));
  NetResult<std::unique_ptr<TcpSocket>> sock = TcpSocket::connect(host, port, deadline, options.interrupter);
  if (!sock) return sock.error();
  std::unique_ptr<BrokerClient> client(new BrokerClient(std::move(sock.value()), std::move(options)));
  Status st = client->negotiate(deadline);
  if (!st.ok()) return st.error();
  return client;
}

Status BrokerClient::negotiate(Clock::time_point deadline) {
  int16_t version = kApiVersionsVersion;
  for (int attempt = 0;; ++attempt) {
    ApiVersionsRequest req;
    req.client_software_name = kSoftwareName;
    req.client_software_version = kSoftwareVersion;
    protocol::Writer w;
    const int32_t correlation_id = begin_request(w, ApiVersionsRequest::kApiKey, version);
    req.encode(w, version);
    NetResult<RawResponse> raw = exchange(w, ApiVersionsRequest::kApiKey, version, correlation_id, deadline);
    if (!raw) return raw.error();
    ApiVersionsResponse resp;
    if (!decode_api_versions(raw.value().body(), version, resp))
      return fail(NetErrorKind::kMalformedResponse, peer_ + ": undecodable ApiVersions v" +
                                                        std::to_string(version) + " response");
    if (resp.error_code == protocol::to_wire(protocol::ErrorCode::UNSUPPORTED_VERSION) && attempt == 0 &&
        version > 0) {
      // Retry at the highest version both know, v0 when the list is silent.
      int16_t next = 0;
      for (const auto& k : resp.api_keys)
        if (k.api_key == ApiVersionsRequest::kApiKey && k.max_version < version && k.max_version >= 0)
          next = k.max_version;
      version = next;
      continue;
    }
    if (resp.error_code != 0)
      return fail(NetErrorKind::kMalformedResponse,
                  peer_ + ": ApiVersions v" + std::to_string(version) + " answered error " +
                      std::to_string(resp.error_code));
    versions_.clear();
    for (const auto& k : resp.api_keys) {
      if (k.api_key < 0 || k.api_key > 4096) continue;  // nonsense key: ignore
      const auto idx = static_cast<size_t>(k.api_key);
      if (versions_.size() <= idx) versions_.resize(idx + 1, VersionRange{0, -1});
      versions_[idx] = VersionRange{k.min_version, k.max_version};
    }
    api_versions_version_ = version;
    return Status::ok_status();
  }
}

std::optional<VersionRange> BrokerClient::broker_versions(int16_t api_key) const {
  if (api_key < 0 || static_cast<size_t>(api_key) >= versions_.size()) return std::nullopt;
  const VersionRange& v = versions_[static_cast<size_t>(api_key)];
  if (v.max < v.min) return std::nullopt;
  return v;
}

std::optional<int16_t> BrokerClient::pick_version(int16_t api_key, int16_t our_max, int16_t our_min) const {
  const std::optional<VersionRange> theirs = broker_versions(api_key);
  if (!theirs) return std::nullopt;
  const int16_t hi = std::min(our_max, theirs->max);
  const int16_t lo = std::max(our_min, theirs->min);
  if (hi < lo) return std::nullopt;
  return hi;
}

void BrokerClient::close() { options_.interrupter->trigger(); }

Clock::time_point BrokerClient::request_deadline() const {
  return Clock::now() + std::chrono::milliseconds(std::max<int32_t>(options_.request_timeout_ms, 0));
}

std::string BrokerClient::describe(int16_t api_key, int16_t version) const {
  const protocol::ApiInfo* api = protocol::find_api(api_key);
  return (api ? std::string(api->name) : "api " + std::to_string(api_key)) + " v" + std::to_string(version);
}

NetError BrokerClient::fail(NetErrorKind kind, std::string message) {
  socket_.reset();
  return NetError{kind, std::move(message)};
}

int32_t BrokerClient::begin_request(protocol::Writer& w, int16_t api_key, int16_t version) {
  const int32_t correlation_id = next_correlation_id_;
  next_correlation_id_ = next_correlation_id_ == std::numeric_limits<int32_t>::max() ? 0 : next_correlation_id_ + 1;
  w.write_int32(0);  // size, patched in exchange()
  if (!version_in_schema(api_key, version)) {
    w.fail(protocol::WireError::kUnsupportedVersion);
    return correlation_id;
  }
  protocol::RequestHeader h;
  h.request_api_key = api_key;
  h.request_api_version = version;
  h.correlation_id = correlation_id;
  h.client_id = options_.client_id;
  h.encode(w, protocol::request_header_version(api_key, version));
  return correlation_id;
}

NetResult<RawResponse> BrokerClient::exchange(protocol::Writer& w, int16_t api_key, int16_t version,
                                              int32_t correlation_id, Clock::time_point deadline) {
  const std::string what = describe(api_key, version);
  if (options_.interrupter->triggered()) return fail(NetErrorKind::kClosed, peer_ + ": client closed");
  if (!socket_) return NetError{NetErrorKind::kNotConnected, peer_ + ": connection is dead; reconnect"};
  // An encoding failure sends nothing: the connection stays usable.
  if (!w.ok())
    return NetError{NetErrorKind::kEncode, peer_ + ": cannot encode " + what + ": " +
                                               std::string(protocol::to_string(w.error()))};
  if (!w.splices().empty())
    return NetError{NetErrorKind::kEncode, peer_ + ": " + what + ": external records cannot be sent"};
  if (w.size() - 4 > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    return NetError{NetErrorKind::kEncode, peer_ + ": " + what + ": request too large"};
  w.patch_int32(0, static_cast<int32_t>(w.size() - 4));

  if (Status st = socket_->send_all(w.buffer(), deadline); !st.ok())
    return fail(st.kind(), st.message() + " (" + what + ")");
  uint8_t prefix[4];
  if (Status st = socket_->recv_exact(prefix, deadline); !st.ok())
    return fail(st.kind(), st.message() + " (waiting for " + what + " response)");
  protocol::WireError werr = protocol::WireError::kNone;
  const std::optional<int32_t> size = protocol::parse_frame_size(prefix, options_.max_response_bytes, werr);
  if (!size) {
    if (werr == protocol::WireError::kFrameTooLarge)
      return fail(NetErrorKind::kResponseTooLarge,
                  peer_ + ": " + what + " response larger than max_response_bytes (" +
                      std::to_string(options_.max_response_bytes) + ")");
    return fail(NetErrorKind::kMalformedResponse,
                peer_ + ": " + what + " response size: " + std::string(protocol::to_string(werr)));
  }
  RawResponse out;
  out.frame.resize(static_cast<size_t>(*size));
  if (Status st = socket_->recv_exact(out.frame, deadline); !st.ok())
    return fail(st.kind(), st.message() + " (reading " + what + " response)");

  protocol::Reader r(out.frame);
  protocol::ResponseHeader header;
  header.decode(r, protocol::response_header_version(api_key, version));
  if (!r.ok())
    return fail(NetErrorKind::kMalformedResponse, peer_ + ": " + what + " response header: " +
                                                      std::string(protocol::to_string(r.error())));
  if (header.correlation_id != correlation_id)
    return fail(NetErrorKind::kCorrelationMismatch,
                peer_ + ": " + what + " response has correlation id " + std::to_string(header.correlation_id) +
                    ", expected " + std::to_string(correlation_id));
  out.body_offset = r.position();
  return out;
}

Status BrokerClient::check_decoded(const protocol::Reader& r, int16_t api_key, int16_t version) {
  if (!r.ok())
    return fail(NetErrorKind::kMalformedResponse, peer_ + ": " + describe(api_key, version) +
                                                      " response body: " + std::string(protocol::to_string(r.error())));
  if (!r.at_end())
    return fail(NetErrorKind::kMalformedResponse, peer_ + ": " + describe(api_key, version) + " response has " +
                                                      std::to_string(r.remaining()) + " trailing bytes");
  return Status::ok_status();
}

NetResult<RawResponse> BrokerClient::call_raw(int16_t api_key, int16_t version, std::span<const uint8_t> body) {
  protocol::Writer w(4 + 64 + body.size());
  const int32_t correlation_id = begin_request(w, api_key, version);
  w.write_raw(body);
  return exchange(w, api_key, version, correlation_id, request_deadline());
}

}  // namespace ciuickafka::replication::net
