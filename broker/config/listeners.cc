// broker/config/listeners.cc
#include "broker/config/listeners.h"

#include <charconv>
#include <map>
#include <set>

#include "broker/config/broker_config.h"

namespace ciuickafka::broker::config {
namespace {

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return out;
}

List split(std::string_view s) {
  static const KeyDef kAsList = key("listeners", ConfigType::kList, nullptr, Section::kListeners, "");
  auto v = parse_value(kAsList, s);
  return v ? std::get<List>(v.value()) : List{};
}

ConfigError invalid(const BrokerConfig& c, std::string_view key, std::string_view why) {
  const Entry& e = c.entry(key);
  std::string shown = format_value(e.value).value_or("");
  return ConfigError{"invalid value \"" + shown + "\" for " + std::string(key) + ": expected " + std::string(why) +
                     " (from " + e.origin + ")"};
}

std::optional<SecurityProtocol> protocol_named(std::string_view p) {
  if (p == "PLAINTEXT") return SecurityProtocol::kPlaintext;
  if (p == "SSL") return SecurityProtocol::kSsl;
  if (p == "SASL_PLAINTEXT") return SecurityProtocol::kSaslPlaintext;
  if (p == "SASL_SSL") return SecurityProtocol::kSaslSsl;
  return std::nullopt;
}

// Parses one key's endpoints; the registry validator has already checked
// the NAME://host:port shape.
Result<std::vector<Endpoint>> endpoints(const BrokerConfig& c, std::string_view key,
                                        const std::map<std::string, SecurityProtocol>& protocols,
                                        const std::set<std::string>& controller_names) {
  std::vector<Endpoint> out;
  std::set<std::string> names;
  for (const std::string& item : split(c.get_string(key))) {
    size_t sep = item.find("://");
    size_t colon = item.rfind(':');
    Endpoint e;
    e.name = upper(std::string_view(item).substr(0, sep));
    e.host = item.substr(sep + 3, colon - sep - 3);
    if (e.host.size() >= 2 && e.host.front() == '[') e.host = e.host.substr(1, e.host.size() - 2);
    std::from_chars(item.data() + colon + 1, item.data() + item.size(), e.port);
    if (!names.insert(e.name).second) return invalid(c, key, "each listener name once (" + e.name + " repeats)");
    auto p = protocols.find(e.name);
    if (p == protocols.end())
      return invalid(c, key, "listener names that listener.security.protocol.map maps (" + e.name + " is not)");
    e.protocol = p->second;
    e.controller = controller_names.count(e.name) > 0;
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

std::string_view to_string(SecurityProtocol p) {
  switch (p) {
    case SecurityProtocol::kPlaintext: return "PLAINTEXT";
    case SecurityProtocol::kSsl: return "SSL";
    case SecurityProtocol::kSaslPlaintext: return "SASL_PLAINTEXT";
    case SecurityProtocol::kSaslSsl: return "SASL_SSL";
  }
  return "UNKNOWN";
}

Result<Listeners> resolve_listeners(const BrokerConfig& c) {
  std::map<std::string, SecurityProtocol> protocols;
  for (const std::string& item : split(c.get_string("listener.security.protocol.map"))) {
    size_t colon = item.find(':');
    auto p = protocol_named(item.substr(colon + 1));
    if (p) protocols[upper(std::string_view(item).substr(0, colon))] = *p;
  }
  std::set<std::string> controller_names;
  for (const std::string& n : split(c.get_string("controller.listener.names"))) controller_names.insert(upper(n));

  Listeners out;
  auto bound = endpoints(c, "listeners", protocols, controller_names);
  if (!bound) return bound.error();
  out.bound = std::move(bound).value();
  std::set<std::pair<std::string, uint16_t>> ports;
  for (const Endpoint& e : out.bound)
    if (e.port != 0 && !ports.insert({e.host, e.port}).second)
      return invalid(c, "listeners", "a different port for each listener (" + std::to_string(e.port) + " repeats)");

  if (c.is_null("advertised.listeners") || c.get_string("advertised.listeners").empty()) {
    for (const Endpoint& e : out.bound)
      if (!e.controller) out.advertised.push_back(e);
  } else {
    auto adv = endpoints(c, "advertised.listeners", protocols, controller_names);
    if (!adv) return adv.error();
    out.advertised = std::move(adv).value();
    std::set<std::string> bound_names;
    for (const Endpoint& e : out.bound) bound_names.insert(e.name);
    for (const Endpoint& e : out.advertised) {
      if (!bound_names.count(e.name))
        return invalid(c, "advertised.listeners", "names that listeners has (" + e.name + " is not there)");
      if (e.port == 0) return invalid(c, "advertised.listeners", "non-zero ports");
      if (e.controller)
        return invalid(c, "advertised.listeners", "no controller listener (" + e.name + " is one)");
    }
  }

  if (!c.is_null("inter.broker.listener.name")) {
    out.inter_broker = upper(c.get_string("inter.broker.listener.name"));
    bool found = false;
    for (const Endpoint& e : out.advertised) found = found || e.name == out.inter_broker;
    if (!found) return invalid(c, "inter.broker.listener.name", "the name of an advertised listener");
  } else if (!out.advertised.empty()) {
    out.inter_broker = out.advertised.front().name;
    for (const Endpoint& e : out.advertised)
      if (e.name == "PLAINTEXT") out.inter_broker = e.name;
  }
  return out;
}

std::optional<std::vector<IpOverride>> parse_ip_overrides(std::string_view text) {
  std::vector<IpOverride> out;
  size_t start = 0;
  if (text.find_first_not_of(" \t") == std::string_view::npos) return out;
  for (;;) {
    const size_t comma = text.find(',', start);
    std::string_view item = text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    const size_t colon = item.rfind(':');
    if (colon == std::string_view::npos || colon == 0) return std::nullopt;
    std::string_view host = item.substr(0, colon);
    const std::string_view count = item.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    if (host.empty() || host.find_first_of(" \t/[]") != std::string_view::npos) return std::nullopt;
    int32_t n = -1;
    auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), n);
    if (count.empty() || ec != std::errc() || end != count.data() + count.size() || n < 0) return std::nullopt;
    out.push_back(IpOverride{std::string(host), n});
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

}  // namespace ciuickafka::broker::config
