// broker/quotas/quota_table.cc: see quota_table.h.
#include "broker/quotas/quota_table.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>

namespace ciuickafka::broker::quotas {

using protocol::ErrorCode;

namespace {

Error invalid(std::string message) { return {ErrorCode::INVALID_REQUEST, std::move(message)}; }

bool has(const Entity& e, const char* type) { return e.find(type) != e.end(); }

// Kafka's isValidIpEntity: the default, a literal address, or a name that
// resolves.
bool valid_ip_entity(const std::optional<std::string>& ip) {
  if (!ip) return true;
  in6_addr a6{};
  in_addr a4{};
  if (inet_pton(AF_INET, ip->c_str(), &a4) == 1 || inet_pton(AF_INET6, ip->c_str(), &a6) == 1) return true;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(ip->c_str(), nullptr, &hints, &res);
  if (res != nullptr) freeaddrinfo(res);
  return rc == 0;
}

Error validate_entity(const Entity& e) {
  if (e.empty()) return invalid("Invalid empty client quota entity");
  for (const auto& [type, name] : e) {
    if (type != kUser && type != kClientId && type != kIp)
      return invalid("Unhandled client quota entity type: " + type);
    if (name && name->empty()) return invalid("Empty " + type + " not supported");
  }
  if (has(e, kIp)) {
    if (e.size() > 1)
      return invalid("Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId");
    if (!valid_ip_entity(e.at(kIp))) return invalid(*e.at(kIp) + " is not a valid IP or resolvable host.");
  }
  return {};
}

Error validate_value(KeyType type, const std::string& key, double value) {
  if (!(value > 0.0)) return invalid("Quota " + key + " must be greater than 0");
  double limit = 0;
  const char* type_name = "";
  switch (type) {
    case KeyType::kDouble:
      return {};
    case KeyType::kInt:
      limit = static_cast<double>(std::numeric_limits<int32_t>::max());
      type_name = "an INT";
      break;
    case KeyType::kLong:
      limit = static_cast<double>(std::numeric_limits<int64_t>::max());
      type_name = "a LONG";
      break;
  }
  if (value > limit) return invalid("Proposed value for " + key + " is too large for " + type_name + ".");
  if (std::fabs(std::fmod(value, 1.0)) > 1e-6) return invalid(key + " cannot be a fractional value.");
  return {};
}

}  // namespace

std::optional<KeyType> key_type(const Entity& entity, std::string_view key) {
  if (has(entity, kIp)) {
    if (key == kConnectionCreationRate) return KeyType::kInt;
    return std::nullopt;
  }
  if (key == kProducerByteRate || key == kConsumerByteRate) return KeyType::kLong;
  if (key == kRequestPercentage || key == kControllerMutationRate) return KeyType::kDouble;
  return std::nullopt;
}

std::vector<AlterResult> alter(Table* table, const std::vector<Alteration>& alterations) {
  std::vector<AlterResult> results;
  auto result_of = [&](const Entity& e) -> AlterResult* {
    for (AlterResult& r : results)
      if (r.entity == e) return &r;
    return nullptr;
  };
  for (const Alteration& a : alterations) {
    // A key twice in the entry makes the entity's result an error; Kafka's
    // controller then finds the entity already answered and says so.
    std::map<std::string, std::optional<double>> ops;
    bool duplicate_key = false;
    for (const Op& op : a.ops)
      if (!ops.emplace(op.key, op.value).second) duplicate_key = true;
    if (AlterResult* seen = result_of(a.entity)) {
      seen->error = invalid("Ignoring duplicate entity " + to_string(a.entity));
      continue;
    }
    results.push_back({a.entity, {}});
    if (duplicate_key) {
      results.back().error = invalid("Ignoring duplicate entity " + to_string(a.entity));
      continue;
    }
    Error& error = results.back().error;
    if (error = validate_entity(a.entity); !error.ok()) continue;
    Values next;
    if (auto it = table->find(a.entity); it != table->end()) next = it->second;
    for (const auto& [key, value] : ops) {
      if (!value) {
        next.erase(key);
        continue;
      }
      const std::optional<KeyType> type = key_type(a.entity, key);
      if (!type) {
        error = invalid("Invalid configuration key " + key);
        break;
      }
      if (error = validate_value(*type, key, *value); !error.ok()) break;
      next[key] = *value;
    }
    if (!error.ok()) continue;
    if (next.empty()) {
      table->erase(a.entity);
    } else {
      (*table)[a.entity] = std::move(next);
    }
  }
  return results;
}

std::vector<AlterResult> fail_each(const std::vector<Alteration>& alterations, const Error& error) {
  std::vector<AlterResult> out;
  for (const Alteration& a : alterations)
    if (std::none_of(out.begin(), out.end(), [&](const AlterResult& r) { return r.entity == a.entity; }))
      out.push_back({a.entity, error});
  return out;
}

Error describe(const Table& table, const std::vector<FilterComponent>& components, bool strict,
               std::vector<std::pair<Entity, Values>>* out) {
  std::map<std::string, std::optional<std::string>> exact;
  std::set<std::string> any;
  for (const FilterComponent& c : components) {
    if (c.entity_type.empty()) return invalid("Invalid empty entity type.");
    if (exact.count(c.entity_type) != 0 || any.count(c.entity_type) != 0)
      return invalid("Entity type " + c.entity_type + " cannot appear more than once in the filter.");
    if (c.entity_type != kIp && c.entity_type != kUser && c.entity_type != kClientId)
      return {ErrorCode::UNSUPPORTED_VERSION, "Unsupported entity type " + c.entity_type};
    switch (c.match_type) {
      case kMatchExact:
        if (!c.match) return invalid("Request specified MATCH_TYPE_EXACT, but set match string to null.");
        exact[c.entity_type] = c.match;
        break;
      case kMatchDefault:
        if (c.match) return invalid("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.");
        exact[c.entity_type] = std::nullopt;
        break;
      case kMatchAny:
        if (c.match) return invalid("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.");
        any.insert(c.entity_type);
        break;
      default:
        return invalid("Unknown match type " + std::to_string(c.match_type));
    }
  }
  auto named = [&](const char* t) { return exact.count(t) != 0 || any.count(t) != 0; };
  if (named(kIp) && (named(kUser) || named(kClientId)))
    return invalid(
        "Invalid entity filter component combination. IP filter component should not be used with user or "
        "clientId filter component.");
  out->clear();
  for (const auto& [entity, values] : table) {
    if (strict && entity.size() != exact.size() + any.size()) continue;
    bool ok = true;
    for (const auto& [type, name] : exact) {
      auto it = entity.find(type);
      if (it == entity.end() || it->second != name) {
        ok = false;
        break;
      }
    }
    for (const std::string& type : any)
      if (ok && entity.find(type) == entity.end()) ok = false;
    if (ok) out->emplace_back(entity, values);
  }
  return {};
}

std::optional<Match> find(const Table& table, std::string_view key, const std::string& user,
                          const std::string& client_id) {
  const std::optional<std::string> u = user, c = client_id, dflt;
  struct Step {
    Entity entity;
    bool user_tag;
    bool client_tag;
  };
  const Step steps[] = {
      {{{kUser, u}, {kClientId, c}}, true, true},       {{{kUser, u}, {kClientId, dflt}}, true, true},
      {{{kUser, u}}, true, false},                      {{{kUser, dflt}, {kClientId, c}}, true, true},
      {{{kUser, dflt}, {kClientId, dflt}}, true, true}, {{{kUser, dflt}}, true, false},
      {{{kClientId, c}}, false, true},                  {{{kClientId, dflt}}, false, true},
  };
  for (const Step& s : steps) {
    auto it = table.find(s.entity);
    if (it == table.end()) continue;
    auto v = it->second.find(std::string(key));
    if (v == it->second.end()) continue;
    return Match{v->second, s.user_tag ? user : std::string(), s.client_tag ? client_id : std::string()};
  }
  return std::nullopt;
}

std::optional<std::string> canonical_address(const std::string& text) {
  char buf[INET6_ADDRSTRLEN] = {};
  in_addr a4{};
  in6_addr a6{};
  if (inet_pton(AF_INET, text.c_str(), &a4) == 1 && inet_ntop(AF_INET, &a4, buf, sizeof buf) != nullptr)
    return std::string(buf);
  if (inet_pton(AF_INET6, text.c_str(), &a6) == 1 && inet_ntop(AF_INET6, &a6, buf, sizeof buf) != nullptr)
    return std::string(buf);
  return std::nullopt;
}

namespace {

std::vector<std::string> addresses_of(const std::string& host) {
  std::vector<std::string> out;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0) return out;
  for (addrinfo* p = res; p != nullptr; p = p->ai_next) {
    char buf[INET6_ADDRSTRLEN] = {};
    const void* addr = p->ai_family == AF_INET ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(p->ai_addr)->sin_addr)
                                               : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(p->ai_addr)->sin6_addr);
    if ((p->ai_family == AF_INET || p->ai_family == AF_INET6) && inet_ntop(p->ai_family, addr, buf, sizeof buf))
      out.emplace_back(buf);
  }
  freeaddrinfo(res);
  return out;
}

}  // namespace

IpRates resolve_ip_rates(const Table& table) {
  IpRates out;
  std::map<std::string, double> by_name;
  for (const auto& [entity, values] : table) {
    auto ip = entity.find(kIp);
    if (ip == entity.end()) continue;
    auto v = values.find(kConnectionCreationRate);
    if (v == values.end()) continue;
    if (!ip->second) {
      out.fallback = v->second;
    } else if (auto c = canonical_address(*ip->second)) {
      out.by_address[*c] = v->second;
    } else {
      for (const std::string& a : addresses_of(*ip->second)) by_name.emplace(a, v->second);
    }
  }
  for (const auto& [a, rate] : by_name) out.by_address.emplace(a, rate);  // a literal entity wins
  return out;
}

std::optional<double> find_ip(const IpRates& rates, const std::string& address) {
  if (auto it = rates.by_address.find(address); it != rates.by_address.end()) return it->second;
  return rates.fallback;
}

std::string sanitize(std::string_view name) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  out.reserve(name.size());
  for (unsigned char ch : name) {
    if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' ||
        ch == '_' || ch == '~') {
      out.push_back(static_cast<char>(ch));
    } else {
      out.push_back('%');
      out.push_back(hex[ch >> 4]);
      out.push_back(hex[ch & 15]);
    }
  }
  return out;
}

std::optional<std::string> desanitize(std::string_view s) {
  auto digit = [](char ch) -> int {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    return -1;
  };
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {  // URLDecoder's space
      out.push_back(' ');
    } else if (s[i] == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      const int hi = digit(s[i + 1]), lo = digit(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

namespace {

constexpr std::string_view kDefaultName = "<default>";

std::string zk_name(const std::optional<std::string>& name) {
  return name ? sanitize(*name) : std::string(kDefaultName);
}

std::optional<std::optional<std::string>> name_of_zk(std::string_view s) {
  if (s == kDefaultName) return std::optional<std::string>();
  if (s.empty()) return std::nullopt;
  auto d = desanitize(s);
  if (!d) return std::nullopt;
  return std::optional<std::string>(std::move(*d));
}

}  // namespace

std::optional<std::string> zk_entity_path(const Entity& e) {
  auto user = e.find(kUser), client = e.find(kClientId), ip = e.find(kIp);
  if (e.size() == 2 && user != e.end() && client != e.end())
    return "users/" + zk_name(user->second) + "/clients/" + zk_name(client->second);
  if (e.size() != 1) return std::nullopt;
  if (user != e.end()) return "users/" + zk_name(user->second);
  if (client != e.end()) return "clients/" + zk_name(client->second);
  if (ip != e.end()) return "ips/" + zk_name(ip->second);
  return std::nullopt;
}

std::optional<Entity> entity_of_zk_path(std::string_view path) {
  std::vector<std::string_view> parts;
  size_t from = 0;
  for (;;) {
    const size_t slash = path.find('/', from);
    parts.push_back(path.substr(from, slash == std::string_view::npos ? std::string_view::npos : slash - from));
    if (slash == std::string_view::npos) break;
    from = slash + 1;
  }
  auto type_of = [](std::string_view root) -> const char* {
    if (root == "users") return kUser;
    if (root == "clients") return kClientId;
    if (root == "ips") return kIp;
    return nullptr;
  };
  if (parts.size() == 2) {
    const char* type = type_of(parts[0]);
    auto name = name_of_zk(parts[1]);
    if (type == nullptr || !name) return std::nullopt;
    return Entity{{type, *name}};
  }
  if (parts.size() == 4 && parts[0] == "users" && parts[2] == "clients") {
    auto user = name_of_zk(parts[1]), client = name_of_zk(parts[3]);
    if (!user || !client) return std::nullopt;
    return Entity{{kUser, *user}, {kClientId, *client}};
  }
  return std::nullopt;
}

std::string to_string(const Entity& e) {
  std::string out;
  for (const auto& [type, name] : e) out += (out.empty() ? "" : ", ") + type + "=" + name.value_or("null");
  return "ClientQuotaEntity(entries={" + out + "})";
}

std::string value_text(KeyType type, double value) {
  char buf[64];
  if (type == KeyType::kDouble) {
    if (std::fabs(value - std::round(value)) < 1e-9 && std::fabs(value) < 1e15) {
      std::snprintf(buf, sizeof buf, "%.1f", value);
    } else {
      // The shortest text that reads back as the same double (0.000001,
      // not 9.9999999999999995e-07).
      for (int digits = 15; digits <= 17; ++digits) {
        std::snprintf(buf, sizeof buf, "%.*g", digits, value);
        if (std::strtod(buf, nullptr) == value) break;
      }
    }
  } else {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(std::llround(value)));
  }
  return buf;
}

}  // namespace ciuickafka::broker::quotas
