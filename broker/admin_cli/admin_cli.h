// broker/admin_cli/admin_cli.h: `ciuickafka admin ...`, an admin client for
// any Kafka broker (ours or Apache Kafka's) over the Kafka protocol.
//
// run_admin parses the arguments (args.h), reads --command-config, connects
// to --bootstrap-server, runs the command and prints its result (output.h)
// to `out`; errors go to `err` as one line "ciuickafka admin: ...". The
// return value is the process exit status: 0 ok, 1 an error the broker
// reported (named by its Kafka error name) or a malformed answer, 2 a usage
// error, 3 the broker could not be reached or the connection broke.
//
// Thread-safety: one call at a time (it owns its connections); `in` is read
// only by `produce`.
#pragma once

#include <iosfwd>
#include <span>
#include <string_view>

namespace ciuickafka::broker::admin_cli {

int run_admin(std::span<const std::string_view> args, std::ostream& out, std::ostream& err, std::istream& in);

}  // namespace ciuickafka::broker::admin_cli
