// Listeners: endpoints, protocols, controller listeners, and the checks
// across listeners, advertised.listeners, the protocol map and
// inter.broker.listener.name.
#include <catch2/catch.hpp>

#include "broker/config/broker_config.h"
#include "broker/config/listeners.h"

using namespace ciuickafka::broker::config;

// A namespace of this file's own (tests/CMakeLists.txt: the tests are unity
// builds), so that its helpers do not clash with a sibling file's.
namespace CK_UNITY_ID {

namespace {

Result<LoadedConfig> load(std::string_view text) {
  ConfigInput in;
  in.file = parse_properties(text, "s.properties").value();
  in.file_name = "s.properties";
  return load_config(in);
}

Listeners resolved(std::string_view text) {
  auto l = load(text);
  INFO((l ? std::string() : l.error().message));
  REQUIRE(l);
  auto r = resolve_listeners(l.value().config);
  REQUIRE(r);
  return r.value();
}

std::string error(std::string_view text) {
  auto l = load(text);
  REQUIRE_FALSE(l);
  return l.error().message;
}

}  // namespace

TEST_CASE("the default is one PLAINTEXT listener on all interfaces, port 9092") {
  Listeners l = resolved("");
  REQUIRE(l.bound.size() == 1);
  CHECK(l.bound[0] == Endpoint{"PLAINTEXT", "", 9092, SecurityProtocol::kPlaintext, false});
  CHECK(l.advertised == l.bound);
  CHECK(l.inter_broker == "PLAINTEXT");
}

TEST_CASE("a KRaft-style docker configuration") {
  Listeners l = resolved(
      "listeners=PLAINTEXT://0.0.0.0:9092,controller://:9093,EXTERNAL://[::1]:19092\n"
      "advertised.listeners=PLAINTEXT://broker:9092,EXTERNAL://localhost:19092\n"
      "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,EXTERNAL:SASL_SSL\n"
      "controller.listener.names=CONTROLLER\n");
  REQUIRE(l.bound.size() == 3);
  CHECK(l.bound[0] == Endpoint{"PLAINTEXT", "0.0.0.0", 9092, SecurityProtocol::kPlaintext, false});
  CHECK(l.bound[1] == Endpoint{"CONTROLLER", "", 9093, SecurityProtocol::kPlaintext, true});
  CHECK(l.bound[2] == Endpoint{"EXTERNAL", "::1", 19092, SecurityProtocol::kSaslSsl, false});
  REQUIRE(l.advertised.size() == 2);
  CHECK(l.advertised[0].host == "broker");
  CHECK(l.advertised[1].host == "localhost");
  CHECK(l.inter_broker == "PLAINTEXT");
}

TEST_CASE("advertised.listeners unset: the non-controller listeners") {
  Listeners l = resolved("listeners=INTERNAL://:9092,CONTROLLER://:9093\n"
                         "listener.security.protocol.map=INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
                         "controller.listener.names=CONTROLLER\n");
  REQUIRE(l.advertised.size() == 1);
  CHECK(l.advertised[0].name == "INTERNAL");
  CHECK(l.inter_broker == "INTERNAL");
  CHECK(resolved("listeners=A://:1,B://:2\nlistener.security.protocol.map=A:SSL,B:PLAINTEXT\n"
                 "inter.broker.listener.name=b\n")
            .inter_broker == "B");
}

TEST_CASE("listener errors name the key and say what is expected") {
  CHECK(error("listeners=PLAINTEXT://:9092,plaintext://:9093\n") ==
        "invalid value \"PLAINTEXT://:9092,plaintext://:9093\" for listeners: expected each listener name once "
        "(PLAINTEXT repeats) (from s.properties:1)");
  CHECK(error("listeners=INTERNAL://:9092\n") ==
        "invalid value \"INTERNAL://:9092\" for listeners: expected listener names that "
        "listener.security.protocol.map maps (INTERNAL is not) (from s.properties:1)");
  CHECK(error("listeners=PLAINTEXT://:9092,SSL://:9092\n") ==
        "invalid value \"PLAINTEXT://:9092,SSL://:9092\" for listeners: expected a different port for each "
        "listener (9092 repeats) (from s.properties:1)");
  CHECK(resolved("listeners=PLAINTEXT://:0,SSL://:0\n").bound.size() == 2);
  CHECK(error("advertised.listeners=SSL://host:9093\n") ==
        "invalid value \"SSL://host:9093\" for advertised.listeners: expected names that listeners has (SSL is "
        "not there) (from s.properties:1)");
  CHECK(error("listeners=PLAINTEXT://:0\nadvertised.listeners=PLAINTEXT://h:0\n")
            .starts_with("invalid value \"PLAINTEXT://h:0\" for advertised.listeners: expected non-zero ports"));
  CHECK(error("listeners=PLAINTEXT://:1,CONTROLLER://:2\nadvertised.listeners=CONTROLLER://h:2\n"
              "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
              "controller.listener.names=CONTROLLER\n")
            .find("expected no controller listener (CONTROLLER is one)") != std::string::npos);
  CHECK(error("inter.broker.listener.name=SSL\n") ==
        "invalid value \"SSL\" for inter.broker.listener.name: expected the name of an advertised listener (from "
        "s.properties:1)");
}

}  // namespace CK_UNITY_ID
