// broker/admin_cli/admin_cli.cc: entry point of `ciuickafka admin` (see
// admin_cli.h): arguments, client properties, dispatch, exit statuses.
#include "broker/admin_cli/admin_cli.h"

#include <fstream>
#include <iostream>
#include <sstream>

#include "broker/admin_cli/commands.h"

namespace ciuickafka::broker::admin_cli {

namespace {

using Handler = void (*)(Ctx&);

Handler find_handler(const std::string& command) {
  static const std::map<std::string, Handler> handlers = {
      {"topics create", cmd_topics_create},
      {"topics list", cmd_topics_list},
      {"topics describe", cmd_topics_describe},
      {"topics delete", cmd_topics_delete},
      {"topics add-partitions", cmd_topics_add_partitions},
      {"topics alter-config", cmd_topics_alter_config},
      {"cluster info", cmd_cluster_info},
      {"configs describe", cmd_configs_describe},
      {"configs alter", cmd_configs_alter},
      {"groups list", cmd_groups_list},
      {"groups describe", cmd_groups_describe},
      {"groups reset-offsets", cmd_groups_reset_offsets},
      {"groups delete", cmd_groups_delete},
      {"produce", cmd_produce},
      {"consume", cmd_consume},
  };
  auto it = handlers.find(command);
  return it == handlers.end() ? nullptr : it->second;
}

}  // namespace

int run_admin(std::span<const std::string_view> args, std::ostream& out, std::ostream& err, std::istream& in) {
  auto parsed = parse_admin_args(args);
  if (!parsed.invocation) {
    err << "ciuickafka admin: " << parsed.error << "\n";
    return kExitUsage;
  }
  const Invocation& inv = *parsed.invocation;
  if (inv.help) {
    out << usage_text();
    return kExitOk;
  }
  ClientProperties props;
  if (inv.command_config) {
    std::ifstream f(*inv.command_config);
    if (!f) {
      err << "ciuickafka admin: --command-config: cannot read " << *inv.command_config << "\n";
      return kExitUsage;
    }
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string e = parse_client_properties(ss.str(), &props);
    if (!e.empty()) {
      err << "ciuickafka admin: " << e << "\n";
      return kExitUsage;
    }
  }
  const std::vector<HostPort> bootstrap = parse_bootstrap(inv.bootstrap).value_or(std::vector<HostPort>{});  // checked
  Handler h = find_handler(inv.command);
  if (!h) {
    err << "ciuickafka admin: command '" << inv.command << "' has no implementation\n";
    return kExitUsage;
  }
  try {
    int64_t wait_ms = 0;
    if (inv.has("connect-wait-ms")) parse_int(inv.get("connect-wait-ms"), 0, INT32_MAX, &wait_ms);  // checked
    KafkaClient client(bootstrap, props, wait_ms);
    Ctx ctx{inv, client, out, err, in};
    h(ctx);
  } catch (const CliError& e) {
    out << std::flush;
    err << "ciuickafka admin: " << e.what() << "\n";
    return e.exit_code;
  }
  return kExitOk;
}

}  // namespace ciuickafka::broker::admin_cli
