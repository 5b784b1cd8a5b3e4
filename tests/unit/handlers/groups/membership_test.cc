// tests/unit/handlers/groups/membership_test.cc: the classic group protocol
// driven by direct calls: MEMBER_ID_REQUIRED, one- and two-member
// rebalances with held JoinGroup/SyncGroup answers, leave, session expiry,
// static membership (a restart in place; quiet static members expire and
// the group can be deleted), generation fencing and the bad-input cases of
// issue 5.
#include <catch2/catch.hpp>

#include <future>
#include <thread>

#include "protocol/error_code.h"
#include "protocol/generated/delete_groups.h"
#include "protocol/generated/describe_groups.h"
#include "protocol/generated/heartbeat.h"
#include "protocol/generated/leave_group.h"
#include "tests/unit/handlers/groups/groups_test_util.h"

using namespace ciuickafka;
using namespace ciuickafka::broker;
using namespace ciuickafka::broker::test;
using protocol::ErrorCode;
using protocol::to_wire;
using JoinResp = protocol::JoinGroupResponse;
using SyncResp = protocol::SyncGroupResponse;

// A namespace of this file's own (tests/CMakeLists.txt: the tests are unity
// builds), so that its helpers do not clash with a sibling file's.
namespace CK_UNITY_ID {

namespace {

std::vector<std::string> overrides() {
  return {"offsets.topic.num.partitions=3", "group.initial.rebalance.delay.ms=0", "group.min.session.timeout.ms=100"};
}

// Joins as a new dynamic member (v5: MEMBER_ID_REQUIRED first); returns the held answer.
Pending<JoinResp> start_join(BrokerFixture& f, const std::string& group, int32_t session_ms = 10000,
                             std::string* member_id = nullptr) {
  auto first = f.call<JoinResp>(join_request(group, "", session_ms), 5);
  REQUIRE(first.error_code == to_wire(ErrorCode::MEMBER_ID_REQUIRED));
  REQUIRE(!first.member_id.empty());
  if (member_id) *member_id = first.member_id;
  return send<JoinResp>(f, join_request(group, first.member_id, session_ms), 5);
}

SyncResp sync(BrokerFixture& f, const std::string& group, int32_t gen, const std::string& member,
              std::vector<std::pair<std::string, std::string>> assignments = {}) {
  protocol::SyncGroupRequest s;
  s.group_id = group;
  s.generation_id = gen;
  s.member_id = member;
  for (auto& [m, a] : assignments) {
    protocol::SyncGroupRequest::SyncGroupRequestAssignment x;
    x.member_id = m;
    x.assignment.assign(a.begin(), a.end());
    s.assignments.push_back(x);
  }
  return f.call<SyncResp>(s, 5);
}

int16_t heartbeat(BrokerFixture& f, const std::string& group, int32_t gen, const std::string& member,
                  std::optional<std::string> instance = std::nullopt) {
  protocol::HeartbeatRequest h;
  h.group_id = group;
  h.generation_id = gen;
  h.member_id = member;
  h.group_instance_id = instance;
  return f.call<protocol::HeartbeatResponse>(h, 4).error_code;
}

std::string text(const protocol::Bytes& b) { return {b.begin(), b.end()}; }

protocol::DescribeGroupsResponse::DescribedGroup describe(BrokerFixture& f, const std::string& group) {
  protocol::DescribeGroupsRequest d;
  d.groups = {group};
  auto r = f.call<protocol::DescribeGroupsResponse>(d, 5);
  REQUIRE(r.groups.size() == 1);
  return r.groups[0];
}

}  // namespace

TEST_CASE("one member: join, sync, heartbeat, commit with its generation", "[groups]") {
  BrokerFixture f(overrides());
  REQUIRE(f.broker().topics().create("t", 2, 1, {}, false, Broker::now_ms()).error.ok());
  coordinator(f);
  std::string id;
  auto joined = start_join(f, "g", 10000, &id).get();
  REQUIRE(joined.error_code == 0);
  CHECK(joined.member_id == id);
  CHECK(joined.generation_id == 1);
  CHECK(joined.leader == id);
  CHECK(joined.protocol_name == "range");
  REQUIRE(joined.members.size() == 1);
  CHECK(text(joined.members[0].metadata) == "meta");

  auto s = sync(f, "g", 1, id, {{id, "all-of-it"}});
  CHECK(s.error_code == 0);
  CHECK(text(s.assignment) == "all-of-it");
  CHECK(heartbeat(f, "g", 1, id) == 0);
  CHECK(heartbeat(f, "g", 0, id) == to_wire(ErrorCode::ILLEGAL_GENERATION));
  CHECK(heartbeat(f, "g", 1, "stranger") == to_wire(ErrorCode::UNKNOWN_MEMBER_ID));
  CHECK(describe(f, "g").group_state == "Stable");

  auto c = commit_request("g", "t", 0, 9);
  c.generation_id_or_member_epoch = 1;
  c.member_id = id;
  CHECK(f.call<protocol::OffsetCommitResponse>(c, 8).topics[0].partitions[0].error_code == 0);
  c.generation_id_or_member_epoch = 2;
  CHECK(f.call<protocol::OffsetCommitResponse>(c, 8).topics[0].partitions[0].error_code ==
        to_wire(ErrorCode::ILLEGAL_GENERATION));
  // A simple commit (no generation) is refused while the group has members.
  auto simple = commit_request("g", "t", 0, 10);
  CHECK(f.call<protocol::OffsetCommitResponse>(simple, 8).topics[0].partitions[0].error_code ==
        to_wire(ErrorCode::UNKNOWN_MEMBER_ID));

  // The stable generation is persisted: after a restart the group is back.
  f.restart();
  coordinator(f);
  auto d = describe(f, "g");
  CHECK(d.group_state == "Stable");
  REQUIRE(d.members.size() == 1);
  CHECK(d.members[0].member_id == id);
  CHECK(text(d.members[0].member_assignment) == "all-of-it");
  CHECK(heartbeat(f, "g", 1, id) == 0);
}

TEST_CASE("two members: the second join rebalances - the leader assigns - leave rebalances", "[groups]") {
  BrokerFixture f(overrides());
  coordinator(f);
  std::string a;
  auto ja = start_join(f, "g2", 10000, &a).get();
  REQUIRE(ja.error_code == 0);
  REQUIRE(sync(f, "g2", 1, a, {{a, "A1"}}).error_code == 0);

  std::string b;
  auto pending_b = start_join(f, "g2", 10000, &b);
  CHECK_FALSE(pending_b.ready(100));  // held until A rejoins
  CHECK(heartbeat(f, "g2", 1, a) == to_wire(ErrorCode::REBALANCE_IN_PROGRESS));
  CHECK(describe(f, "g2").group_state == "PreparingRebalance");
  auto pending_a = send<JoinResp>(f, join_request("g2", a), 5);
  auto ra = pending_a.get();
  auto rb = pending_b.get();
  REQUIRE(ra.error_code == 0);
  REQUIRE(rb.error_code == 0);
  CHECK(ra.generation_id == 2);
  CHECK(rb.generation_id == 2);
  CHECK(ra.leader == a);
  CHECK(rb.leader == a);
  CHECK(ra.members.size() == 2);
  CHECK(rb.members.empty());

  // B's SyncGroup waits for the leader's.
  protocol::SyncGroupRequest sb;
  sb.group_id = "g2";
  sb.generation_id = 2;
  sb.member_id = b;
  auto held_sync = send<SyncResp>(f, sb, 5);
  CHECK_FALSE(held_sync.ready(100));
  auto sa = sync(f, "g2", 2, a, {{a, "A2"}, {b, "B2"}});
  CHECK(text(sa.assignment) == "A2");
  auto sbr = held_sync.get();
  CHECK(sbr.error_code == 0);
  CHECK(text(sbr.assignment) == "B2");
  CHECK(describe(f, "g2").group_state == "Stable");

  // B leaves (v3 batch form): A is told to rejoin and is alone in generation 3.
  protocol::LeaveGroupRequest leave;
  leave.group_id = "g2";
  protocol::LeaveGroupRequest::MemberIdentity who;
  who.member_id = b;
  leave.members = {who};
  auto lr = f.call<protocol::LeaveGroupResponse>(leave, 4);
  CHECK(lr.error_code == 0);
  REQUIRE(lr.members.size() == 1);
  CHECK(lr.members[0].error_code == 0);
  CHECK(heartbeat(f, "g2", 2, a) == to_wire(ErrorCode::REBALANCE_IN_PROGRESS));
  auto again = send<JoinResp>(f, join_request("g2", a), 5).get();
  CHECK(again.generation_id == 3);
  CHECK(again.members.size() == 1);
  // An unknown member leaving (v1 form) gets UNKNOWN_MEMBER_ID.
  protocol::LeaveGroupRequest old;
  old.group_id = "g2";
  old.member_id = b;
  CHECK(f.call<protocol::LeaveGroupResponse>(old, 1).error_code == to_wire(ErrorCode::UNKNOWN_MEMBER_ID));
}

TEST_CASE("a member that stops heartbeating is evicted", "[groups]") {
  BrokerFixture f(overrides());
  groups::ManualGroupClock clock;  // sessions run out when the test says so
  auto& c = coordinator(f);
  std::string a, b;
  auto pa = start_join(f, "g3", 400, &a);
  REQUIRE(pa.get().error_code == 0);
  REQUIRE(sync(f, "g3", 1, a, {{a, "x"}}).error_code == 0);
  auto pb = start_join(f, "g3", 400, &b);
  auto ra = send<JoinResp>(f, join_request("g3", a, 400), 5).get();
  REQUIRE(pb.get().error_code == 0);
  REQUIRE(ra.generation_id == 2);
  REQUIRE(sync(f, "g3", 2, a, {{a, "x"}, {b, "y"}}).error_code == 0);
  REQUIRE(sync(f, "g3", 2, b).error_code == 0);
  // Only A heartbeats; B's session (400 ms) runs out. Just before it does,
  // nothing happens.
  clock.advance(300);
  REQUIRE(heartbeat(f, "g3", 2, a) == 0);
  clock.advance(99);
  c.tick_now();
  REQUIRE(heartbeat(f, "g3", 2, a) == 0);
  CHECK(describe(f, "g3").members.size() == 2);
  clock.advance(2);
  c.tick_now();
  CHECK(heartbeat(f, "g3", 2, a) == to_wire(ErrorCode::REBALANCE_IN_PROGRESS));
  auto r = send<JoinResp>(f, join_request("g3", a, 400), 5).get();
  CHECK(r.generation_id == 3);
  REQUIRE(r.members.size() == 1);
  CHECK(r.members[0].member_id == a);
  CHECK(heartbeat(f, "g3", 2, b) == to_wire(ErrorCode::UNKNOWN_MEMBER_ID));
  // When the last member also goes quiet the group empties.
  clock.advance(401);
  c.tick_now();
  CHECK(describe(f, "g3").group_state == "Empty");
}

TEST_CASE("the coordinator's timers and writes go on while the maintenance pool is blocked", "[groups]") {
  auto o = overrides();
  o.push_back("background.threads=1");
  BrokerFixture f(o);
  groups::ManualGroupClock clock;
  auto& c = coordinator(f);
  // The only maintenance thread (the log tick, checkpoints, producer
  // snapshots: a slow fsync there) is held for the whole test.
  std::promise<void> release, blocked;
  std::shared_future<void> released = release.get_future().share();
  asio::post(f.broker().maintenance(), [&blocked, released] {
    blocked.set_value();
    released.wait();
  });
  blocked.get_future().wait();
  struct Release {
    std::promise<void>& p;
    ~Release() { p.set_value(); }
  } on_exit{release};
  std::string a;
  auto pa = start_join(f, "gm", 400, &a);
  REQUIRE(pa.get().error_code == 0);
  REQUIRE(sync(f, "gm", 1, a, {{a, "x"}}).error_code == 0);  // the group's record is written
  REQUIRE(heartbeat(f, "gm", 1, a) == 0);
  clock.advance(401);
  c.tick_now();  // the session expiry runs on the coordinators' own thread
  CHECK(describe(f, "gm").group_state == "Empty");
}

TEST_CASE("static membership: a restarted instance takes its place without a rebalance", "[groups]") {
  BrokerFixture f(overrides());
  coordinator(f);
  auto req = join_request("gs", "");
  req.group_instance_id = "worker-0";
  auto first = send<JoinResp>(f, req, 5).get();  // no MEMBER_ID_REQUIRED for static members
  REQUIRE(first.error_code == 0);
  const std::string old_id = first.member_id;
  CHECK(old_id.rfind("worker-0-", 0) == 0);
  REQUIRE(sync(f, "gs", 1, old_id, {{old_id, "mine"}}).error_code == 0);

  auto second = send<JoinResp>(f, req, 7).get();
  REQUIRE(second.error_code == 0);
  CHECK(second.member_id != old_id);
  CHECK(second.generation_id == 1);  // no rebalance
  CHECK(describe(f, "gs").group_state == "Stable");
  auto s = sync(f, "gs", 1, second.member_id);
  CHECK(text(s.assignment) == "mine");
  CHECK(heartbeat(f, "gs", 1, old_id, std::string("worker-0")) == to_wire(ErrorCode::FENCED_INSTANCE_ID));
  CHECK(heartbeat(f, "gs", 1, second.member_id, std::string("worker-0")) == 0);
}

TEST_CASE("static members that go quiet expire after their session - the group can then be deleted", "[groups]") {
  // librdkafka and the Java client close a static member without LeaveGroup:
  // Kafka's heartbeat expiry removes it like any other member.
  BrokerFixture f(overrides());
  groups::ManualGroupClock clock;
  REQUIRE(f.broker().topics().create("t", 2, 1, {}, false, Broker::now_ms()).error.ok());
  auto& coord = coordinator(f);
  constexpr int32_t kSession = 500;
  auto ja = join_request("gq", "", kSession);
  ja.group_instance_id = "worker-a";
  auto ra = send<JoinResp>(f, ja, 5).get();
  REQUIRE(ra.error_code == 0);
  REQUIRE(sync(f, "gq", 1, ra.member_id, {{ra.member_id, "A"}}).error_code == 0);
  auto jb = join_request("gq", "", kSession);
  jb.group_instance_id = "worker-b";
  auto pb = send<JoinResp>(f, jb, 5);
  CHECK(heartbeat(f, "gq", 1, ra.member_id, std::string("worker-a")) == to_wire(ErrorCode::REBALANCE_IN_PROGRESS));
  ja.member_id = ra.member_id;
  auto ra2 = send<JoinResp>(f, ja, 5).get();
  auto rb = pb.get();
  REQUIRE(ra2.generation_id == 2);
  REQUIRE(rb.generation_id == 2);
  protocol::SyncGroupRequest sb;
  sb.group_id = "gq";
  sb.generation_id = 2;
  sb.member_id = rb.member_id;
  sb.group_instance_id = "worker-b";
  auto held = send<SyncResp>(f, sb, 5);
  REQUIRE(sync(f, "gq", 2, ra.member_id, {{ra.member_id, "A"}, {rb.member_id, "B"}}).error_code == 0);
  REQUIRE(held.get().error_code == 0);
  auto c = commit_request("gq", "t", 0, 4);
  c.generation_id_or_member_epoch = 2;
  c.member_id = rb.member_id;
  c.group_instance_id = "worker-b";
  REQUIRE(f.call<protocol::OffsetCommitResponse>(c, 8).topics[0].partitions[0].error_code == 0);

  // Both close without LeaveGroup. Once their sessions are over the group
  // is Empty and DeleteGroups removes it.
  clock.advance(kSession - 1);
  coord.tick_now();
  CHECK(describe(f, "gq").group_state == "Stable");
  clock.advance(2);
  coord.tick_now();
  CHECK(describe(f, "gq").group_state == "Empty");
  protocol::DeleteGroupsRequest del;
  del.groups_names = {"gq"};
  CHECK(f.call<protocol::DeleteGroupsResponse>(del, 2).results[0].error_code == 0);
}

TEST_CASE("bad input gets Kafka's error codes and leaves the group consistent", "[groups]") {
  BrokerFixture f(overrides());
  coordinator(f);
  CHECK(f.call<JoinResp>(join_request("", ""), 5).error_code == to_wire(ErrorCode::INVALID_GROUP_ID));
  CHECK(f.call<JoinResp>(join_request("g", "", 50), 5).error_code == to_wire(ErrorCode::INVALID_SESSION_TIMEOUT));
  CHECK(f.call<JoinResp>(join_request("g", "", 1800001), 5).error_code ==
        to_wire(ErrorCode::INVALID_SESSION_TIMEOUT));
  CHECK(f.call<JoinResp>(join_request("nogroup", "made-up"), 5).error_code == to_wire(ErrorCode::UNKNOWN_MEMBER_ID));
  // Kafka sets no length limit on classic group ids: 300 characters work.
  const std::string long_id(300, 'g');
  auto lj = start_join(f, long_id).get();
  CHECK(lj.error_code == 0);
  CHECK(lj.generation_id == 1);
  // v0-v3: no MEMBER_ID_REQUIRED round trip.
  auto v3 = f.call<JoinResp>(join_request("old", ""), 3);
  CHECK(v3.error_code == 0);
  CHECK(!v3.member_id.empty());

  std::string a;
  auto ja = start_join(f, "gb", 10000, &a).get();
  REQUIRE(ja.error_code == 0);
  CHECK(sync(f, "gb", 1, "not-a-member").error_code == to_wire(ErrorCode::UNKNOWN_MEMBER_ID));
  CHECK(sync(f, "gb", 5, a).error_code == to_wire(ErrorCode::ILLEGAL_GENERATION));
  CHECK(sync(f, "nosuchgroup", 1, a).error_code == to_wire(ErrorCode::UNKNOWN_MEMBER_ID));
  CHECK(f.call<JoinResp>(join_request("gb", "unknown-member"), 5).error_code == to_wire(ErrorCode::UNKNOWN_MEMBER_ID));
  // A different protocol type, or no protocol in common, is refused.
  auto other = join_request("gb", "", 10000, "roundrobin");
  CHECK(f.call<JoinResp>(other, 5).error_code == to_wire(ErrorCode::INCONSISTENT_GROUP_PROTOCOL));
  // The group is still usable: the leader syncs and heartbeats.
  CHECK(sync(f, "gb", 1, a, {{a, "ok"}}).error_code == 0);
  CHECK(heartbeat(f, "gb", 1, a) == 0);
}

TEST_CASE("group.max.size bounds new members", "[groups]") {
  auto o = overrides();
  o.push_back("group.max.size=1");
  BrokerFixture f(o);
  coordinator(f);
  REQUIRE(start_join(f, "small").get().error_code == 0);
  CHECK(f.call<JoinResp>(join_request("small", ""), 5).error_code == to_wire(ErrorCode::GROUP_MAX_SIZE_REACHED));
}

}  // namespace CK_UNITY_ID
