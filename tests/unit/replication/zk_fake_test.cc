// tests/unit/replication/zk_fake_test.cc: the contract against the
// in-memory fake, plus its test controls (outage, one session cut off,
// expiry while cut off) and its promise to call back outside its lock.
#include <catch2/catch.hpp>

#include "replication/zk/fake_zk.h"
#include "tests/unit/replication/zk_contract.h"

namespace ciuickafka::replication::zk::testing {
namespace {

using namespace std::chrono_literals;

class FakeBackend final : public Backend {
 public:
  FakeBackend() : client_(server_.client()) {}
  Client& client() override { return *client_; }
  std::string connect_string() override { return "fake:2181"; }
  bool expire(Session& s, std::string* error) override {
    if (server_.expire_session(s.session_id())) return true;
    *error = "no live fake session " + std::to_string(s.session_id());
    return false;
  }
  std::chrono::milliseconds event_timeout() override { return 0ms; }  // the fake calls back at once
  FakeZkServer& server() { return server_; }

 private:
  FakeZkServer server_;
  std::unique_ptr<Client> client_;
};

}  // namespace

TEST_CASE("zk contract [fake]", "[fake]") {
  FakeBackend b;
  run_contract(b);
}

TEST_CASE("zk fake: an outage loses the connection and keeps the session [fake]", "[fake]") {
  FakeBackend b;
  Recorder r, w;
  auto s = connect_or_fail(b, b.connect_string(), r.state());
  auto other = connect_or_fail(b, b.connect_string());
  REQUIRE(r.states() == std::vector<SessionState>{SessionState::kConnected});
  REQUIRE(s->create("/live", "", CreateMode::kEphemeral) == Code::kOk);
  REQUIRE(s->exists("/live", nullptr, w.watch()) == Code::kOk);

  b.server().set_available(false);
  CHECK(r.states().back() == SessionState::kDisconnected);
  CHECK(s->exists("/live") == Code::kConnectionLoss);
  CHECK(other->set("/live", "x", -1) == Code::kConnectionLoss);
  std::string error;
  CHECK(b.client().connect(ConnectOptions{b.connect_string()}, {}, &error) == nullptr);
  CHECK(error.find("fake:2181") != std::string::npos);

  b.server().set_available(true);
  CHECK(r.states() == std::vector<SessionState>{SessionState::kConnected, SessionState::kDisconnected,
                                                 SessionState::kConnected});
  Stat st;
  REQUIRE(s->exists("/live", &st) == Code::kOk);
  CHECK(st.ephemeral_owner == s->session_id());
  CHECK(b.server().session_ids() == std::vector<int64_t>{s->session_id(), other->session_id()});
  CHECK(w.events().empty());
}

TEST_CASE("zk fake: a session cut off hears its watches when it comes back [fake]", "[fake]") {
  FakeBackend b;
  Recorder r, w;
  auto s = connect_or_fail(b, b.connect_string(), r.state());
  auto other = connect_or_fail(b, b.connect_string());
  REQUIRE(other->create("/n", "", CreateMode::kPersistent) == Code::kOk);
  REQUIRE(s->exists("/n", nullptr, w.watch()) == Code::kOk);
  REQUIRE(b.server().set_connected(s->session_id(), false));
  CHECK(s->get("/n", nullptr) == Code::kConnectionLoss);
  REQUIRE(other->set("/n", "changed", -1) == Code::kOk);  // the other session is fine
  CHECK(w.events().empty());
  REQUIRE(b.server().set_connected(s->session_id(), true));
  CHECK(r.states() == std::vector<SessionState>{SessionState::kConnected, SessionState::kDisconnected,
                                                 SessionState::kConnected});
  CHECK(w.events() == std::vector<Recorder::Event>{{EventType::kDataChanged, "/n"}});
  CHECK_FALSE(b.server().set_connected(12345, false));
}

TEST_CASE("zk fake: a session expired while cut off learns it on return [fake]", "[fake]") {
  FakeBackend b;
  Recorder r;
  auto s = connect_or_fail(b, b.connect_string(), r.state());
  auto other = connect_or_fail(b, b.connect_string());
  REQUIRE(s->create("/e", "", CreateMode::kEphemeral) == Code::kOk);
  REQUIRE(b.server().set_connected(s->session_id(), false));
  REQUIRE(b.server().expire_session(s->session_id()));
  CHECK(other->exists("/e") == Code::kNoNode);  // the server deleted it at once
  CHECK(r.states().back() == SessionState::kDisconnected);
  CHECK(s->exists("/e") == Code::kSessionExpired);
  CHECK(b.server().session_ids() == std::vector<int64_t>{other->session_id()});
  REQUIRE(b.server().set_connected(s->session_id(), true));
  CHECK(r.states().back() == SessionState::kExpired);
  CHECK_FALSE(b.server().expire_session(s->session_id()));
}

TEST_CASE("zk fake: callbacks run outside its lock [fake]", "[fake]") {
  FakeBackend b;
  auto s = connect_or_fail(b, b.connect_string());
  size_t seen = 0;
  // A callback that calls the fake would deadlock if it ran under the lock.
  const WatchFn calls_fake = [&](EventType, const std::string&) { seen = b.server().session_ids().size(); };
  REQUIRE(s->exists("/x", nullptr, calls_fake) == Code::kNoNode);
  REQUIRE(s->create("/x", "", CreateMode::kPersistent) == Code::kOk);
  CHECK(seen == 1);
}

TEST_CASE("zk fake: sessions outlive the server object [fake]", "[fake]") {
  std::unique_ptr<Session> s;
  {
    FakeZkServer server;
    std::string error;
    s = server.client()->connect(ConnectOptions{"fake:1/root"}, {}, &error);
    REQUIRE(s != nullptr);
  }
  CHECK(s->create("/still", "", CreateMode::kPersistent) == Code::kOk);
  CHECK(s->exists("/still") == Code::kOk);
}

}  // namespace ciuickafka::replication::zk::testing
