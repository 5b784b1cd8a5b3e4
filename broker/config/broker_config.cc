// broker/config/broker_config.cc: merging the sources and reading the result.
#include "broker/config/broker_config.h"

#include "broker/config/listeners.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

namespace ciuickafka::broker::config {
namespace {

[[noreturn]] void die(std::string_view what, std::string_view name) {
  std::fprintf(stderr, "config: %.*s: %.*s\n", static_cast<int>(what.size()), what.data(),
               static_cast<int>(name.size()), name.data());
  std::abort();
}

const KeyDef& must_find(std::string_view name) {
  const KeyDef* k = find_key(name);
  if (!k) die("no such key", name);
  return *k;
}

template <class V>
const V& get_as(const Entry& e, std::string_view name) {
  const V* v = std::get_if<V>(&e.value);
  if (!v) die("read with the wrong type or null", name);
  return *v;
}

// A value given by one source, before parsing.
struct Raw {
  std::string text;
  ConfigSource source = ConfigSource::kDefault;
  std::string origin;
  int rank = 0;  // within the environment: KAFKA_CFG_ (1) beats KAFKA_ (0)
};

bool is_empty_value(const Value& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return s->empty();
  if (const auto* l = std::get_if<List>(&v)) return l->empty();
  return std::holds_alternative<std::monostate>(v);
}

// Broker keys other than the topic-level defaults that take effect live:
// Kafka's DynamicThreadPool keys num.io.threads, num.network.threads,
// num.replica.fetchers and background.threads
// (admin/dynamic_configs.cc applies Kafka's half-to-double rule to a change,
// server/io_pool.h, replica/fetcher_manager.h and maintenance_pool.h resize)
// and its DynamicConnectionQuota keys, max.connection.creation.rate
// included (server/server.cc re-reads them), and
// transaction.partition.verification.enable (read by each Produce), and
// num.recovery.threads.per.data.dir, which only the next start-up's log
// recovery uses, as in Kafka (broker.cc loads the dynamic configs before
// it opens the logs), and the listeners (Kafka's DynamicListenerConfig;
// per broker: admin/dynamic_configs.cc, server/server.h).
constexpr std::string_view kLiveBrokerKeys[] = {"background.threads",
                                                "listeners",
                                                "advertised.listeners",
                                                "listener.security.protocol.map",
                                                "num.io.threads",
                                                "num.network.threads",
                                                "num.replica.fetchers",
                                                "num.recovery.threads.per.data.dir",
                                                "log.cleaner.backoff.ms",
                                                "log.cleaner.threads",
                                                "log.cleaner.dedupe.buffer.size",
                                                "log.cleaner.io.buffer.size",
                                                "log.cleaner.io.buffer.load.factor",
                                                "log.cleaner.io.max.bytes.per.second",
                                                "max.connections",
                                                "max.connections.per.ip",
                                                "max.connections.per.ip.overrides",
                                                "max.connection.creation.rate",
                                                "producer.id.expiration.ms",
                                                "transaction.partition.verification.enable"};

bool is_live_broker_key(std::string_view name) {
  for (std::string_view k : kLiveBrokerKeys)
    if (k == name) return true;
  return false;
}

}  // namespace

bool is_listener_config(std::string_view name) {
  return name == "listeners" || name == "advertised.listeners" || name == "listener.security.protocol.map";
}

std::optional<std::string> not_dynamic_reason(const KeyDef& k) {
  // The topic-level defaults (log.retention.ms, message.max.bytes, ...):
  // Kafka's DynamicLogConfig. Every topic reads them through its effective
  // config, and the broker re-applies its logs' settings after a change;
  // the controller takes unclean.leader.election.enable at once
  // (admin/dynamic_configs.cc).
  if (!k.topic_name.empty()) return std::nullopt;
  if (is_live_broker_key(k.name)) return std::nullopt;
  return "it takes effect only at start-up here: set it in server.properties, --override or KAFKA_* and restart";
}

namespace {
constexpr std::string_view kListenerPrefix = "listener.name.";
constexpr std::string_view kListenerKeys[] = {"max.connections", "max.connection.creation.rate"};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}
}  // namespace

std::optional<ListenerKey> parse_listener_key(std::string_view name) {
  if (!name.starts_with(kListenerPrefix)) return std::nullopt;
  const std::string_view rest = name.substr(kListenerPrefix.size());
  const size_t dot = rest.find('.');
  if (dot == 0 || dot == std::string_view::npos) return std::nullopt;
  const std::string_view listener = rest.substr(0, dot), key = rest.substr(dot + 1);
  // Kafka matches the prefix as written by ListenerName.configPrefix: the
  // name in lower case. Another spelling is not an override (an unknown key).
  for (char c : listener)
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_' ||
          c == '-'))
      return std::nullopt;
  for (std::string_view k : kListenerKeys)
    if (k == key) return ListenerKey{std::string(listener), find_key(k)};
  return std::nullopt;
}

Result<Value> parse_listener_value(std::string_view name, const ListenerKey& k, std::string_view raw) {
  auto v = parse_value(*k.base, raw);
  const int32_t* n = v ? std::get_if<int32_t>(&v.value()) : nullptr;
  if (n == nullptr || *n < 1)
    return ConfigError{"invalid value \"" + std::string(java_trim(raw)) + "\" for " + std::string(name) +
                       ": expected an integer >= 1"};
  return v;
}

std::string listener_key_name(std::string_view listener, std::string_view key) {
  return std::string(kListenerPrefix) + lower(listener) + "." + std::string(key);
}

BrokerConfig BrokerConfig::defaults() {
  BrokerConfig c;
  for (const KeyDef& k : all_keys()) {
    Entry e;
    if (k.default_value) {
      auto v = parse_value(k, *k.default_value);
      if (!v) die(v.error().message, "the registry default does not parse");
      e.value = std::move(v).value();
    }
    c.entries_.push_back(std::move(e));
  }
  return c;
}

BrokerConfig::BrokerConfig(const BrokerConfig& other)
    : entries_(other.entries_), listener_entries_(other.listener_entries_) {
  copy_dynamic_from(other);
}

BrokerConfig& BrokerConfig::operator=(const BrokerConfig& other) {
  if (this == &other) return *this;
  entries_ = other.entries_;
  listener_entries_ = other.listener_entries_;
  tables_.reset();
  live_.store(nullptr, std::memory_order_release);
  copy_dynamic_from(other);
  return *this;
}

BrokerConfig::BrokerConfig(BrokerConfig&& other) noexcept
    : entries_(std::move(other.entries_)),
      listener_entries_(std::move(other.listener_entries_)),
      tables_(std::move(other.tables_)) {
  live_.store(other.live_.exchange(nullptr), std::memory_order_release);
}

BrokerConfig& BrokerConfig::operator=(BrokerConfig&& other) noexcept {
  if (this == &other) return *this;
  entries_ = std::move(other.entries_);
  listener_entries_ = std::move(other.listener_entries_);
  tables_ = std::move(other.tables_);
  live_.store(other.live_.exchange(nullptr), std::memory_order_release);
  return *this;
}

void BrokerConfig::copy_dynamic_from(const BrokerConfig& other) {
  const Table* t = other.live();
  if (t == nullptr) return;
  tables_ = std::make_unique<std::deque<std::unique_ptr<Table>>>();
  tables_->push_back(std::make_unique<Table>(*t));
  live_.store(tables_->back().get(), std::memory_order_release);
}

DynamicMap BrokerConfig::dynamic_default() const {
  const Table* t = live();
  return t ? t->raw_default : DynamicMap{};
}

DynamicMap BrokerConfig::dynamic_broker() const {
  const Table* t = live();
  return t ? t->raw_broker : DynamicMap{};
}

Result<bool> BrokerConfig::set_dynamic(const DynamicMap& cluster_default, const DynamicMap& this_broker) {
  auto next = std::make_unique<Table>();
  next->effective = entries_;
  next->raw_default = cluster_default;
  next->raw_broker = this_broker;
  auto lay = [&](const DynamicMap& m, ConfigSource source, std::map<size_t, Entry>& into,
                 std::map<std::string, Entry>& listener_into) -> std::optional<ConfigError> {
    const char* origin = source == ConfigSource::kDynamicBroker ? "dynamic broker config" : "dynamic default broker config";
    for (const auto& [name, text] : m) {
      const KeyDef* k = find_key(name);
      if (k == nullptr) {
        // A listener override: this broker may not have the listener (a
        // cluster default serves every broker), so any listener name goes.
        auto lk = parse_listener_key(name);
        if (!lk) return ConfigError{"unknown configuration key \"" + name + "\""};
        auto v = parse_listener_value(name, *lk, text);
        if (!v) return v.error();
        listener_into[name] = Entry{std::move(v).value(), source, origin};
        continue;
      }
      if (auto why = not_dynamic_reason(*k))
        return ConfigError{"cannot update " + name + " dynamically: " + *why};
      if (source == ConfigSource::kDynamicDefault && is_listener_config(name))
        return ConfigError{"Cannot update these configs at default cluster level, broker id must be specified: " + name};
      auto v = parse_value(*k, text);
      if (!v) return v.error();
      Entry e;
      e.value = std::move(v).value();
      e.source = source;
      e.origin = origin;
      into[key_index(*k)] = e;
    }
    return std::nullopt;
  };
  if (auto e = lay(cluster_default, ConfigSource::kDynamicDefault, next->dynamic_default, next->listener_default))
    return *e;
  if (auto e = lay(this_broker, ConfigSource::kDynamicBroker, next->dynamic_broker, next->listener_broker)) return *e;
  for (const auto* layer : {&next->dynamic_default, &next->dynamic_broker})
    for (const auto& [i, e] : *layer) next->effective[i] = e;
  // The start-up checks that concern dynamic keys, on a candidate.
  BrokerConfig candidate;
  candidate.entries_ = next->effective;
  const KeyDef& retention = candidate.effective_key("log.retention.ms");
  if (candidate.group_ms("log.retention.ms") == 0)
    return ConfigError{"invalid value \"0\" for " + std::string(retention.name) +
                       ": expected -1 (unlimited) or a positive retention"};
  if (candidate.get_int("max.connections.per.ip") == 0 && candidate.get_string("max.connections.per.ip.overrides").empty())
    return ConfigError{"invalid value \"0\" for max.connections.per.ip: expected a value >= 1 unless "
                       "max.connections.per.ip.overrides is set"};
  if (auto l = resolve_listeners(candidate); !l) return l.error();
  if (!tables_) tables_ = std::make_unique<std::deque<std::unique_ptr<Table>>>();
  tables_->push_back(std::move(next));
  live_.store(tables_->back().get(), std::memory_order_release);
  return true;
}

const std::vector<Entry>& BrokerConfig::table() const {
  const Table* t = live();
  return t ? t->effective : entries_;
}

const Entry& BrokerConfig::entry(std::string_view name) const { return table()[key_index(must_find(name))]; }

bool BrokerConfig::is_null(std::string_view name) const {
  return std::holds_alternative<std::monostate>(entry(name).value);
}

bool BrokerConfig::get_bool(std::string_view name) const { return get_as<bool>(entry(name), name); }
int32_t BrokerConfig::get_int(std::string_view name) const { return get_as<int32_t>(entry(name), name); }
int64_t BrokerConfig::get_long(std::string_view name) const { return get_as<int64_t>(entry(name), name); }
double BrokerConfig::get_double(std::string_view name) const { return get_as<double>(entry(name), name); }
const List& BrokerConfig::get_list(std::string_view name) const { return get_as<List>(entry(name), name); }

const std::string& BrokerConfig::get_string(std::string_view name) const {
  static const std::string kEmpty;
  const Entry& e = entry(name);
  if (std::holds_alternative<std::monostate>(e.value)) return kEmpty;
  return get_as<std::string>(e, name);
}

const Entry* BrokerConfig::listener_entry(std::string_view name) const {
  const std::string key(name);
  if (const Table* t = live()) {
    for (const auto* layer : {&t->listener_broker, &t->listener_default})
      if (auto it = layer->find(key); it != layer->end()) return &it->second;
  }
  auto it = listener_entries_.find(key);
  return it == listener_entries_.end() ? nullptr : &it->second;
}

std::optional<int32_t> BrokerConfig::listener_int(std::string_view listener, std::string_view key) const {
  const Entry* e = listener_entry(listener_key_name(listener, key));
  if (e == nullptr) return std::nullopt;
  const int32_t* n = std::get_if<int32_t>(&e->value);
  return n ? std::optional<int32_t>(*n) : std::nullopt;
}

std::vector<std::string> BrokerConfig::listener_overrides() const {
  std::set<std::string> names;
  for (const auto& [n, e] : listener_entries_) names.insert(n);
  if (const Table* t = live())
    for (const auto* layer : {&t->listener_broker, &t->listener_default})
      for (const auto& [n, e] : *layer) names.insert(n);
  return {names.begin(), names.end()};
}

std::optional<std::string> BrokerConfig::describe_value(std::string_view name) const {
  if (must_find(name).type == ConfigType::kPassword) return std::nullopt;
  return format_value(entry(name).value);
}

std::vector<Synonym> BrokerConfig::synonyms(std::string_view name) const {
  // Kafka's ConfigHelper.configSynonyms: over the whole synonym group, first
  // every dynamic broker value, then every dynamic default, every static
  // value, every default; then the leading entries of other keys are
  // dropped, so a key lists its own entries and what follows them (a
  // retention.hours after a dynamic retention.ms shows only its default).
  // A listener override's list starts with its own entries at each source,
  // then its base key's group (Kafka's brokerConfigSynonyms with listener
  // overrides matched); the name points into the map that holds it.
  std::vector<Synonym> all;
  const Table* t = live();
  const auto lk = parse_listener_key(name);
  const auto group = synonym_keys(lk ? lk->base->name : name);
  auto shown = [](const KeyDef* k, const Value& v) {
    return k->type == ConfigType::kPassword ? std::nullopt : format_value(v);
  };
  auto own = [&](const std::map<std::string, Entry>& m) {
    if (!lk) return;
    if (auto it = m.find(std::string(name)); it != m.end())
      all.push_back({it->first, format_value(it->second.value), it->second.source});
  };
  if (t != nullptr) {
    own(t->listener_broker);
    for (const KeyDef* k : group)
      if (auto d = t->dynamic_broker.find(key_index(*k)); d != t->dynamic_broker.end())
        all.push_back({k->name, shown(k, d->second.value), d->second.source});
    own(t->listener_default);
    for (const KeyDef* k : group)
      if (auto d = t->dynamic_default.find(key_index(*k)); d != t->dynamic_default.end())
        all.push_back({k->name, shown(k, d->second.value), d->second.source});
  }
  own(listener_entries_);
  for (const KeyDef* k : group) {
    const Entry& e = entries_[key_index(*k)];
    if (e.source != ConfigSource::kDefault) all.push_back({k->name, shown(k, e.value), e.source});
  }
  for (const KeyDef* k : group)
    if (k->default_value)
      all.push_back({k->name, k->type == ConfigType::kPassword ? std::nullopt : std::optional<std::string>(*k->default_value),
                     ConfigSource::kDefault});
  auto first = std::find_if(all.begin(), all.end(), [&](const Synonym& s) { return s.name == name; });
  return std::vector<Synonym>(first, all.end());
}

namespace {
int source_rank(ConfigSource s) {
  switch (s) {
    case ConfigSource::kDefault: return 0;
    case ConfigSource::kDynamicDefault: return 2;
    case ConfigSource::kDynamicBroker: return 3;
    default: return 1;  // static: file, override, environment
  }
}
}  // namespace

const KeyDef& BrokerConfig::effective_key(std::string_view name) const {
  auto group = synonym_keys(name);
  if (group.empty()) die("no such key", name);
  const std::vector<Entry>& t = table();
  const KeyDef* best = nullptr;
  for (const KeyDef* k : group) {
    const int r = source_rank(t[key_index(*k)].source);
    if (r > 0 && (best == nullptr || r > source_rank(t[key_index(*best)].source))) best = k;
  }
  if (best != nullptr) return *best;
  for (const KeyDef* k : group)
    if (!std::holds_alternative<std::monostate>(t[key_index(*k)].value)) return *k;
  return *group.front();
}

int64_t BrokerConfig::group_ms(std::string_view name) const {
  const KeyDef& k = effective_key(name);
  const std::vector<Entry>& t = table();
  const Value& v = t[key_index(k)].value;
  int64_t n = std::holds_alternative<int32_t>(v) ? get_as<int32_t>(t[key_index(k)], k.name)
                                                 : get_as<int64_t>(t[key_index(k)], k.name);
  return k.unit_ms > 1 ? n * k.unit_ms : n;
}

int32_t BrokerConfig::node_id() const { return get_int(effective_key("node.id").name); }

List BrokerConfig::log_dirs() const {
  static const KeyDef kAsList = key("log.dirs", ConfigType::kList, nullptr, Section::kLog, "");
  auto v = parse_value(kAsList, get_string(effective_key("log.dirs").name));
  return v ? std::get<List>(v.value()) : List{};
}

int64_t BrokerConfig::log_retention_ms() const {
  int64_t ms = group_ms("log.retention.ms");
  return ms < 0 ? -1 : ms;
}

int64_t BrokerConfig::log_roll_ms() const { return group_ms("log.roll.ms"); }
int64_t BrokerConfig::log_flush_interval_ms() const { return group_ms("log.flush.interval.ms"); }
int64_t BrokerConfig::offsets_retention_ms() const {
  return static_cast<int64_t>(get_int("offsets.retention.minutes")) * 60'000;
}

Result<LoadedConfig> load_config(const ConfigInput& input) {
  LoadedConfig out{BrokerConfig::defaults(), {}};
  std::map<size_t, Raw> raw;  // registry index -> winning raw value
  std::map<std::string, Raw> raw_listener;  // listener overrides, by name
  auto offer = [&](std::string_view name, std::string text, ConfigSource source, std::string origin, int rank) {
    const KeyDef* k = find_key(name);
    if (!k && !parse_listener_key(name)) {
      std::string hint;
      if (parse_listener_key(lower(name)) && name.starts_with(kListenerPrefix))
        hint = " (a listener override names its listener in lower case: " + lower(name) + ")";
      out.warnings.push_back("unknown configuration key \"" + std::string(name) + "\" (from " + origin +
                             "); ignored" + hint);
      return;
    }
    Raw& slot = k ? raw[key_index(*k)] : raw_listener[std::string(name)];
    // Sources are offered lowest first; within the environment a lower rank
    // does not replace a higher one.
    if (!slot.origin.empty() && slot.source == source && slot.rank > rank) return;
    slot = Raw{std::move(text), source, std::move(origin), rank};
  };

  const std::string file_name = input.file_name.empty() ? "properties file" : input.file_name;
  for (const Property& p : input.file)
    offer(p.key, p.value, ConfigSource::kFile, file_name + ":" + std::to_string(p.line), 0);

  for (const std::string& o : input.overrides) {
    size_t eq = o.find('=');
    std::string_view name =
        eq == std::string::npos ? std::string_view() : java_trim(std::string_view(o).substr(0, eq));
    if (name.empty()) return ConfigError{"invalid --override \"" + o + "\": expected key=value"};
    offer(name, o.substr(eq + 1), ConfigSource::kOverride, "--override", 0);
  }

  for (const auto& [var, value] : input.environment) {
    EnvMapping m = map_env_var(var);
    if (m.kind != EnvKind::kProperty) continue;
    offer(m.key, value, ConfigSource::kEnvironment, var, var.starts_with("KAFKA_CFG_") ? 1 : 0);
  }

  for (auto& [index, r] : raw) {
    const KeyDef& k = all_keys()[index];
    auto v = parse_value(k, r.text);
    if (!v) return ConfigError{v.error().message + " (from " + r.origin + ")"};
    Entry& e = out.config.entries_[index];
    e.value = std::move(v).value();
    e.source = r.source;
    e.origin = std::move(r.origin);
    if (!k.ignored_because.empty() && !is_empty_value(e.value))
      out.warnings.push_back(std::string(k.name) + " is accepted but ignored: " + std::string(k.ignored_because) +
                             " (from " + e.origin + ")");
  }

  for (auto& [name, r] : raw_listener) {
    auto v = parse_listener_value(name, *parse_listener_key(name), r.text);
    if (!v) return ConfigError{v.error().message + " (from " + r.origin + ")"};
    out.config.listener_entries_[name] = Entry{std::move(v).value(), r.source, std::move(r.origin)};
  }

  // Checks across keys.
  const BrokerConfig& c = out.config;
  if (c.is_set("node.id") && c.is_set("broker.id") && c.get_int("node.id") != c.get_int("broker.id"))
    return ConfigError{"invalid value \"" + std::to_string(c.get_int("broker.id")) +
                       "\" for broker.id: expected the same value as node.id (" +
                       std::to_string(c.get_int("node.id")) + ") (from " + c.entry("broker.id").origin + ")"};
  const KeyDef& retention = c.effective_key("log.retention.ms");
  if (c.group_ms("log.retention.ms") == 0) {
    const Entry& e = c.entry(retention.name);
    return ConfigError{"invalid value \"0\" for " + std::string(retention.name) +
                       ": expected -1 (unlimited) or a positive retention (from " + e.origin + ")"};
  }
  // Kafka: a per-IP limit of 0 only makes sense with overrides that let some in.
  if (c.get_int("max.connections.per.ip") == 0 && c.get_string("max.connections.per.ip.overrides").empty())
    return ConfigError{"invalid value \"0\" for max.connections.per.ip: expected a value >= 1 unless "
                       "max.connections.per.ip.overrides is set (from " + c.entry("max.connections.per.ip").origin + ")"};
  // Listener names, ports and protocols checked together.
  auto listeners = resolve_listeners(c);
  if (!listeners) return listeners.error();
  // An override naming no listener of this broker has no effect here.
  for (const auto& [name, e] : c.listener_entries_) {
    const std::string l = parse_listener_key(name)->listener;
    bool found = false;
    std::string names;
    for (const Endpoint& ep : listeners.value().bound) {
      found = found || lower(ep.name) == l;
      names += (names.empty() ? "" : ", ") + ep.name;
    }
    if (!found)
      out.warnings.push_back(name + " names no listener of this broker (" + names + "); it has no effect (from " +
                             e.origin + ")");
  }
  return out;
}

}  // namespace ciuickafka::broker::config
