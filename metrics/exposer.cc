// metrics/exposer.cc: address validation, then prometheus::Exposer with every
// exception caught and reported as an error value.
#include "metrics/exposer.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <charconv>
#include <exception>
#include <vector>

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
  return std::string(host) + ":" + std::string(port);
}

}  // namespace

Exposer::Exposer(std::unique_ptr<prometheus::Exposer> impl, std::string address, std::uint16_t port)
    : impl_(std::move(impl)), address_(std::move(address)), port_(port) {}

Exposer::~Exposer() = default;

ExposerStart Exposer::start(std::string_view address, const Registry& registry, std::size_t threads) {
  ExposerStart out;
  std::string civet = civet_address(address, out.error);
  if (civet.empty()) return out;
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
