// tests/unit/replication/controller_real_zk_test.cc: the controller's writes
// against a real standalone ZooKeeper (zk_test_server.h): the fenced multis
// create and update state znodes there as on the fake, and a bumped
// /controller_epoch makes the real server refuse the next write. Exits 77
// (skipped) when java or ZooKeeper's jar is missing.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "replication/controller/controller_state.h"
#include "replication/zk_data.h"
#include "tests/unit/replication/zk_test_server.h"

namespace ciuickafka::replication::controller {
namespace {

LiveBroker broker(int32_t id) {
  LiveBroker b;
  b.id = id;
  b.epoch = 1000 + id;
  b.endpoints = {{"PLAINTEXT", "127.0.0.1", 9090 + id, "PLAINTEXT"}};
  return b;
}

TEST_CASE("controller (real ZooKeeper): states are created, updated and fenced") {
  zk::testing::ZkTestServer::skip_if_unavailable();
  zk::testing::ZkTestServer server;
  std::string error;
  REQUIRE(server.start(&error));
  auto client = zk::make_zookeeper_client();
  zk::ConnectOptions o;
  o.connect = server.connect_string() + "/kafka";
  o.session_timeout_ms = 6000;
  o.connection_timeout_ms = 10000;
  auto controller_session = client->connect(o, {}, &error);
  auto tool = client->connect(o, {}, &error);
  INFO(error);
  REQUIRE(controller_session);
  REQUIRE(tool);
  for (auto p : kPersistentPaths) REQUIRE(zk::ensure_path(*tool, std::string(p)) == zk::Code::kOk);
  zk::Stat st;
  REQUIRE(tool->create(std::string(kControllerEpochPath), "1", zk::CreateMode::kPersistent) == zk::Code::kOk);
  REQUIRE(tool->set(std::string(kControllerEpochPath), "2", 0, &st) == zk::Code::kOk);
  REQUIRE(tool->create(topic_path("t"), R"({"version":1,"partitions":{"0":[1,2,3]}})",
                       zk::CreateMode::kPersistent) == zk::Code::kOk);

  ControllerIdentity id;
  id.broker_id = 1;
  id.epoch = 2;
  id.epoch_zk_version = st.version;
  PartitionStateMachine psm(*controller_session, id, {broker(1), broker(2), broker(3)});
  REQUIRE(psm.load().outcome == Outcome::kOk);
  REQUIRE(psm.on_new_topics({"t"}).outcome == Outcome::kOk);
  REQUIRE(psm.on_broker_failure({1}, [](const std::string&) { return false; }).outcome == Outcome::kOk);

  std::string data;
  REQUIRE(tool->get(partition_state_path("t", 0), &data, &st) == zk::Code::kOk);
  CHECK(data == R"({"controller_epoch":2,"leader":2,"version":1,"leader_epoch":1,"isr":[2,3]})");
  CHECK(st.version == 1);
  REQUIRE(tool->get(topic_path("t"), &data) == zk::Code::kOk);
  CHECK(data.find("\"topic_id\"") != std::string::npos);

  REQUIRE(tool->set(std::string(kControllerEpochPath), "3", -1) == zk::Code::kOk);
  StepResult r = psm.on_broker_failure({2}, [](const std::string&) { return false; });
  CHECK(r.outcome == Outcome::kResign);
  REQUIRE(tool->get(partition_state_path("t", 0), &data, &st) == zk::Code::kOk);
  CHECK(st.version == 1);
}

}  // namespace
}  // namespace ciuickafka::replication::controller
