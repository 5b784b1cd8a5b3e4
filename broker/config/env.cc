// broker/config/env.cc: environment variable names to property names.
#include "broker/config/env.h"

#include <algorithm>
#include <array>

extern char** environ;  // NOLINT: POSIX

namespace ciuickafka::broker::config {
namespace {

// Variables the images' start scripts read themselves (exact names after
// KAFKA_). KAFKA_LOG4J_* and KAFKA_JMX_* are matched by prefix.
constexpr std::array<std::string_view, 14> kScriptVariables = {
    "HEAP_OPTS",       "OPTS",          "JVM_PERFORMANCE_OPTS", "GC_LOG_OPTS", "VERSION",
    "HOME",            "DEBUG",         "CLASSPATH",            "HEAP_OPT",    "TOOLS_LOG4J_LOGLEVEL",
    "KRAFT_MODE",      "ENABLE_KRAFT",  "CONF_FILE",            "MOUNTED_CONF_DIR",
};

constexpr std::array<std::string_view, 3> kScriptPrefixes = {"LOG4J_", "JMX_", "DEBUG_"};

// Lower-cases, then maps each run of underscores as the images' '_' -> '.',
// "..." -> '-', ".." -> '_' do: threes become '-', a remaining two '_', a
// remaining one '.'.
std::string to_property(std::string_view rest) {
  std::string out;
  out.reserve(rest.size());
  for (size_t i = 0; i < rest.size();) {
    char c = rest[i];
    if (c != '_') {
      out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
      ++i;
      continue;
    }
    size_t run = 0;
    while (i < rest.size() && rest[i] == '_') ++run, ++i;
    out.append(run / 3, '-');
    if (run % 3 == 2) out.push_back('_');
    if (run % 3 == 1) out.push_back('.');
  }
  return out;
}

}  // namespace

EnvMapping map_env_var(std::string_view name) {
  if (name == "CLUSTER_ID" || name == "KAFKA_KRAFT_CLUSTER_ID") return {EnvKind::kProperty, "cluster.id"};
  // The images' log4j root level is our operator log's level.
  if (name == "KAFKA_LOG4J_ROOT_LOGLEVEL") return {EnvKind::kProperty, "log.level"};
  constexpr std::string_view kPrefix = "KAFKA_";
  constexpr std::string_view kBitnami = "KAFKA_CFG_";
  if (name.starts_with(kBitnami) && name.size() > kBitnami.size())
    return {EnvKind::kProperty, to_property(name.substr(kBitnami.size()))};
  if (!name.starts_with(kPrefix)) return {};
  std::string_view rest = name.substr(kPrefix.size());
  if (rest.empty()) return {EnvKind::kIgnored, {}};
  for (auto v : kScriptVariables)
    if (rest == v) return {EnvKind::kIgnored, {}};
  for (auto p : kScriptPrefixes)
    if (rest.starts_with(p)) return {EnvKind::kIgnored, {}};
  return {EnvKind::kProperty, to_property(rest)};
}

Environment process_environment() {
  Environment env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace_back(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  std::sort(env.begin(), env.end());
  return env;
}

}  // namespace ciuickafka::broker::config
