// tests/unit/handlers/groups/admin_test.cc: ListGroups (state and type
// filters), DescribeGroups, DeleteGroups (only empty groups, tombstones that
// outlive a restart) and OffsetDelete (GROUP_SUBSCRIBED_TO_TOPIC).
#include <catch2/catch.hpp>

#include "protocol/error_code.h"
#include "protocol/generated/consumer_protocol_subscription.h"
#include "protocol/generated/delete_groups.h"
#include "protocol/generated/describe_groups.h"
#include "protocol/generated/list_groups.h"
#include "protocol/generated/offset_delete.h"
#include "tests/unit/handlers/groups/groups_test_util.h"

using namespace ciuickafka;
using namespace ciuickafka::broker;
using namespace ciuickafka::broker::test;
using protocol::ErrorCode;
using protocol::to_wire;

// A namespace of this file's own (tests/CMakeLists.txt: the tests are unity
// builds), so that its helpers do not clash with a sibling file's.
namespace CK_UNITY_ID {

namespace {

std::vector<std::string> overrides() {
  return {"offsets.topic.num.partitions=4", "group.initial.rebalance.delay.ms=0"};
}

// A consumer member subscribed to `topics` (ConsumerProtocolSubscription v1).
std::string subscription(std::vector<std::string> topics) {
  protocol::ConsumerProtocolSubscription s;
  s.topics = std::move(topics);
  protocol::Writer w;
  w.write_int16(1);
  s.encode(w, 1);
  return {w.buffer().begin(), w.buffer().end()};
}

// A one-member group, stable in generation 1; returns the member id.
std::string stable_group(BrokerFixture& f, const std::string& group, std::vector<std::string> topics) {
  auto first = f.call<protocol::JoinGroupResponse>(join_request(group, "", 10000, "range", subscription(topics)), 6);
  REQUIRE(first.error_code == to_wire(ErrorCode::MEMBER_ID_REQUIRED));
  auto joined = send<protocol::JoinGroupResponse>(
                    f, join_request(group, first.member_id, 10000, "range", subscription(topics)), 6)
                    .get();
  REQUIRE(joined.error_code == 0);
  protocol::SyncGroupRequest s;
  s.group_id = group;
  s.generation_id = joined.generation_id;
  s.member_id = joined.member_id;
  REQUIRE(f.call<protocol::SyncGroupResponse>(s, 4).error_code == 0);
  return joined.member_id;
}

std::vector<std::string> listed(BrokerFixture& f, std::vector<std::string> states, std::vector<std::string> types,
                                int16_t v = 5) {
  protocol::ListGroupsRequest r;
  r.states_filter = std::move(states);
  r.types_filter = std::move(types);
  auto resp = f.call<protocol::ListGroupsResponse>(r, v);
  REQUIRE(resp.error_code == 0);
  std::vector<std::string> out;
  for (auto& g : resp.groups) out.push_back(g.group_id + "/" + g.group_state + "/" + g.protocol_type);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("ListGroups and DescribeGroups", "[groups]") {
  BrokerFixture f(overrides());
  REQUIRE(f.broker().topics().create("t", 2, 1, {}, false, Broker::now_ms()).error.ok());
  coordinator(f);
  const std::string member = stable_group(f, "busy", {"t"});
  REQUIRE(f.call<protocol::OffsetCommitResponse>(commit_request("idle", "t", 0, 1), 8)
              .topics[0].partitions[0].error_code == 0);

  CHECK(listed(f, {}, {}) == std::vector<std::string>{"busy/Stable/consumer", "idle/Empty/"});
  CHECK(listed(f, {"stable"}, {}) == std::vector<std::string>{"busy/Stable/consumer"});
  CHECK(listed(f, {"Empty", "Dead"}, {}) == std::vector<std::string>{"idle/Empty/"});
  CHECK(listed(f, {}, {"Classic"}).size() == 2);
  CHECK(listed(f, {}, {"consumer"}).empty());
  CHECK(listed(f, {}, {}, 0).size() == 2);

  protocol::DescribeGroupsRequest d;
  d.groups = {"busy", "idle", "never"};
  d.include_authorized_operations = true;
  auto r = f.call<protocol::DescribeGroupsResponse>(d, 5);
  REQUIRE(r.groups.size() == 3);
  CHECK(r.groups[0].group_state == "Stable");
  CHECK(r.groups[0].protocol_type == "consumer");
  CHECK(r.groups[0].protocol_data == "range");
  REQUIRE(r.groups[0].members.size() == 1);
  CHECK(r.groups[0].members[0].member_id == member);
  CHECK(r.groups[0].members[0].client_id == "tester");
  CHECK(r.groups[0].members[0].client_host == "/127.0.0.1");
  CHECK(r.groups[0].authorized_operations == ((1 << 3) | (1 << 6) | (1 << 8)));
  CHECK(r.groups[1].group_state == "Empty");
  CHECK(r.groups[2].group_state == "Dead");
  CHECK(r.groups[2].error_code == 0);
}

TEST_CASE("DeleteGroups removes only empty groups, for good", "[groups]") {
  BrokerFixture f(overrides());
  REQUIRE(f.broker().topics().create("t", 2, 1, {}, false, Broker::now_ms()).error.ok());
  coordinator(f);
  stable_group(f, "busy", {"t"});
  REQUIRE(f.call<protocol::OffsetCommitResponse>(commit_request("idle", "t", 1, 5), 8)
              .topics[0].partitions[0].error_code == 0);
  protocol::DeleteGroupsRequest del;
  // "idle" named twice: deleted and answered once, as Kafka does.
  del.groups_names = {"busy", "idle", "never", "idle"};
  auto r = f.call<protocol::DeleteGroupsResponse>(del, 2);
  REQUIRE(r.results.size() == 3);
  CHECK(r.results[0].error_code == to_wire(ErrorCode::NON_EMPTY_GROUP));
  CHECK(r.results[1].group_id == "idle");
  CHECK(r.results[1].error_code == 0);
  CHECK(r.results[2].error_code == to_wire(ErrorCode::GROUP_ID_NOT_FOUND));
  auto fetched = f.call<protocol::OffsetFetchResponse>(fetch_request("idle", "t", {1}), 6);
  CHECK(fetched.topics[0].partitions[0].committed_offset == -1);

  f.restart();
  coordinator(f);
  CHECK(listed(f, {}, {}) == std::vector<std::string>{"busy/Stable/consumer"});
  fetched = f.call<protocol::OffsetFetchResponse>(fetch_request("idle", "t", {1}), 6);
  CHECK(fetched.topics[0].partitions[0].committed_offset == -1);
  del.groups_names = {"idle"};
  CHECK(f.call<protocol::DeleteGroupsResponse>(del, 0).results[0].error_code ==
        to_wire(ErrorCode::GROUP_ID_NOT_FOUND));
}

TEST_CASE("OffsetDelete keeps offsets of subscribed topics", "[groups]") {
  BrokerFixture f(overrides());
  for (const char* t : {"sub", "other"})
    REQUIRE(f.broker().topics().create(t, 1, 1, {}, false, Broker::now_ms()).error.ok());
  coordinator(f);
  const std::string member = stable_group(f, "g", {"sub"});
  for (const char* t : {"sub", "other"}) {
    auto c = commit_request("g", t, 0, 11);
    c.generation_id_or_member_epoch = 1;
    c.member_id = member;
    REQUIRE(f.call<protocol::OffsetCommitResponse>(c, 8).topics[0].partitions[0].error_code == 0);
  }
  protocol::OffsetDeleteRequest req;
  req.group_id = "g";
  for (const char* t : {"sub", "other", "missing"}) {
    protocol::OffsetDeleteRequest::OffsetDeleteRequestTopic rt;
    rt.name = t;
    rt.partitions = {protocol::OffsetDeleteRequest::OffsetDeleteRequestPartition{0}};
    req.topics.push_back(rt);
  }
  auto r = f.call<protocol::OffsetDeleteResponse>(req, 0);
  CHECK(r.error_code == 0);
  REQUIRE(r.topics.size() == 3);
  CHECK(r.topics[0].partitions[0].error_code == to_wire(ErrorCode::GROUP_SUBSCRIBED_TO_TOPIC));
  CHECK(r.topics[1].partitions[0].error_code == 0);
  CHECK(r.topics[2].partitions[0].error_code == to_wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  CHECK(f.call<protocol::OffsetFetchResponse>(fetch_request("g", "sub", {0}), 6).topics[0].partitions[0].committed_offset == 11);
  CHECK(f.call<protocol::OffsetFetchResponse>(fetch_request("g", "other", {0}), 6).topics[0].partitions[0].committed_offset == -1);

  req.group_id = "unknown";
  CHECK(f.call<protocol::OffsetDeleteResponse>(req, 0).error_code == to_wire(ErrorCode::GROUP_ID_NOT_FOUND));
}

}  // namespace CK_UNITY_ID
