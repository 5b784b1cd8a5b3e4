// broker/admin_cli/args.h: the command line of `ciuickafka admin`.
//
//   ciuickafka admin [--bootstrap-server HOST:PORT] [--command-config FILE]
//                    [--format table|json] [--connect-wait-ms MS]
//                    GROUP VERB [ARGS...] [OPTIONS...]
//
// parse_admin_args checks the words against a table of commands (which
// positional arguments each takes, which options, which are required or
// exclusive) and returns either an Invocation or a one-line usage error
// (exit status 2). Options may be written `--name value` or `--name=value`
// and may come anywhere after `admin`; repeatable ones (--config, --set,
// --delete) keep every value in order; a global option given twice takes
// the last value; any other option given twice is an error. Also parses client properties
// (--command-config): client.id and request.timeout.ms are used, security
// settings we cannot honour are refused, other keys are accepted and
// ignored.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ciuickafka::broker::admin_cli {

enum class Format { kTable, kJson };

struct Invocation {
  std::string command;               // "topics create", "produce", ...
  std::vector<std::string> positional;
  std::string bootstrap = "localhost:9092";
  std::optional<std::string> command_config;
  Format format = Format::kTable;
  std::map<std::string, std::vector<std::string>> options;  // name (no dashes) -> values
  bool help = false;                  // --help / -h / `help`: print usage, exit 0

  bool has(const std::string& name) const { return options.count(name) > 0; }
  // The last value of an option, or `def`.
  std::string get(const std::string& name, const std::string& def = "") const;
  const std::vector<std::string>& all(const std::string& name) const;
};

struct ParseOutcome {
  std::optional<Invocation> invocation;
  std::string error;  // set when invocation is empty: the usage error
};

// args: what follows `admin` on the command line.
ParseOutcome parse_admin_args(std::span<const std::string_view> args);

// The usage text (every command and option).
std::string usage_text();

// Splits HOST:PORT ("[::1]:9092" too). False on a malformed value.
bool split_host_port(const std::string& s, std::string* host, uint16_t* port);

struct HostPort {
  std::string host;
  uint16_t port = 0;
};
// A --bootstrap-server value: one HOST:PORT or a comma-separated list, as
// Kafka's tools take it. nullopt when any element is malformed.
std::optional<std::vector<HostPort>> parse_bootstrap(const std::string& s);

// Parses an integer option value with bounds; false on junk.
bool parse_int(const std::string& s, int64_t lo, int64_t hi, int64_t* out);

// Splits k=v (v may be empty, k may not).
bool split_key_value(const std::string& s, std::string* k, std::string* v);

struct ClientProperties {
  std::string client_id = "ciuickafka-admin";
  int32_t request_timeout_ms = 30000;
};

// Parses the text of a --command-config file (Java properties: k=v or k:v,
// # and ! comments). Returns an error line for a bad value or a security
// setting we do not support (security.protocol other than PLAINTEXT, sasl.*,
// ssl.*), empty on success.
std::string parse_client_properties(std::string_view text, ClientProperties* out);

}  // namespace ciuickafka::broker::admin_cli
