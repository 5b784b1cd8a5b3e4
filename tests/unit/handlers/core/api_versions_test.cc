// tests/unit/handlers/api_versions_test.cc: ApiVersions answers from the
// handler registry, and falls back to v0 for versions it lacks.
#include <catch2/catch.hpp>

#include "broker/handlers/registry.h"
#include "protocol/error_code.h"
#include "protocol/generated/api_versions.h"
#include "tests/unit/handlers/broker_fixture.h"

using namespace ciuickafka;
using namespace ciuickafka::broker;

TEST_CASE("ApiVersions lists exactly the registered handlers at every version", "[handlers][api_versions]") {
  test::BrokerFixture f;
  const auto handlers = registered_handlers();
  for (int16_t v = 0; v <= 4; ++v) {
    protocol::ApiVersionsRequest req;
    req.client_software_name = "ck-test";
    req.client_software_version = "1.0";
    auto resp = f.call<protocol::ApiVersionsResponse>(req, v);
    CHECK(resp.error_code == 0);
    REQUIRE(resp.api_keys.size() == handlers.size());
    for (size_t i = 0; i < handlers.size(); ++i) {
      CHECK(resp.api_keys[i].api_key == handlers[i].api_key);
      CHECK(resp.api_keys[i].min_version == handlers[i].min_version);
      CHECK(resp.api_keys[i].max_version == handlers[i].max_version);
    }
  }
}

TEST_CASE("ApiVersions at an unknown version answers v0 UNSUPPORTED_VERSION", "[handlers][api_versions]") {
  test::BrokerFixture f;
  std::vector<uint8_t> raw = f.call_raw(18, 9, {});
  REQUIRE(raw.size() > 10);
  protocol::Reader r(raw);
  CHECK(r.read_int32() == static_cast<int32_t>(raw.size() - 4));
  r.read_int32();  // correlation id (header v0)
  protocol::ApiVersionsResponse resp;
  resp.decode(r, 0);
  REQUIRE(r.ok());
  CHECK(resp.error_code == protocol::to_wire(protocol::ErrorCode::UNSUPPORTED_VERSION));
  // ApiVersions' own range alone, as Kafka answers (KIP-511).
  REQUIRE(resp.api_keys.size() == 1);
  CHECK(resp.api_keys[0].api_key == 18);
  CHECK(resp.api_keys[0].min_version == 0);
  CHECK(resp.api_keys[0].max_version == 4);
}

TEST_CASE("ApiVersions v3 with an invalid client software name is INVALID_REQUEST", "[handlers][api_versions]") {
  test::BrokerFixture f;
  protocol::ApiVersionsRequest req;
  req.client_software_name = "-bad name-";
  req.client_software_version = "1";
  auto resp = f.call<protocol::ApiVersionsResponse>(req, 3);
  CHECK(resp.error_code == protocol::to_wire(protocol::ErrorCode::INVALID_REQUEST));
  CHECK(resp.api_keys.empty());  // no list, as Kafka answers
}

TEST_CASE("an API key without a handler closes the connection", "[handlers][dispatch]") {
  test::BrokerFixture f;
  Response::Action action = Response::Action::kSend;
  f.call_raw(/*EndTxn*/ 26, 3, {}, &action);
  CHECK(action == Response::Action::kClose);
}
