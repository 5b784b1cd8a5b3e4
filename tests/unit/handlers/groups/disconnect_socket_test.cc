// tests/unit/handlers/groups/disconnect_socket_test.cc: the disconnect path
// end to end over real sockets: a real Server on 127.0.0.1:0, two members
// speaking JoinGroup/SyncGroup through raw TCP; the second one's socket is
// closed while its JoinGroup is held, and the first one's rejoin completes
// after the disconnect grace (300 ms) instead of the 20 s rebalance timeout.
#include <catch2/catch.hpp>

#include <chrono>

#include "protocol/error_code.h"
#include "protocol/generated/join_group.h"
#include "protocol/generated/sync_group.h"
#include "protocol/wire/reader.h"
#include "tests/unit/handlers/groups/groups_test_util.h"
#include "tests/unit/server/server_test_util.h"

using namespace ciuickafka;
using namespace ciuickafka::broker;
using namespace ciuickafka::broker::test;
using protocol::ErrorCode;
using protocol::to_wire;

// A namespace of this file's own (tests/CMakeLists.txt: the tests are unity
// builds), so that its helpers do not clash with a sibling file's.
namespace CK_UNITY_ID {

namespace {

constexpr int16_t kJoinVersion = 5;

template <class Resp, class Req>
std::optional<Resp> round_trip(RawClient& c, const Req& req, int16_t version, int32_t correlation_id) {
  protocol::Writer body;
  req.encode(body, version);
  if (!c.send_all(request_frame(Req::kApiKey, version, correlation_id, body.buffer()))) return std::nullopt;
  auto frame = c.recv_frame();
  if (!frame) return std::nullopt;
  protocol::Reader r(*frame);
  protocol::ResponseHeader h;
  h.decode(r, protocol::response_header_version(Req::kApiKey, version));
  Resp resp;
  resp.decode(r, version);
  if (!r.ok() || h.correlation_id != correlation_id) return std::nullopt;
  return resp;
}

}  // namespace

TEST_CASE("a killed member's socket close ends its held JoinGroup - the group moves on", "[groups][disconnect]") {
  ServerFixture fx({"offsets.topic.num.partitions=3", "group.initial.rebalance.delay.ms=0",
                    "ciuic.group.disconnect.grace.ms=300"});
  REQUIRE(fx.broker().service<groups::GroupCoordinator>().wait_loaded(10000));
  using JoinResp = protocol::JoinGroupResponse;
  RawClient a(fx.port(), 10000);
  auto a_id = round_trip<JoinResp>(a, join_request("s1", "", 20000), kJoinVersion, 1);
  REQUIRE(a_id);
  REQUIRE(a_id->error_code == to_wire(ErrorCode::MEMBER_ID_REQUIRED));
  auto a1 = round_trip<JoinResp>(a, join_request("s1", a_id->member_id, 20000), kJoinVersion, 2);
  REQUIRE(a1);
  REQUIRE(a1->generation_id == 1);
  protocol::SyncGroupRequest s;
  s.group_id = "s1";
  s.generation_id = 1;
  s.member_id = a_id->member_id;
  auto sa = round_trip<protocol::SyncGroupResponse>(a, s, 5, 3);
  REQUIRE(sa);
  REQUIRE(sa->error_code == 0);

  {
    RawClient b(fx.port(), 10000);
    auto b_id = round_trip<JoinResp>(b, join_request("s1", "", 20000), kJoinVersion, 1);
    REQUIRE(b_id);
    protocol::Writer body;
    join_request("s1", b_id->member_id, 20000).encode(body, kJoinVersion);
    REQUIRE(b.send_all(request_frame(protocol::JoinGroupRequest::kApiKey, kJoinVersion, 2, body.buffer())));
    // B's JoinGroup is held (A has not rejoined); make sure the broker has it.
    REQUIRE(eventually([&] {
      auto& c = fx.broker().service<groups::GroupCoordinator>();
      for (auto& g : c.snapshot())
        if (g.group_id == "s1") return g.members == 2 && g.state == groups::GroupState::kPreparingRebalance;
      return false;
    }));
  }  // B's process dies: its socket closes
  // The broker has handled the close (the coordinator hears of it before the
  // server forgets the connection): A's rejoin must not race B's close.
  REQUIRE(eventually([&] { return fx.server().connection_count() == 1; }));

  const auto t0 = std::chrono::steady_clock::now();
  auto a2 = round_trip<JoinResp>(a, join_request("s1", a_id->member_id, 20000), kJoinVersion, 4);
  const auto waited = std::chrono::steady_clock::now() - t0;
  REQUIRE(a2);
  CHECK(a2->error_code == 0);
  CHECK(a2->generation_id == 2);
  CHECK(a2->members.size() == 1);
  CHECK(waited < std::chrono::seconds(5));
}

}  // namespace CK_UNITY_ID
