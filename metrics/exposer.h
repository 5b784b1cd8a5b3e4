// metrics/exposer.h: the HTTP endpoint Prometheus scrapes (GET /metrics).
//
// A thin wrapper over prometheus-cpp's Exposer (civetweb) that turns its
// exceptions into values: start() returns either a running Exposer or an
// error naming the address. The address is "host:port" (Kafka's
// `metrics.listener` style, default 0.0.0.0:9644); host is an IPv4 address,
// a bracketed IPv6 address (where civetweb has IPv6: ipv6_supported()) or
// "localhost" (names are not resolved); port 0 binds an ephemeral port,
// which port() reports.
//
// Thread-safety: start() and the destructor from one thread; scrapes are
// served on the exposer's own threads, reading the Registry concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace prometheus {
class Exposer;
}

namespace ciuickafka::metrics {

class Registry;
class Exposer;

inline constexpr std::string_view kDefaultMetricsAddress = "0.0.0.0:9644";

// Either `exposer` is set or `error` says why not.
struct ExposerStart {
  std::unique_ptr<Exposer> exposer;
  std::string error;
  bool ok() const { return exposer != nullptr; }
};

class Exposer {
 public:
  // Binds `address` and serves `registry` at /metrics until destroyed. The
  // Registry should outlive the Exposer (once gone, scrapes come back empty).
  static ExposerStart start(std::string_view address, const Registry& registry, std::size_t threads = 2);

  ~Exposer();
  Exposer(const Exposer&) = delete;
  Exposer& operator=(const Exposer&) = delete;

  // Whether the HTTP server library serves IPv6 (Debian 12's civetweb does
  // not; an IPv6 address is then refused by start() with that reason).
  static bool ipv6_supported();

  // The bound port (the chosen one when the address asked for port 0).
  std::uint16_t port() const { return port_; }
  // The address as given to start().
  const std::string& address() const { return address_; }

 private:
  Exposer(std::unique_ptr<prometheus::Exposer> impl, std::string address, std::uint16_t port);

  std::unique_ptr<prometheus::Exposer> impl_;
  std::string address_;
  std::uint16_t port_;
};

}  // namespace ciuickafka::metrics
