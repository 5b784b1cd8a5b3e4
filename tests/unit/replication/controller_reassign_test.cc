// tests/unit/replication/controller_reassign_test.cc: partition reassignment
// (KIP-455) in the controller, against the in-memory ZooKeeper: the
// partition state machine's steps (start: RS = ORS + TRS with adding and
// removing replicas in the topic znode, a leader epoch bump and LeaderAndIsr
// to old and new replicas; completion once TRS is in the ISR: the leader
// moved out of RR, RR out of the ISR and deleted, RS = TRS; cancellation;
// Kafka's request errors; a new controller resuming a reassignment from the
// topic znode), and the running Controller driving one from
// /admin/reassign_partitions to completion through AlterPartition.
#include <catch2/catch.hpp>

#include "protocol/error_code.h"
#include "tests/unit/replication/controller_runtime_util.h"

namespace ciuickafka::replication::controller::test {
namespace {

using protocol::ErrorCode;
using protocol::to_wire;
using Item = PartitionStateMachine::ReassignItem;

PartitionReplicas assignment(Fixture& f, const std::string& topic, int32_t p) {
  std::string data;
  REQUIRE(f.tool->get(topic_path(topic), &data) == zk::Code::kOk);
  auto a = decode_topic_assignment(data);
  REQUIRE(a.ok());
  return a.value().partitions.at(p);
}

PartitionReplicas pr(std::vector<int32_t> rs, std::vector<int32_t> adding = {}, std::vector<int32_t> removing = {}) {
  PartitionReplicas a;
  a.replicas = std::move(rs);
  a.adding_replicas = std::move(adding);
  a.removing_replicas = std::move(removing);
  return a;
}

Item item(const std::string& topic, int32_t p, std::optional<std::vector<int32_t>> target) {
  Item i;
  i.partition = {topic, p};
  i.target = std::move(target);
  return i;
}

// The StopReplica entry for topic-p sent to broker b: (delete, leader epoch), or nothing.
std::optional<std::pair<bool, int32_t>> stop(const StepResult& r, int32_t b, const std::string& topic, int32_t p) {
  auto it = r.requests.stop_replica.find(b);
  if (it == r.requests.stop_replica.end()) return std::nullopt;
  for (const auto& t : it->second.topic_states)
    if (t.topic_name == topic)
      for (const auto& s : t.partition_states)
        if (s.partition_index == p) return std::make_pair(s.delete_partition, s.leader_epoch);
  return std::nullopt;
}

// A leader's AlterPartition, as the controller writes it after its checks.
void set_isr(PartitionStateMachine& psm, const std::string& topic, int32_t p, std::vector<int32_t> isr) {
  const PartitionInfo* info = psm.context().partition(topic, p);
  REQUIRE(info);
  PartitionStateMachine::AlterWrite w;
  w.partition = {topic, p};
  w.state = *info->state;
  w.state.isr = std::move(isr);
  w.expected_zk_version = info->zk_version;
  std::vector<PartitionStateMachine::AlterWrite> writes{w};
  REQUIRE(psm.write_alter_partition(writes).outcome == Outcome::kOk);
  REQUIRE(writes[0].new_zk_version >= 0);
}

// t-0 on [1, 2] led by 1 (epoch 0, ISR [1, 2]), brokers 1-3 live.
struct Moving : Fixture {
  PartitionStateMachine psm{*zk, id, brokers({1, 2, 3})};
  Moving() {
    create_topic("t", {{0, {1, 2}}, {1, {2, 1}}});
    REQUIRE(psm.load().outcome == Outcome::kOk);
    REQUIRE(psm.on_new_topics({"t"}).outcome == Outcome::kOk);
    REQUIRE(state("t", 0) == ps(1, 0, 2, {1, 2}));
  }
  StepResult move(std::optional<std::vector<int32_t>> target, Item* out = nullptr) {
    std::vector<Item> items{item("t", 0, std::move(target))};
    StepResult r = psm.reassign(items, /*validate=*/true);
    REQUIRE(r.outcome == Outcome::kOk);
    if (out) *out = items[0];
    return r;
  }
};

}  // namespace

TEST_CASE("reassignment: ReplicaAssignment arithmetic is Kafka's", "[controller][reassign]") {
  CHECK(reassign_to(pr({1, 2}), {2, 3}) == pr({2, 3, 1}, {3}, {1}));
  CHECK(reassign_to(pr({1, 2, 3}), {4, 5, 6}) == pr({4, 5, 6, 1, 2, 3}, {4, 5, 6}, {1, 2, 3}));
  // A new target while one is in flight is relative to the original replicas.
  CHECK(reassign_to(pr({2, 3, 1}, {3}, {1}), {1, 4}) == pr({1, 4, 2}, {4}, {2}));
  // Cancelling (target = ORS) clears adding and removing; ORS keeps RS's
  // order, so [1, 2] comes back as [2, 1] (Kafka's documented limit).
  CHECK(reassign_to(pr({2, 3, 1}, {3}, {1}), origin_replicas(pr({2, 3, 1}, {3}, {1}))) == pr({2, 1}));
  CHECK(target_replicas(pr({2, 3, 1}, {3}, {1})) == std::vector<int32_t>{2, 3});
  CHECK(origin_replicas(pr({2, 3, 1}, {3}, {1})) == std::vector<int32_t>{2, 1});
  CHECK_FALSE(being_reassigned(pr({1, 2})));
}

TEST_CASE("reassignment: start writes RS = ORS + TRS with adding/removing and tells old and new replicas",
          "[controller][reassign]") {
  Moving f;
  Item answer;
  StepResult r = f.move(std::vector<int32_t>{2, 3}, &answer);
  CHECK(answer.error_code == 0);
  CHECK_FALSE(answer.error_message);
  CHECK(assignment(f, "t", 0) == pr({2, 3, 1}, {3}, {1}));
  CHECK(assignment(f, "t", 1) == pr({2, 1}));  // the other partition untouched
  std::string raw;
  REQUIRE(f.tool->get(topic_path("t"), &raw) == zk::Code::kOk);
  CHECK(raw.find(R"("adding_replicas":{"0":[3]})") != std::string::npos);
  CHECK(raw.find(R"("removing_replicas":{"0":[1]})") != std::string::npos);
  // A1: the leader epoch moves on, leader and ISR stay.
  CHECK(f.state("t", 0) == ps(1, 1, 2, {1, 2}));
  for (int32_t b : {1, 2, 3}) {
    const auto* p = lai(r, b, "t", 0);
    REQUIRE(p);
    CHECK(p->leader == 1);
    CHECK(p->leader_epoch == 1);
    CHECK(p->replicas == std::vector<int32_t>{2, 3, 1});
    CHECK(p->adding_replicas == std::vector<int32_t>{3});
    CHECK(p->removing_replicas == std::vector<int32_t>{1});
    CHECK(p->is_new == (b == 3));  // A2: the new replica creates its log
  }
  CHECK(r.requests.stop_replica.empty());
  CHECK(f.psm.reassigning() == std::vector<TopicPartitionRef>{{"t", 0}});

  SECTION("nothing completes while the new replica is out of the ISR") {
    StepResult again = f.psm.maybe_complete_reassignments({{"t", 0}});
    CHECK(again.requests.empty());
    CHECK(assignment(f, "t", 0) == pr({2, 3, 1}, {3}, {1}));
  }

  SECTION("TRS in the ISR: the leader leaves RR, RR leaves the ISR and is deleted, RS = TRS") {
    set_isr(f.psm, "t", 0, {1, 2, 3});
    StepResult done = f.psm.maybe_complete_reassignments({{"t", 0}});
    REQUIRE(done.outcome == Outcome::kOk);
    CHECK(done.failed.empty());
    auto s = f.state("t", 0);
    REQUIRE(s);
    CHECK(s->leader == 2);      // first of TRS that is live and in the ISR
    CHECK(s->isr == std::vector<int32_t>{2, 3});
    CHECK(s->leader_epoch == 3);  // election, then 1 leaves the ISR
    CHECK(assignment(f, "t", 0) == pr({2, 3}));
    CHECK(f.psm.context().partition("t", 0)->assignment == pr({2, 3}));
    CHECK(f.psm.reassigning().empty());
    CHECK(stop(done, 1, "t", 0) == std::make_pair(true, kEpochDuringDelete));
    CHECK_FALSE(stop(done, 2, "t", 0));
    for (int32_t b : {2, 3}) {
      const auto* p = lai(done, b, "t", 0);
      REQUIRE(p);
      CHECK(p->leader == 2);
      CHECK(p->replicas == std::vector<int32_t>{2, 3});
      CHECK(p->adding_replicas.empty());
      CHECK(p->isr == std::vector<int32_t>{2, 3});
    }
    CHECK(lai(done, 1, "t", 0) == nullptr);
    for (int32_t b : {1, 2, 3}) {  // B8: every live broker hears it
      const auto* m = um(done, b, "t", 0);
      REQUIRE(m);
      CHECK(m->replicas == std::vector<int32_t>{2, 3});
      CHECK(m->leader == 2);
    }
  }

  SECTION("the leader kept when it is in TRS; the ISR never loses a target replica") {
    Moving g;
    g.move(std::vector<int32_t>{1, 3});
    CHECK(assignment(g, "t", 0) == pr({1, 3, 2}, {3}, {2}));
    set_isr(g.psm, "t", 0, {1, 2, 3});
    StepResult done = g.psm.maybe_complete_reassignments({{"t", 0}});
    CHECK(g.state("t", 0)->leader == 1);
    CHECK(g.state("t", 0)->isr == std::vector<int32_t>{1, 3});
    CHECK(assignment(g, "t", 0) == pr({1, 3}));
    CHECK(stop(done, 2, "t", 0));
  }

  SECTION("cancelling goes back to ORS and deletes the replica being added") {
    Item cancel;
    StepResult c = f.move(std::nullopt, &cancel);
    CHECK(cancel.error_code == 0);
    CHECK(assignment(f, "t", 0) == pr({2, 1}));
    CHECK(f.state("t", 0)->leader == 1);
    CHECK(stop(c, 3, "t", 0) == std::make_pair(true, kEpochDuringDelete));
    CHECK(f.psm.reassigning().empty());
    // Nothing left to cancel.
    f.move(std::nullopt, &cancel);
    CHECK(cancel.error_code == to_wire(ErrorCode::NO_REASSIGNMENT_IN_PROGRESS));
  }

  SECTION("a new target supplants the one in flight") {
    f.move(std::vector<int32_t>{1, 3});
    CHECK(assignment(f, "t", 0) == pr({1, 3, 2}, {3}, {2}));
    f.move(std::vector<int32_t>{2, 1});  // the original set: nothing moves any more
    CHECK(assignment(f, "t", 0) == pr({2, 1}));
  }

  SECTION("a new controller resumes it from the topic znode and completes it") {
    PartitionStateMachine next(*f.zk, f.id, brokers({1, 2, 3}));
    REQUIRE(next.load().outcome == Outcome::kOk);
    CHECK(next.reassigning() == std::vector<TopicPartitionRef>{{"t", 0}});
    StepResult resumed = next.resume_reassignments({});
    REQUIRE(resumed.outcome == Outcome::kOk);
    const auto* p = lai(resumed, 3, "t", 0);
    REQUIRE(p);
    CHECK(p->adding_replicas == std::vector<int32_t>{3});
    CHECK(f.state("t", 0)->leader_epoch == 2);
    set_isr(next, "t", 0, {1, 2, 3});
    next.maybe_complete_reassignments({{"t", 0}});
    CHECK(assignment(f, "t", 0) == pr({2, 3}));
    CHECK(f.state("t", 0)->isr == std::vector<int32_t>{2, 3});
  }

  SECTION("a controller that fails over after the ISR caught up completes it on resuming") {
    zk::Stat st;
    REQUIRE(f.tool->exists(partition_state_path("t", 0), &st) == zk::Code::kOk);
    REQUIRE(f.tool->set(partition_state_path("t", 0), encode_partition_state(ps(1, 1, 2, {1, 2, 3})), st.version) ==
            zk::Code::kOk);
    PartitionStateMachine next(*f.zk, f.id, brokers({1, 2, 3}));
    REQUIRE(next.load().outcome == Outcome::kOk);
    StepResult resumed = next.resume_reassignments({});
    CHECK(assignment(f, "t", 0) == pr({2, 3}));
    CHECK(f.state("t", 0)->leader == 2);
    CHECK(stop(resumed, 1, "t", 0));
  }

  SECTION("a topic deletion waits for the reassignment, then goes ahead") {
    StepResult del = f.psm.on_topic_deletion({"t"});
    CHECK(del.pending == std::vector<std::string>{"t"});
    CHECK(f.exists(topic_path("t")));
    std::vector<Item> items{item("t", 1, std::vector<int32_t>{1, 3})};
    f.psm.reassign(items, true);  // a queued topic is not reassigned
    CHECK(items[0].error_code == to_wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
    set_isr(f.psm, "t", 0, {1, 2, 3});
    StepResult done = f.psm.maybe_complete_reassignments({{"t", 0}});
    CHECK(done.deleted == std::vector<std::string>{"t"});
    CHECK_FALSE(f.exists(topic_path("t")));
  }
}

TEST_CASE("reassignment: completion needs a live target replica in the ISR to lead", "[controller][reassign]") {
  Moving f;
  f.move(std::vector<int32_t>{2, 3});
  set_isr(f.psm, "t", 0, {1, 2, 3});  // written, but this controller dies before completing
  // A new controller that sees only broker 1 alive: TRS is in the ISR, but
  // no live member of it can lead, so the move waits (Kafka would go on and
  // leave the partition without a leader).
  PartitionStateMachine next(*f.zk, f.id, brokers({1}));
  REQUIRE(next.load().outcome == Outcome::kOk);
  StepResult r = next.resume_reassignments({});
  REQUIRE(r.outcome == Outcome::kOk);
  REQUIRE(r.failed.size() == 1);
  CHECK(r.failed[0].partition == TopicPartitionRef{"t", 0});
  CHECK(r.requests.stop_replica.empty());
  CHECK(assignment(f, "t", 0) == pr({2, 3, 1}, {3}, {1}));
  CHECK(f.state("t", 0)->leader == 1);
  CHECK(next.context().partition("t", 0)->assignment == pr({2, 3, 1}, {3}, {1}));  // memory put back
  // A target broker joins: the move resumes and completes with it as leader.
  StepResult back = next.on_broker_startup(brokers({3}), never_unclean);
  REQUIRE(back.outcome == Outcome::kOk);
  CHECK(assignment(f, "t", 0) == pr({2, 3}));
  CHECK(f.state("t", 0)->leader == 3);
  CHECK(stop(back, 1, "t", 0));
}

TEST_CASE("reassignment: Kafka's errors for bad requests change nothing", "[controller][reassign]") {
  Moving f;
  std::vector<Item> items{item("t", 0, std::vector<int32_t>{}),           item("t", 0, std::vector<int32_t>{2, 2}),
                          item("t", 0, std::vector<int32_t>{-1, 2}),      item("t", 0, std::vector<int32_t>{2, 4}),
                          item("nope", 0, std::vector<int32_t>{1, 2}),    item("t", 7, std::vector<int32_t>{1}),
                          item("t", 1, std::nullopt)};
  StepResult r = f.psm.reassign(items, /*validate=*/true);
  REQUIRE(r.outcome == Outcome::kOk);
  const int16_t invalid = to_wire(ErrorCode::INVALID_REPLICA_ASSIGNMENT);
  for (int i = 0; i < 4; ++i) {
    CHECK(items[i].error_code == invalid);
    CHECK(items[i].error_message);
  }
  CHECK(items[3].error_message->find("not alive") != std::string::npos);
  CHECK(items[4].error_code == to_wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  CHECK(items[5].error_code == to_wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  CHECK(items[6].error_code == to_wire(ErrorCode::NO_REASSIGNMENT_IN_PROGRESS));
  CHECK(r.requests.empty());
  CHECK(assignment(f, "t", 0) == pr({1, 2}));
  CHECK(f.state("t", 0) == ps(1, 0, 2, {1, 2}));
}

TEST_CASE("reassignment: /admin/reassign_partitions entries start, failures leave it, completion deletes it",
          "[controller][reassign]") {
  Moving f;
  REQUIRE(f.tool->create(std::string(kReassignPartitionsPath),
                         encode_reassign_partitions({{"t", 0, {2, 3}}, {"t", 1, {2, 3}}, {"gone", 0, {1}}}),
                         zk::CreateMode::kPersistent) == zk::Code::kOk);
  std::vector<Item> items{item("t", 0, std::vector<int32_t>{2, 3}), item("t", 1, std::vector<int32_t>{2, 3}),
                          item("gone", 0, std::vector<int32_t>{1})};
  StepResult r = f.psm.reassign(items, /*validate=*/false);
  REQUIRE(r.outcome == Outcome::kOk);
  CHECK(items[2].error_code == to_wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  std::string data;
  REQUIRE(f.tool->get(std::string(kReassignPartitionsPath), &data) == zk::Code::kOk);
  auto left = decode_reassign_partitions(data);
  REQUIRE(left.ok());
  CHECK(left.value() == std::vector<PartitionReassignment>{{"t", 0, {2, 3}}, {"t", 1, {2, 3}}});

  set_isr(f.psm, "t", 0, {1, 2, 3});
  f.psm.maybe_complete_reassignments({{"t", 0}});
  REQUIRE(f.tool->get(std::string(kReassignPartitionsPath), &data) == zk::Code::kOk);
  CHECK(decode_reassign_partitions(data).value() == std::vector<PartitionReassignment>{{"t", 1, {2, 3}}});

  SECTION("the last one done deletes the znode") {
    set_isr(f.psm, "t", 1, {2, 1, 3});
    f.psm.maybe_complete_reassignments({{"t", 1}});
    CHECK(assignment(f, "t", 1) == pr({2, 3}));
    CHECK_FALSE(f.exists(std::string(kReassignPartitionsPath)));
  }
  SECTION("an API reassignment of the same partition takes it out of the znode") {
    std::vector<Item> api{item("t", 1, std::vector<int32_t>{1, 3})};
    f.psm.reassign(api, /*validate=*/true);
    CHECK(api[0].error_code == 0);
    CHECK_FALSE(f.exists(std::string(kReassignPartitionsPath)));
  }
}

TEST_CASE("Controller: /admin/reassign_partitions runs to completion through AlterPartition, List and Alter answer",
          "[controller][runtime][reassign]") {
  Runtime f;
  std::vector<LiveBroker> live{f.register_broker(1), f.register_broker(2), f.register_broker(3)};
  f.create_topic("t", {{0, {1, 2}}});
  auto c = f.make();
  c->activate(f.controller_session(), f.id, live);
  REQUIRE(wait_until([&] { return f.state("t", 0).has_value(); }));

  auto list = [&]() {
    std::mutex mu;
    std::optional<protocol::ListPartitionReassignmentsResponse> out;
    c->list_partition_reassignments({}, [&](protocol::ListPartitionReassignmentsResponse r) {
      std::lock_guard<std::mutex> lock(mu);
      out = std::move(r);
    });
    REQUIRE(wait_until([&] {
      std::lock_guard<std::mutex> lock(mu);
      return out.has_value();
    }));
    return *out;
  };
  CHECK(list().topics.empty());

  // Created after activation: the exists watch starts it.
  REQUIRE(f.tool->create(std::string(kReassignPartitionsPath), encode_reassign_partitions({{"t", 0, {2, 3}}}),
                         zk::CreateMode::kPersistent) == zk::Code::kOk);
  REQUIRE(wait_until([&] { return assignment(f, "t", 0) == pr({2, 3, 1}, {3}, {1}); }));
  REQUIRE(wait_until([&] { return f.sender.lai_leader(3, "t", 0) == 1; }));
  auto l = list();
  REQUIRE(l.topics.size() == 1);
  REQUIRE(l.topics[0].partitions.size() == 1);
  CHECK(l.topics[0].partitions[0].replicas == std::vector<int32_t>{2, 3, 1});
  CHECK(l.topics[0].partitions[0].adding_replicas == std::vector<int32_t>{3});
  CHECK(l.topics[0].partitions[0].removing_replicas == std::vector<int32_t>{1});

  // The leader's AlterPartition adds 3 to the ISR: the reassignment completes.
  int32_t version = -1;
  auto s = f.state("t", 0, &version);
  protocol::AlterPartitionRequest req;
  req.broker_id = 1;
  req.broker_epoch = f.epoch_of(1);
  protocol::AlterPartitionRequest::TopicData td;
  td.topic_name = "t";
  protocol::AlterPartitionRequest::PartitionData pd;
  pd.partition_index = 0;
  pd.leader_epoch = s->leader_epoch;
  pd.partition_epoch = version;
  pd.new_isr = {1, 2, 3};
  td.partitions.push_back(pd);
  req.topics.push_back(td);
  std::atomic<int16_t> alter_error{-100};
  c->alter_partition(req, 1, [&](protocol::AlterPartitionResponse r) {
    alter_error = r.topics.empty() ? r.error_code : r.topics[0].partitions[0].error_code;
  });
  REQUIRE(wait_until([&] { return assignment(f, "t", 0) == pr({2, 3}); }));
  CHECK(alter_error == 0);
  CHECK(f.state("t", 0)->leader == 2);
  CHECK(f.state("t", 0)->isr == std::vector<int32_t>{2, 3});
  REQUIRE(wait_until([&] { return !f.exists(std::string(kReassignPartitionsPath)); }));
  CHECK(list().topics.empty());

  // The watch is armed again: a second znode is picked up too.
  REQUIRE(f.tool->create(std::string(kReassignPartitionsPath), encode_reassign_partitions({{"t", 0, {3, 1}}}),
                         zk::CreateMode::kPersistent) == zk::Code::kOk);
  REQUIRE(wait_until([&] { return assignment(f, "t", 0) == pr({3, 1, 2}, {1}, {2}); }));

  // AlterPartitionReassignments cancels it; a broker that is not alive is refused.
  protocol::AlterPartitionReassignmentsRequest alter;
  alter.topics.resize(1);
  alter.topics[0].name = "t";
  alter.topics[0].partitions.resize(2);
  alter.topics[0].partitions[0].partition_index = 0;  // replicas null: cancel
  alter.topics[0].partitions[1].partition_index = 5;
  alter.topics[0].partitions[1].replicas = std::vector<int32_t>{9};
  std::mutex mu;
  std::optional<protocol::AlterPartitionReassignmentsResponse> got;
  c->alter_partition_reassignments(alter, [&](protocol::AlterPartitionReassignmentsResponse r) {
    std::lock_guard<std::mutex> lock(mu);
    got = std::move(r);
  });
  REQUIRE(wait_until([&] {
    std::lock_guard<std::mutex> lock(mu);
    return got.has_value();
  }));
  CHECK(got->error_code == 0);
  REQUIRE(got->responses.size() == 1);
  REQUIRE(got->responses[0].partitions.size() == 2);
  CHECK(got->responses[0].partitions[0].error_code == 0);
  CHECK(got->responses[0].partitions[1].error_code == to_wire(ErrorCode::INVALID_REPLICA_ASSIGNMENT));
  // Back to ORS = RS - AR, in RS's order (Kafka cannot restore the original order either).
  CHECK(assignment(f, "t", 0) == pr({3, 2}));
  CHECK_FALSE(f.exists(std::string(kReassignPartitionsPath)));  // the API request took its entry out

  c->deactivate();
  std::optional<protocol::ListPartitionReassignmentsResponse> nc;
  c->list_partition_reassignments({}, [&](protocol::ListPartitionReassignmentsResponse r) { nc = std::move(r); });
  REQUIRE(nc);
  CHECK(nc->error_code == to_wire(ErrorCode::NOT_CONTROLLER));
}

}  // namespace ciuickafka::replication::controller::test
