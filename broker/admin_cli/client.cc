// broker/admin_cli/client.cc: blocking sockets and version negotiation for
// the admin command (see client.h). One thread.
#include "broker/admin_cli/client.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "protocol/error_code.h"
#include "protocol/generated/api_versions.h"
#include "protocol/wire/frame.h"

namespace ciuickafka::broker::admin_cli {

namespace proto = ciuickafka::protocol;

std::string error_name(int16_t code) {
  return std::string(proto::error_name(static_cast<proto::ErrorCode>(code)));
}

void throw_kafka_error(const std::string& context, int16_t code, const std::optional<std::string>& message) {
  std::string m = context + ": " + error_name(code) + " (" + std::to_string(code) + ")";
  if (message && !message->empty()) m += ": " + *message;
  throw CliError(kExitKafkaError, m);
}

// One blocking TCP connection with a deadline per operation.
class Connection {
 public:
  Connection(std::string label, int timeout_ms) : label_(std::move(label)), timeout_ms_(timeout_ms) {}
  ~Connection() {
    if (fd_ >= 0) ::close(fd_);
  }

  void open(const std::string& host, uint16_t port) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
    if (rc != 0) throw CliError(kExitConnect, "cannot resolve " + label_ + ": " + ::gai_strerror(rc));
    std::string last = "no address";
    for (addrinfo* ai = res; ai; ai = ai->ai_next) {
      int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
      if (fd < 0) continue;
      int r = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
      if (r != 0 && errno == EINPROGRESS) {
        pollfd p{fd, POLLOUT, 0};
        r = ::poll(&p, 1, timeout_ms_);
        if (r == 1) {
          int err = 0;
          socklen_t len = sizeof err;
          ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
          r = err == 0 ? 0 : -1;
          errno = err;
        } else {
          const int saved = r == 0 ? ETIMEDOUT : errno;
          r = -1;
          errno = saved;
        }
      }
      if (r == 0) {
        fd_ = fd;
        break;
      }
      last = std::strerror(errno);
      ::close(fd);
    }
    ::freeaddrinfo(res);
    if (fd_ < 0) throw CliError(kExitConnect, "cannot connect to " + label_ + ": " + last);
  }

  void send_all(const std::vector<uint8_t>& b) {
    size_t off = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
    while (off < b.size()) {
      ssize_t n = ::send(fd_, b.data() + off, b.size() - off, MSG_NOSIGNAL);
      if (n > 0) {
        off += static_cast<size_t>(n);
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        wait(POLLOUT, deadline);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        throw CliError(kExitConnect, "connection to " + label_ + " broke: " + std::strerror(errno));
      }
    }
  }

  std::vector<uint8_t> recv_frame() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
    proto::FrameDecoder dec(1 << 30);
    uint8_t buf[64 * 1024];
    while (!dec.frame_ready()) {
      if (pending_off_ < pending_.size()) {
        const size_t used = dec.feed(std::span<const uint8_t>(pending_).subspan(pending_off_));
        pending_off_ += used;
        if (dec.error() != proto::WireError::kNone)
          throw CliError(kExitConnect, label_ + " does not speak the Kafka protocol (response frame: " +
                                           std::string(proto::to_string(dec.error())) + ")");
        continue;
      }
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n > 0) {
        pending_.assign(buf, buf + n);
        pending_off_ = 0;
      } else if (n == 0) {
        throw CliError(kExitConnect, "connection to " + label_ + " closed by the broker");
      } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        wait(POLLIN, deadline);
      } else if (errno != EINTR) {
        throw CliError(kExitConnect, "connection to " + label_ + " broke: " + std::strerror(errno));
      }
    }
    return dec.take_frame();
  }

 private:
  void wait(short events, std::chrono::steady_clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      throw CliError(kExitConnect, "timed out after " + std::to_string(timeout_ms_) + " ms waiting for " + label_ +
                                       " (request.timeout.ms)");
    pollfd p{fd_, events, 0};
    ::poll(&p, 1, static_cast<int>(left.count()));
  }

  std::string label_;
  int timeout_ms_;
  int fd_ = -1;
  std::vector<uint8_t> pending_;
  size_t pending_off_ = 0;
};

KafkaClient::KafkaClient(std::vector<HostPort> bootstrap, ClientProperties props, int64_t connect_wait_ms)
    : bootstrap_(std::move(bootstrap)), props_(std::move(props)), connect_wait_ms_(connect_wait_ms) {
  if (!bootstrap_.empty()) addresses_[kBootstrap] = bootstrap_[0];
}

KafkaClient::~KafkaClient() = default;

std::string KafkaClient::api_name(int16_t key) {
  const proto::ApiInfo* info = proto::find_api(key);
  return info ? std::string(info->name) : "api " + std::to_string(key);
}

std::string KafkaClient::node_label(int32_t node) const {
  auto it = addresses_.find(node);
  std::string where = it == addresses_.end() ? "?" : it->second.host + ":" + std::to_string(it->second.port);
  return node == kBootstrap ? where : "broker " + std::to_string(node) + " (" + where + ")";
}

Connection& KafkaClient::conn(int32_t node) {
  auto it = conns_.find(node);
  if (it != conns_.end()) return *it->second;
  auto addr = addresses_.find(node);
  if (addr == addresses_.end())
    throw CliError(kExitKafkaError, "broker " + std::to_string(node) + " is not in the cluster metadata");
  // The bootstrap list is tried in order; the bootstrap brokers may still be
  // starting (--connect-wait-ms): after a round of refused or failed
  // connections, another round every 200 ms until the deadline.
  std::unique_ptr<Connection> c;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(connect_wait_ms_);
  const size_t round = std::max<size_t>(1, bootstrap_.size());
  for (size_t attempt = 0;; ) {
    if (node == kBootstrap && !bootstrap_.empty()) addresses_[kBootstrap] = bootstrap_[attempt % round];
    const Address a = addresses_[node];
    c = std::make_unique<Connection>(node_label(node), props_.request_timeout_ms);
    try {
      c->open(a.host, a.port);
      break;
    } catch (const CliError& e) {
      if (node != kBootstrap || e.exit_code != kExitConnect) throw;
      if (++attempt % round != 0) continue;  // the next address of the list, at once
      if (std::chrono::steady_clock::now() >= deadline) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  Connection& ref = *c;
  conns_[node] = std::move(c);
  // ApiVersions: our highest; a broker that does not know it answers
  // UNSUPPORTED_VERSION in v0 form, naming its own range.
  int16_t v = proto::ApiVersionsRequest::kHighestVersion;
  for (int attempt = 0; attempt < 2; ++attempt) {
    proto::ApiVersionsRequest req;
    if (v >= 3) {
      req.client_software_name = "ciuickafka-admin";
      req.client_software_version = "1";
    }
    const int32_t corr = next_correlation_++;
    proto::WireError werr{};
    ref.send_all(proto::client::encode_request_frame(req, v, corr, props_.client_id, &werr));
    auto body = ref.recv_frame();
    proto::ApiVersionsResponse resp;
    auto res = proto::client::decode_response_frame(body, v, corr, &resp);
    if (!res.ok()) {
      proto::ApiVersionsResponse v0;
      if (proto::client::decode_response_frame(body, 0, corr, &v0).ok() && v0.error_code == 35) resp = v0;
      else throw CliError(kExitKafkaError, "ApiVersions from " + node_label(node) + ": " + proto::client::describe(res));
    }
    if (resp.error_code == 35 && attempt == 0) {
      int16_t theirs = 0;
      for (const auto& k : resp.api_keys)
        if (k.api_key == proto::ApiVersionsRequest::kApiKey) theirs = k.max_version;
      v = std::min<int16_t>(theirs, proto::ApiVersionsRequest::kHighestVersion);
      continue;
    }
    if (resp.error_code != 0) throw_kafka_error("ApiVersions from " + node_label(node), resp.error_code);
    versions_[node] = proto::client::VersionTable::from_response(resp);
    break;
  }
  return ref;
}

std::optional<int16_t> KafkaClient::supported(int32_t node, int16_t api_key, int16_t lo, int16_t hi) {
  conn(node);
  return versions_[node].pick(api_key, lo, hi);
}

int16_t KafkaClient::version_for(int32_t node, int16_t api_key, int16_t lo, int16_t hi) {
  auto v = supported(node, api_key, lo, hi);
  if (!v)
    throw CliError(kExitKafkaError, node_label(node) + " does not support " + api_name(api_key) + " v" +
                                        std::to_string(lo) + "-" + std::to_string(hi));
  return *v;
}

std::vector<uint8_t> KafkaClient::round_trip(int32_t node, const std::vector<uint8_t>& frame, int16_t) {
  Connection& c = conn(node);
  c.send_all(frame);
  return c.recv_frame();
}

proto::MetadataResponse KafkaClient::metadata(const std::optional<std::vector<std::string>>& topics) {
  proto::MetadataRequest req;
  req.allow_auto_topic_creation = false;
  if (!topics) {
    req.topics = std::nullopt;
  } else {
    req.topics.emplace();
    for (const auto& t : *topics) {
      proto::MetadataRequest::MetadataRequestTopic mt;
      mt.name = t;
      req.topics->push_back(mt);
    }
  }
  proto::MetadataResponse resp;
  // v1+: null topics means all (v0 would read an empty list as all).
  const auto v = supported(kBootstrap, proto::MetadataRequest::kApiKey, 1, proto::MetadataRequest::kHighestVersion);
  if (!v) throw CliError(kExitKafkaError, node_label(kBootstrap) + " does not support Metadata v1+");
  if (*v < 4) req.allow_auto_topic_creation = true;  // the field is v4+; older brokers decide themselves
  call(kBootstrap, req, &resp);
  for (const auto& b : resp.brokers) learn(b.node_id, b.host, b.port);
  controller_ = resp.controller_id;
  return resp;
}

void KafkaClient::learn(int32_t node, const std::string& host, int32_t port) {
  auto it = addresses_.find(node);
  if (it != addresses_.end() && it->second.host == host && it->second.port == port) return;
  if (it != addresses_.end()) {
    conns_.erase(node);
    versions_.erase(node);
  }
  addresses_[node] = {host, static_cast<uint16_t>(port)};
}

void KafkaClient::forget(int32_t node) {
  conns_.erase(node);
  versions_.erase(node);
}

int32_t KafkaClient::controller() const {
  return controller_ >= 0 && addresses_.count(controller_) ? controller_ : kBootstrap;
}

std::vector<int32_t> KafkaClient::nodes() const {
  std::vector<int32_t> out;
  for (const auto& [id, a] : addresses_)
    if (id != kBootstrap) out.push_back(id);
  return out;
}

}  // namespace ciuickafka::broker::admin_cli
