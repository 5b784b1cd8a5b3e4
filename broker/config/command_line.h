// broker/config/command_line.h: the broker's command line, parsed into a
// value (main turns an error into exit status 2 after printing it).
//
//   ciuickafka [--config FILE | FILE] [--override key=value ...]
//   ciuickafka --help | --version
// --config=FILE and --override=key=value are accepted too, as is a bare FILE
// (kafka-server-start.sh style).
//
// Thread-safety: pure function.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "broker/config/types.h"

namespace ciuickafka::broker::config {

struct CommandLine {
  std::optional<std::string> config_path;
  std::vector<std::string> overrides;  // "key=value"
  bool help = false;
  bool version = false;
};

// `args` excludes argv[0].
Result<CommandLine> parse_command_line(std::span<const std::string_view> args);

}  // namespace ciuickafka::broker::config
