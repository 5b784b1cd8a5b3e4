// broker/config/types.h: the value types of the configuration registry.
//
// ConfigType is Kafka's ConfigDef.Type (less SHORT, which we keep as kInt with
// a range, and CLASS, which we accept and ignore). Value is one parsed value;
// std::monostate is Kafka's null (a key with no default that nobody set).
// ConfigSource says where a value came from; describe_source() maps it to the
// DescribeConfigs ConfigSource code. ConfigError/Result<T> carry errors as
// values: parsing never throws, only main turns an error into an exit code.
//
// Thread-safety: plain value types.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace ciuickafka::broker::config {

enum class ConfigType : uint8_t {
  kBoolean,
  kInt,      // 32-bit
  kLong,     // 64-bit
  kDouble,
  kString,
  kList,     // comma-separated, whitespace around commas dropped
  kPassword, // a string never shown in help, errors or DescribeConfigs
  kClass,    // a Java class name: accepted for compatibility, ignored
};

// Kafka's name for the type ("int", "long", ...), as DescribeConfigs and the
// docs spell it.
std::string_view to_string(ConfigType t);

using List = std::vector<std::string>;
using Value = std::variant<std::monostate, bool, int32_t, int64_t, double, std::string, List>;

// Where a key's value came from.
enum class ConfigSource : uint8_t {
  kDefault,         // the registry default
  kFile,            // the properties file (--config)
  kOverride,        // --override key=value
  kEnvironment,     // KAFKA_* / KAFKA_CFG_* / CLUSTER_ID
  kDynamicDefault,  // a dynamic config for every broker (AlterConfigs, resource "")
  kDynamicBroker,   // a dynamic config for this broker (AlterConfigs, resource "<node id>")
};

std::string_view to_string(ConfigSource s);

// DescribeConfigs ConfigSource codes (DescribeConfigsResponse v1+).
enum class DescribeSource : int8_t {
  kUnknown = 0,
  kTopicConfig = 1,
  kDynamicBrokerConfig = 2,
  kDynamicDefaultBrokerConfig = 3,
  kStaticBrokerConfig = 4,
  kDefaultConfig = 5,
};

// File, override and environment are all Kafka's STATIC_BROKER_CONFIG: what
// the broker was started with; the dynamic ones are DYNAMIC_(DEFAULT_)BROKER_CONFIG.
DescribeSource describe_source(ConfigSource s);

struct ConfigError {
  std::string message;  // one line, names the key, the value and what is allowed
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}      // NOLINT: implicit by design
  Result(ConfigError e) : v_(std::in_place_index<1>, std::move(e)) {}    // NOLINT: implicit by design

  bool is_ok() const { return v_.index() == 0; }
  explicit operator bool() const { return is_ok(); }

  T& value() & { return check(), std::get<0>(v_); }
  const T& value() const& { return check(), std::get<0>(v_); }
  T&& value() && { return check(), std::get<0>(std::move(v_)); }
  const ConfigError& error() const {
    if (is_ok()) die("error() on a Result that holds a value");
    return std::get<1>(v_);
  }

 private:
  void check() const {
    if (!is_ok()) die(std::get<1>(v_).message.c_str());
  }
  [[noreturn]] static void die(const char* why) {
    std::fprintf(stderr, "config Result: value() on an error: %s\n", why);
    std::abort();
  }
  std::variant<T, ConfigError> v_;
};

}  // namespace ciuickafka::broker::config
