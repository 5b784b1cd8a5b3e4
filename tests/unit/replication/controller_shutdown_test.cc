// tests/unit/replication/controller_shutdown_test.cc: the controller steps
// behind ControlledShutdown, ElectLeaders (unclean) and the auto leader
// rebalance rule, on the partition state machine over the in-memory
// ZooKeeper: leadership moves and ISRs shrink, RF 1 partitions are left
// alone, a shutting-down broker is excluded from later elections, unclean
// election only for leaderless partitions, the imbalance percentage.
#include "replication/controller/leader_rebalance.h"
#include "tests/unit/replication/controller_test_util.h"

namespace ciuickafka::replication::controller {
namespace {

using namespace test;

struct Cluster : Fixture {
  PartitionStateMachine psm{*zk, id, brokers({1, 2, 3})};
  void topic(const std::string& name, std::map<int32_t, std::vector<int32_t>> partitions) {
    create_topic(name, std::move(partitions));
    REQUIRE(psm.on_new_topics({name}).outcome == Outcome::kOk);
  }
};

TEST_CASE("controlled shutdown: every partition led moves to another ISR member, every ISR loses the broker") {
  Cluster c;
  REQUIRE(c.psm.load().outcome == Outcome::kOk);
  c.topic("t", {{0, {1, 2, 3}}, {1, {1, 3, 2}}, {2, {2, 1, 3}}, {3, {3, 2, 1}}});
  c.topic("one", {{0, {1}}});
  StepResult r = c.psm.controlled_shutdown(1, 1001);
  REQUIRE(r.outcome == Outcome::kOk);
  REQUIRE(r.error_code == 0);
  CHECK(c.state("t", 0) == ps(2, 1, 2, {2, 3}));
  CHECK(c.state("t", 1) == ps(3, 1, 2, {3, 2}));
  CHECK(c.state("t", 2) == ps(2, 1, 2, {2, 3}));
  CHECK(c.state("t", 3) == ps(3, 1, 2, {3, 2}));
  // RF 1: untouched, and not reported (Kafka counts replicated partitions only).
  CHECK(c.state("one", 0) == ps(1, 0, 2, {1}));
  CHECK(r.remaining.empty());
  CHECK(c.psm.context().shutting_down.contains(1));
  // StopReplica(delete=false) to broker 1 for the two partitions it followed.
  const auto& stop = r.requests.stop_replica.at(1);
  size_t stopped = 0;
  for (const auto& t : stop.topic_states)
    for (const auto& p : t.partition_states) {
      CHECK_FALSE(p.delete_partition);
      CHECK((p.partition_index == 2 || p.partition_index == 3));
      ++stopped;
    }
  CHECK(stopped == 2);
  // The new leaders are told.
  CHECK(lai(r, 2, "t", 0)->leader == 2);
  CHECK(lai(r, 3, "t", 1)->leader == 3);
}

TEST_CASE("controlled shutdown: a shutting-down broker is not elected later and cannot lead again") {
  Cluster c;
  REQUIRE(c.psm.load().outcome == Outcome::kOk);
  c.topic("t", {{0, {2, 1, 3}}});
  REQUIRE(c.psm.controlled_shutdown(1, -1).error_code == 0);
  CHECK(c.state("t", 0) == ps(2, 1, 2, {2, 3}));
  // Leader 2 fails while 1 is still registered (shutting down): 3 leads, never 1.
  REQUIRE(c.psm.on_broker_failure({2}, always_unclean).outcome == Outcome::kOk);
  CHECK(c.state("t", 0)->leader == 3);
  // Neither a preferred election nor an unclean one picks it.
  REQUIRE(c.psm.on_broker_failure({3}, never_unclean).outcome == Outcome::kOk);
  CHECK(c.state("t", 0)->leader == -1);
  StepResult u = c.psm.elect_unclean({{"t", 0}});
  REQUIRE(u.failed.size() == 1);
  CHECK(c.state("t", 0)->leader == -1);
}

TEST_CASE("controlled shutdown: refusals") {
  Cluster c;
  REQUIRE(c.psm.load().outcome == Outcome::kOk);
  c.topic("t", {{0, {1, 2}}});
  SECTION("an older broker epoch: STALE_BROKER_EPOCH, nothing changes") {
    StepResult r = c.psm.controlled_shutdown(1, 1000);
    CHECK(r.error_code == 77);
    CHECK(c.state("t", 0) == ps(1, 0, 2, {1, 2}));
    CHECK_FALSE(c.psm.context().shutting_down.contains(1));
    CHECK(r.requests.empty());
  }
  SECTION("an unregistered broker: BROKER_NOT_AVAILABLE") {
    CHECK(c.psm.controlled_shutdown(9, 5).error_code == 8);
  }
  SECTION("the only other replica is out of the ISR: the partition remains") {
    REQUIRE(c.psm.on_broker_failure({2}, never_unclean).outcome == Outcome::kOk);
    StepResult r = c.psm.controlled_shutdown(1, 1001);
    CHECK(r.error_code == 0);
    CHECK(r.remaining == std::vector<TopicPartitionRef>{{"t", 0}});
    CHECK(c.state("t", 0)->leader == 1);
  }
}

TEST_CASE("elect_unclean: only partitions without an online leader - the first live replica when the ISR is gone") {
  Cluster c;
  REQUIRE(c.psm.load().outcome == Outcome::kOk);
  c.topic("t", {{0, {1, 2}}, {1, {3, 2}}});
  // t-0: 2 leaves the ISR, then 1 dies: leader -1, ISR [1]; 2 is live but out of the ISR.
  REQUIRE(c.psm.on_broker_failure({2}, never_unclean).outcome == Outcome::kOk);
  REQUIRE(c.psm.on_broker_startup(brokers({2}), never_unclean).outcome == Outcome::kOk);
  REQUIRE(c.psm.on_broker_failure({1}, never_unclean).outcome == Outcome::kOk);
  REQUIRE(c.state("t", 0)->leader == -1);
  StepResult r = c.psm.elect_unclean({{"t", 0}, {"t", 1}, {"t", 7}});
  REQUIRE(r.outcome == Outcome::kOk);
  CHECK(c.state("t", 0)->leader == 2);
  CHECK(c.state("t", 0)->isr == std::vector<int32_t>{2});
  CHECK(r.not_needed == std::vector<TopicPartitionRef>{{"t", 1}});
  REQUIRE(r.failed.size() == 1);
  CHECK(r.failed[0].partition == TopicPartitionRef{"t", 7});
  CHECK(lai(r, 2, "t", 0));
}

TEST_CASE("rebalance_candidates: a broker's share of preferred partitions led elsewhere above the percentage") {
  ControllerContext ctx;
  for (int32_t b : {1, 2, 3}) ctx.live[b] = broker(b);
  auto put = [&](const std::string& topic, int32_t p, std::vector<int32_t> replicas, int32_t leader) {
    PartitionInfo info;
    info.assignment.replicas = replicas;
    info.state = ps(leader, 1, 1, replicas);
    ctx.topics[topic].partitions[p] = info;
  };
  // Broker 1 prefers 10 partitions; 1 of them is led by 2 (10%).
  for (int32_t p = 0; p < 10; ++p) put("t", p, {1, 2, 3}, p == 0 ? 2 : 1);
  // Broker 2 prefers 2; both led by 3 (100%).
  put("u", 0, {2, 3, 1}, 3);
  put("u", 1, {2, 1, 3}, 3);
  SECTION("10% is not above 10%: only broker 2's partitions") {
    CHECK(rebalance_candidates(ctx, 10) == std::vector<TopicPartitionRef>{{"u", 0}, {"u", 1}});
  }
  SECTION("above 9%: broker 1's too") {
    auto got = rebalance_candidates(ctx, 9);
    CHECK(got == std::vector<TopicPartitionRef>{{"t", 0}, {"u", 0}, {"u", 1}});
  }
  SECTION("a preferred replica that cannot lead now (shutting down, or out of the ISR) is skipped") {
    ctx.shutting_down.insert(2);
    CHECK(rebalance_candidates(ctx, 10).empty());
    ctx.shutting_down.clear();
    ctx.topics["u"].partitions[0].state->isr = {3, 1};
    CHECK(rebalance_candidates(ctx, 10) == std::vector<TopicPartitionRef>{{"u", 1}});
  }
  SECTION("topics being deleted are left out") {
    ctx.topics["u"].deleting = true;
    CHECK(rebalance_candidates(ctx, 10).empty());
  }
  SECTION("100% never triggers") { CHECK(rebalance_candidates(ctx, 100).empty()); }
}

}  // namespace
}  // namespace ciuickafka::replication::controller
