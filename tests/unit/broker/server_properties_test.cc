// deploy/server.properties is the generator's output; --help covers every key.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "broker/config/broker_config.h"
#include "broker/config/docs.h"

using namespace ciuickafka::broker::config;

TEST_CASE("the committed deploy/server.properties matches example_server_properties()") {
  const std::string path = std::string(CK_SOURCE_DIR) + "/deploy/server.properties";
  std::ifstream in(path, std::ios::binary);
  std::stringstream committed;
  committed << in.rdbuf();
  const std::string generated = example_server_properties();
  if (committed.str() != generated) {
    const std::string out = std::string(CK_TEST_BINARY_DIR) + "/server.properties";
    std::ofstream(out, std::ios::binary) << generated;
    FAIL("deploy/server.properties is stale or missing; the generated file is at "
         << out << "\nupdate with: cp " << out << " " << path);
  }
}

TEST_CASE("the example file loads to the defaults with no warnings") {
  auto props = parse_properties(example_server_properties(), "server.properties");
  REQUIRE(props);
  CHECK(props.value().empty());  // every line is commented out
  // Uncommented, every key with a default loads at that default.
  std::string active;
  for (const KeyDef& k : all_keys())
    if (k.default_value) active += std::string(k.name) + "=" + std::string(*k.default_value) + "\n";
  ConfigInput in;
  in.file = parse_properties(active).value();
  auto r = load_config(in);
  REQUIRE(r);
  const BrokerConfig defaults = BrokerConfig::defaults();
  for (const KeyDef& k : all_keys()) {
    INFO(k.name);
    if (k.default_value) CHECK(r.value().config.entry(k.name).value == defaults.entry(k.name).value);
  }
  // Warnings come only from keys that say they are ignored.
  for (const std::string& w : r.value().warnings) CHECK(w.find(" is accepted but ignored: ") != std::string::npos);
}

TEST_CASE("every key appears in --help and in the example file") {
  const std::string help = help_text();
  const std::string example = example_server_properties();
  for (const KeyDef& k : all_keys()) {
    INFO(k.name);
    CHECK(help.find("  " + std::string(k.name) + " (default ") != std::string::npos);
    CHECK(example.find("\n#" + std::string(k.name) + "=") != std::string::npos);
  }
  CHECK(help.starts_with("Usage: ciuickafka"));
}
