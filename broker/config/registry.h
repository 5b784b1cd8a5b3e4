// broker/config/registry.h: the one typed registry of broker configuration keys.
//
// Every key the broker understands is one KeyDef in keys.cc: Kafka's name,
// type, default (as Kafka writes it in a properties file, or none for null),
// validator, section, documentation, its topic-level name when the key is the
// broker default of a topic config (log.retention.ms -> retention.ms), and its
// synonym group when several keys set one thing (log.retention.ms/.minutes/
// .hours; node.id/broker.id; log.dirs/log.dir). Parsing, --help, the example
// deploy/server.properties and DescribeConfigs all read this table; nothing
// else lists keys.
//
// Thread-safety: the registry is built once (function-local static) and
// immutable afterwards; safe to read from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "broker/config/types.h"

namespace ciuickafka::broker::config {

// What values a key accepts beyond its type. The text completes "expected ...":
// either after the type's noun ("an integer" + " >= 1") or, when `replaces_noun`,
// on its own ("one of: producer, gzip").
struct Validator {
  std::string text;
  bool replaces_noun = false;
  std::function<bool(const Value&)> accepts;  // empty: anything of the type

  static Validator none() { return {}; }
  static Validator at_least(int64_t min);
  static Validator between(int64_t min, int64_t max);
  static Validator at_least_double(double min);
  static Validator between_double(double min, double max);
  // A string that is one of `allowed` (case-sensitive, as Kafka's ValidString).
  static Validator one_of(std::initializer_list<std::string_view> allowed);
  // A list whose every element is one of `allowed` (Kafka's ValidList).
  static Validator list_of(std::initializer_list<std::string_view> allowed);
  static Validator custom(std::string text, std::function<bool(const Value&)> accepts);
};

enum class Section : uint8_t {
  kServer,
  kListeners,
  kSocket,
  kLog,
  kLogRetention,
  kLogCleaner,
  kTopicDefaults,
  kGroups,
  kTransactions,
  kReplication,
  kQuorum,   // ZooKeeper keys (a cluster) and KRaft keys (accepted, ignored)
  kIgnored,  // Java class names and secrets kept only for compatibility
  kCiuic,    // CiuicKafka's own keys (ciuic.*)
};

std::string_view section_title(Section s);

struct KeyDef {
  std::string_view name;
  ConfigType type = ConfigType::kString;
  std::optional<std::string_view> default_value;  // raw text; nullopt = null
  Validator validator;
  Section section = Section::kServer;
  std::string_view doc;
  std::string_view topic_name;  // topic-level config this key defaults, or empty
  std::string_view group;       // first key of its synonym group, or empty
  int64_t unit_ms = 0;          // for time-unit groups: milliseconds per unit
  std::string_view ignored_because;  // non-empty: accepted, but setting it warns why it does nothing

  // Fluent setters for keys.cc.
  KeyDef&& valid(Validator v) && { validator = std::move(v); return std::move(*this); }
  KeyDef&& topic(std::string_view t) && { topic_name = t; return std::move(*this); }
  KeyDef&& synonym_of(std::string_view first, int64_t ms_per_unit = 0) && {
    group = first;
    unit_ms = ms_per_unit;
    return std::move(*this);
  }
  KeyDef&& ignored(std::string_view why) && { ignored_because = why; return std::move(*this); }

  // The full "what is allowed" phrase: "an integer >= 1", "true or false", ...
  std::string expected() const;
  // The group's name: `group`, or this key's own name when it has none.
  std::string_view group_name() const { return group.empty() ? name : group; }
};

// Builds a KeyDef; `def` nullptr means the default is null.
KeyDef key(std::string_view name, ConfigType type, const char* def, Section section,
           std::string_view doc);

// All keys, in documentation order (grouped by section, in Section order).
// Within a synonym group the keys are listed in precedence order.
std::span<const KeyDef> all_keys();
// The key with this broker-level name, or nullptr.
const KeyDef* find_key(std::string_view name);
// The broker key whose topic-level name is `topic_name` (retention.ms ->
// log.retention.ms, the first of its group), or nullptr.
const KeyDef* find_by_topic_name(std::string_view topic_name);
// The keys of name's synonym group in precedence order (just name's own key
// when it has no group). Empty for an unknown name.
std::vector<const KeyDef*> synonym_keys(std::string_view name);
// Index of `def` in all_keys().
size_t key_index(const KeyDef& def);

namespace detail {
// The table itself, in keys.cc; all_keys() builds it once.
std::vector<KeyDef> make_key_table();
}  // namespace detail

// Java's String.trim(): the text without the chars <= ' ' at both ends.
std::string_view java_trim(std::string_view s);

// Parses raw text (trimmed first, as Kafka does) as def's type and checks its
// validator. The error reads: invalid value "abc" for num.partitions: expected
// an integer >= 1. Password values are never echoed.
Result<Value> parse_value(const KeyDef& def, std::string_view raw);

// The value as Kafka writes it (lists joined with ","); nullopt for null.
std::optional<std::string> format_value(const Value& v);

}  // namespace ciuickafka::broker::config
