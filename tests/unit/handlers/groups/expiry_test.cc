// tests/unit/handlers/groups/expiry_test.cc: offset expiry as Kafka 2.1+
// runs it (KIP-211, broker/groups/offset_expiry.cc), driven by calling
// expire_offsets with a wall-clock time in the future (retention 1 minute),
// then a restart to show the tombstones are honoured on load.
#include <catch2/catch.hpp>

#include <algorithm>

#include "protocol/error_code.h"
#include "protocol/generated/consumer_protocol_subscription.h"
#include "protocol/generated/leave_group.h"
#include "protocol/generated/list_groups.h"
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

// A consumer member's JoinGroup metadata subscribing to `topics`.
std::string subscription(const std::vector<std::string>& topics) {
  protocol::ConsumerProtocolSubscription sub;
  sub.topics = topics;
  protocol::Writer w;
  w.write_int16(1);
  sub.encode(w, 1);
  auto b = w.release();
  return {b.begin(), b.end()};
}

// A one-member group subscribed to `topics`, Stable in generation 1.
std::string one_member(BrokerFixture& f, const std::string& group, const std::vector<std::string>& topics) {
  auto first = f.call<JoinResp>(join_request(group, "", 10000, "range", subscription(topics)), 5);
  REQUIRE(first.error_code == to_wire(ErrorCode::MEMBER_ID_REQUIRED));
  auto joined = send<JoinResp>(f, join_request(group, first.member_id, 10000, "range", subscription(topics)), 5).get();
  REQUIRE(joined.generation_id == 1);
  protocol::SyncGroupRequest s;
  s.group_id = group;
  s.generation_id = 1;
  s.member_id = first.member_id;
  REQUIRE(f.call<SyncResp>(s, 5).error_code == 0);
  return first.member_id;
}

void member_commit(BrokerFixture& f, const std::string& group, const std::string& member, const std::string& topic,
                   int32_t partition, int64_t offset) {
  auto c = commit_request(group, topic, partition, offset);
  c.generation_id_or_member_epoch = 1;
  c.member_id = member;
  REQUIRE(f.call<protocol::OffsetCommitResponse>(c, 8).topics[0].partitions[0].error_code == 0);
}

int64_t committed(BrokerFixture& f, const std::string& group, const std::string& topic, int32_t partition) {
  auto r = f.call<protocol::OffsetFetchResponse>(fetch_request(group, topic, {partition}), 6);
  REQUIRE(r.error_code == 0);
  return r.topics.at(0).partitions.at(0).committed_offset;
}

std::vector<std::string> listed(BrokerFixture& f) {
  auto r = f.call<protocol::ListGroupsResponse>(protocol::ListGroupsRequest{}, 4);
  std::vector<std::string> out;
  for (auto& g : r.groups) out.push_back(g.group_id);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("offsets expire as KIP-211 says and the tombstones survive a restart", "[groups][expiry]") {
  BrokerFixture f({"offsets.topic.num.partitions=3", "group.initial.rebalance.delay.ms=0",
                   "group.min.session.timeout.ms=100", "offsets.retention.minutes=1"});
  REQUIRE(f.broker().topics().create("t", 2, 1, {}, false, Broker::now_ms()).error.ok());
  REQUIRE(f.broker().topics().create("u", 1, 1, {}, false, Broker::now_ms()).error.ok());
  auto& c = coordinator(f);

  // "simple": commits of an assign() user (no members ever).
  REQUIRE(f.call<protocol::OffsetCommitResponse>(commit_request("simple", "t", 0, 5), 8)
              .topics[0].partitions[0].error_code == 0);
  // "emptied": a member commits, then leaves: Empty, with a protocol type.
  const std::string e = one_member(f, "emptied", {"t"});
  member_commit(f, "emptied", e, "t", 1, 7);
  protocol::LeaveGroupRequest leave;
  leave.group_id = "emptied";
  leave.member_id = e;
  REQUIRE(f.call<protocol::LeaveGroupResponse>(leave, 1).error_code == 0);
  // "active": Stable, subscribed to t; it also has an offset for u, which
  // no member subscribes to.
  const std::string a = one_member(f, "active", {"t"});
  member_commit(f, "active", a, "t", 0, 3);
  member_commit(f, "active", a, "u", 0, 4);

  const int64_t now = Broker::now_ms();
  CHECK(c.expire_offsets(now + 30'000) == 0);  // within the retention
  CHECK(committed(f, "simple", "t", 0) == 5);
  CHECK(committed(f, "emptied", "t", 1) == 7);

  CHECK(c.expire_offsets(now + 61'000) == 3);
  auto check = [&] {
    CHECK(committed(f, "simple", "t", 0) == -1);
    CHECK(committed(f, "emptied", "t", 1) == -1);
    CHECK(committed(f, "active", "t", 0) == 3);   // subscribed: kept
    CHECK(committed(f, "active", "u", 0) == -1);  // not subscribed: expired
    // Empty groups left without offsets are Dead and gone.
    CHECK(listed(f) == std::vector<std::string>{"active"});
  };
  check();

  // Tombstones are honoured when the coordinator loads again.
  f.restart();
  coordinator(f);
  check();
}

TEST_CASE("an explicit retention (OffsetCommit v2-v4 retention_time_ms) sets the offset's own expiry",
          "[groups][expiry]") {
  BrokerFixture f({"offsets.topic.num.partitions=3", "offsets.retention.minutes=60"});
  REQUIRE(f.broker().topics().create("t", 1, 1, {}, false, Broker::now_ms()).error.ok());
  auto& c = coordinator(f);
  // OffsetCommit v2 with retention_time_ms = 1 s: its own expire timestamp.
  auto req = commit_request("short", "t", 0, 11);
  req.retention_time_ms = 1000;
  REQUIRE(f.call<protocol::OffsetCommitResponse>(req, 2).topics[0].partitions[0].error_code == 0);
  REQUIRE(f.call<protocol::OffsetCommitResponse>(commit_request("long", "t", 0, 12), 8)
              .topics[0].partitions[0].error_code == 0);
  const int64_t now = Broker::now_ms();
  CHECK(c.expire_offsets(now + 5'000) == 1);
  CHECK(committed(f, "short", "t", 0) == -1);
  CHECK(committed(f, "long", "t", 0) == 12);
}

}  // namespace CK_UNITY_ID
