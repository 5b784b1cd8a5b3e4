// tests/unit/handlers/cluster/replica_manager_test.cc: LeaderAndIsr and
// StopReplica through the real codecs and handlers on a ZooKeeper-mode
// broker (FakeZk): roles, epochs, fencing, log creation with the request's
// topic id and ZooKeeper's configs, deletion, listener order, old versions.
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "broker/broker.h"
#include "broker/server/io_pool.h"
#include "tests/unit/handlers/cluster/cluster_fixture.h"

namespace ciuickafka::broker::test {
namespace {

using protocol::ErrorCode;
using protocol::LeaderAndIsrResponse;
using protocol::StopReplicaResponse;
using protocol::to_wire;

int16_t only_error_v5(const LeaderAndIsrResponse& r) {
  REQUIRE(r.topics.size() == 1);
  REQUIRE(r.topics[0].partition_errors.size() == 1);
  return r.topics[0].partition_errors[0].error_code;
}

protocol::StopReplicaRequest stop(const std::string& topic, int32_t partition, bool del, int32_t leader_epoch,
                                  int32_t controller_epoch = 1) {
  protocol::StopReplicaRequest r;
  r.controller_id = 9;
  r.controller_epoch = controller_epoch;
  protocol::StopReplicaRequest::StopReplicaTopicState t;
  t.topic_name = topic;
  protocol::StopReplicaRequest::StopReplicaPartitionState p;
  p.partition_index = partition;
  p.leader_epoch = leader_epoch;
  p.delete_partition = del;
  t.partition_states.push_back(p);
  r.topic_states.push_back(t);
  return r;
}

TEST_CASE("LeaderAndIsr: become leader creates the log with the request's topic id and ZooKeeper's configs") {
  ClusterFixture c;
  RecordingListener rec;
  c.rm().add_role_listener(&rec);
  c.set_topic_config("orders", {{"retention.ms", "12345"}, {"no.such.key", "x"}});
  auto resp = c.f().call<LeaderAndIsrResponse>(leader_and_isr({{"orders", 2, 1, 4, {1}, {1, 2}, uuid(0x42)}}), 7);
  CHECK(resp.error_code == 0);
  REQUIRE(resp.topics.size() == 1);
  CHECK(resp.topics[0].topic_id == uuid(0x42));
  CHECK(only_error_v5(resp) == 0);

  auto topic = c.broker().topics().find("orders");
  REQUIRE(topic);
  CHECK(topic->id == uuid(0x42));
  CHECK(topic->configs == ConfigMap{{"retention.ms", "12345"}});  // the unknown key is left out
  CHECK(c.broker().logs().topic_id({"orders", 2}) == uuid(0x42));
  CHECK(topic->partition(0) == nullptr);  // only what was assigned is hosted
  auto p = topic->partition(2);
  REQUIRE(p);
  CHECK(p->is_leader());
  CHECK(p->leader_epoch() == 4);
  CHECK(p->role_state()->isr == std::vector<int32_t>{1});
  CHECK(p->role_state()->replicas == std::vector<int32_t>{1, 2});
  CHECK(p->role_state()->partition_epoch == 3);
  CHECK(p->hw_follows_leo());  // alone in its ISR
  CHECK(rec.events == std::vector<std::string>{"leader orders-2"});
}

TEST_CASE("LeaderAndIsr: follower, with the leader from LiveLeaders - listeners in request order") {
  ClusterFixture c;
  RecordingListener rec;
  c.rm().add_role_listener(&rec);
  auto req = leader_and_isr({{"t", 0, 1, 1, {1, 2}, {1, 2}}, {"t", 1, 2, 1, {2, 1}, {2, 1}}});
  req.live_leaders.push_back({.broker_id = 2, .host_name = "b2", .port = 9192, .unknown_tagged_fields = {}});
  auto resp = c.f().call<LeaderAndIsrResponse>(req, 7);
  REQUIRE(resp.topics.size() == 1);
  REQUIRE(resp.topics[0].partition_errors.size() == 2);
  CHECK(resp.topics[0].partition_errors[0].error_code == 0);
  CHECK(resp.topics[0].partition_errors[1].error_code == 0);
  CHECK(rec.events == std::vector<std::string>{"leader t-0", "follower t-1"});
  CHECK(rec.last_leader.broker_id == 2);
  CHECK(rec.last_leader.host == "b2");
  CHECK(rec.last_leader.port == 9192);
  auto p0 = c.broker().topics().partition("t", 0);
  auto p1 = c.broker().topics().partition("t", 1);
  REQUIRE(p0);
  REQUIRE(p1);
  CHECK_FALSE(p0->hw_follows_leo());  // ISR [1, 2]: the replicated HW's job
  CHECK(p1->role() == ReplicaRole::kFollower);
  CHECK(p1->role_state()->leader_id == 2);
  CHECK_FALSE(p1->hw_follows_leo());
}

TEST_CASE("LeaderAndIsr: a leader missing from LiveLeaders is found in the metadata cache") {
  ClusterFixture c;
  RecordingListener rec;
  c.rm().add_role_listener(&rec);
  REQUIRE(c.f().call<protocol::UpdateMetadataResponse>(update_metadata({}, {1, 3}), 8).error_code == 0);
  auto resp = c.f().call<LeaderAndIsrResponse>(leader_and_isr({{"f", 0, 3, 2, {3, 1}, {3, 1}}}), 7);
  REQUIRE(only_error_v5(resp) == 0);
  CHECK(rec.last_leader.broker_id == 3);
  CHECK(rec.last_leader.host == "host3");
  CHECK(rec.last_leader.port == 9003);
  // A leader nobody knows: the endpoint stays empty (the fetchers wait for one).
  REQUIRE(only_error_v5(c.f().call<LeaderAndIsrResponse>(leader_and_isr({{"f", 0, 4, 3, {4, 1}, {4, 1}}}), 7)) == 0);
  CHECK(rec.last_leader.broker_id == 4);
  CHECK(rec.last_leader.host.empty());
}

TEST_CASE("LeaderAndIsr: epochs, stale controller, stale broker epoch, not a replica, topic id mismatch") {
  ClusterFixture c;
  RecordingListener rec;
  c.rm().add_role_listener(&rec);
  c.rm().set_broker_epoch_source([] { return int64_t{500}; });
  REQUIRE(only_error_v5(c.f().call<LeaderAndIsrResponse>(leader_and_isr({{"t", 0, 1, 3}}, 2, 500), 7)) == 0);
  // The same leader epoch again, and an older one: STALE_CONTROLLER_EPOCH (Kafka's code for both).
  CHECK(only_error_v5(c.f().call<LeaderAndIsrResponse>(leader_and_isr({{"t", 0, 1, 3}}, 2, 500), 7)) ==
        to_wire(ErrorCode::STALE_CONTROLLER_EPOCH));
  CHECK(only_error_v5(c.f().call<LeaderAndIsrResponse>(leader_and_isr({{"t", 0, 1, 2}}, 2, 500), 7)) ==
        to_wire(ErrorCode::STALE_CONTROLLER_EPOCH));
  // An older controller: the whole request.
  auto old = c.f().call<LeaderAndIsrResponse>(leader_and_isr({{"t", 0, 2, 9, {2}, {1, 2}}}, 1, 500), 7);
  CHECK(old.error_code == to_wire(ErrorCode::STALE_CONTROLLER_EPOCH));
  CHECK(only_error_v5(old) == to_wire(ErrorCode::STALE_CONTROLLER_EPOCH));
  // A broker epoch older than ours (a request meant for an earlier registration).
  auto stale = c.f().call<LeaderAndIsrResponse>(leader_and_isr({{"t", 0, 2, 9, {2}, {1, 2}}}, 2, 499), 7);
  CHECK(stale.error_code == to_wire(ErrorCode::STALE_BROKER_EPOCH));
  // Not among the replicas.
  CHECK(only_error_v5(c.f().call<LeaderAndIsrResponse>(leader_and_isr({{"u", 0, 2, 0, {2}, {2, 3}}}, 2, -1), 7)) ==
        to_wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  CHECK_FALSE(c.broker().topics().find("u"));
  // A topic id other than the log's.
  CHECK(only_error_v5(c.f().call<LeaderAndIsrResponse>(
            leader_and_isr({{"t", 1, 1, 0, {1}, {1}, uuid(0x99)}}, 2, 500), 7)) ==
        to_wire(ErrorCode::INCONSISTENT_TOPIC_ID));
  // A newer epoch is applied: now a follower.
  CHECK(only_error_v5(c.f().call<LeaderAndIsrResponse>(leader_and_isr({{"t", 0, 2, 4, {2, 1}, {1, 2}}}, 3, 501), 7)) ==
        0);
  CHECK(c.broker().topics().partition("t", 0)->role() == ReplicaRole::kFollower);
  CHECK(rec.events == std::vector<std::string>{"leader t-0", "follower t-0"});
}

TEST_CASE("LeaderAndIsr v0 and v1 (ungrouped partitions) decode and answer per-partition errors") {
  ClusterFixture c;
  for (int16_t v : {int16_t{0}, int16_t{1}}) {
    const std::string topic = "legacy" + std::to_string(v);
    auto resp = c.f().call<LeaderAndIsrResponse>(leader_and_isr({{topic, 0}, {topic, 1, 2, 0, {2}, {2}}}, 1, -1, v), v);
    CHECK(resp.error_code == 0);
    REQUIRE(resp.partition_errors.size() == 2);
    CHECK(resp.partition_errors[0].topic_name == topic);
    CHECK(resp.partition_errors[0].error_code == 0);
    CHECK(resp.partition_errors[1].error_code == to_wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
    auto p = c.broker().topics().partition(topic, 0);
    REQUIRE(p);
    CHECK(p->is_leader());
    CHECK_FALSE(c.broker().topics().find(topic)->id.is_zero());  // no id in v0-4: one was made
  }
}

TEST_CASE("StopReplica: stop keeps the log, delete removes it - fenced leader epoch - listeners told") {
  ClusterFixture c;
  RecordingListener rec;
  c.rm().add_role_listener(&rec);
  REQUIRE(only_error_v5(c.f().call<LeaderAndIsrResponse>(leader_and_isr({{"d", 0, 1, 5}}), 7)) == 0);
  REQUIRE(only_error_v5(c.f().call<LeaderAndIsrResponse>(leader_and_isr({{"d", 1, 1, 5}}), 7)) == 0);

  auto fenced = c.f().call<StopReplicaResponse>(stop("d", 0, false, 4), 4);
  REQUIRE(fenced.partition_errors.size() == 1);
  CHECK(fenced.partition_errors[0].error_code == to_wire(ErrorCode::FENCED_LEADER_EPOCH));
  CHECK(c.broker().topics().partition("d", 0)->is_leader());

  auto stopped = c.f().call<StopReplicaResponse>(stop("d", 0, false, 5), 4);
  CHECK(stopped.partition_errors.at(0).error_code == 0);
  auto p0 = c.broker().topics().partition("d", 0);
  REQUIRE(p0);
  CHECK(p0->role() == ReplicaRole::kOffline);
  CHECK(c.broker().logs().get({"d", 0}) != nullptr);

  auto deleted = c.f().call<StopReplicaResponse>(stop("d", 1, true, -2), 4);
  CHECK(deleted.error_code == 0);
  CHECK(deleted.partition_errors.at(0).error_code == 0);
  CHECK(c.broker().topics().partition("d", 1) == nullptr);
  CHECK(c.broker().logs().get({"d", 1}) == nullptr);
  CHECK(c.broker().topics().find("d") != nullptr);  // d-0 is still hosted
  CHECK(rec.events == std::vector<std::string>{"leader d-0", "leader d-1", "stopped d-0", "deleted d-1"});

  // An older controller: the whole request.
  auto stale = c.f().call<StopReplicaResponse>(stop("d", 0, true, -2, 0), 4);
  CHECK(stale.error_code == to_wire(ErrorCode::STALE_CONTROLLER_EPOCH));
  CHECK(c.broker().logs().get({"d", 0}) != nullptr);

  // After deletion the partition may come back at any epoch (Kafka forgets it).
  REQUIRE(only_error_v5(c.f().call<LeaderAndIsrResponse>(leader_and_isr({{"d", 1, 1, 0}}), 7)) == 0);
}

TEST_CASE("LeaderAndIsr and StopReplica run on the I/O pool - the new leader's epoch start is in the file") {
  // Both wait on the disk (logs created and deleted, each new leader
  // epoch's start written with two fsyncs): not on the network thread,
  // which here is the test's own (the fixture dispatches as a connection).
  ClusterFixture c;
  auto& pool = c.broker().service<IoPool>();
  const uint64_t before = pool.posted();
  REQUIRE(only_error_v5(c.f().call<LeaderAndIsrResponse>(leader_and_isr({{"e", 0, 1, 7}}), 7)) == 0);
  CHECK(c.f().last_responder() != std::this_thread::get_id());
  CHECK(pool.posted() == before + 1);
  auto p = c.broker().topics().partition("e", 0);
  REQUIRE(p);
  CHECK(p->leader_epoch() == 7);
  CHECK(p->log().leader_epochs().records(7));  // so its first Produce writes no file
  CHECK(p->log().leader_epochs().entries() == std::vector<storage::EpochEntry>{{7, 0}});

  auto deleted = c.f().call<StopReplicaResponse>(stop("e", 0, true, -2), 4);
  CHECK(deleted.partition_errors.at(0).error_code == 0);
  CHECK(c.f().last_responder() != std::this_thread::get_id());
  CHECK(pool.posted() == before + 2);
  CHECK(c.broker().logs().get({"e", 0}) == nullptr);
}

TEST_CASE("StopReplica v0 (ungrouped, one delete flag) decodes and deletes") {
  ClusterFixture c;
  REQUIRE(only_error_v5(c.f().call<LeaderAndIsrResponse>(leader_and_isr({{"z", 0}}), 7)) == 0);
  c.broker().metrics().topic("z").add_bytes_in(1);  // as a produce would
  REQUIRE(c.broker().metrics_registry().text().find("topic=\"z\"") != std::string::npos);
  protocol::StopReplicaRequest r;
  r.controller_epoch = 1;
  r.delete_partitions = true;
  protocol::StopReplicaRequest::StopReplicaPartitionV0 up;
  up.topic_name = "z";
  up.partition_index = 0;
  r.ungrouped_partitions.push_back(up);
  auto resp = c.f().call<StopReplicaResponse>(r, 0);
  REQUIRE(resp.partition_errors.size() == 1);
  CHECK(resp.partition_errors[0].topic_name == "z");
  CHECK(resp.partition_errors[0].error_code == 0);
  CHECK(c.broker().topics().find("z") == nullptr);
  // The deleted topic's per-topic series left with it.
  CHECK(c.broker().metrics_registry().text().find("topic=\"z\"") == std::string::npos);
}

TEST_CASE("cluster mode: logs found at startup are not served until a LeaderAndIsr names them") {
  ClusterFixture c;
  REQUIRE(only_error_v5(c.f().call<LeaderAndIsrResponse>(leader_and_isr({{"keep", 3, 1, 2}}), 7)) == 0);
  c.f().restart();
  auto p = c.broker().topics().partition("keep", 3);
  REQUIRE(p);
  CHECK(p->role() == ReplicaRole::kOffline);
  CHECK(c.broker().topics().partition("keep", 0) == nullptr);  // nothing created on load
  // A fresh broker takes the controller's epoch again (Kafka starts at -1).
  REQUIRE(only_error_v5(c.f().call<LeaderAndIsrResponse>(leader_and_isr({{"keep", 3, 1, 2}}), 7)) == 0);
  CHECK(c.broker().topics().partition("keep", 3)->is_leader());
}

TEST_CASE("UpdateMetadata: broker epoch fencing from v5, controller epoch shared with LeaderAndIsr") {
  ClusterFixture c;
  c.rm().set_broker_epoch_source([] { return int64_t{500}; });
  auto um = update_metadata({{"t", 0}}, {1}, 3);
  um.broker_epoch = 499;
  CHECK(c.f().call<protocol::UpdateMetadataResponse>(um, 8).error_code == to_wire(ErrorCode::STALE_BROKER_EPOCH));
  CHECK_FALSE(c.rm().metadata_cache().initialized());
  // v4 carries no broker epoch: nothing to fence on.
  CHECK(c.f().call<protocol::UpdateMetadataResponse>(update_metadata({{"t", 0}}, {1}, 3, 4), 4).error_code == 0);
  CHECK(c.rm().metadata_cache().initialized());
  // Controller epoch 3 was seen: a LeaderAndIsr of epoch 2 is stale.
  auto lai = c.f().call<LeaderAndIsrResponse>(leader_and_isr({{"t", 0}}, 2, -1), 7);
  CHECK(lai.error_code == to_wire(ErrorCode::STALE_CONTROLLER_EPOCH));
  CHECK(c.f().call<protocol::UpdateMetadataResponse>(update_metadata({{"t", 0}}, {1}, 2), 8).error_code ==
        to_wire(ErrorCode::STALE_CONTROLLER_EPOCH));
}

TEST_CASE("single-node mode: the control requests are answered STALE_CONTROLLER_EPOCH") {
  BrokerFixture f;
  auto l = f.call<LeaderAndIsrResponse>(leader_and_isr({{"x", 0}}), 7);
  CHECK(l.error_code == to_wire(ErrorCode::STALE_CONTROLLER_EPOCH));
  CHECK(only_error_v5(l) == to_wire(ErrorCode::STALE_CONTROLLER_EPOCH));
  CHECK(f.broker().topics().find("x") == nullptr);
  auto s = f.call<StopReplicaResponse>(stop("x", 0, true, -2), 4);
  CHECK(s.error_code == to_wire(ErrorCode::STALE_CONTROLLER_EPOCH));
  auto u = f.call<protocol::UpdateMetadataResponse>(update_metadata({{"x", 0}}, {1}), 8);
  CHECK(u.error_code == to_wire(ErrorCode::STALE_CONTROLLER_EPOCH));
}

}  // namespace
}  // namespace ciuickafka::broker::test
