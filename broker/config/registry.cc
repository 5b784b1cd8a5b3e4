// broker/config/registry.cc: validators, value parsing and registry lookups.
#include "broker/config/registry.h"

#include <charconv>
#include <cstdio>
#include <limits>
#include <unordered_map>

namespace ciuickafka::broker::config {
namespace {

std::optional<int64_t> parse_integer(std::string_view s) {
  // Java's parseInt/parseLong: optional sign, decimal digits, nothing else.
  if (s.size() >= 2 && s[0] == '+' && s[1] != '-' && s[1] != '+') s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_double(std::string_view s) {
  if (s.size() >= 2 && s[0] == '+' && s[1] != '-' && s[1] != '+') s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

std::optional<int64_t> as_integer(const Value& v) {
  if (const auto* i = std::get_if<int32_t>(&v)) return *i;
  if (const auto* l = std::get_if<int64_t>(&v)) return *l;
  return std::nullopt;
}

std::string format_double(double d) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  // Shortest text that reads back the same value.
  for (int prec = 1; prec <= 17; ++prec) {
    char tmp[64];
    std::snprintf(tmp, sizeof tmp, "%.*g", prec, d);
    if (std::strtod(tmp, nullptr) == d) return tmp;
  }
  return buf;
}

std::string join(std::initializer_list<std::string_view> items) {
  std::string out;
  for (auto s : items) {
    if (!out.empty()) out += ", ";
    out += s;
  }
  return out;
}

// The value as it may appear in a one-line message: quoted, control
// characters escaped.
std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string_view noun(ConfigType t) {
  switch (t) {
    case ConfigType::kBoolean: return "true or false";
    case ConfigType::kInt:
    case ConfigType::kLong: return "an integer";
    case ConfigType::kDouble: return "a number";
    case ConfigType::kString:
    case ConfigType::kPassword: return "a string";
    case ConfigType::kList: return "a comma-separated list";
    case ConfigType::kClass: return "a class name";
  }
  return "a value";
}

struct Table {
  std::vector<KeyDef> keys;
  std::unordered_map<std::string_view, size_t> by_name;
  std::unordered_map<std::string_view, size_t> by_topic_name;
};

const Table& table() {
  static const Table t = [] {
    Table t;
    t.keys = detail::make_key_table();
    for (size_t i = 0; i < t.keys.size(); ++i) {
      const KeyDef& k = t.keys[i];
      if (!t.by_name.emplace(k.name, i).second) {
        std::fprintf(stderr, "config registry: key %.*s listed twice\n", static_cast<int>(k.name.size()),
                     k.name.data());
        std::abort();
      }
      if (!k.topic_name.empty()) t.by_topic_name.emplace(k.topic_name, i);
    }
    return t;
  }();
  return t;
}

}  // namespace

std::string_view to_string(ConfigType t) {
  switch (t) {
    case ConfigType::kBoolean: return "boolean";
    case ConfigType::kInt: return "int";
    case ConfigType::kLong: return "long";
    case ConfigType::kDouble: return "double";
    case ConfigType::kString: return "string";
    case ConfigType::kList: return "list";
    case ConfigType::kPassword: return "password";
    case ConfigType::kClass: return "class";
  }
  return "unknown";
}

std::string_view to_string(ConfigSource s) {
  switch (s) {
    case ConfigSource::kDefault: return "default";
    case ConfigSource::kFile: return "file";
    case ConfigSource::kOverride: return "override";
    case ConfigSource::kEnvironment: return "environment";
    case ConfigSource::kDynamicDefault: return "dynamic default";
    case ConfigSource::kDynamicBroker: return "dynamic";
  }
  return "unknown";
}

DescribeSource describe_source(ConfigSource s) {
  switch (s) {
    case ConfigSource::kDefault: return DescribeSource::kDefaultConfig;
    case ConfigSource::kDynamicDefault: return DescribeSource::kDynamicDefaultBrokerConfig;
    case ConfigSource::kDynamicBroker: return DescribeSource::kDynamicBrokerConfig;
    default: return DescribeSource::kStaticBrokerConfig;
  }
}

Validator Validator::at_least(int64_t min) {
  return {">= " + std::to_string(min), false, [min](const Value& v) {
            auto i = as_integer(v);
            return i && *i >= min;
          }};
}

Validator Validator::between(int64_t min, int64_t max) {
  return {"in [" + std::to_string(min) + ", " + std::to_string(max) + "]", false, [min, max](const Value& v) {
            auto i = as_integer(v);
            return i && *i >= min && *i <= max;
          }};
}

Validator Validator::at_least_double(double min) {
  return {">= " + format_double(min), false, [min](const Value& v) {
            const auto* d = std::get_if<double>(&v);
            return d && *d >= min;
          }};
}

Validator Validator::between_double(double min, double max) {
  return {"in [" + format_double(min) + ", " + format_double(max) + "]", false, [min, max](const Value& v) {
            const auto* d = std::get_if<double>(&v);
            return d && *d >= min && *d <= max;
          }};
}

Validator Validator::one_of(std::initializer_list<std::string_view> allowed) {
  std::vector<std::string> set(allowed.begin(), allowed.end());
  return {"one of: " + join(allowed), true, [set](const Value& v) {
            const auto* s = std::get_if<std::string>(&v);
            if (!s) return false;
            for (const auto& a : set)
              if (a == *s) return true;
            return false;
          }};
}

Validator Validator::list_of(std::initializer_list<std::string_view> allowed) {
  std::vector<std::string> set(allowed.begin(), allowed.end());
  return {"a comma-separated list of: " + join(allowed), true, [set](const Value& v) {
            const auto* l = std::get_if<List>(&v);
            if (!l) return false;
            for (const auto& item : *l) {
              bool found = false;
              for (const auto& a : set) found = found || a == item;
              if (!found) return false;
            }
            return true;
          }};
}

Validator Validator::custom(std::string text, std::function<bool(const Value&)> accepts) {
  return {std::move(text), true, std::move(accepts)};
}

std::string_view section_title(Section s) {
  switch (s) {
    case Section::kServer: return "Server basics";
    case Section::kListeners: return "Listeners";
    case Section::kSocket: return "Socket server and request handling";
    case Section::kLog: return "Log basics";
    case Section::kLogRetention: return "Log retention and flush";
    case Section::kLogCleaner: return "Log cleaner (compaction)";
    case Section::kTopicDefaults: return "Topic defaults";
    case Section::kGroups: return "Offsets and consumer groups";
    case Section::kTransactions: return "Transactions";
    case Section::kReplication: return "Replication";
    case Section::kQuorum: return "ZooKeeper (a cluster) and KRaft (accepted, ignored)";
    case Section::kIgnored: return "Java classes and secrets (accepted for compatibility, unused)";
    case Section::kCiuic: return "CiuicKafka";
  }
  return "Other";
}

std::string KeyDef::expected() const {
  if (validator.replaces_noun) return validator.text;
  std::string out(noun(type));
  if (!validator.text.empty()) out += " " + validator.text;
  return out;
}

KeyDef key(std::string_view name, ConfigType type, const char* def, Section section, std::string_view doc) {
  KeyDef k;
  k.name = name;
  k.type = type;
  if (def) k.default_value = std::string_view(def);
  k.section = section;
  k.doc = doc;
  return k;
}

std::span<const KeyDef> all_keys() { return table().keys; }

const KeyDef* find_key(std::string_view name) {
  const Table& t = table();
  auto it = t.by_name.find(name);
  return it == t.by_name.end() ? nullptr : &t.keys[it->second];
}

const KeyDef* find_by_topic_name(std::string_view topic_name) {
  const Table& t = table();
  auto it = t.by_topic_name.find(topic_name);
  return it == t.by_topic_name.end() ? nullptr : &t.keys[it->second];
}

std::vector<const KeyDef*> synonym_keys(std::string_view name) {
  std::vector<const KeyDef*> out;
  const KeyDef* k = find_key(name);
  if (!k) return out;
  for (const KeyDef& other : table().keys)
    if (other.group_name() == k->group_name()) out.push_back(&other);
  return out;
}

size_t key_index(const KeyDef& def) { return static_cast<size_t>(&def - table().keys.data()); }

Result<Value> parse_value(const KeyDef& def, std::string_view raw) {
  const std::string_view s = java_trim(raw);
  auto fail = [&](std::string_view extra = {}) -> Result<Value> {
    std::string shown = def.type == ConfigType::kPassword ? std::string("[hidden]") : quote(s);
    return ConfigError{"invalid value " + shown + " for " + std::string(def.name) + ": expected " + def.expected() +
                       std::string(extra)};
  };
  Value v;
  switch (def.type) {
    case ConfigType::kBoolean:
      if (iequals(s, "true")) v = true;
      else if (iequals(s, "false")) v = false;
      else return fail();
      break;
    case ConfigType::kInt: {
      auto i = parse_integer(s);
      if (!i) return fail();
      if (*i < std::numeric_limits<int32_t>::min() || *i > std::numeric_limits<int32_t>::max())
        return fail(" (a 32-bit integer)");
      v = static_cast<int32_t>(*i);
      break;
    }
    case ConfigType::kLong: {
      auto i = parse_integer(s);
      if (!i) return fail();
      v = *i;
      break;
    }
    case ConfigType::kDouble: {
      auto d = parse_double(s);
      if (!d) return fail();
      v = *d;
      break;
    }
    case ConfigType::kString:
    case ConfigType::kPassword:
    case ConfigType::kClass:
      v = std::string(s);
      break;
    case ConfigType::kList: {
      List items;
      if (!s.empty()) {
        size_t start = 0;
        while (true) {
          size_t comma = s.find(',', start);
          items.emplace_back(
              java_trim(s.substr(start, comma == std::string_view::npos ? s.npos : comma - start)));
          if (comma == std::string_view::npos) break;
          start = comma + 1;
        }
      }
      v = std::move(items);
      break;
    }
  }
  if (def.validator.accepts && !def.validator.accepts(v)) return fail();
  return v;
}

std::optional<std::string> format_value(const Value& v) {
  struct Visitor {
    std::optional<std::string> operator()(std::monostate) const { return std::nullopt; }
    std::optional<std::string> operator()(bool b) const { return std::string(b ? "true" : "false"); }
    std::optional<std::string> operator()(int32_t i) const { return std::to_string(i); }
    std::optional<std::string> operator()(int64_t i) const { return std::to_string(i); }
    std::optional<std::string> operator()(double d) const { return format_double(d); }
    std::optional<std::string> operator()(const std::string& s) const { return s; }
    std::optional<std::string> operator()(const List& l) const {
      std::string out;
      for (size_t i = 0; i < l.size(); ++i) out += (i ? "," : "") + l[i];
      return out;
    }
  };
  return std::visit(Visitor{}, v);
}

std::string_view java_trim(std::string_view s) {
  while (!s.empty() && static_cast<unsigned char>(s.front()) <= ' ') s.remove_prefix(1);
  while (!s.empty() && static_cast<unsigned char>(s.back()) <= ' ') s.remove_suffix(1);
  return s;
}

}  // namespace ciuickafka::broker::config
