// tests/unit/replication/controller_state_test.cc: the controller's
// partition state machine against the in-memory ZooKeeper: loading topics
// (and giving CMAK's v1 topics an id), initialising new partitions with
// Kafka's state JSON, the LeaderAndIsr/UpdateMetadata contents, partitions
// that wait for a replica's broker, and fencing by /controller_epoch.
#include "tests/unit/replication/controller_test_util.h"

#include "storage/checkpoint.h"

namespace ciuickafka::replication::controller {
namespace {

using namespace test;

TEST_CASE("controller: a new RF 3 topic gets Kafka's state znodes and LeaderAndIsr for every replica") {
  Fixture f;
  f.create_topic("orders", {{0, {1, 2, 3}}, {1, {2, 3, 1}}});
  PartitionStateMachine psm(*f.zk, f.id, brokers({1, 2, 3}));
  REQUIRE(psm.load().outcome == Outcome::kOk);
  StepResult r = psm.on_new_topics({"orders"});
  REQUIRE(r.outcome == Outcome::kOk);
  CHECK(r.failed.empty());

  int32_t version = -1;
  std::string raw;
  auto s0 = f.state("orders", 0, &version, &raw);
  REQUIRE(s0);
  CHECK(*s0 == ps(1, 0, 2, {1, 2, 3}));
  CHECK(version == 0);
  CHECK(raw == R"({"controller_epoch":2,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2,3]})");
  CHECK(f.state("orders", 1) == ps(2, 0, 2, {2, 3, 1}));
  CHECK(f.exists("/brokers/topics/orders/partitions/1"));
  CHECK_FALSE(r.requests.metadata_first);

  const protocol::Uuid topic_id = psm.context().topics.at("orders").id;
  for (int32_t b : {1, 2, 3}) {
    const auto& req = r.requests.leader_and_isr.at(b);
    CHECK(req.controller_id == 1);
    CHECK(req.controller_epoch == 2);
    CHECK(req.broker_epoch == 1000 + b);
    REQUIRE(req.topic_states.size() == 1);
    CHECK(req.topic_states[0].topic_id == topic_id);
    const auto* p0 = lai(r, b, "orders", 0);
    REQUIRE(p0);
    CHECK(p0->leader == 1);
    CHECK(p0->leader_epoch == 0);
    CHECK(p0->partition_epoch == 0);
    CHECK(p0->isr == std::vector<int32_t>{1, 2, 3});
    CHECK(p0->replicas == std::vector<int32_t>{1, 2, 3});
    CHECK(p0->is_new);
    CHECK(req.live_leaders.size() == 2);  // brokers 1 and 2 lead
    const auto* m = um(r, b, "orders", 1);
    REQUIRE(m);
    CHECK(m->leader == 2);
    CHECK(m->offline_replicas.empty());
    CHECK(r.requests.update_metadata.at(b).live_brokers.size() == 3);
    CHECK(r.requests.update_metadata.at(b).broker_epoch == 1000 + b);
  }

  // A second controller loads what the first wrote.
  PartitionStateMachine again(*f.zk, f.id, brokers({1, 2, 3}));
  REQUIRE(again.load().outcome == Outcome::kOk);
  const PartitionInfo* info = again.context().partition("orders", 0);
  REQUIRE(info);
  CHECK(info->state == ps(1, 0, 2, {1, 2, 3}));
  CHECK(info->zk_version == 0);
  CHECK(again.context().topics.at("orders").id == topic_id);
}

TEST_CASE("controller: a CMAK-style v1 topic gets a topic id written as v3") {
  Fixture f;
  f.create_topic("legacy", {{0, {1, 2}}}, /*v1=*/true);
  PartitionStateMachine psm(*f.zk, f.id, brokers({1, 2}));
  REQUIRE(psm.load().outcome == Outcome::kOk);
  std::string data;
  REQUIRE(f.tool->get(topic_path("legacy"), &data) == zk::Code::kOk);
  auto a = decode_topic_assignment(data);
  REQUIRE(a.ok());
  REQUIRE(a->topic_id);
  CHECK_FALSE(a->topic_id->is_zero());
  CHECK(*a->topic_id == psm.context().topics.at("legacy").id);
  CHECK(data.find("\"version\":3") != std::string::npos);
  CHECK(a->partitions.at(0).replicas == std::vector<int32_t>{1, 2});
}

TEST_CASE("controller: a partition with no live replica waits without state until a replica's broker joins") {
  Fixture f;
  f.create_topic("later", {{0, {4, 5}}, {1, {1, 2}}});
  PartitionStateMachine psm(*f.zk, f.id, brokers({1, 2, 3}));
  REQUIRE(psm.load().outcome == Outcome::kOk);
  StepResult r = psm.on_new_topics({"later"});
  REQUIRE(r.outcome == Outcome::kOk);
  CHECK_FALSE(f.state("later", 0));
  CHECK_FALSE(f.exists("/brokers/topics/later/partitions/0"));
  CHECK(f.state("later", 1) == ps(1, 0, 2, {1, 2}));
  REQUIRE(r.failed.size() == 1);
  CHECK(r.failed[0].partition == TopicPartitionRef{"later", 0});
  CHECK(um(r, 1, "later", 0) == nullptr);  // no leader yet: not in metadata

  StepResult joined = psm.on_broker_startup(brokers({5}), never_unclean);
  REQUIRE(joined.outcome == Outcome::kOk);
  CHECK(joined.requests.metadata_first);
  CHECK(f.state("later", 0) == ps(5, 0, 2, {5}));
  const auto* p = lai(joined, 5, "later", 0);
  REQUIRE(p);
  CHECK(p->is_new);
  // The joining broker gets full metadata, the others the changed partition.
  CHECK(um(joined, 5, "later", 1));
  CHECK(um(joined, 1, "later", 0));
  CHECK(um(joined, 1, "later", 1) == nullptr);
}

TEST_CASE("controller: a moved /controller_epoch fences every write and the machine resigns") {
  Fixture f;
  f.create_topic("t", {{0, {1, 2, 3}}});
  PartitionStateMachine psm(*f.zk, f.id, brokers({1, 2, 3}));
  REQUIRE(psm.load().outcome == Outcome::kOk);

  SECTION("creating states") {
    f.bump_epoch();
    StepResult r = psm.on_new_topics({"t"});
    CHECK(r.outcome == Outcome::kResign);
    CHECK_FALSE(f.exists("/brokers/topics/t/partitions"));
  }
  SECTION("changing a state") {
    REQUIRE(psm.on_new_topics({"t"}).outcome == Outcome::kOk);
    f.bump_epoch();
    StepResult r = psm.on_broker_failure({1}, never_unclean);
    CHECK(r.outcome == Outcome::kResign);
    int32_t version = -1;
    CHECK(f.state("t", 0, &version) == ps(1, 0, 2, {1, 2, 3}));
    CHECK(version == 0);
    CHECK(psm.resigned());
    CHECK(psm.elect_preferred({{"t", 0}}).outcome == Outcome::kResign);
  }
  SECTION("a v1 topic's id") {
    f.create_topic("legacy", {{0, {1}}}, /*v1=*/true);
    f.bump_epoch();
    StepResult r = psm.on_new_topics({"legacy"});
    CHECK(r.outcome == Outcome::kResign);
    std::string data;
    REQUIRE(f.tool->get(topic_path("legacy"), &data) == zk::Code::kOk);
    CHECK(data.find("topic_id") == std::string::npos);
  }
}

TEST_CASE("controller: startup after failover sends full metadata and LeaderAndIsr for every partition") {
  Fixture f;
  f.create_topic("t", {{0, {1, 2}}, {1, {3, 1}}, {2, {1, 3}}});
  {
    PartitionStateMachine first(*f.zk, f.id, brokers({1, 2, 3}));
    REQUIRE(first.load().outcome == Outcome::kOk);
    REQUIRE(first.on_new_topics({"t"}).outcome == Outcome::kOk);
  }
  // Broker 3 died while no controller was running.
  PartitionStateMachine psm(*f.zk, f.id, brokers({1, 2}));
  REQUIRE(psm.load().outcome == Outcome::kOk);
  StepResult r = psm.startup(never_unclean);
  REQUIRE(r.outcome == Outcome::kOk);
  CHECK(f.state("t", 1) == ps(1, 1, 2, {1}));
  CHECK(f.state("t", 2) == ps(1, 1, 2, {1}));  // the dead follower left the ISR
  CHECK(lai(r, 2, "t", 0));
  CHECK(lai(r, 1, "t", 1));
  REQUIRE(um(r, 2, "t", 1));
  CHECK(um(r, 2, "t", 1)->offline_replicas == std::vector<int32_t>{3});
}

}  // namespace
}  // namespace ciuickafka::replication::controller
