// broker/main.cc: the ciuickafka process.
//
//   ciuickafka [--config server.properties] [--override key=value ...]
//   ciuickafka admin ...   (the admin client, broker/admin_cli/admin_cli.h)
//
// Loads the configuration (environment > --override > file > defaults; an
// invalid value stops startup with one line naming key and value, exit 1),
// opens the log dirs (recovery), starts the metrics endpoint and the
// listeners, then waits for SIGINT/SIGTERM. Shutdown: in cluster mode a
// controlled shutdown first (leaderships move, and every broker's metadata
// shows it; bounded), then stop accepting, let
// in-flight requests finish (bounded), flush and checkpoint every log, write
// the clean-shutdown marker, exit 0.
//
// Test builds only (CK_TEST_HOOKS): with CK_TEST_MEMFS=1 the log dirs live
// on an in-memory file system and SIGUSR2 cuts the power and restarts the
// broker in this process (power_cut below, broker/test_hooks.h).
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "broker/admin/cluster_info.h"
#include "broker/admin_cli/admin_cli.h"
#include "broker/broker.h"
#include "broker/txn/coordinator.h"
#include "broker/config/broker_config.h"
#include "broker/config/command_line.h"
#include "broker/config/docs.h"
#include "broker/config/env.h"
#include "broker/config/properties.h"
#include "broker/server/server.h"
#ifdef CK_TEST_HOOKS
#include "broker/test_hooks.h"
#endif
#include "metrics/exposer.h"
#include "metrics/log/log.h"

#ifndef CIUICKAFKA_VERSION
#define CIUICKAFKA_VERSION "0.1.0"
#endif

namespace cfg = ciuickafka::broker::config;
namespace lg = ciuickafka::metrics::log;

namespace {

// A start-up failure: one ERROR line naming the key or path, then exit.
int fail(const std::string& why, int code = 1) {
  lg::write(lg::Level::kError, "broker", "start-up failed: " + why);
  return code;
}

// Applies log.level and ciuic.log.format (both validated by the registry).
void configure_log(const cfg::BrokerConfig& c) {
  if (auto l = lg::parse_level(c.get_string("log.level"))) lg::set_level(*l);
  if (auto f = lg::parse_format(c.get_string("ciuic.log.format"))) lg::set_format(*f);
}

// "server.properties (12 keys), --override (2 keys), environment (1 key)",
// or "defaults only".
std::string config_sources(const cfg::BrokerConfig& c, const std::string& file_name) {
  size_t file = 0, overrides = 0, env = 0;
  for (const cfg::KeyDef& k : cfg::all_keys()) {
    switch (c.source(k.name)) {
      case cfg::ConfigSource::kFile: ++file; break;
      case cfg::ConfigSource::kOverride: ++overrides; break;
      case cfg::ConfigSource::kEnvironment: ++env; break;
      case cfg::ConfigSource::kDefault:
      case cfg::ConfigSource::kDynamicDefault:
      case cfg::ConfigSource::kDynamicBroker: break;
    }
  }
  std::string out;
  auto add = [&out](const std::string& what, size_t n) {
    if (n == 0) return;
    if (!out.empty()) out += ", ";
    out += what + " (" + std::to_string(n) + (n == 1 ? " key)" : " keys)");
  };
  add(file_name.empty() ? std::string("config file") : file_name, file);
  add("--override", overrides);
  add("environment", env);
  return out.empty() ? "defaults only" : out + ", the rest defaults";
}

std::string endpoint_text(const cfg::Endpoint& e) {
  const bool v6 = e.host.find(':') != std::string::npos;
  return e.name + "://" + (v6 ? "[" + e.host + "]" : e.host) + ":" + std::to_string(e.port);
}

// A running broker: its state, the metrics endpoint and the listeners.
struct Running {
  std::unique_ptr<ciuickafka::broker::Broker> broker;
  std::unique_ptr<ciuickafka::metrics::Exposer> exposer;
  // Reset before the broker: connections use it.
  std::unique_ptr<ciuickafka::broker::Server> server;
};

// Opens the broker (recovery), starts the metrics endpoint and the
// listeners, joins the cluster, logs "started". On failure sets *error,
// stops what was started, and returns false. *ports: the bound ports, "9092".
bool start_broker(cfg::BrokerConfig config, Running& r, std::string* error, std::string* ports_out) {
  r.broker = ciuickafka::broker::Broker::open(std::move(config), error);
  if (!r.broker) return false;
  ciuickafka::broker::Broker* broker = r.broker.get();

  const std::string& metrics_at = broker->config().get_string("ciuic.metrics.listener");
  if (!metrics_at.empty()) {
    auto started = ciuickafka::metrics::Exposer::start(metrics_at, broker->metrics_registry());
    if (!started.ok()) {
      broker->shutdown();
      *error = "ciuic.metrics.listener=" + metrics_at + ": " + started.error;
      return false;
    }
    r.exposer = std::move(started.exposer);
  }

  r.server = std::make_unique<ciuickafka::broker::Server>(*broker);
  ciuickafka::broker::Server& server = *r.server;
  if (!server.start(error)) {
    r.server.reset();
    broker->shutdown();
    return false;
  }
  // Listeners on port 0 advertise the port they really got.
  // (The server records the ports its listeners got in BoundPorts.)
  const std::vector<uint16_t> bound = server.bound_ports();
  const auto listeners = broker->listeners();
  {
    if (!broker->start_cluster(ciuickafka::broker::admin::registration_endpoints(*broker), error)) {
      server.stop(std::chrono::seconds(1));
      r.server.reset();
      broker->shutdown();
      *error = "zookeeper.connect: " + *error;
      return false;
    }
  }
  // The transaction coordinator starts now (single node): transactions left
  // undecided or mid-completion by the last run finish (their markers)
  // without waiting for a client, and its metrics are there from the start.
  // (Cluster mode: start_cluster made it, loading as leadership comes.)
  if (broker->cluster() == nullptr) (void)ciuickafka::broker::txn::coordinator(*broker);
  std::string ports;
  for (uint16_t p : bound) {
    if (!ports.empty()) ports += ',';
    ports += std::to_string(p);
  }
  std::string listening, advertised;
  for (size_t i = 0; i < listeners->bound.size(); ++i) {
    cfg::Endpoint e = listeners->bound[i];
    if (i < bound.size()) e.port = bound[i];
    listening += (listening.empty() ? "" : ",") + endpoint_text(e);
  }
  for (const auto& e : listeners->advertised) {
    const auto ep = ciuickafka::broker::admin::advertised_endpoint(*broker, e.name);
    advertised += (advertised.empty() ? "" : ",") + e.name + "://" + ep.host + ":" + std::to_string(ep.port);
  }
  lg::write(lg::Level::kInfo, "broker",
            "started: node " + std::to_string(broker->node_id()) + ", cluster " + broker->cluster_id() +
                ", listening on port(s) " + ports + ", " + std::to_string(broker->topics().list().size()) +
                " topic(s)",
            {{"listeners", listening},
             {"advertised.listeners", advertised},
             {"ciuic.metrics.listener", r.exposer ? metrics_at : std::string("off")},
             {"mode", broker->config().is_null("zookeeper.connect") ? "single node" : "cluster (ZooKeeper)"}});

  *ports_out = ports;
  return true;
}

#ifdef CK_TEST_HOOKS
// Test builds, CK_TEST_MEMFS=1, SIGUSR2 (broker/test_hooks.h): a power cut
// and a restart in this process. Called on the main thread, after sigwait.
// The cut comes first: from then on nothing the dying broker does reaches
// the file system, and whatever it still answers was decided before. Then
// the network goes as a dead machine's does (no grace), and the broker
// object with it (its shutdown's flushes and clean-shutdown marker fail).
// The new broker recovers from what the completed syncs kept.
bool power_cut(const cfg::BrokerConfig& config, Running& r, ciuickafka::storage::io::MemFileSystem& mem, int n,
               std::string* error) {
  std::string torn;
  auto keep = ciuickafka::broker::test_hooks::power_cut_keep(n, &torn);
  CK_LOG_WARN("broker", "power cut %d (SIGUSR2, test build): everything not synced is lost%s%s", n,
              torn.empty() ? "" : "; ", torn.c_str());
  mem.power_off(keep);
  r.server->stop(std::chrono::milliseconds(0));
  r.server.reset();
  r.exposer.reset();
  r.broker->shutdown();
  r.broker.reset();
  mem.power_on();
  std::string ports;
  if (!start_broker(config, r, error, &ports)) return false;
  CK_LOG_WARN("broker", "power cut %d: restarted after recovery, listening on port(s) %s", n, ports.c_str());
  return true;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  // A subcommand, recognised before anything is read as broker arguments.
  // SIGPIPE keeps its default there: `ciuickafka admin consume T | head`
  // ends when head does (sockets send with MSG_NOSIGNAL).
  if (!args.empty() && args[0] == "admin") {
    return ciuickafka::broker::admin_cli::run_admin(std::span<const std::string_view>(args).subspan(1), std::cout,
                                                    std::cerr, std::cin);
  }
  // A bare word that is no file is a mistyped subcommand, not a config file.
  if (!args.empty() && !args[0].starts_with("-") && args[0].find('.') == std::string_view::npos &&
      args[0].find('/') == std::string_view::npos && !std::filesystem::exists(std::string(args[0]))) {
    std::fprintf(stderr, "ciuickafka: unknown command '%.*s' (admin commands: `ciuickafka admin --help`)\n",
                 static_cast<int>(args[0].size()), args[0].data());
    return 2;
  }
  auto cl = cfg::parse_command_line(args);
  if (!cl.is_ok()) return fail(cl.error().message, 2);
  if (cl.value().help) {
    std::cout << cfg::help_text();
    return 0;
  }
  if (cl.value().version) {
    std::cout << "ciuickafka " << CIUICKAFKA_VERSION << " (Kafka protocol 3.9)\n";
    return 0;
  }

  cfg::ConfigInput input;
  if (cl.value().config_path) {
    auto props = cfg::read_properties_file(*cl.value().config_path);
    if (!props.is_ok()) return fail(props.error().message);
    input.file = std::move(props.value());
    input.file_name = *cl.value().config_path;
  }
  input.overrides = cl.value().overrides;
  input.environment = cfg::process_environment();
  auto loaded = cfg::load_config(input);
  if (!loaded.is_ok()) return fail(loaded.error().message);
  configure_log(loaded.value().config);
  for (const std::string& w : loaded.value().warnings) lg::write(lg::Level::kWarn, "config", w);
  {
    const cfg::BrokerConfig& c = loaded.value().config;
    std::string dirs;
    for (const std::string& d : c.log_dirs()) dirs += (dirs.empty() ? "" : ",") + d;
    lg::write(lg::Level::kInfo, "broker",
              "ciuickafka " CIUICKAFKA_VERSION " (Kafka protocol 3.9) starting: config from " +
                  config_sources(c, input.file_name),
              {{"version", CIUICKAFKA_VERSION},
               {"config_file", input.file_name.empty() ? std::string("none") : input.file_name},
               {"log.dirs", dirs},
               {"log.level", std::string(lg::level_name(lg::level()))},
               {"ciuic.log.format", c.get_string("ciuic.log.format")}});
  }

  // Block the stop signals before any thread starts, so only sigwait sees them.
  // A shell starting us in the background may have set them to SIG_IGN,
  // and an ignored signal is never pending for sigwait: take them back.
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
#ifdef CK_TEST_HOOKS
  // Test builds with CK_TEST_MEMFS=1: SIGUSR2 is the power cut, waited for
  // with the stop signals (test_hooks.h).
  ciuickafka::storage::io::MemFileSystem* const memfs = ciuickafka::broker::test_hooks::memfs();
  if (memfs != nullptr) sigaddset(&stop_signals, SIGUSR2);
#endif
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  // Kept for the in-process restarts of a test build's power cut.
  const cfg::BrokerConfig config = std::move(loaded.value().config);
#ifdef CK_TEST_HOOKS
  int power_cuts = 0;
#endif
  Running r;
  std::string error, ports;
  if (!start_broker(config, r, &error, &ports)) return fail(error);

  int sig = 0;
  for (;;) {
    sigwait(&stop_signals, &sig);
#ifdef CK_TEST_HOOKS
    if (sig == SIGUSR2 && memfs != nullptr) {
      if (!power_cut(config, r, *memfs, ++power_cuts, &error)) return fail("restart after a power cut: " + error);
      continue;
    }
#endif
    break;
  }
  CK_LOG_INFO("broker", "%s received, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
  // Cluster mode: hand leaderships over while the listeners still serve
  // (followers keep fetching); bounded, then the shutdown goes on anyway.
  r.broker->controlled_shutdown();
  r.server->stop(std::chrono::seconds(10));
  r.server.reset();
  r.exposer.reset();
  const bool clean = r.broker->shutdown();
  r.broker.reset();
  if (clean) {
    CK_LOG_INFO("broker", "stopped");
  } else {
    CK_LOG_ERROR("broker", "stopped (storage reported errors)");
  }
  return clean ? 0 : 1;
}
