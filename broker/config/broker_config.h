// broker/config/broker_config.h: the broker's resolved configuration.
//
// load_config() merges four sources, highest first:
//   environment (KAFKA_*, KAFKA_CFG_*, CLUSTER_ID; see env.h)
//   > --override key=value
//   > the properties file (--config)
//   > the registry default.
// Every value is parsed and validated against the registry; the first bad one
// (in registry order) is the error, one line: invalid value "abc" for
// num.partitions: expected an integer >= 1 (from server.properties:3).
// Then keys are checked together (node.id vs broker.id, retention, listeners:
// see listeners.h). Unknown keys and keys accepted but ignored here are
// warnings for the caller to print. Each key keeps its source and origin, for DescribeConfigs.
//
// Dynamic configs (Kafka's DynamicBrokerConfig): set_dynamic() lays two sets
// over what the broker started with: the cluster-wide default (resource "")
// and this broker's own (resource "<node id>"), the broker's winning. Within
// a synonym group the key set at the highest source wins (dynamic broker >
// dynamic default > static > default), then the group's order.
// dynamic_updatable() says which keys may be set so: those that take effect
// here without a restart.
//
// Thread-safety: every reader may run while set_dynamic() runs on another
// thread. A reader sees the table before or after a change, never a mix;
// references it got stay valid for the BrokerConfig's lifetime (each change
// keeps its table: a few hundred entries per change an operator makes).
// set_dynamic() calls are serialised by the caller.
#pragma once

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/config/env.h"
#include "broker/config/properties.h"
#include "broker/config/registry.h"
#include "broker/config/types.h"

namespace ciuickafka::broker::config {

struct Entry {
  Value value;
  ConfigSource source = ConfigSource::kDefault;
  std::string origin = "default";  // "server.properties:12", "--override", "KAFKA_NUM_PARTITIONS"
};

// One line of a DescribeConfigs synonyms list.
struct Synonym {
  std::string_view name;
  std::optional<std::string> value;  // nullopt for passwords
  ConfigSource source;
};

struct ConfigInput {
  std::vector<Property> file;          // parse_properties() / read_properties_file()
  std::string file_name;               // names the file in origins and messages
  std::vector<std::string> overrides;  // each "key=value", as given to --override
  Environment environment;             // name, value pairs; process_environment()
};

class BrokerConfig;
struct LoadedConfig;

Result<LoadedConfig> load_config(const ConfigInput& input);

using DynamicMap = std::map<std::string, std::string>;

// Whether `k` may be set dynamically here (Kafka allows it, and it takes
// effect live in CiuicKafka); when not, why not, one line.
std::optional<std::string> not_dynamic_reason(const KeyDef& k);
// listeners, advertised.listeners, listener.security.protocol.map: dynamic
// per broker only (Kafka's PerBrokerConfigs).
bool is_listener_config(std::string_view name);

// Kafka's listener overrides (its ListenerReconfigurable configs):
// `listener.name.<l>.<key>`, <l> a listener's name in lower case (as
// Kafka's ListenerName.configPrefix writes it), for the keys that a
// listener may set for itself: max.connections and
// max.connection.creation.rate. A listener's value of such a key is its
// override, else the broker's value of the key (Kafka's
// valuesWithPrefixOverride). Set like any other key (file, --override,
// KAFKA_*; an override naming no listener of this broker warns) and
// dynamically, per broker or as the cluster default; an override must be
// an integer >= 1 (Kafka's validateReconfiguration).
struct ListenerKey {
  std::string listener;  // lower case, as in the key
  const KeyDef* base = nullptr;
};
std::optional<ListenerKey> parse_listener_key(std::string_view name);
// The key's value parsed and checked; the error names the whole key.
Result<Value> parse_listener_value(std::string_view name, const ListenerKey& k, std::string_view raw);
// "listener.name.<lower-case listener>.<key>".
std::string listener_key_name(std::string_view listener, std::string_view key);

class BrokerConfig {
 public:
  // Every key at its default.
  static BrokerConfig defaults();

  BrokerConfig() = default;
  BrokerConfig(const BrokerConfig& other);
  BrokerConfig& operator=(const BrokerConfig& other);
  BrokerConfig(BrokerConfig&& other) noexcept;
  BrokerConfig& operator=(BrokerConfig&& other) noexcept;

  // Replaces both dynamic sets (key -> raw text, as AlterConfigs sends):
  // every key must be a known, dynamically updatable key with a valid value,
  // and the keys together must pass the start-up checks; otherwise nothing
  // changes and the error names the key and the value.
  Result<bool> set_dynamic(const DynamicMap& cluster_default, const DynamicMap& this_broker);
  // The sets last accepted.
  DynamicMap dynamic_default() const;
  DynamicMap dynamic_broker() const;

  // The entry of a registry key. An unknown name is a programming error and
  // aborts: callers name keys in code.
  const Entry& entry(std::string_view name) const;
  ConfigSource source(std::string_view name) const { return entry(name).source; }
  bool is_set(std::string_view name) const { return source(name) != ConfigSource::kDefault; }
  bool is_null(std::string_view name) const;

  // Typed reads; asking with the wrong type aborts. get_string of a null
  // string is "".
  bool get_bool(std::string_view name) const;
  int32_t get_int(std::string_view name) const;
  int64_t get_long(std::string_view name) const;
  double get_double(std::string_view name) const;
  const std::string& get_string(std::string_view name) const;
  const List& get_list(std::string_view name) const;

  // The value as DescribeConfigs reports it: nullopt for null and passwords.
  std::optional<std::string> describe_value(std::string_view name) const;
  // DescribeConfigs synonyms of a key: for each key of its group in precedence
  // order, the value it was set to (if set) and then its default (if any).
  std::vector<Synonym> synonyms(std::string_view name) const;

  // Effective values of synonym groups: the first key of the group that was
  // set wins, else the first non-null default; time groups in milliseconds.
  int32_t node_id() const;         // node.id / broker.id; -1 when neither is set
  List log_dirs() const;           // log.dirs / log.dir, split on commas
  int64_t log_retention_ms() const;  // ms > minutes > hours; -1 = unlimited
  int64_t log_roll_ms() const;       // log.roll.ms > log.roll.hours
  int64_t log_flush_interval_ms() const;  // log.flush.interval.ms > log.flush.scheduler.interval.ms
  int64_t offsets_retention_ms() const;   // offsets.retention.minutes in ms

  // A listener override (parse_listener_key): the value in effect for the
  // listener (any case), nullopt when none is set; and every override
  // set, by any source, by name.
  std::optional<int32_t> listener_int(std::string_view listener, std::string_view key) const;
  std::vector<std::string> listener_overrides() const;
  // The entry in effect of an override that is set (nullptr otherwise).
  const Entry* listener_entry(std::string_view name) const;

  // The key of `name`'s group whose value is in effect (see above).
  const KeyDef& effective_key(std::string_view name) const;
  // The effective value of `name`'s group, an int or long key's, in
  // milliseconds when the group mixes units (as is, otherwise).
  int64_t group_ms(std::string_view name) const;

 private:
  friend Result<LoadedConfig> load_config(const ConfigInput& input);

  // One effective table: the start-up entries with the dynamic sets laid
  // over, and the dynamic entries themselves (for synonyms).
  struct Table {
    std::vector<Entry> effective;                 // parallel to all_keys()
    std::map<size_t, Entry> dynamic_default;      // registry index -> entry
    std::map<size_t, Entry> dynamic_broker;
    DynamicMap raw_default, raw_broker;
    // Listener overrides set dynamically, by key name.
    std::map<std::string, Entry> listener_default, listener_broker;
  };
  const std::vector<Entry>& table() const;
  const Table* live() const { return live_.load(std::memory_order_acquire); }
  void copy_dynamic_from(const BrokerConfig& other);

  std::vector<Entry> entries_;  // the start-up entries, parallel to all_keys()
  std::map<std::string, Entry> listener_entries_;  // listener overrides set at start-up, by name
  // The dynamic tables, each kept until the BrokerConfig goes (readers may
  // hold references into them); live_ is the newest (null: none yet).
  std::unique_ptr<std::deque<std::unique_ptr<Table>>> tables_;
  std::atomic<const Table*> live_{nullptr};
};

struct LoadedConfig {
  BrokerConfig config;
  std::vector<std::string> warnings;  // unknown keys, ignored keys: for the caller to print
};

}  // namespace ciuickafka::broker::config
