// metrics/exposer.cc: address validation, then prometheus::Exposer with every
// exception caught and reported as an error value.
#include "metrics/exposer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <exception>
#include <thread>
#include <vector>

#include "civetweb.h"
#include "metrics/registry.h"
#include "prometheus/exposer.h"

namespace ciuickafka::metrics {
namespace {

// Checks "host:port" and returns the civetweb listening_ports spelling, or
// an empty string with `error` set.
std::string civet_address(std::string_view address, std::string& error) {
  auto colon = address.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == address.size()) {
    error = "metrics address '" + std::string(address) + "' is not host:port";
    return {};
  }
  std::string_view host = address.substr(0, colon);
  std::string_view port = address.substr(colon + 1);
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value > 65535) {
    error = "metrics address '" + std::string(address) + "' has an invalid port";
    return {};
  }
  if (host == "localhost") host = "127.0.0.1";  // civetweb takes numeric addresses only
  // civetweb reads a malformed host leniently (999.1.1.1 binds somewhere),
  // so the host must be a numeric address that inet_pton accepts.
  bool v6 = host.size() > 2 && host.front() == '[' && host.back() == ']';
  std::string numeric(v6 ? host.substr(1, host.size() - 2) : host);
  unsigned char scratch[sizeof(in6_addr)];
  if (inet_pton(v6 ? AF_INET6 : AF_INET, numeric.c_str(), scratch) != 1) {
    error = "metrics address '" + std::string(address) +
            "' needs a numeric IPv4 host, [IPv6] in brackets, or localhost";
    return {};
  }
  if (v6 && !Exposer::ipv6_supported()) {
    error = "metrics address '" + std::string(address) +
            "' is IPv6, which this build's HTTP server (civetweb built without IPv6, as Debian's) cannot "
            "serve: use an IPv4 address";
    return {};
  }
  return std::string(host) + ":" + std::string(port);
}

// A numeric IPv4 address, or an IPv6 one with or without brackets, and a
// port as a socket address; false when the host is not numeric.
bool socket_address(std::string host, std::uint16_t port, sockaddr_storage& ss, socklen_t& len) {
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  ss = sockaddr_storage{};
  if (host.find(':') != std::string::npos) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    len = sizeof *a;
    return inet_pton(AF_INET6, host.c_str(), &a->sin6_addr) == 1;
  }
  auto* a = reinterpret_cast<sockaddr_in*>(&ss);
  a->sin_family = AF_INET;
  a->sin_port = htons(port);
  len = sizeof *a;
  return inet_pton(AF_INET, host.c_str(), &a->sin_addr) == 1;
}

// Binds (and closes) a socket on the civetweb address, as civetweb will
// (SO_REUSEADDR), so a port in use is reported with the system's reason
// instead of civetweb's "null context when constructing CivetServer".
// Empty when the bind works.
std::string probe_bind(const std::string& civet) {
  const auto colon = civet.rfind(':');
  sockaddr_storage ss;
  socklen_t len = 0;
  if (!socket_address(civet.substr(0, colon), static_cast<std::uint16_t>(std::stoi(civet.substr(colon + 1))),
                      ss, len))
    return {};
  const int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return {};
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  std::string error;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    const int e = errno;
    error = std::string(std::strerror(e));
    if (e == EADDRINUSE) error += " (another process listens there)";
  }
  ::close(fd);
  return error;
}

// Connects to host:port and closes at once (a numeric address; anything
// else, or a failed connect, is ignored).
void poke(const std::string& host, std::uint16_t port) {
  sockaddr_storage ss;
  socklen_t len = 0;
  if (!socket_address(host, port, ss, len)) return;
  const int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  (void)::connect(fd, reinterpret_cast<sockaddr*>(&ss), len);
  ::close(fd);
}

// Where a local connection reaches the listener bound at `address`
// (already validated by civet_address): the wildcard addresses by loopback.
std::string reachable_host(const std::string& address) {
  std::string host = address.substr(0, address.rfind(':'));
  if (host == "localhost" || host == "0.0.0.0") return "127.0.0.1";
  if (host == "[::]") return "::1";
  return host;
}

}  // namespace

Exposer::Exposer(std::unique_ptr<prometheus::Exposer> impl, std::string address, std::uint16_t port)
    : impl_(std::move(impl)), address_(std::move(address)), port_(port) {}

Exposer::~Exposer() {
  // civetweb's listener thread sees mg_stop's flag only when its poll() wakes,
  // and that poll waits up to 2 s for a connection: every shutdown stalled
  // that long. Connections made while the stop runs wake it at once (civetweb
  // closes them as it stops; after it closes the listener they are refused).
  std::atomic<bool> stopped{false};
  std::thread waker([&stopped, host = reachable_host(address_), port = port_] {
    while (!stopped.load(std::memory_order_acquire)) {
      poke(host, port);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  impl_.reset();
  stopped.store(true, std::memory_order_release);
  waker.join();
}

bool Exposer::ipv6_supported() { return mg_check_feature(8) != 0; }  // 8: USE_IPV6 (civetweb.h)

ExposerStart Exposer::start(std::string_view address, const Registry& registry, std::size_t threads) {
  ExposerStart out;
  std::string civet = civet_address(address, out.error);
  if (civet.empty()) return out;
  if (std::string why = probe_bind(civet); !why.empty()) {
    out.error = "cannot serve metrics on '" + std::string(address) + "': " + why;
    return out;
  }
  try {
    auto impl = std::make_unique<prometheus::Exposer>(civet, threads);
    std::vector<int> ports = impl->GetListeningPorts();
    if (ports.empty() || ports.front() <= 0 || ports.front() > 65535) {
      out.error = "metrics exposer on '" + std::string(address) + "' reports no listening port";
      return out;
    }
    impl->RegisterCollectable(registry.collectable());
    out.exposer.reset(new Exposer(std::move(impl), std::string(address), static_cast<std::uint16_t>(ports.front())));
  } catch (const std::exception& e) {
    out.error = "cannot serve metrics on '" + std::string(address) + "': " + e.what();
  } catch (...) {
    out.error = "cannot serve metrics on '" + std::string(address) + "'";
  }
  return out;
}

}  // namespace ciuickafka::metrics
