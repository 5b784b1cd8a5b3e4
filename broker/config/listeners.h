// broker/config/listeners.h: listeners, advertised.listeners and the
// security protocol map, parsed into endpoints and checked against each
// other as Kafka does.
//
// Listener names are case-insensitive and kept upper-cased (Kafka's
// ListenerName.normalised). Rules, each an error naming the key:
//   - a listener name appears once in listeners, and once in advertised.listeners;
//   - every listener name has a protocol in listener.security.protocol.map;
//   - two listeners on one host do not share a port (port 0 excepted);
//   - advertised names are among the listeners, with a non-zero port, and
//     not controller listeners;
//   - inter.broker.listener.name, when set, is an advertised listener.
// Listeners named in controller.listener.names are KRaft controller listeners:
// parsed, marked, and not served by a single node (see `controller`).
//
// Also the parser of max.connections.per.ip.overrides.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/config/types.h"

namespace ciuickafka::broker::config {

class BrokerConfig;

enum class SecurityProtocol : uint8_t { kPlaintext, kSsl, kSaslPlaintext, kSaslSsl };

std::string_view to_string(SecurityProtocol p);

struct Endpoint {
  std::string name;  // upper-cased listener name
  std::string host;  // empty: all interfaces (or, advertised, the host's name); IPv6 without brackets
  uint16_t port = 0;
  SecurityProtocol protocol = SecurityProtocol::kPlaintext;
  bool controller = false;  // named in controller.listener.names

  bool operator==(const Endpoint&) const = default;
};

struct Listeners {
  std::vector<Endpoint> bound;       // listeners, in order
  std::vector<Endpoint> advertised;  // advertised.listeners, or the non-controller listeners when unset
  std::string inter_broker;          // inter.broker.listener.name, else PLAINTEXT if advertised, else the first

  bool operator==(const Listeners&) const = default;
};

Result<Listeners> resolve_listeners(const BrokerConfig& config);

// max.connections.per.ip.overrides: "host:count,..." (the count after the
// last colon, so a bare IPv6 address works; [v6]:count too). Empty text gives
// no entries; nullopt when an entry is malformed or a count is not >= 0.
struct IpOverride {
  std::string host;  // as written, brackets removed
  int32_t max = 0;
};
std::optional<std::vector<IpOverride>> parse_ip_overrides(std::string_view text);

}  // namespace ciuickafka::broker::config
