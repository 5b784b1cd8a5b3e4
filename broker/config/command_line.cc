// broker/config/command_line.cc
#include "broker/config/command_line.h"

namespace ciuickafka::broker::config {

Result<CommandLine> parse_command_line(std::span<const std::string_view> args) {
  CommandLine cl;
  auto set_config = [&](std::string_view path) -> std::optional<ConfigError> {
    if (cl.config_path) return ConfigError{"more than one config file given: " + *cl.config_path + " and " +
                                           std::string(path)};
    if (path.empty()) return ConfigError{"--config needs a file name"};
    cl.config_path = std::string(path);
    return std::nullopt;
  };
  auto add_override = [&](std::string_view kv) -> std::optional<ConfigError> {
    if (kv.find('=') == std::string_view::npos || kv.front() == '=')
      return ConfigError{"invalid --override \"" + std::string(kv) + "\": expected key=value"};
    cl.overrides.emplace_back(kv);
    return std::nullopt;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view a = args[i];
    std::optional<ConfigError> err;
    if (a == "-h" || a == "--help") {
      cl.help = true;
    } else if (a == "--version") {
      cl.version = true;
    } else if (a == "--config" || a == "--override") {
      if (i + 1 == args.size()) return ConfigError{std::string(a) + " needs a value"};
      err = a == "--config" ? set_config(args[++i]) : add_override(args[++i]);
    } else if (a.starts_with("--config=")) {
      err = set_config(a.substr(9));
    } else if (a.starts_with("--override=")) {
      err = add_override(a.substr(11));
    } else if (a.starts_with("-")) {
      return ConfigError{"unknown option " + std::string(a) + " (try --help)"};
    } else {
      err = set_config(a);
    }
    if (err) return *err;
  }
  return cl;
}

}  // namespace ciuickafka::broker::config
