// tests/unit/handlers/cluster/zk_configs_test.cc: topic config changes in
// ZooKeeper (ZkTopicAdmin::read_configs / alter_configs, Kafka's
// AdminZkClient.changeTopicConfig) over the in-memory ZooKeeper: the
// overrides znode replaced and a /config/changes notification made in one
// step; an unknown topic, a bad value or validate_only writes nothing.
// Dynamic broker configs the same way (admin/dynamic_configs.h), and what
// another tool wrote there applied, less what this broker refuses; client
// quotas (quotas/client_quotas.h) in Kafka's znodes likewise.
#include <catch2/catch.hpp>

#include <algorithm>

#include "broker/admin/dynamic_configs.h"
#include "broker/broker.h"
#include "broker/cluster/zk_topics.h"
#include "broker/quotas/client_quotas.h"
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

  // Refusals write nothing. Listeners: per broker only, and the
  // inter-broker listener stays where the others reach it.
  CHECK(d.replace_in_zk(*s, true, {{"num.partitions", "3"}}, false).code == ErrorCode::INVALID_REQUEST);
  const TopicError dflt = d.replace_in_zk(*s, true, {{"listeners", "PLAINTEXT://127.0.0.1:0"}}, false);
  CHECK(dflt.code == ErrorCode::INVALID_REQUEST);
  CHECK_THAT(dflt.message, Catch::Contains("default cluster level"));
  const TopicError moved =
      d.replace_in_zk(*s, false, {{"message.max.bytes", "2048"}, {"advertised.listeners", "PLAINTEXT://elsewhere:9092"}},
                      false);
  CHECK(moved.code == ErrorCode::INVALID_REQUEST);
  CHECK_THAT(moved.message, Catch::Contains("inter-broker listener PLAINTEXT") && Catch::Contains("restart"));
  CHECK(d.replace_in_zk(*s, true, {{"log.retention.ms", "soon"}}, false).code == ErrorCode::INVALID_REQUEST);
  CHECK(d.replace_in_zk(*s, true, {{"log.retention.ms", "60000"}}, true).ok());  // validate only
  CHECK(changes(*s).size() == 2);
  REQUIRE(s->get("/config/brokers/<default>", &data) == zk::Code::kOk);
  CHECK(data == replication::encode_entity_config({{"log.retention.ms", "3600000"}}));

  // A listener added through this broker: this broker's own set, then the
  // listeners (no network server here: the snapshot), kept in ZooKeeper.
  const std::string two = "PLAINTEXT://127.0.0.1:0,EXTRA://127.0.0.1:0";
  const std::string map = "PLAINTEXT:PLAINTEXT,EXTRA:PLAINTEXT";
  REQUIRE(d.replace_in_zk(*s, false, {{"listeners", two}, {"listener.security.protocol.map", map}}, false).ok());
  CHECK(c.broker().listeners()->advertised.size() == 2);
  REQUIRE(s->get("/config/brokers/" + me, &data) == zk::Code::kOk);
  CHECK(data == replication::encode_entity_config({{"listener.security.protocol.map", map}, {"listeners", two}}));
  // What another tool wrote: applied, less what this broker does not
  // accept (listeners in the default set: per broker only); this broker's
  // own set without the listener, so it is removed.
  REQUIRE(s->set("/config/brokers/<default>",
                 replication::encode_entity_config({{"log.retention.ms", "7200000"},
                                                    {"socket.request.max.bytes", "4096"},
                                                    {"log.segment.bytes", "x"},
                                                    {"listeners", two}}),
                 -1) == zk::Code::kOk);
  REQUIRE(s->set("/config/brokers/" + me, replication::encode_entity_config({{"listener.security.protocol.map", map}}),
                 -1) == zk::Code::kOk);
  REQUIRE(d.apply_from_zk(*s));
  CHECK(c.broker().config().dynamic_default() == config::DynamicMap{{"log.retention.ms", "7200000"}});
  CHECK(c.broker().config().dynamic_broker() == config::DynamicMap{{"listener.security.protocol.map", map}});
  CHECK(c.broker().listeners()->advertised.size() == 1);
  REQUIRE(s->remove("/config/brokers/" + me, -1) == zk::Code::kOk);
  REQUIRE(d.apply_from_zk(*s));
  CHECK(c.broker().config().dynamic_default() == config::DynamicMap{{"log.retention.ms", "7200000"}});
  CHECK(c.broker().config().dynamic_broker().empty());
  CHECK(c.broker().config().log_retention_ms() == 7200000);
  CHECK(c.broker().config().get_int("message.max.bytes") == 1048588);
}

}  // namespace ciuickafka::broker::test

namespace ciuickafka::broker::test {

TEST_CASE("client quotas in ZooKeeper: Kafka's /config/users, /config/clients, /config/ips and notifications") {
  using namespace quotas;
  ClusterFixture c;
  std::unique_ptr<zk::Client> client;
  auto s = session(c, client);
  REQUIRE(zk::ensure_path(*s, "/config/changes") == zk::Code::kOk);
  ClientQuotas& q = c.broker().service<ClientQuotas>();
  const std::optional<std::string> dflt;
  // A user znode another tool made (SCRAM credentials): kept as it is.
  REQUIRE(zk::ensure_path(*s, "/config/users") == zk::Code::kOk);
  REQUIRE(s->create("/config/users/alice", replication::encode_entity_config({{"SCRAM-SHA-256", "salt=x"}}),
                    zk::CreateMode::kPersistent) == zk::Code::kOk);

  auto results = q.alter_in_zk(*s,
                               {Alteration{Entity{{kUser, std::string("alice")}, {kClientId, dflt}},
                                           {Op{kProducerByteRate, 1024.0}}},
                                Alteration{Entity{{kClientId, std::string("a b")}}, {Op{kConsumerByteRate, 2048.0}}},
                                Alteration{Entity{{kIp, dflt}}, {Op{kConnectionCreationRate, 5.0}}},
                                Alteration{Entity{{kUser, std::string("alice")}}, {Op{kProducerByteRate, 10.0}}},
                                Alteration{Entity{{kClientId, std::string("x")}}, {Op{kProducerByteRate, 0.5}}}},
                               false);
  REQUIRE(results.size() == 5);
  for (size_t i = 0; i < 4; ++i) CHECK(results[i].error.ok());
  CHECK(results[4].error.code == ErrorCode::INVALID_REQUEST);

  std::string data;
  REQUIRE(s->get("/config/users/alice/clients/<default>", &data) == zk::Code::kOk);
  CHECK(data == replication::encode_entity_config({{"producer_byte_rate", "1024"}}));
  REQUIRE(s->get("/config/clients/a%20b", &data) == zk::Code::kOk);
  CHECK(data == replication::encode_entity_config({{"consumer_byte_rate", "2048"}}));
  REQUIRE(s->get("/config/ips/<default>", &data) == zk::Code::kOk);
  CHECK(data == replication::encode_entity_config({{"connection_creation_rate", "5"}}));
  REQUIRE(s->get("/config/users/alice", &data) == zk::Code::kOk);
  CHECK(data == replication::encode_entity_config({{"SCRAM-SHA-256", "salt=x"}, {"producer_byte_rate", "10"}}));
  CHECK(s->exists("/config/clients/x") == zk::Code::kNoNode);
  std::vector<std::string> paths;
  for (const auto& k : changes(*s)) {
    REQUIRE(s->get("/config/changes/" + k, &data) == zk::Code::kOk);
    paths.push_back(data);
  }
  std::sort(paths.begin(), paths.end());
  std::vector<std::string> want;
  for (const char* p : {"users/alice/clients/<default>", "clients/a%20b", "ips/<default>", "users/alice"})
    want.push_back(replication::encode_config_change(p));
  std::sort(want.begin(), want.end());
  CHECK(paths == want);
  // Applied here at once.
  auto t = q.table();
  CHECK(t->size() == 4);
  CHECK(find(*t, kProducerByteRate, "alice", "any")->limit == 1024);
  CHECK(find_ip(resolve_ip_rates(*t), "10.0.0.1") == 5.0);

  // validate_only and a refused key write nothing.
  const size_t before = changes(*s).size();
  CHECK(q.alter_in_zk(*s, {Alteration{Entity{{kClientId, std::string("v")}}, {Op{kProducerByteRate, 1.0}}}}, true)[0]
            .error.ok());
  CHECK(q.alter_in_zk(*s, {Alteration{Entity{{kClientId, std::string("v")}}, {Op{kControllerMutationRate, -1.0}}}}, false)[0]
            .error.code == ErrorCode::INVALID_REQUEST);
  CHECK(s->exists("/config/clients/v") == zk::Code::kNoNode);
  CHECK(changes(*s).size() == before);

  // Removing a user's quota keeps its other keys.
  CHECK(q.alter_in_zk(*s, {Alteration{Entity{{kUser, std::string("alice")}}, {Op{kProducerByteRate, std::nullopt}}}},
                      false)[0]
            .error.ok());
  REQUIRE(s->get("/config/users/alice", &data) == zk::Code::kOk);
  CHECK(data == replication::encode_entity_config({{"SCRAM-SHA-256", "salt=x"}}));
  CHECK(changes(*s).size() == before + 1);

  // What another tool wrote (Kafka writes doubles as "200.0"): read back, a
  // value that is not a number skipped; is_quota_entity_path routes it.
  REQUIRE(s->set("/config/clients/a%20b",
                 replication::encode_entity_config({{"consumer_byte_rate", "4096.0"}, {"producer_byte_rate", "x"}}),
                 -1) == zk::Code::kOk);
  REQUIRE(s->create("/config/clients/<default>", replication::encode_entity_config({{"producer_byte_rate", "300"}}),
                    zk::CreateMode::kPersistent) == zk::Code::kOk);
  CHECK(ClientQuotas::is_quota_entity_path("clients/a%20b"));
  CHECK(ClientQuotas::is_quota_entity_path("users/u/clients/c"));
  CHECK(ClientQuotas::is_quota_entity_path("ips/1.2.3.4"));
  CHECK_FALSE(ClientQuotas::is_quota_entity_path("topics/t"));
  REQUIRE(q.apply_from_zk(*s));
  t = q.table();
  CHECK(t->at(Entity{{kClientId, std::string("a b")}}) == Values{{kConsumerByteRate, 4096}});
  CHECK(t->at(Entity{{kClientId, dflt}}) == Values{{kProducerByteRate, 300}});
  CHECK(t->count(Entity{{kUser, std::string("alice")}}) == 0);
  CHECK(t->size() == 4);
}

}  // namespace ciuickafka::broker::test
