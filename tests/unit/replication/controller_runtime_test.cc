// tests/unit/replication/controller_runtime_test.cc: the Controller (its
// event thread, watches, resignation, retries, AlterPartition) on the
// in-memory ZooKeeper, with a fake RequestSender that records what it was
// asked to send. Also ControlledShutdown, ElectLeaders and the auto
// leader rebalance timer. The fake sender and the fixture are in
// controller_runtime_util.h (shared with controller_reassign_test.cc).
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>

#include "tests/unit/replication/controller_runtime_util.h"
#include "protocol/error_code.h"
#include "replication/controller/controller.h"
#include "replication/membership_codec.h"

namespace ciuickafka::replication::controller::test {

TEST_CASE("Controller: a topic written under /brokers/topics gets states and requests", "[controller][runtime]") {
  Runtime f;
  std::vector<LiveBroker> live{f.register_broker(1), f.register_broker(2), f.register_broker(3)};
  auto c = f.make();
  c->activate(f.controller_session(), f.id, live);
  REQUIRE(wait_until([&] { return f.sender.brokers().size() == 3; }));
  // Startup sends the live broker list (UpdateMetadata) to everyone.
  REQUIRE(wait_until([&] { return f.sender.metadata_to(1) && f.sender.metadata_to(3); }));

  f.create_topic("t", {{0, {1, 2}}, {1, {2, 3}}});
  REQUIRE(wait_until([&] { return f.state("t", 0).has_value() && f.state("t", 1).has_value(); }));
  CHECK(f.state("t", 0)->leader == 1);
  CHECK(f.state("t", 0)->isr == std::vector<int32_t>{1, 2});
  CHECK(f.state("t", 1)->leader == 2);
  REQUIRE(wait_until([&] { return f.sender.lai_leader(2, "t", 0) == 1; }));
  CHECK(f.sender.lai_leader(1, "t", 0) == 1);
  CHECK(f.sender.lai_leader(3, "t", 1) == 2);
  CHECK(f.sender.lai_leader(3, "t", 0) == -100);  // not a replica
  CHECK(f.sender.metadata_to(3));
  // A second topic: the watch was re-armed.
  f.create_topic("u", {{0, {3}}});
  REQUIRE(wait_until([&] { return f.state("u", 0).has_value(); }));
  // The state znode is written before the controller's own counts change:
  // wait for those too (a clean-clone CI run saw 1 topic here).
  CHECK(wait_until([&] { return c->stats().topics == 2 && c->stats().partitions == 3; }));
  CHECK(c->stats().offline_partitions == 0);
}

TEST_CASE("Controller: partitions added to a topic's znode get their states", "[controller][runtime]") {
  Runtime f;
  std::vector<LiveBroker> live{f.register_broker(1), f.register_broker(2)};
  f.create_topic("t", {{0, {1, 2}}});
  auto c = f.make();
  c->activate(f.controller_session(), f.id, live);
  REQUIRE(wait_until([&] { return f.state("t", 0).has_value(); }));
  for (int32_t added = 1; added <= 2; ++added) {  // twice: the topic's watch is re-armed
    std::string data;
    zk::Stat st;
    REQUIRE(f.tool->get(topic_path("t"), &data, &st) == zk::Code::kOk);
    auto a = decode_topic_assignment(data);
    REQUIRE(a.ok());
    TopicAssignment grown = a.value();
    grown.partitions[added].replicas = {2, 1};
    REQUIRE(f.tool->set(topic_path("t"), encode_topic_assignment(grown), st.version) == zk::Code::kOk);
    REQUIRE(wait_until([&] { return f.state("t", added).has_value(); }));
    CHECK(f.state("t", added)->leader == 2);
    REQUIRE(wait_until([&] { return f.sender.lai_leader(1, "t", added) == 2; }));
  }
}

TEST_CASE("Controller: a broker leaving gets its partitions re-elected, requests go to the survivors",
          "[controller][runtime]") {
  Runtime f;
  std::vector<LiveBroker> live{f.register_broker(1), f.register_broker(2), f.register_broker(3)};
  f.create_topic("t", {{0, {1, 2, 3}}});
  auto c = f.make();
  c->activate(f.controller_session(), f.id, live);
  REQUIRE(wait_until([&] { return f.state("t", 0).has_value(); }));
  REQUIRE(f.state("t", 0)->leader == 1);
  REQUIRE(wait_until([&] { return f.sender.sent_count() > 0; }));
  const size_t before = f.sender.sent_count();

  f.unregister(1);
  REQUIRE(wait_until([&] { return f.state("t", 0)->leader == 2; }));
  CHECK(f.state("t", 0)->isr == std::vector<int32_t>{2, 3});
  CHECK(f.state("t", 0)->leader_epoch == 1);
  REQUIRE(wait_until([&] { return f.sender.lai_leader(3, "t", 0, before) == 2; }));
  CHECK(f.sender.lai_leader(2, "t", 0, before) == 2);
  CHECK_FALSE(f.sender.anything_to(1, before));
  CHECK_FALSE(f.sender.brokers().contains(1));
}

TEST_CASE("Controller: a bounced broker (new czxid) is failure then startup", "[controller][runtime]") {
  Runtime f;
  std::vector<LiveBroker> live{f.register_broker(1), f.register_broker(2)};
  f.create_topic("t", {{0, {1, 2}}});
  auto c = f.make();
  c->activate(f.controller_session(), f.id, live);
  REQUIRE(wait_until([&] { return f.state("t", 0).has_value(); }));
  const int64_t old_epoch = f.epoch_of(2);
  const size_t before = f.sender.sent_count();

  // Broker 2 restarts: its node goes and comes back in one watch window
  // (a new session, a new czxid).
  f.broker_sessions.erase(2);
  f.register_broker(2);
  const int64_t new_epoch = f.epoch_of(2);
  REQUIRE(new_epoch != old_epoch);
  // Failure: broker 2 leaves the ISR (leader epoch bumped); startup: it
  // hears the partition's state again with its new epoch.
  REQUIRE(wait_until([&] { return f.state("t", 0)->isr == std::vector<int32_t>{1}; }));
  CHECK(f.state("t", 0)->leader == 1);
  // Waited for by its new epoch: the activation's own LeaderAndIsr to broker
  // 2 (leader 1, the old epoch) may be sent after `before` was taken.
  const auto heard_with_new_epoch = [&] {
    for (const auto& r : f.sender.sent(before))
      if (auto it = r.leader_and_isr.find(2); it != r.leader_and_isr.end() && it->second.broker_epoch == new_epoch)
        for (const auto& t : it->second.topic_states)
          for (const auto& ps : t.partition_states)
            if (t.topic_name == "t" && ps.partition_index == 0 && ps.leader == 1) return true;
    return false;
  };
  REQUIRE(wait_until(heard_with_new_epoch));
  CHECK(f.sender.brokers().at(2) == new_epoch);
}

TEST_CASE("Controller: a broker that rewrites its registration (listeners changed live) is spread to every broker",
          "[controller][runtime]") {
  Runtime f;
  std::vector<LiveBroker> live{f.register_broker(1), f.register_broker(2)};
  f.create_topic("t", {{0, {1, 2}}});
  auto c = f.make();
  c->activate(f.controller_session(), f.id, live);
  REQUIRE(wait_until([&] { return f.state("t", 0).has_value(); }));
  const int64_t epoch = f.epoch_of(2);
  const int32_t leader_epoch = f.state("t", 0)->leader_epoch;
  const size_t before = f.sender.sent_count();

  // Broker 2 adds a listener: the same znode (so the same epoch), new data.
  std::vector<BrokerEndPoint> endpoints = live[1].endpoints;
  endpoints.push_back({"EXTRA", "127.0.0.1", 19092, "PLAINTEXT"});
  REQUIRE(f.broker_sessions[2]->set(broker_id_path(2), encode_registration(endpoints, std::nullopt, 2), -1) ==
          zk::Code::kOk);
  REQUIRE(wait_until([&] { return f.sender.heard_port(1, 2, "EXTRA", before) == 19092; }));
  CHECK(f.epoch_of(2) == epoch);
  CHECK(f.sender.metadata_to(2, before));
  // Not a bounce: broker 2 stays in the ISR and nothing is re-elected.
  CHECK(f.state("t", 0)->isr == std::vector<int32_t>{1, 2});
  CHECK(f.state("t", 0)->leader_epoch == leader_epoch);
  CHECK(f.sender.brokers().at(2) == epoch);

  // Watched again: a second change is spread too.
  const size_t second = f.sender.sent_count();
  endpoints.back().port = 19093;
  REQUIRE(f.broker_sessions[2]->set(broker_id_path(2), encode_registration(endpoints, std::nullopt, 3), -1) ==
          zk::Code::kOk);
  REQUIRE(wait_until([&] { return f.sender.heard_port(1, 2, "EXTRA", second) == 19093; }));
}

TEST_CASE("Controller: a registration rewritten before its watch was set is spread as well", "[controller][runtime]") {
  Runtime f;
  std::vector<LiveBroker> live{f.register_broker(1), f.register_broker(2)};
  f.create_topic("t", {{0, {1, 2}}});
  // Rewritten after the view the controller starts from was read.
  std::vector<BrokerEndPoint> endpoints = live[1].endpoints;
  endpoints.push_back({"EXTRA", "127.0.0.1", 19094, "PLAINTEXT"});
  REQUIRE(f.broker_sessions[2]->set(broker_id_path(2), encode_registration(endpoints, std::nullopt, 2), -1) ==
          zk::Code::kOk);
  auto c = f.make();
  c->activate(f.controller_session(), f.id, live);
  REQUIRE(wait_until([&] { return f.sender.heard_port(1, 2, "EXTRA") == 19094; }));
  CHECK(f.state("t", 0)->isr == std::vector<int32_t>{1, 2});
}

TEST_CASE("Controller: a delete_topics marker removes the topic's znodes", "[controller][runtime]") {
  Runtime f;
  std::vector<LiveBroker> live{f.register_broker(1), f.register_broker(2)};
  f.create_topic("t", {{0, {1, 2}}});
  auto c = f.make();
  c->activate(f.controller_session(), f.id, live);
  REQUIRE(wait_until([&] { return f.state("t", 0).has_value(); }));
  REQUIRE(f.tool->create(delete_topic_path("t"), "", zk::CreateMode::kPersistent) == zk::Code::kOk);
  REQUIRE(wait_until([&] { return !f.exists(topic_path("t")); }));
  CHECK_FALSE(f.exists(delete_topic_path("t")));
  CHECK_FALSE(f.exists(topic_config_path("t")));
  // The step writes ZooKeeper first and hands its requests to the channel
  // after: wait for the StopReplica rather than racing the hand-over.
  CHECK(wait_until([&] {
    for (const auto& r : f.sender.sent())
      if (r.stop_replica.contains(1)) return true;
    return false;
  }));
}

TEST_CASE("Controller: delete.topic.enable=false removes the marker and keeps the topic", "[controller][runtime]") {
  Runtime f;
  std::vector<LiveBroker> live{f.register_broker(1)};
  f.create_topic("t", {{0, {1}}});
  ControllerOptions o;
  o.delete_topic_enable = false;
  auto c = f.make(o);
  c->activate(f.controller_session(), f.id, live);
  REQUIRE(wait_until([&] { return f.state("t", 0).has_value(); }));
  REQUIRE(f.tool->create(delete_topic_path("t"), "", zk::CreateMode::kPersistent) == zk::Code::kOk);
  REQUIRE(wait_until([&] { return !f.exists(delete_topic_path("t")); }));
  CHECK(f.exists(topic_path("t")));
  CHECK(f.state("t", 0).has_value());
}

TEST_CASE("Controller: /admin/preferred_replica_election moves leadership back and is deleted",
          "[controller][runtime]") {
  Runtime f;
  std::vector<LiveBroker> live{f.register_broker(1), f.register_broker(2)};
  f.create_topic("t", {{0, {1, 2}}});
  // Broker 2 leads although 1 is preferred and in the ISR.
  REQUIRE(f.tool->create(topic_partitions_path("t"), "", zk::CreateMode::kPersistent) == zk::Code::kOk);
  REQUIRE(f.tool->create(topic_partition_path("t", 0), "", zk::CreateMode::kPersistent) == zk::Code::kOk);
  REQUIRE(f.tool->create(partition_state_path("t", 0), encode_partition_state(ps(2, 3, 1, {2, 1})),
                         zk::CreateMode::kPersistent) == zk::Code::kOk);
  auto c = f.make();
  c->activate(f.controller_session(), f.id, live);
  REQUIRE(wait_until([&] { return f.sender.sent_count() > 0; }));
  REQUIRE(f.tool->create(std::string(kPreferredReplicaElectionPath), encode_partition_list({{"t", 0}}),
                         zk::CreateMode::kPersistent) == zk::Code::kOk);
  REQUIRE(wait_until([&] { return f.state("t", 0)->leader == 1; }));
  CHECK(f.state("t", 0)->leader_epoch == 4);
  REQUIRE(wait_until([&] { return !f.exists(std::string(kPreferredReplicaElectionPath)); }));
}

TEST_CASE("Controller: another controller bumping /controller_epoch makes it resign", "[controller][runtime]") {
  Runtime f;
  std::vector<LiveBroker> live{f.register_broker(1), f.register_broker(2)};
  auto c = f.make();
  auto session = f.controller_session();
  const int64_t session_id = session->session_id();
  c->activate(std::move(session), f.id, live);
  REQUIRE(wait_until([&] { return f.sender.sent_count() > 0; }));
  f.bump_epoch();
  f.create_topic("t", {{0, {1, 2}}});  // its first write fails the epoch check
  REQUIRE(wait_until([&] { return f.resigned.load() == 1; }));
  CHECK_FALSE(c->active());
  CHECK_FALSE(f.state("t", 0).has_value());
  CHECK_FALSE(f.exists(topic_partitions_path("t")));
  // It lets go of its session (closed: its watches go with it), so nothing
  // more is written.
  REQUIRE(wait_until([&] {
    auto ids = f.server.session_ids();
    return std::find(ids.begin(), ids.end(), session_id) == ids.end();
  }));
  f.create_topic("u", {{0, {1}}});
  CHECK_FALSE(f.state("u", 0).has_value());
  CHECK(f.sender.brokers().empty());
  protocol::AlterPartitionResponse got;
  bool answered = false;
  c->alter_partition({}, 2, [&](protocol::AlterPartitionResponse r) {
    got = std::move(r);
    answered = true;
  });
  CHECK(answered);
  CHECK(got.error_code == protocol::to_wire(protocol::ErrorCode::NOT_CONTROLLER));
}

TEST_CASE("Controller: stop during a ZooKeeper retry loop returns promptly", "[controller][runtime]") {
  Runtime f;
  std::vector<LiveBroker> live{f.register_broker(1)};
  ControllerOptions o;
  o.retry_backoff_ms = 10000;  // a retry wait that must be cut short
  auto c = f.make(o);
  auto session = f.controller_session();
  f.server.set_available(false);
  c->activate(session, f.id, live);
  // load() fails with connection loss and waits for its retry.
  REQUIRE(wait_until([&] { return c->retries() > 0; }));
  REQUIRE(c->active());
  const auto t0 = Clock::now();
  c->deactivate();
  CHECK_FALSE(c->active());
  c->stop();
  CHECK(Clock::now() - t0 < std::chrono::seconds(2));
  CHECK(c->retries() == 1);  // no second try after the deactivation
  f.server.set_available(true);
}

TEST_CASE("Controller: AlterPartition shrinks the ISR, stale epochs are refused", "[controller][runtime]") {
  Runtime f;
  std::vector<LiveBroker> live{f.register_broker(1), f.register_broker(2), f.register_broker(3)};
  f.create_topic("t", {{0, {1, 2, 3}}});
  auto c = f.make();
  c->activate(f.controller_session(), f.id, live);
  int32_t version = -1;
  REQUIRE(wait_until([&] { return f.state("t", 0, &version).has_value(); }));
  REQUIRE(version == 0);
  REQUIRE(f.state("t", 0)->isr == std::vector<int32_t>{1, 2, 3});

  auto call = [&](int16_t v, int64_t broker_epoch, int32_t leader_epoch, int32_t partition_epoch,
                  std::vector<int32_t> isr) {
    protocol::AlterPartitionRequest req;
    req.broker_id = 1;
    req.broker_epoch = broker_epoch;
    protocol::AlterPartitionRequest::TopicData t;
    t.topic_name = "t";
    protocol::AlterPartitionRequest::PartitionData p;
    p.partition_index = 0;
    p.leader_epoch = leader_epoch;
    p.partition_epoch = partition_epoch;
    p.new_isr = std::move(isr);
    t.partitions.push_back(p);
    req.topics.push_back(t);
    std::mutex mu;
    std::optional<protocol::AlterPartitionResponse> out;
    c->alter_partition(req, v, [&](protocol::AlterPartitionResponse r) {
      std::lock_guard<std::mutex> lock(mu);
      out = std::move(r);
    });
    REQUIRE(wait_until([&] {
      std::lock_guard<std::mutex> lock(mu);
      return out.has_value();
    }));
    return *out;
  };
  const int64_t e1 = f.epoch_of(1);
  const size_t before = f.sender.sent_count();

  protocol::AlterPartitionResponse r = call(1, e1, 0, 0, {1, 2});
  REQUIRE(r.error_code == 0);
  REQUIRE(r.topics.size() == 1);
  REQUIRE(r.topics[0].partitions.size() == 1);
  const auto& p = r.topics[0].partitions[0];
  CHECK(p.error_code == 0);
  CHECK(p.partition_epoch == 1);
  CHECK(p.leader_id == 1);
  CHECK(p.leader_epoch == 0);
  CHECK(p.isr == std::vector<int32_t>{1, 2});
  CHECK(f.state("t", 0, &version)->isr == std::vector<int32_t>{1, 2});
  CHECK(version == 1);
  CHECK(f.state("t", 0)->leader_epoch == 0);  // not bumped
  // UpdateMetadata of the change to every live broker.
  REQUIRE(wait_until([&] { return f.sender.metadata_to(3, before); }));

  // The same request again: idempotent, answered with the current state.
  r = call(1, e1, 0, 1, {1, 2});
  CHECK(r.topics[0].partitions[0].error_code == 0);
  CHECK(r.topics[0].partitions[0].partition_epoch == 1);
  // A stale partition epoch.
  r = call(1, e1, 0, 0, {1});
  CHECK(r.topics[0].partitions[0].error_code == protocol::to_wire(protocol::ErrorCode::INVALID_UPDATE_VERSION));
  // A stale leader epoch: the controller bumps it on a failover first.
  f.unregister(2);  // leaves the ISR: the controller bumps the leader epoch
  REQUIRE(wait_until([&] { return f.state("t", 0, &version)->leader_epoch == 1; }));
  r = call(1, e1, 0, version, {1});
  CHECK(r.topics[0].partitions[0].error_code == protocol::to_wire(protocol::ErrorCode::FENCED_LEADER_EPOCH));
  // A wrong broker epoch answers the whole request.
  r = call(1, e1 + 1000, 1, version, {1});
  CHECK(r.error_code == protocol::to_wire(protocol::ErrorCode::STALE_BROKER_EPOCH));
  // A partition epoch the znode moved past meanwhile (a write the
  // controller had not seen) is INVALID_UPDATE_VERSION too.
  REQUIRE(f.tool->set(partition_state_path("t", 0), encode_partition_state(*f.state("t", 0)), version) ==
          zk::Code::kOk);
  r = call(1, e1, 1, version, {1, 3});
  CHECK(r.topics[0].partitions[0].error_code == protocol::to_wire(protocol::ErrorCode::INVALID_UPDATE_VERSION));
  // The controller re-read the znode: the leader's retry at the new
  // version is accepted.
  r = call(1, e1, 1, version + 1, {1, 3});
  CHECK(r.topics[0].partitions[0].error_code == 0);
  CHECK(r.topics[0].partitions[0].partition_epoch == version + 2);
  // Deactivated: NOT_CONTROLLER.
  c->deactivate();
  r = call(1, e1, 1, version + 1, {1});
  CHECK(r.error_code == protocol::to_wire(protocol::ErrorCode::NOT_CONTROLLER));
}


namespace {

// Runs an async controller call and waits for its answer.
template <class Resp, class Call>
Resp await_answer(Call call) {
  std::mutex mu;
  std::optional<Resp> out;
  call([&](Resp r) {
    std::lock_guard<std::mutex> lock(mu);
    out = std::move(r);
  });
  REQUIRE(wait_until([&] {
    std::lock_guard<std::mutex> lock(mu);
    return out.has_value();
  }));
  std::lock_guard<std::mutex> lock(mu);
  return *out;
}

int16_t elect_code(const protocol::ElectLeadersResponse& r, const std::string& topic, int32_t p) {
  for (const auto& t : r.replica_election_results)
    if (t.topic == topic)
      for (const auto& pr : t.partition_result)
        if (pr.partition_id == p) return pr.error_code;
  return -999;
}

}  // namespace

TEST_CASE("Controller: ControlledShutdown moves leadership and answers what remains", "[controller][runtime]") {
  Runtime f;
  std::vector<LiveBroker> live{f.register_broker(1), f.register_broker(2), f.register_broker(3)};
  f.create_topic("t", {{0, {1, 2, 3}}, {1, {2, 1, 3}}});
  f.create_topic("pair", {{0, {1, 2}}});
  auto c = f.make();
  c->activate(f.controller_session(), f.id, live);
  REQUIRE(wait_until([&] { return f.state("t", 1).has_value() && f.state("pair", 0).has_value(); }));
  auto shutdown = [&](int32_t broker, int64_t epoch) {
    protocol::ControlledShutdownRequest req;
    req.broker_id = broker;
    req.broker_epoch = epoch;
    return await_answer<protocol::ControlledShutdownResponse>(
        [&](auto done) { c->controlled_shutdown(req, 3, done); });
  };
  CHECK(shutdown(1, f.epoch_of(1) - 1).error_code == protocol::to_wire(protocol::ErrorCode::STALE_BROKER_EPOCH));
  CHECK(shutdown(9, -1).error_code == protocol::to_wire(protocol::ErrorCode::BROKER_NOT_AVAILABLE));
  CHECK(f.state("t", 0)->leader == 1);

  const size_t before = f.sender.sent_count();
  protocol::ControlledShutdownResponse r = shutdown(1, f.epoch_of(1));
  CHECK(r.error_code == 0);
  CHECK(r.remaining_partitions.empty());
  CHECK(f.state("t", 0)->leader == 2);
  CHECK(f.state("t", 0)->isr == std::vector<int32_t>{2, 3});
  CHECK(f.state("t", 1)->isr == std::vector<int32_t>{2, 3});
  CHECK(f.state("pair", 0)->leader == 2);
  REQUIRE(wait_until([&] { return f.sender.lai_leader(1, "t", 0, before) == 2; }));
  CHECK(f.sender.lai_leader(3, "t", 0, before) == 2);

  // Not active: NOT_CONTROLLER at once.
  c->deactivate();
  CHECK(shutdown(1, -1).error_code == protocol::to_wire(protocol::ErrorCode::NOT_CONTROLLER));
}

TEST_CASE("Controller: ElectLeaders preferred and unclean, per-partition answers", "[controller][runtime]") {
  Runtime f;
  std::vector<LiveBroker> live{f.register_broker(1), f.register_broker(2), f.register_broker(3)};
  f.create_topic("t", {{0, {1, 2, 3}}, {1, {2, 3, 1}}});
  // t-0 led by 2 with 1 in the ISR: preferred election moves it to 1.
  REQUIRE(f.tool->create(topic_partitions_path("t"), "", zk::CreateMode::kPersistent) == zk::Code::kOk);
  REQUIRE(f.tool->create(topic_partition_path("t", 0), "", zk::CreateMode::kPersistent) == zk::Code::kOk);
  REQUIRE(f.tool->create(partition_state_path("t", 0), encode_partition_state(ps(2, 3, 1, {2, 3, 1})),
                         zk::CreateMode::kPersistent) == zk::Code::kOk);
  REQUIRE(f.tool->create(topic_partition_path("t", 1), "", zk::CreateMode::kPersistent) == zk::Code::kOk);
  // t-1 led by 3, preferred 2 not in the ISR.
  REQUIRE(f.tool->create(partition_state_path("t", 1), encode_partition_state(ps(3, 3, 1, {3, 1})),
                         zk::CreateMode::kPersistent) == zk::Code::kOk);
  ControllerOptions o;
  o.auto_leader_rebalance_enable = false;
  auto c = f.make(o);
  c->activate(f.controller_session(), f.id, live);
  REQUIRE(wait_until([&] { return f.sender.sent_count() > 0; }));
  auto elect = [&](int8_t type, std::optional<std::vector<protocol::ElectLeadersRequest::TopicPartitions>> tps) {
    protocol::ElectLeadersRequest req;
    req.election_type = type;
    req.topic_partitions = std::move(tps);
    return await_answer<protocol::ElectLeadersResponse>([&](auto done) { c->elect_leaders(req, 2, done); });
  };
  auto tp = [](std::string topic, std::vector<int32_t> ps) {
    protocol::ElectLeadersRequest::TopicPartitions t;
    t.topic = std::move(topic);
    t.partitions = std::move(ps);
    return t;
  };
  using TP = protocol::ElectLeadersRequest::TopicPartitions;
  using protocol::ErrorCode;
  using protocol::to_wire;

  protocol::ElectLeadersResponse r = elect(0, std::vector<TP>{tp("t", {0, 1, 5}), tp("nope", {0})});
  CHECK(r.error_code == 0);
  CHECK(elect_code(r, "t", 0) == 0);
  CHECK(elect_code(r, "t", 1) == to_wire(ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE));
  CHECK(elect_code(r, "t", 5) == to_wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  CHECK(elect_code(r, "nope", 0) == to_wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  CHECK(f.state("t", 0)->leader == 1);
  CHECK(f.state("t", 0)->leader_epoch == 4);

  // Null list = every partition: t-0 is now led by its preferred replica.
  r = elect(0, std::nullopt);
  CHECK(elect_code(r, "t", 0) == to_wire(ErrorCode::ELECTION_NOT_NEEDED));
  CHECK(elect_code(r, "t", 1) == to_wire(ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE));

  // Unclean: leaders are online, nothing to do.
  r = elect(1, std::vector<TP>{tp("t", {0, 1})});
  CHECK(elect_code(r, "t", 0) == to_wire(ErrorCode::ELECTION_NOT_NEEDED));
  CHECK(elect_code(r, "t", 1) == to_wire(ErrorCode::ELECTION_NOT_NEEDED));
  // t-1's ISR members 3 and 1 go: 2 (live, outside the ISR) is elected uncleanly.
  f.unregister(3);
  REQUIRE(wait_until([&] { return f.state("t", 1)->leader == 1; }));
  f.unregister(1);
  REQUIRE(wait_until([&] { return f.state("t", 1)->leader == -1; }));
  r = elect(1, std::vector<TP>{tp("t", {1})});
  CHECK(elect_code(r, "t", 1) == 0);
  CHECK(f.state("t", 1)->leader == 2);
  CHECK(f.state("t", 1)->isr == std::vector<int32_t>{2});
  f.unregister(2);
  REQUIRE(wait_until([&] { return f.state("t", 1)->leader == -1; }));
  r = elect(1, std::vector<TP>{tp("t", {1})});
  CHECK(elect_code(r, "t", 1) == to_wire(ErrorCode::ELIGIBLE_LEADERS_NOT_AVAILABLE));

  // Not active: NOT_CONTROLLER per partition.
  c->deactivate();
  r = elect(0, std::vector<TP>{tp("t", {0})});
  CHECK(elect_code(r, "t", 0) == to_wire(ErrorCode::NOT_CONTROLLER));
}

TEST_CASE("Controller: unclean election turned on live elects the offline partitions at once", "[controller][runtime]") {
  // t-0 on [1, 2]: 2 goes (ISR [1]), then 1 (offline: leader -1, ISR [1]),
  // then 2 comes back, outside the ISR. With unclean election off it stays
  // offline; turning on the broker's default elects 2 (Kafka's
  // enableDefaultUncleanLeaderElection). u-0 the same, turned on by the
  // topic's own config (enableTopicUncleanLeaderElection).
  Runtime f;
  std::vector<LiveBroker> live{f.register_broker(1), f.register_broker(2)};
  f.create_topic("t", {{0, {1, 2}}});
  f.create_topic("u", {{0, {1, 2}}});
  ControllerOptions o;
  o.auto_leader_rebalance_enable = false;
  auto c = f.make(o);
  c->activate(f.controller_session(), f.id, live);
  REQUIRE(wait_until([&] { return f.state("t", 0).has_value() && f.state("u", 0).has_value(); }));
  f.unregister(2);
  REQUIRE(wait_until([&] { return f.state("t", 0)->isr == std::vector<int32_t>{1} && f.state("u", 0)->isr == std::vector<int32_t>{1}; }));
  f.unregister(1);
  REQUIRE(wait_until([&] { return f.state("t", 0)->leader == -1 && f.state("u", 0)->leader == -1; }));
  const size_t before = f.sender.sent_count();
  f.register_broker(2);
  // Broker 2's startup was handled (it was sent the metadata) and left both offline.
  REQUIRE(wait_until([&] { return f.sender.anything_to(2, before); }));
  CHECK(f.state("t", 0)->leader == -1);
  CHECK(f.state("u", 0)->leader == -1);
  CHECK(c->stats().unclean_leader_elections == 0);

  // The topic's own config: u only.
  REQUIRE(zk::ensure_path(*f.tool, topic_config_path("u")) == zk::Code::kOk);
  REQUIRE(f.tool->set(topic_config_path("u"), encode_entity_config({{"unclean.leader.election.enable", "true"}}), -1) ==
          zk::Code::kOk);
  c->elect_offline_partitions();
  REQUIRE(wait_until([&] { return f.state("u", 0)->leader == 2; }));
  CHECK(f.state("u", 0)->isr == std::vector<int32_t>{2});
  CHECK(f.state("t", 0)->leader == -1);  // its config and the default still say no
  CHECK(c->stats().unclean_leader_elections == 1);

  // The broker's default: the rest.
  c->set_unclean_leader_election_default(true);
  REQUIRE(wait_until([&] { return f.state("t", 0)->leader == 2; }));
  CHECK(c->stats().unclean_leader_elections == 2);
  CHECK(wait_until([&] { return c->stats().offline_partitions == 0; }));
}

TEST_CASE("Controller: the auto leader rebalance moves leadership back to preferred replicas",
          "[controller][runtime]") {
  Runtime f;
  std::vector<LiveBroker> live{f.register_broker(1), f.register_broker(2)};
  f.create_topic("t", {{0, {1, 2}}});
  REQUIRE(f.tool->create(topic_partitions_path("t"), "", zk::CreateMode::kPersistent) == zk::Code::kOk);
  REQUIRE(f.tool->create(topic_partition_path("t", 0), "", zk::CreateMode::kPersistent) == zk::Code::kOk);
  REQUIRE(f.tool->create(partition_state_path("t", 0), encode_partition_state(ps(2, 3, 1, {2, 1})),
                         zk::CreateMode::kPersistent) == zk::Code::kOk);
  SECTION("on the timer") {
    ControllerOptions o;
    o.first_rebalance_check_delay_ms = 50;
    o.leader_imbalance_check_interval_ms = 50;
    auto c = f.make(o);
    c->activate(f.controller_session(), f.id, live);
    REQUIRE(wait_until([&] { return f.state("t", 0)->leader == 1; }));
    CHECK(c->rebalance_elections() >= 1);
  }
  SECTION("disabled: nothing moves, an explicit check does") {
    ControllerOptions o;
    o.auto_leader_rebalance_enable = false;
    o.first_rebalance_check_delay_ms = 1;
    auto c = f.make(o);
    c->activate(f.controller_session(), f.id, live);
    REQUIRE(wait_until([&] { return f.sender.sent_count() > 0; }));
    CHECK(f.state("t", 0)->leader == 2);
    CHECK(c->rebalance_elections() == 0);
    c->check_leader_rebalance();
    REQUIRE(wait_until([&] { return f.state("t", 0)->leader == 1; }));
    CHECK(c->rebalance_elections() == 1);
  }
}

}  // namespace ciuickafka::replication::controller::test
