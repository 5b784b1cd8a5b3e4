// tests/unit/handlers/cluster/coordinator_test.cc: the group coordinator in
// cluster mode: the ownership table, FindCoordinator from the metadata
// cache, NOT_COORDINATOR for groups of partitions led elsewhere, loading on
// leadership (offsets back after a follower/leader round trip), unloading
// (held JoinGroup answered NOT_COORDINATOR), and commits that wait for the
// replicated HW (timeout and lost leadership mapped as Kafka does).
#include <catch2/catch.hpp>

#include <future>
#include <thread>

#include "broker/broker.h"
#include "broker/groups/coordinator.h"
#include "broker/groups/ownership.h"
#include "broker/groups/partition_for.h"
#include "broker/replica/leader_replicas.h"
#include "protocol/generated/delete_groups.h"
#include "protocol/generated/describe_groups.h"
#include "protocol/generated/find_coordinator.h"
#include "protocol/generated/heartbeat.h"
#include "protocol/generated/leave_group.h"
#include "protocol/generated/list_groups.h"
#include "protocol/generated/offset_delete.h"
#include "protocol/generated/sync_group.h"
#include "tests/unit/handlers/cluster/cluster_fixture.h"
#include "tests/unit/handlers/groups/groups_test_util.h"

namespace ciuickafka::broker::test {
namespace {

using groups::OffsetsOwnership;
using groups::OwnState;
using protocol::ErrorCode;
using protocol::to_wire;

constexpr const char* kOffsets = "__consumer_offsets";
constexpr int32_t kParts = 2;

// A group id that maps to offsets partition p (of kParts).
std::string group_on(int32_t p, const std::string& prefix = "g") {
  for (int i = 0;; ++i) {
    std::string id = prefix + std::to_string(i);
    if (groups::partition_for(id, kParts) == p) return id;
  }
}

std::vector<std::string> cluster_overrides(std::vector<std::string> extra = {}) {
  std::vector<std::string> o = {"offsets.topic.num.partitions=2", "offsets.topic.replication.factor=1",
                                "group.initial.rebalance.delay.ms=3000", "ciuic.acks.all.fsync=false"};
  o.insert(o.end(), extra.begin(), extra.end());
  return o;
}

// A cluster-mode broker 1 whose coordinator hears role changes (as
// Broker::start_cluster registers it), with the data topic "t" known.
struct CoordinatorCluster {
  explicit CoordinatorCluster(std::vector<std::string> extra = {}) : c(cluster_overrides(std::move(extra))) {
    c.rm().add_role_listener(&c.broker().service<replica::LeaderReplicas>());
    c.rm().add_role_listener(&coord());
  }
  groups::GroupCoordinator& coord() { return c.broker().service<groups::GroupCoordinator>(); }
  // Sends the metadata and the roles: offsets partition p led by leaders[p].
  void roles(const std::vector<PartitionSpec>& offsets_parts, int32_t controller_epoch = 1) {
    std::vector<PartitionSpec> meta = offsets_parts;
    meta.push_back(PartitionSpec{"t", 0, 1, 0, {1}, {1}, uuid(3)});
    REQUIRE(c.f().call<protocol::UpdateMetadataResponse>(update_metadata(meta, {1, 2}, controller_epoch), 8)
                .error_code == 0);
    REQUIRE(c.f().call<protocol::LeaderAndIsrResponse>(leader_and_isr(offsets_parts, controller_epoch), 7)
                .error_code == 0);
  }
  ClusterFixture c;
};

PartitionSpec offsets_part(int32_t p, int32_t leader, int32_t epoch, std::vector<int32_t> isr = {1, 2},
                           std::vector<int32_t> replicas = {1, 2}) {
  return PartitionSpec{kOffsets, p, leader, epoch, std::move(isr), std::move(replicas), uuid(7)};
}

int16_t commit_error(const protocol::OffsetCommitResponse& r) {
  REQUIRE(r.topics.size() == 1);
  REQUIRE(r.topics[0].partitions.size() == 1);
  return r.topics[0].partitions[0].error_code;
}

TEST_CASE("OffsetsOwnership: loading, loaded, overtaken loads, unload") {
  OffsetsOwnership o;
  CHECK(o.state(3) == OwnState::kNotOwned);
  CHECK(o.error(3) == ErrorCode::NOT_COORDINATOR);
  auto t1 = o.begin_load(3, 5);
  REQUIRE(t1);
  CHECK(o.error(3) == ErrorCode::COORDINATOR_LOAD_IN_PROGRESS);
  CHECK(o.any_loading());
  CHECK_FALSE(o.begin_load(3, 6));  // already loading: nothing new, the epoch kept
  CHECK(o.epoch(3) == 6);
  CHECK(o.finish_load(3, *t1));
  CHECK(o.error(3) == ErrorCode::NONE);
  CHECK_FALSE(o.any_loading());
  CHECK(o.loaded_partitions() == std::vector<int32_t>{3});
  CHECK_FALSE(o.begin_load(3, 7));  // loaded: nothing to do

  // A load overtaken by an unload and a new load is dropped.
  CHECK(o.unload(3));
  CHECK_FALSE(o.unload(3));
  auto t2 = o.begin_load(3, 8);
  REQUIRE(t2);
  CHECK(o.unload(3));
  auto t3 = o.begin_load(3, 9);
  REQUIRE(t3);
  CHECK_FALSE(o.finish_load(3, *t2));
  CHECK(o.state(3) == OwnState::kLoading);
  CHECK(o.finish_load(3, *t3));
  CHECK(o.state(3) == OwnState::kLoaded);
}

TEST_CASE("FindCoordinator in cluster mode names the leader of the group's offsets partition") {
  ClusterFixture c(cluster_overrides());
  protocol::FindCoordinatorRequest req;
  req.key = group_on(1);
  // No topic yet: its creation is queued, the answer is retriable.
  auto none = c.f().call<protocol::FindCoordinatorResponse>(req, 3);
  CHECK(none.error_code == to_wire(ErrorCode::COORDINATOR_NOT_AVAILABLE));

  auto um = update_metadata({offsets_part(0, 1, 0), offsets_part(1, 2, 0)}, {1, 2});
  REQUIRE(c.f().call<protocol::UpdateMetadataResponse>(um, 8).error_code == 0);
  auto on1 = c.f().call<protocol::FindCoordinatorResponse>(req, 3);
  CHECK(on1.error_code == 0);
  CHECK(on1.node_id == 2);
  CHECK(on1.host == "host2");
  CHECK(on1.port == 9002);

  // v4+: one answer per key.
  protocol::FindCoordinatorRequest batch;
  batch.coordinator_keys = {group_on(0), group_on(1)};
  auto both = c.f().call<protocol::FindCoordinatorResponse>(batch, 4);
  REQUIRE(both.coordinators.size() == 2);
  CHECK(both.coordinators[0].node_id == 1);
  CHECK(both.coordinators[0].host == "host1");
  CHECK(both.coordinators[1].node_id == 2);

  // A leaderless partition: COORDINATOR_NOT_AVAILABLE.
  um = update_metadata({offsets_part(1, -1, 1)}, {1, 2});
  REQUIRE(c.f().call<protocol::UpdateMetadataResponse>(um, 8).error_code == 0);
  auto leaderless = c.f().call<protocol::FindCoordinatorResponse>(req, 3);
  CHECK(leaderless.error_code == to_wire(ErrorCode::COORDINATOR_NOT_AVAILABLE));
  CHECK(leaderless.node_id == -1);
}

TEST_CASE("Cluster mode: groups of partitions led elsewhere get NOT_COORDINATOR - loads follow leadership") {
  CoordinatorCluster cc;
  auto& c = cc.c;
  // Broker 1 leads offsets partition 0 alone; broker 2 leads partition 1.
  cc.roles({offsets_part(0, 1, 0, {1}, {1}), offsets_part(1, 2, 0, {2, 1}, {2, 1})});
  REQUIRE(cc.coord().wait_partition_state(0, OwnState::kLoaded, 10000));
  CHECK(cc.coord().partition_state(1) == OwnState::kNotOwned);

  const std::string here = group_on(0);
  const std::string elsewhere = group_on(1);
  auto commit = commit_request(here, "t", 0, 42);
  commit.generation_id_or_member_epoch = -1;
  CHECK(commit_error(c.f().call<protocol::OffsetCommitResponse>(commit, 8)) == 0);
  auto fetched = c.f().call<protocol::OffsetFetchResponse>(fetch_request(here, "t", {0}), 7);
  REQUIRE(fetched.topics.size() == 1);
  CHECK(fetched.topics[0].partitions[0].committed_offset == 42);

  // Every group request about a group of partition 1 is NOT_COORDINATOR.
  const int16_t nc = to_wire(ErrorCode::NOT_COORDINATOR);
  auto other = commit_request(elsewhere, "t", 0, 7);
  other.generation_id_or_member_epoch = -1;
  CHECK(commit_error(c.f().call<protocol::OffsetCommitResponse>(other, 8)) == nc);
  CHECK(c.f().call<protocol::OffsetFetchResponse>(fetch_request(elsewhere, "t", {0}), 7).error_code == nc);
  CHECK(c.f().call<protocol::JoinGroupResponse>(join_request(elsewhere, ""), 3).error_code == nc);
  protocol::HeartbeatRequest hb;
  hb.group_id = elsewhere;
  hb.member_id = "m";
  hb.generation_id = 1;
  CHECK(c.f().call<protocol::HeartbeatResponse>(hb, 3).error_code == nc);
  protocol::DescribeGroupsRequest dg;
  dg.groups = {elsewhere};
  auto described = c.f().call<protocol::DescribeGroupsResponse>(dg, 3);
  REQUIRE(described.groups.size() == 1);
  CHECK(described.groups[0].error_code == nc);
  protocol::SyncGroupRequest sg;
  sg.group_id = elsewhere;
  sg.member_id = "m";
  sg.generation_id = 1;
  CHECK(c.f().call<protocol::SyncGroupResponse>(sg, 3).error_code == nc);
  protocol::LeaveGroupRequest lg;
  lg.group_id = elsewhere;
  lg.member_id = "m";
  CHECK(c.f().call<protocol::LeaveGroupResponse>(lg, 0).error_code == nc);
  protocol::OffsetDeleteRequest od;
  od.group_id = elsewhere;
  od.topics.emplace_back();
  od.topics.back().name = "t";
  od.topics.back().partitions.emplace_back();
  CHECK(c.f().call<protocol::OffsetDeleteResponse>(od, 0).error_code == nc);
  protocol::DeleteGroupsRequest del;
  del.groups_names = {elsewhere};
  auto deleted = c.f().call<protocol::DeleteGroupsResponse>(del, 2);
  REQUIRE(deleted.results.size() == 1);
  CHECK(deleted.results[0].error_code == nc);

  // Losing partition 0 unloads its groups; leading it again reloads them
  // from the log.
  cc.roles({offsets_part(0, 2, 1, {2, 1}, {1, 2}), offsets_part(1, 2, 0, {2, 1}, {2, 1})}, 2);
  CHECK(cc.coord().partition_state(0) == OwnState::kNotOwned);
  CHECK(c.f().call<protocol::OffsetFetchResponse>(fetch_request(here, "t", {0}), 7).error_code == nc);
  CHECK(c.f().call<protocol::ListGroupsResponse>(protocol::ListGroupsRequest{}, 3).groups.empty());

  cc.roles({offsets_part(0, 1, 2, {1}, {1}), offsets_part(1, 2, 0, {2, 1}, {2, 1})}, 3);
  REQUIRE(cc.coord().wait_partition_state(0, OwnState::kLoaded, 10000));
  fetched = c.f().call<protocol::OffsetFetchResponse>(fetch_request(here, "t", {0}), 7);
  CHECK(fetched.error_code == 0);
  REQUIRE(fetched.topics.size() == 1);
  CHECK(fetched.topics[0].partitions[0].committed_offset == 42);
  auto listed = c.f().call<protocol::ListGroupsResponse>(protocol::ListGroupsRequest{}, 3);
  REQUIRE(listed.groups.size() == 1);
  CHECK(listed.groups[0].group_id == here);
}

TEST_CASE("Cluster mode: becoming follower answers a held JoinGroup NOT_COORDINATOR") {
  CoordinatorCluster cc;
  cc.roles({offsets_part(0, 1, 0, {1}, {1}), offsets_part(1, 2, 0, {2}, {2, 1})});
  REQUIRE(cc.coord().wait_partition_state(0, OwnState::kLoaded, 10000));
  // v3 (no MEMBER_ID_REQUIRED): the first member waits out the 3 s initial delay.
  auto held = send<protocol::JoinGroupResponse>(cc.c.f(), join_request(group_on(0), ""), 3);
  CHECK_FALSE(held.ready(100));
  cc.roles({offsets_part(0, 2, 1, {2, 1}, {1, 2}), offsets_part(1, 2, 0, {2}, {2, 1})}, 2);
  REQUIRE(held.ready(2000));  // answered by the unload, well before the delay ends
  CHECK(held.get().error_code == to_wire(ErrorCode::NOT_COORDINATOR));
}

TEST_CASE("Cluster mode: a commit waits for the replicated HW - timeout and lost leadership as Kafka maps them") {
  CoordinatorCluster cc({"offsets.commit.timeout.ms=300"});
  // Broker 1 leads partition 0 with follower 2 in the ISR (which never fetches).
  cc.roles({offsets_part(0, 1, 0, {1, 2}, {1, 2}), offsets_part(1, 2, 0, {2}, {2, 1})});
  REQUIRE(cc.coord().wait_partition_state(0, OwnState::kLoaded, 10000));
  const std::string g = group_on(0);
  auto commit = commit_request(g, "t", 0, 5);
  commit.generation_id_or_member_epoch = -1;
  // Not replicated within offsets.commit.timeout.ms: REQUEST_TIMED_OUT ->
  // COORDINATOR_NOT_AVAILABLE, and the offset stays invisible.
  CHECK(commit_error(cc.c.f().call<protocol::OffsetCommitResponse>(commit, 8)) ==
        to_wire(ErrorCode::COORDINATOR_NOT_AVAILABLE));
  auto fetched = cc.c.f().call<protocol::OffsetFetchResponse>(fetch_request(g, "t", {0}), 7);
  REQUIRE(fetched.topics.size() == 1);
  CHECK(fetched.topics[0].partitions[0].committed_offset == -1);

  // Waiting when leadership goes: NOT_LEADER_OR_FOLLOWER -> NOT_COORDINATOR.
  std::promise<protocol::OffsetCommitResponse> answer;
  auto future = answer.get_future();
  cc.coord().commit_offsets(commit, 8, [&answer](protocol::OffsetCommitResponse r) { answer.set_value(std::move(r)); });
  CHECK(future.wait_for(std::chrono::milliseconds(50)) == std::future_status::timeout);
  cc.roles({offsets_part(0, 2, 1, {2, 1}, {1, 2}), offsets_part(1, 2, 0, {2}, {2, 1})}, 2);
  REQUIRE(future.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  CHECK(commit_error(future.get()) == to_wire(ErrorCode::NOT_COORDINATOR));
}

TEST_CASE("Cluster mode: a waiting commit is answered off the thread that ended its wait") {
  // The wait ends on whichever thread moves the HW or the role: here the
  // LeaderAndIsr handler's (an I/O pool thread, the one that answers it).
  // In a broker that is also an appender holding the group's lock (the
  // next commit of the same group), and the answer locks the group: run
  // there, it deadlocked the broker in a chaos run. So it runs elsewhere.
  CoordinatorCluster cc;
  cc.roles({offsets_part(0, 1, 0, {1, 2}, {1, 2}), offsets_part(1, 2, 0, {2}, {2, 1})});
  REQUIRE(cc.coord().wait_partition_state(0, OwnState::kLoaded, 10000));
  auto commit = commit_request(group_on(0), "t", 0, 5);
  commit.generation_id_or_member_epoch = -1;
  std::promise<std::pair<std::thread::id, protocol::OffsetCommitResponse>> answered;
  auto future = answered.get_future();
  cc.coord().commit_offsets(commit, 8, [&answered](protocol::OffsetCommitResponse r) {
    answered.set_value({std::this_thread::get_id(), std::move(r)});
  });
  CHECK(future.wait_for(std::chrono::milliseconds(50)) == std::future_status::timeout);  // follower 2 never fetches
  cc.roles({offsets_part(0, 2, 1, {2, 1}, {1, 2}), offsets_part(1, 2, 0, {2}, {2, 1})}, 2);
  REQUIRE(future.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  auto [thread, resp] = future.get();
  CHECK(thread != std::this_thread::get_id());
  CHECK(thread != cc.c.f().last_responder());  // the thread that ran LeaderAndIsr
  CHECK(commit_error(resp) == to_wire(ErrorCode::NOT_COORDINATOR));
}

TEST_CASE("Cluster mode: below min.insync.replicas a commit is COORDINATOR_NOT_AVAILABLE") {
  CoordinatorCluster cc({"min.insync.replicas=2"});
  cc.roles({offsets_part(0, 1, 0, {1}, {1, 2}), offsets_part(1, 2, 0, {2}, {2, 1})});
  REQUIRE(cc.coord().wait_partition_state(0, OwnState::kLoaded, 10000));
  auto commit = commit_request(group_on(0), "t", 0, 5);
  commit.generation_id_or_member_epoch = -1;
  CHECK(commit_error(cc.c.f().call<protocol::OffsetCommitResponse>(commit, 8)) ==
        to_wire(ErrorCode::COORDINATOR_NOT_AVAILABLE));
}

}  // namespace
}  // namespace ciuickafka::broker::test
