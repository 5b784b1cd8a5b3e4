// tests/unit/handlers/cluster/zk_configs_test.cc: topic config changes in
// ZooKeeper (ZkTopicAdmin::read_configs / alter_configs, Kafka's
// AdminZkClient.changeTopicConfig) over the in-memory ZooKeeper: the
// overrides znode replaced and a /config/changes notification made in one
// step; an unknown topic, a bad value or validate_only writes nothing.
// Dynamic broker configs the same way (admin/dynamic_configs.h), and what
// another tool wrote there applied, less what this broker refuses.
#include <catch2/catch.hpp>

#include <algorithm>

#include "broker/admin/dynamic_configs.h"
#include "broker/broker.h"
#include "broker/cluster/zk_topics.h"
#include "replication/zk_data.h"
#include "tests/unit/handlers/cluster/cluster_fixture.h"

namespace ciuickafka::broker::test {
namespace {

using protocol::ErrorCode;
namespace zk = replication::zk;

std::unique_ptr<zk::Session> session(ClusterFixture& c, std::unique_ptr<zk::Client>& client) {
  std::string error;
  zk::ConnectOptions o;
  o.connect = "fake:2181";
  client = c.zk().client();
  auto s = client->connect(o, {}, &error);
  INFO(error);
  REQUIRE(s);
  return s;
}

std::vector<std::string> changes(zk::Session& s) {
  std::vector<std::string> kids;
  if (s.children(std::string(replication::kConfigChangesPath), &kids) != zk::Code::kOk) return {};
  return kids;
}

}  // namespace

TEST_CASE("ZkTopicAdmin::alter_configs writes /config/topics/T and a change notification") {
  ClusterFixture c;
  std::unique_ptr<zk::Client> client;
  auto s = session(c, client);
  for (const char* p : {"/brokers/topics", "/config/topics", "/config/changes"})
    REQUIRE(zk::ensure_path(*s, p) == zk::Code::kOk);
  REQUIRE(s->create("/brokers/topics/t", R"({"version":3,"partitions":{"0":[1]}})", zk::CreateMode::kPersistent) ==
          zk::Code::kOk);
  ZkTopicAdmin admin(*s, c.broker().topics(), {{1, std::nullopt}});

  ConfigMap current;
  REQUIRE(admin.read_configs("t", &current).ok());
  CHECK(current.empty());

  SECTION("a change is written, then read back") {
    TopicError e = admin.alter_configs("t", {{"retention.ms", "60000"}, {"cleanup.policy", "compact"}}, false);
    INFO(e.message);
    REQUIRE(e.ok());
    std::string data;
    REQUIRE(s->get("/config/topics/t", &data) == zk::Code::kOk);
    auto decoded = replication::decode_entity_config(data);
    REQUIRE(decoded.ok());
    CHECK(decoded.value().size() == 2);
    auto kids = changes(*s);
    REQUIRE(kids.size() == 1);
    CHECK(kids[0] == "config_change_0000000000");
    REQUIRE(s->get("/config/changes/" + kids[0], &data) == zk::Code::kOk);
    CHECK(data == replication::encode_config_change("topics/t"));
    REQUIRE(admin.read_configs("t", &current).ok());
    CHECK(current == ConfigMap{{"cleanup.policy", "compact"}, {"retention.ms", "60000"}});
    // A second change replaces the set and makes the next notification.
    REQUIRE(admin.alter_configs("t", {{"retention.ms", "120000"}}, false).ok());
    REQUIRE(admin.read_configs("t", &current).ok());
    CHECK(current == ConfigMap{{"retention.ms", "120000"}});
    CHECK(changes(*s).size() == 2);
  }
  SECTION("validate_only, a bad value and an unknown topic write nothing") {
    CHECK(admin.alter_configs("t", {{"retention.ms", "60000"}}, true).ok());
    TopicError bad = admin.alter_configs("t", {{"retention.ms", "soon"}}, false);
    CHECK(bad.code == ErrorCode::INVALID_CONFIG);
    CHECK(bad.message.find("retention.ms") != std::string::npos);
    CHECK(admin.alter_configs("nope", {{"retention.ms", "60000"}}, false).code == ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
    CHECK(admin.read_configs("nope", &current).code == ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
    CHECK(s->exists("/config/topics/t") == zk::Code::kNoNode);
    CHECK(changes(*s).empty());
  }
}

TEST_CASE("dynamic broker configs in ZooKeeper: /config/brokers/<default> and /config/brokers/<id>") {
  ClusterFixture c;
  std::unique_ptr<zk::Client> client;
  auto s = session(c, client);
  REQUIRE(zk::ensure_path(*s, "/config/changes") == zk::Code::kOk);
  admin::DynamicConfigs& d = c.broker().service<admin::DynamicConfigs>();
  const std::string me = std::to_string(c.broker().node_id());
  config::DynamicMap current;
  REQUIRE(d.current_in_zk(*s, true, &current).ok());
  CHECK(current.empty());

  // Written as Kafka's AdminZkClient.changeBrokerConfig writes it, and applied here at once.
  REQUIRE(d.replace_in_zk(*s, true, {{"log.retention.ms", "3600000"}}, false).ok());
  REQUIRE(d.replace_in_zk(*s, false, {{"message.max.bytes", "2048"}}, false).ok());
  std::string data;
  REQUIRE(s->get("/config/brokers/<default>", &data) == zk::Code::kOk);
  CHECK(data == replication::encode_entity_config({{"log.retention.ms", "3600000"}}));
  REQUIRE(s->get("/config/brokers/" + me, &data) == zk::Code::kOk);
  CHECK(data == replication::encode_entity_config({{"message.max.bytes", "2048"}}));
  auto kids = changes(*s);
  REQUIRE(kids.size() == 2);
  std::sort(kids.begin(), kids.end());
  REQUIRE(s->get("/config/changes/" + kids[0], &data) == zk::Code::kOk);
  CHECK(data == replication::encode_config_change("brokers/<default>"));
  REQUIRE(s->get("/config/changes/" + kids[1], &data) == zk::Code::kOk);
  CHECK(data == replication::encode_config_change("brokers/" + me));
  CHECK(c.broker().config().log_retention_ms() == 3600000);
  CHECK(c.broker().config().get_int("message.max.bytes") == 2048);
  REQUIRE(d.current_in_zk(*s, false, &current).ok());
  CHECK(current == config::DynamicMap{{"message.max.bytes", "2048"}});

  // Refusals write nothing.
  CHECK(d.replace_in_zk(*s, true, {{"num.partitions", "3"}}, false).code == ErrorCode::INVALID_REQUEST);
  CHECK(d.replace_in_zk(*s, true, {{"log.retention.ms", "soon"}}, false).code == ErrorCode::INVALID_REQUEST);
  CHECK(d.replace_in_zk(*s, true, {{"log.retention.ms", "60000"}}, true).ok());  // validate only
  CHECK(changes(*s).size() == 2);
  REQUIRE(s->get("/config/brokers/<default>", &data) == zk::Code::kOk);
  CHECK(data == replication::encode_entity_config({{"log.retention.ms", "3600000"}}));

  // What another tool wrote: applied, less what this broker does not accept.
  REQUIRE(s->set("/config/brokers/<default>",
                 replication::encode_entity_config(
                     {{"log.retention.ms", "7200000"}, {"socket.request.max.bytes", "4096"}, {"log.segment.bytes", "x"}}),
                 -1) == zk::Code::kOk);
  REQUIRE(s->remove("/config/brokers/" + me, -1) == zk::Code::kOk);
  REQUIRE(d.apply_from_zk(*s));
  CHECK(c.broker().config().dynamic_default() == config::DynamicMap{{"log.retention.ms", "7200000"}});
  CHECK(c.broker().config().dynamic_broker().empty());
  CHECK(c.broker().config().log_retention_ms() == 7200000);
  CHECK(c.broker().config().get_int("message.max.bytes") == 1048588);
}

}  // namespace ciuickafka::broker::test
