// tests/unit/replication/controller_failure_test.cc: broker failure and
// return (leader moves, ISR shrinks, the last ISR member stays, unclean
// election), a state znode changed under the controller, preferred
// election, controlled shutdown and topic deletion, against the in-memory
// ZooKeeper.
#include "tests/unit/replication/controller_test_util.h"

namespace ciuickafka::replication::controller {
namespace {

using namespace test;

struct Running : Fixture {
  PartitionStateMachine psm{*zk, id, brokers({1, 2, 3})};
  explicit Running(std::map<int32_t, std::vector<int32_t>> partitions) {
    create_topic("t", std::move(partitions));
    REQUIRE(psm.load().outcome == Outcome::kOk);
    REQUIRE(psm.on_new_topics({"t"}).outcome == Outcome::kOk);
  }
};

TEST_CASE("controller: the leader's broker fails: the next ISR member leads under epoch+1") {
  Running c({{0, {1, 2, 3}}});
  ElectionCounters counted;
  c.psm.set_election_counters(&counted);
  StepResult r = c.psm.on_broker_failure({1}, never_unclean);
  REQUIRE(r.outcome == Outcome::kOk);
  CHECK(counted.elections == 1);
  CHECK(counted.unclean == 0);
  int32_t version = -1;
  CHECK(c.state("t", 0, &version) == ps(2, 1, 2, {2, 3}));
  CHECK(version == 1);
  CHECK(r.requests.leader_and_isr.count(1) == 0);
  for (int32_t b : {2, 3}) {
    const auto* p = lai(r, b, "t", 0);
    REQUIRE(p);
    CHECK(p->leader == 2);
    CHECK(p->leader_epoch == 1);
    CHECK(p->partition_epoch == 1);
    CHECK(p->isr == std::vector<int32_t>{2, 3});
    CHECK_FALSE(p->is_new);
    const auto* m = um(r, b, "t", 0);
    REQUIRE(m);
    CHECK(m->offline_replicas == std::vector<int32_t>{1});
    CHECK(m->zk_version == 1);
  }
  CHECK(r.requests.update_metadata.size() == 2);
}

TEST_CASE("controller: a follower's broker fails: it leaves the ISR, the leader stays") {
  Running c({{0, {1, 2, 3}}});
  StepResult r = c.psm.on_broker_failure({3}, never_unclean);
  REQUIRE(r.outcome == Outcome::kOk);
  CHECK(c.state("t", 0) == ps(1, 1, 2, {1, 2}));
  CHECK(lai(r, 1, "t", 0));
  CHECK(lai(r, 2, "t", 0));
}

TEST_CASE("controller: the last ISR member dies: leader -1, the ISR keeps it, and it leads again on return") {
  Running c({{0, {1, 2}}});
  ElectionCounters counted;
  c.psm.set_election_counters(&counted);
  REQUIRE(c.psm.on_broker_failure({2}, never_unclean).outcome == Outcome::kOk);
  CHECK(c.state("t", 0) == ps(1, 1, 2, {1}));
  StepResult r = c.psm.on_broker_failure({1}, never_unclean);
  REQUIRE(r.outcome == Outcome::kOk);
  CHECK(c.state("t", 0) == ps(-1, 2, 2, {1}));

  SECTION("the out-of-sync replica returns: no clean leader, nothing written") {
    StepResult back = c.psm.on_broker_startup(brokers({2}), never_unclean);
    REQUIRE(back.outcome == Outcome::kOk);
    int32_t version = -1;
    CHECK(c.state("t", 0, &version) == ps(-1, 2, 2, {1}));
    CHECK(version == 2);
    REQUIRE(back.failed.size() == 1);
    REQUIRE(um(back, 2, "t", 0));  // full metadata for the joining broker
    CHECK(um(back, 2, "t", 0)->leader == -1);
    CHECK(counted.elections == 0);  // leader 1 -> -1 is no election
  }
  SECTION("the last ISR member returns and leads") {
    StepResult back = c.psm.on_broker_startup(brokers({1}), never_unclean);
    REQUIRE(back.outcome == Outcome::kOk);
    CHECK(c.state("t", 0) == ps(1, 3, 2, {1}));
    REQUIRE(lai(back, 1, "t", 0));
    CHECK(lai(back, 1, "t", 0)->leader == 1);
    CHECK(counted.elections == 1);
    CHECK(counted.unclean == 0);
  }
  SECTION("unclean election allowed: the first live replica leads, RECOVERING") {
    StepResult back = c.psm.on_broker_startup(brokers({2}), always_unclean);
    REQUIRE(back.outcome == Outcome::kOk);
    std::string raw;
    auto s = c.state("t", 0, nullptr, &raw);
    PartitionState want = ps(2, 3, 2, {2});
    want.leader_recovery_state = LeaderRecoveryState::kRecovering;
    CHECK(s == want);
    CHECK(raw.find("\"leader_recovery_state\":1") != std::string::npos);
    REQUIRE(lai(back, 2, "t", 0));
    CHECK(lai(back, 2, "t", 0)->leader_recovery_state == 1);
    CHECK(counted.elections == 1);
    CHECK(counted.unclean == 1);  // broker 2 was not in the ISR [1]
  }
}

TEST_CASE("controller: a state znode changed under the controller is re-read and the change re-applied") {
  Running c({{0, {1, 2, 3}}});
  // A leader's legacy ISR write (zkVersion 0 -> 1) the controller has not seen.
  REQUIRE(c.tool->set(partition_state_path("t", 0), encode_partition_state(ps(1, 0, 2, {1, 3})), 0) ==
          zk::Code::kOk);
  REQUIRE(c.psm.on_broker_failure({3}, never_unclean).outcome == Outcome::kOk);
  int32_t version = -1;
  CHECK(c.state("t", 0, &version) == ps(1, 1, 2, {1}));
  CHECK(version == 2);
}

TEST_CASE("controller: preferred replica election") {
  Running c({{0, {1, 2, 3}}, {1, {2, 3, 1}}});
  REQUIRE(c.psm.on_broker_failure({1}, never_unclean).outcome == Outcome::kOk);
  REQUIRE(c.psm.on_broker_startup(brokers({1}), never_unclean).outcome == Outcome::kOk);
  CHECK(c.state("t", 0) == ps(2, 1, 2, {2, 3}));

  StepResult not_in_isr = c.psm.elect_preferred({{"t", 0}});
  CHECK(not_in_isr.failed.size() == 1);
  CHECK(not_in_isr.requests.empty());

  // Broker 1 caught up and the leader added it back (AlterPartition); a new
  // controller loads that state.
  int32_t version = -1;
  REQUIRE(c.state("t", 0, &version));
  REQUIRE(c.tool->set(partition_state_path("t", 0), encode_partition_state(ps(2, 1, 2, {2, 3, 1})), version) ==
          zk::Code::kOk);
  REQUIRE(c.psm.load().outcome == Outcome::kOk);
  StepResult r = c.psm.elect_preferred({{"t", 0}, {"t", 1}, {"t", 9}});
  REQUIRE(r.outcome == Outcome::kOk);
  CHECK(c.state("t", 0) == ps(1, 2, 2, {2, 3, 1}));
  CHECK(r.not_needed == std::vector<TopicPartitionRef>{{"t", 1}});
  REQUIRE(r.failed.size() == 1);
  CHECK(r.failed[0].partition == TopicPartitionRef{"t", 9});
  for (int32_t b : {1, 2, 3}) {
    REQUIRE(lai(r, b, "t", 0));
    CHECK(lai(r, b, "t", 0)->leader == 1);
  }
}

TEST_CASE("controller: controlled shutdown moves leadership away and drops the broker from ISRs") {
  Running c({{0, {1, 2, 3}}, {1, {2, 3, 1}}});
  c.create_topic("single", {{0, {1}}});
  REQUIRE(c.psm.on_new_topics({"single"}).outcome == Outcome::kOk);

  SECTION("stale broker epoch") {
    StepResult r = c.psm.controlled_shutdown(1, 999);
    CHECK(r.error_code == 77);
    CHECK(c.state("t", 0) == ps(1, 0, 2, {1, 2, 3}));
  }
  SECTION("no other ISR member: the broker keeps leading and the partition is remaining") {
    c.create_topic("pair", {{0, {1, 3}}});
    REQUIRE(c.psm.on_new_topics({"pair"}).outcome == Outcome::kOk);
    REQUIRE(c.psm.on_broker_failure({3}, never_unclean).outcome == Outcome::kOk);
    StepResult r = c.psm.controlled_shutdown(1, -1);
    REQUIRE(r.outcome == Outcome::kOk);
    CHECK(r.remaining == std::vector<TopicPartitionRef>{{"pair", 0}});
    CHECK(c.state("pair", 0) == ps(1, 1, 2, {1}));
    CHECK(c.state("t", 0) == ps(2, 2, 2, {2}));
  }
  SECTION("unknown broker") { CHECK(c.psm.controlled_shutdown(7, -1).error_code == 8); }
  SECTION("the broker's partitions move") {
    StepResult r = c.psm.controlled_shutdown(1, 1001);
    REQUIRE(r.outcome == Outcome::kOk);
    CHECK(r.error_code == 0);
    CHECK(c.state("t", 0) == ps(2, 1, 2, {2, 3}));
    CHECK(c.state("t", 1) == ps(2, 1, 2, {2, 3}));
    CHECK(r.remaining.empty());  // RF 1 partitions are not counted (Kafka)
    // It follows t-1: StopReplica without delete.
    const auto& stop = r.requests.stop_replica.at(1);
    REQUIRE(stop.topic_states.size() == 1);
    CHECK(stop.topic_states[0].partition_states.size() == 1);
    CHECK(stop.topic_states[0].partition_states[0].partition_index == 1);
    CHECK_FALSE(stop.topic_states[0].partition_states[0].delete_partition);
    CHECK(lai(r, 2, "t", 0));
    // The shutting-down old leader hears it follows now (Kafka's
    // liveOrShuttingDownReplicas), so it stops taking produce requests.
    REQUIRE(lai(r, 1, "t", 0));
    CHECK(lai(r, 1, "t", 0)->leader == 2);
    CHECK(lai(r, 1, "t", 1) == nullptr);  // it followed t-1: StopReplica, no LeaderAndIsr
    REQUIRE(um(r, 1, "t", 0));             // but it still hears metadata
    CHECK(um(r, 1, "t", 0)->offline_replicas == std::vector<int32_t>{1});
  }
}

TEST_CASE("controller: topic deletion") {
  Running c({{0, {1, 2, 3}}, {1, {2, 3, 1}}});
  REQUIRE(c.tool->create(delete_topic_path("t"), "", zk::CreateMode::kPersistent) == zk::Code::kOk);

  SECTION("all replicas live: StopReplica(delete), metadata with leader -2, znodes gone") {
    StepResult r = c.psm.on_topic_deletion({"t"});
    REQUIRE(r.outcome == Outcome::kOk);
    CHECK(r.deleted == std::vector<std::string>{"t"});
    CHECK_FALSE(c.exists(topic_path("t")));
    CHECK_FALSE(c.exists(topic_config_path("t")));
    CHECK_FALSE(c.exists(delete_topic_path("t")));
    CHECK_FALSE(c.psm.context().topics.contains("t"));
    for (int32_t b : {1, 2, 3}) {
      const auto& stop = r.requests.stop_replica.at(b);
      REQUIRE(stop.topic_states.size() == 1);
      REQUIRE(stop.topic_states[0].partition_states.size() == 2);
      for (const auto& p : stop.topic_states[0].partition_states) {
        CHECK(p.delete_partition);
        CHECK(p.leader_epoch == -2);
      }
      REQUIRE(um(r, b, "t", 0));
      CHECK(um(r, b, "t", 0)->leader == -2);
    }
  }
  SECTION("a replica's broker is down: pending until it returns") {
    REQUIRE(c.psm.on_broker_failure({3}, never_unclean).outcome == Outcome::kOk);
    StepResult r = c.psm.on_topic_deletion({"t"});
    CHECK(r.pending == std::vector<std::string>{"t"});
    CHECK(c.exists(topic_path("t")));
    CHECK(c.exists(delete_topic_path("t")));
    StepResult back = c.psm.on_broker_startup(brokers({3}), never_unclean);
    REQUIRE(back.outcome == Outcome::kOk);
    CHECK(back.deleted == std::vector<std::string>{"t"});
    CHECK_FALSE(c.exists(topic_path("t")));
    CHECK(back.requests.stop_replica.count(3) == 1);
  }
  SECTION("a marker for a topic that does not exist is removed") {
    REQUIRE(c.tool->create(delete_topic_path("ghost"), "", zk::CreateMode::kPersistent) == zk::Code::kOk);
    StepResult r = c.psm.on_topic_deletion({"ghost"});
    CHECK(r.deleted == std::vector<std::string>{"ghost"});
    CHECK_FALSE(c.exists(delete_topic_path("ghost")));
  }
  SECTION("fenced: nothing is deleted") {
    c.bump_epoch();
    CHECK(c.psm.on_topic_deletion({"t"}).outcome == Outcome::kResign);
    CHECK(c.exists(topic_path("t")));
  }
}

}  // namespace
}  // namespace ciuickafka::replication::controller
