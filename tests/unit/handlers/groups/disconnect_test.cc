// tests/unit/handlers/groups/disconnect_test.cc: members whose connection
// closes (broker/groups/disconnects.cc), simulated through the broker's
// ConnectionEvents hook as the server fires it, plus the rebalance metrics
// the same flows produce. Sessions are 20 s here, so anything that happens
// within a few seconds is the disconnect grace (300 ms) at work.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "broker/server/connection_events.h"
#include "protocol/error_code.h"
#include "protocol/generated/describe_groups.h"
#include "protocol/generated/heartbeat.h"
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

constexpr int32_t kSession = 20000;

std::vector<std::string> overrides(const std::string& grace = "300") {
  return {"offsets.topic.num.partitions=3", "group.initial.rebalance.delay.ms=0", "group.min.session.timeout.ms=100",
          "ciuic.group.disconnect.grace.ms=" + grace};
}

// MEMBER_ID_REQUIRED, then the join with the id on connection conn (held).
Pending<JoinResp> join_on(BrokerFixture& f, const std::string& group, uint64_t conn, std::string* member_id) {
  auto first = f.call<JoinResp>(join_request(group, "", kSession), 5);
  REQUIRE(first.error_code == to_wire(ErrorCode::MEMBER_ID_REQUIRED));
  *member_id = first.member_id;
  return send<JoinResp>(f, join_request(group, first.member_id, kSession), 5, "tester", conn);
}

Pending<SyncResp> sync_on(BrokerFixture& f, const std::string& group, int32_t gen, const std::string& member,
                          uint64_t conn, std::vector<std::pair<std::string, std::string>> assignments = {}) {
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
  return send<SyncResp>(f, s, 5, "tester", conn);
}

int16_t heartbeat_on(BrokerFixture& f, const std::string& group, int32_t gen, const std::string& member,
                     uint64_t conn, std::optional<std::string> instance = std::nullopt) {
  protocol::HeartbeatRequest h;
  h.group_id = group;
  h.generation_id = gen;
  h.member_id = member;
  h.group_instance_id = instance;
  return send<protocol::HeartbeatResponse>(f, h, 4, "tester", conn).get().error_code;
}

protocol::DescribeGroupsResponse::DescribedGroup describe(BrokerFixture& f, const std::string& group) {
  protocol::DescribeGroupsRequest d;
  d.groups = {group};
  auto r = f.call<protocol::DescribeGroupsResponse>(d, 5);
  REQUIRE(r.groups.size() == 1);
  return r.groups[0];
}

// A (connection 10) and B (connection 11) in a Stable generation 2.
void two_stable_members(BrokerFixture& f, const std::string& group, std::string* a, std::string* b) {
  auto ja = join_on(f, group, 10, a).get();
  REQUIRE(ja.generation_id == 1);
  REQUIRE(sync_on(f, group, 1, *a, 10, {{*a, "A1"}}).get().error_code == 0);
  auto pb = join_on(f, group, 11, b);
  auto ra = send<JoinResp>(f, join_request(group, *a, kSession), 5, "tester", 10).get();
  auto rb = pb.get();
  REQUIRE(ra.generation_id == 2);
  REQUIRE(rb.generation_id == 2);
  auto held = sync_on(f, group, 2, *b, 11);
  REQUIRE(sync_on(f, group, 2, *a, 10, {{*a, "A2"}, {*b, "B2"}}).get().error_code == 0);
  REQUIRE(held.get().error_code == 0);
  REQUIRE(describe(f, group).group_state == "Stable");
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

}  // namespace

TEST_CASE("a held JoinGroup on a closed connection is answered and its member leaves after the grace",
          "[groups][disconnect]") {
  BrokerFixture f(overrides());
  coordinator(f);
  std::string a, b;
  REQUIRE(join_on(f, "d1", 10, &a).get().generation_id == 1);
  REQUIRE(sync_on(f, "d1", 1, a, 10, {{a, "A1"}}).get().error_code == 0);

  auto pb = join_on(f, "d1", 11, &b);
  CHECK_FALSE(pb.ready(100));  // held until A rejoins
  f.broker().service<ConnectionEvents>().closed(11);  // B's worker is killed
  auto rb = pb.get(2000);
  CHECK(rb.error_code == to_wire(ErrorCode::UNKNOWN_MEMBER_ID));

  // A rejoins: without the grace the join phase would wait for B for the
  // whole rebalance timeout (20 s); now B is gone after 300 ms.
  const auto t0 = std::chrono::steady_clock::now();
  auto ra = send<JoinResp>(f, join_request("d1", a, kSession), 5, "tester", 10).get(5000);
  const auto waited = std::chrono::steady_clock::now() - t0;
  CHECK(waited < std::chrono::seconds(5));
  REQUIRE(ra.error_code == 0);
  CHECK(ra.generation_id == 2);
  REQUIRE(ra.members.size() == 1);
  CHECK(ra.members[0].member_id == a);
}

TEST_CASE("a member whose connection closed keeps its session only if it speaks from a new one",
          "[groups][disconnect]") {
  BrokerFixture f(overrides());
  groups::ManualGroupClock clock;  // the grace runs out when the test says so
  auto& c = coordinator(f);
  std::string a, b;
  two_stable_members(f, "d2", &a, &b);

  // The rebalance metrics of the two rebalances so far.
  std::string text = f.broker().metrics_registry().text();
  CHECK(has_line(text, "kafka_coordinator_rebalances_total{consumergroup=\"d2\"} 2"));
  CHECK(has_line(text, "kafka_coordinator_rebalance_duration_seconds_count{consumergroup=\"d2\"} 2"));
  CHECK(text.find("kafka_coordinator_rebalance_last_duration_seconds{consumergroup=\"d2\"}") != std::string::npos);

  // B's connection closes, but B reconnects and heartbeats: it stays.
  f.broker().service<ConnectionEvents>().closed(11);
  REQUIRE(heartbeat_on(f, "d2", 2, b, 12) == 0);
  clock.advance(800);  // well past the 300 ms grace
  c.tick_now();
  REQUIRE(heartbeat_on(f, "d2", 2, a, 10) == 0);
  CHECK(describe(f, "d2").members.size() == 2);

  // Now its new connection closes too and it says nothing more: evicted
  // when the grace (300 ms) is over, long before its 20 s session.
  f.broker().service<ConnectionEvents>().closed(12);
  clock.advance(299);
  c.tick_now();
  REQUIRE(heartbeat_on(f, "d2", 2, a, 10) == 0);
  CHECK(describe(f, "d2").members.size() == 2);
  clock.advance(2);
  c.tick_now();
  CHECK(heartbeat_on(f, "d2", 2, a, 10) == to_wire(ErrorCode::REBALANCE_IN_PROGRESS));
  auto d = describe(f, "d2");
  REQUIRE(d.members.size() == 1);
  CHECK(d.members[0].member_id == a);
}

TEST_CASE("a closed connection drops a held SyncGroup - the leader's close ends the generation",
          "[groups][disconnect]") {
  BrokerFixture f(overrides());
  coordinator(f);
  std::string a, b;
  REQUIRE(join_on(f, "d3", 10, &a).get().generation_id == 1);
  REQUIRE(sync_on(f, "d3", 1, a, 10, {{a, "A1"}}).get().error_code == 0);
  auto pb = join_on(f, "d3", 11, &b);
  REQUIRE(send<JoinResp>(f, join_request("d3", a, kSession), 5, "tester", 10).get().generation_id == 2);
  REQUIRE(pb.get().generation_id == 2);
  // B waits for the assignment; the leader A dies before sending it.
  auto held = sync_on(f, "d3", 2, b, 11);
  CHECK_FALSE(held.ready(100));
  f.broker().service<ConnectionEvents>().closed(10);
  // A is evicted after the grace: B is told to rejoin (its SyncGroup answer).
  auto sb = held.get(5000);
  CHECK(sb.error_code == to_wire(ErrorCode::REBALANCE_IN_PROGRESS));
  auto rb = send<JoinResp>(f, join_request("d3", b, kSession), 5, "tester", 11).get(5000);
  CHECK(rb.generation_id == 3);
  CHECK(rb.leader == b);
  CHECK(rb.members.size() == 1);
}

TEST_CASE("static members and a grace of -1 keep Kafka's session-timeout-only eviction", "[groups][disconnect]") {
  SECTION("static member") {
    BrokerFixture f(overrides());
    groups::ManualGroupClock clock;
    auto& c = coordinator(f);
    auto j = join_request("d4", "", kSession);
    j.group_instance_id = "worker-0";
    auto r = send<JoinResp>(f, j, 5, "tester", 20).get();
    REQUIRE(r.error_code == 0);
    REQUIRE(sync_on(f, "d4", 1, r.member_id, 20, {{r.member_id, "all"}}).get().error_code == 0);
    f.broker().service<ConnectionEvents>().closed(20);
    clock.advance(800);  // past the grace, within the session
    c.tick_now();
    CHECK(heartbeat_on(f, "d4", 1, r.member_id, 21, std::string("worker-0")) == 0);
    CHECK(describe(f, "d4").group_state == "Stable");
  }
  SECTION("grace -1") {
    BrokerFixture f(overrides("-1"));
    coordinator(f);
    std::string a, b;
    REQUIRE(join_on(f, "d5", 10, &a).get().generation_id == 1);
    REQUIRE(sync_on(f, "d5", 1, a, 10, {{a, "A1"}}).get().error_code == 0);
    auto pb = join_on(f, "d5", 11, &b);
    f.broker().service<ConnectionEvents>().closed(11);
    CHECK_FALSE(pb.ready(500));  // still held: the member still counts as joined
    auto ra = send<JoinResp>(f, join_request("d5", a, kSession), 5, "tester", 10).get();
    CHECK(ra.members.size() == 2);
    CHECK(pb.get().generation_id == 2);
  }
}

}  // namespace CK_UNITY_ID
