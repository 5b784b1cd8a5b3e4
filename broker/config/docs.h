// broker/config/docs.h: text generated from the registry: --help and the
// example deploy/server.properties (which a unit test compares with the
// committed file).
//
// Thread-safety: pure functions.
#pragma once

#include <string>

namespace ciuickafka::broker::config {

// The --help text: usage, options, sources and every key with its type,
// default, allowed values and documentation.
std::string help_text();

// deploy/server.properties: every key, documented, commented out at its
// default, grouped by section.
std::string example_server_properties();

}  // namespace ciuickafka::broker::config
