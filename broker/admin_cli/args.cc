// broker/admin_cli/args.cc: command table and parser for `ciuickafka admin`
// (see args.h). Pure; thread-safe.
#include "broker/admin_cli/args.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "broker/config/properties.h"

namespace ciuickafka::broker::admin_cli {
namespace {

struct OptionSpec {
  std::string_view name;
  bool takes_value;
  std::string_view help;
  std::string_view metavar = "";  // the value's name in the usage text
};

// Every option any command knows; commands list the ones they accept.
constexpr OptionSpec kOptions[] = {
    {"bootstrap-server", true, "any broker(s), comma-separated, tried in order (default localhost:9092)", "HOST:PORT"},
    {"command-config", true, "client properties file (client.id, request.timeout.ms)", "FILE"},
    {"format", true, "table (default) or json", "table|json"},
    {"connect-wait-ms", true,
     "keep retrying the bootstrap connection this long (a broker still starting); topics create also waits "
     "as long for as many brokers as --replication-factor",
     "MS"},
    {"partitions", true, "number of partitions", "N"},
    {"replication-factor", true, "replicas per partition (default: the broker's default)", "R"},
    {"config", true, "k=v topic config at creation (repeatable)", "k=v"},
    {"if-not-exists", false, "succeed if the topic already exists"},
    {"set", true, "k=v config to set (repeatable)", "k=v"},
    {"delete", true, "config key to remove, back to its default (repeatable)", "KEY"},
    {"broker", true, "broker id", "ID"},
    {"topic", true, "topic name", "NAME"},
    {"to-earliest", false, "reset to the log start offset"},
    {"to-latest", false, "reset to the log end offset"},
    {"to-offset", true, "reset to this offset", "N"},
    {"dry-run", false, "show the new offsets without committing them"},
    {"partition", true, "only this partition", "P"},
    {"from-beginning", false, "start at the log start (default: the end)"},
    {"max-messages", true, "stop after this many records", "N"},
    {"timeout-ms", true, "stop after this long without a new record", "MS"},
    {"key-separator", true, "produce: split each line into key and value at this string", "S"},
    {"help", false, "this text"},
};

const OptionSpec* find_option(std::string_view name) {
  for (const auto& o : kOptions)
    if (o.name == name) return &o;
  return nullptr;
}

struct CommandSpec {
  std::string_view name;       // "topics create"
  std::string_view args;       // for the usage text
  int min_pos, max_pos;
  std::vector<std::string_view> options;
  std::string_view help;
};

const std::vector<CommandSpec>& commands() {
  static const std::vector<CommandSpec> c = {
      {"topics create", "NAME", 1, 1, {"partitions", "replication-factor", "config", "if-not-exists"},
       "create a topic"},
      {"topics list", "", 0, 0, {}, "list topics"},
      {"topics describe", "[NAME]", 0, 1, {}, "partitions, leader, replicas, ISR"},
      {"topics delete", "NAME", 1, 1, {}, "delete a topic"},
      {"topics add-partitions", "NAME", 1, 1, {"partitions"}, "grow a topic to --partitions N"},
      {"topics alter-config", "NAME", 1, 1, {"set", "delete"}, "change topic configs (IncrementalAlterConfigs)"},
      {"cluster info", "", 0, 0, {}, "cluster id, controller, brokers"},
      {"configs describe", "", 0, 0, {"broker", "topic"}, "configs of --broker ID or --topic NAME"},
      {"configs alter", "", 0, 0, {"broker", "topic", "set", "delete"}, "change configs of --broker or --topic"},
      {"groups list", "", 0, 0, {}, "list consumer groups"},
      {"groups describe", "GROUP", 1, 1, {}, "members, committed offsets and lag"},
      {"groups reset-offsets", "GROUP", 1, 1, {"topic", "to-earliest", "to-latest", "to-offset", "dry-run"},
       "commit new offsets for --topic (the group must be empty)"},
      {"groups delete", "GROUP", 1, 1, {}, "delete an empty group"},
      {"produce", "TOPIC", 1, 1, {"partition", "key-separator"},
       "one record per stdin line (acks=all)"},
      {"consume", "TOPIC", 1, 1, {"from-beginning", "max-messages", "partition", "timeout-ms"},
       "print record values"},
  };
  return c;
}

const CommandSpec* find_command(const std::string& name) {
  for (const auto& c : commands())
    if (c.name == name) return &c;
  return nullptr;
}

bool is_global(std::string_view o) {
  return o == "bootstrap-server" || o == "command-config" || o == "format" || o == "connect-wait-ms" || o == "help";
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
  return std::string(s.substr(b, e - b));
}

ParseOutcome fail(std::string msg) {
  ParseOutcome o;
  o.error = std::move(msg);
  return o;
}

}  // namespace

std::string Invocation::get(const std::string& name, const std::string& def) const {
  auto it = options.find(name);
  return it == options.end() || it->second.empty() ? def : it->second.back();
}

const std::vector<std::string>& Invocation::all(const std::string& name) const {
  static const std::vector<std::string> none;
  auto it = options.find(name);
  return it == options.end() ? none : it->second;
}

bool parse_int(const std::string& s, int64_t lo, int64_t hi, int64_t* out) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty() || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool split_key_value(const std::string& s, std::string* k, std::string* v) {
  const size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  *k = s.substr(0, eq);
  *v = s.substr(eq + 1);
  return true;
}

bool split_host_port(const std::string& s, std::string* host, uint16_t* port) {
  std::string h, p;
  if (!s.empty() && s[0] == '[') {
    const size_t close = s.find(']');
    if (close == std::string::npos || close + 1 >= s.size() || s[close + 1] != ':') return false;
    h = s.substr(1, close - 1);
    p = s.substr(close + 2);
  } else {
    const size_t colon = s.rfind(':');
    if (colon == std::string::npos || s.find(':') != colon) return false;
    h = s.substr(0, colon);
    p = s.substr(colon + 1);
  }
  int64_t n = 0;
  if (h.empty() || !parse_int(p, 1, 65535, &n)) return false;
  *host = h;
  *port = static_cast<uint16_t>(n);
  return true;
}

std::optional<std::vector<HostPort>> parse_bootstrap(const std::string& s) {
  std::vector<HostPort> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    HostPort hp;
    if (!split_host_port(trim(std::string_view(s).substr(start, comma - start)), &hp.host, &hp.port))
      return std::nullopt;
    out.push_back(hp);
    start = comma + 1;
  }
  return out;
}

ParseOutcome parse_admin_args(std::span<const std::string_view> args) {
  Invocation inv;
  std::vector<std::string> words;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view a = args[i];
    if (a == "-h") a = "--help";
    if (a.size() > 2 && a.substr(0, 2) == "--") {
      std::string name(a.substr(2));
      std::optional<std::string> value;
      if (const size_t eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
      }
      const OptionSpec* spec = find_option(name);
      if (!spec) return fail("unknown option --" + name);
      if (spec->takes_value) {
        if (!value) {
          if (i + 1 >= args.size()) return fail("option --" + name + " needs a value");
          value = std::string(args[++i]);
        }
      } else if (value) {
        return fail("option --" + name + " takes no value");
      }
      inv.options[name].push_back(value.value_or(""));
    } else if (a.size() > 1 && a[0] == '-' && words.size() < 2) {
      return fail("unknown option " + std::string(a));
    } else {
      words.emplace_back(a);
    }
  }
  if (inv.has("help") || (!words.empty() && words[0] == "help")) {
    inv.help = true;
    inv.options.erase("help");
    ParseOutcome o;
    o.invocation = std::move(inv);
    return o;
  }
  if (words.empty()) return fail("no command given (try `ciuickafka admin --help`)");
  const CommandSpec* cmd = nullptr;
  size_t used = 0;
  if (find_command(words[0])) {
    cmd = find_command(words[0]);
    used = 1;
  } else if (words.size() >= 2 && find_command(words[0] + " " + words[1])) {
    cmd = find_command(words[0] + " " + words[1]);
    used = 2;
  }
  if (!cmd) {
    const std::string w = words.size() >= 2 ? words[0] + " " + words[1] : words[0];
    return fail("unknown command '" + w + "' (try `ciuickafka admin --help`)");
  }
  inv.command = std::string(cmd->name);
  inv.positional.assign(words.begin() + static_cast<std::ptrdiff_t>(used), words.end());
  const int npos = static_cast<int>(inv.positional.size());
  if (npos < cmd->min_pos)
    return fail(inv.command + ": missing argument " + std::string(cmd->args));
  if (npos > cmd->max_pos)
    return fail(inv.command + ": unexpected argument '" + inv.positional[static_cast<size_t>(cmd->max_pos)] + "'");
  for (const auto& [name, values] : inv.options) {
    const bool allowed = is_global(name) ||
                         std::find(cmd->options.begin(), cmd->options.end(), name) != cmd->options.end();
    if (!allowed) return fail(inv.command + ": option --" + name + " does not apply");
    // Repeatable: the lists; and the globals, where the last one wins (a
    // script's alias may carry one already).
    const bool repeatable = name == "config" || name == "set" || name == "delete" || is_global(name);
    if (values.size() > 1 && !repeatable) return fail("option --" + name + " given more than once");
  }
  // Globals.
  if (inv.has("bootstrap-server")) {
    inv.bootstrap = inv.get("bootstrap-server");
    if (!parse_bootstrap(inv.bootstrap))
      return fail("--bootstrap-server: '" + inv.bootstrap + "' is not HOST:PORT[,HOST:PORT...]");
  }
  if (inv.has("command-config")) inv.command_config = inv.get("command-config");
  if (inv.has("format")) {
    const std::string f = inv.get("format");
    if (f == "table") inv.format = Format::kTable;
    else if (f == "json") inv.format = Format::kJson;
    else return fail("--format: '" + f + "' is not table or json");
  }
  // Per-command checks.
  int64_t n = 0;
  auto check_int = [&](const char* name, int64_t lo, int64_t hi) -> std::string {
    if (inv.has(name) && !parse_int(inv.get(name), lo, hi, &n))
      return std::string("--") + name + ": '" + inv.get(name) + "' is not a number in [" + std::to_string(lo) + ", " +
             std::to_string(hi) + "]";
    return "";
  };
  for (const auto& [name, lo, hi] : std::vector<std::tuple<const char*, int64_t, int64_t>>{
           {"partitions", 1, 1000000},
           {"replication-factor", 1, 32767},
           {"broker", 0, INT32_MAX},
           {"to-offset", 0, INT64_MAX},
           {"partition", 0, INT32_MAX},
           {"max-messages", 1, INT64_MAX},
           {"timeout-ms", 0, INT32_MAX},
           {"connect-wait-ms", 0, INT32_MAX}}) {
    if (std::string e = check_int(name, lo, hi); !e.empty()) return fail(e);
  }
  std::string k, v;
  for (const char* kv : {"config", "set"})
    for (const auto& s : inv.all(kv))
      if (!split_key_value(s, &k, &v)) return fail(std::string("--") + kv + ": '" + s + "' is not key=value");
  if (inv.command == "topics add-partitions" && !inv.has("partitions"))
    return fail("topics add-partitions: --partitions N is required");
  if ((inv.command == "topics alter-config" || inv.command == "configs alter") && !inv.has("set") &&
      !inv.has("delete"))
    return fail(inv.command + ": give at least one --set k=v or --delete k");
  if (inv.command == "configs describe" || inv.command == "configs alter") {
    if (inv.has("broker") == inv.has("topic")) return fail(inv.command + ": give exactly one of --broker ID, --topic NAME");
  }
  if (inv.command == "groups reset-offsets") {
    if (!inv.has("topic")) return fail("groups reset-offsets: --topic T is required");
    const int targets = int(inv.has("to-earliest")) + int(inv.has("to-latest")) + int(inv.has("to-offset"));
    if (targets != 1) return fail("groups reset-offsets: give exactly one of --to-earliest, --to-latest, --to-offset N");
  }
  ParseOutcome o;
  o.invocation = std::move(inv);
  return o;
}

std::string usage_text() {
  std::string s =
      "usage: ciuickafka admin [--bootstrap-server HOST:PORT] [--command-config FILE] [--format table|json]\n"
      "                        [--connect-wait-ms MS] COMMAND [ARGS] [OPTIONS]\n\ncommands:\n";
  for (const auto& c : commands()) {
    std::string line = "  " + std::string(c.name);
    if (!c.args.empty()) line += " " + std::string(c.args);
    for (const auto& o : c.options) {
      const OptionSpec* spec = find_option(o);
      line += " [--" + std::string(o) + (spec && spec->takes_value ? " " + std::string(spec->metavar) + "]" : "]");
    }
    s += line + "\n      " + std::string(c.help) + "\n";
  }
  s += "\noptions:\n";
  for (const auto& o : kOptions) {
    std::string name = "  --" + std::string(o.name) + (o.takes_value ? " " + std::string(o.metavar) : "");
    name.resize(std::max<size_t>(name.size() + 1, 32), ' ');
    s += name + std::string(o.help) + "\n";
  }
  s +=
      "\nexit status: 0 ok, 1 the broker reported an error (its Kafka name is printed), 2 usage error,\n"
      "3 cannot connect (or the connection broke).\n";
  return s;
}

std::string parse_client_properties(std::string_view text, ClientProperties* out) {
  auto props = config::parse_properties(text, "--command-config");
  if (!props.is_ok()) return props.error().message;
  for (const auto& p : props.value()) {
    const std::string key = p.key;
    const std::string value = trim(p.value);
    if (key == "client.id") {
      out->client_id = value;
    } else if (key == "request.timeout.ms") {
      int64_t n = 0;
      if (!parse_int(value, 1, INT32_MAX, &n))
        return "--command-config: request.timeout.ms: '" + value + "' is not a positive number";
      out->request_timeout_ms = static_cast<int32_t>(n);
    } else if (key == "security.protocol") {
      std::string up = value;
      std::transform(up.begin(), up.end(), up.begin(), [](unsigned char c) { return std::toupper(c); });
      if (up != "PLAINTEXT")
        return "--command-config: security.protocol=" + value + " is not supported (only PLAINTEXT)";
    } else if (key.rfind("sasl.", 0) == 0 || key.rfind("ssl.", 0) == 0) {
      return "--command-config: " + key + " is not supported (no SASL or TLS in this client)";
    }
    // Other client keys (bootstrap.servers, retries, ...) are accepted and ignored.
  }
  return "";
}

}  // namespace ciuickafka::broker::admin_cli
