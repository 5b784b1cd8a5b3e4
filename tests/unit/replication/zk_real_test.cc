// tests/unit/replication/zk_real_test.cc: the contract against a real
// standalone ZooKeeper, plus what only a real server shows: connection loss
// and reconnect across a server restart, and connecting to nothing.
#include <catch2/catch.hpp>
#include <chrono>

#include "tests/unit/replication/zk_contract.h"
#include "tests/unit/replication/tcp_proxy.h"
#include "tests/unit/replication/zk_test_server.h"

namespace ciuickafka::replication::zk::testing {
namespace {

using namespace std::chrono_literals;

// Sessions to be expired connect through a proxy: cutting it leaves the
// server without pings, so it times the session out for real.
class RealBackend final : public Backend {
 public:
  // chroot (say "/c"): the expirable sessions live under it.
  explicit RealBackend(ZkTestServer& server, std::string chroot = "")
      : server_(server), client_(make_zookeeper_client()), proxy_(server.port()), chroot_(std::move(chroot)) {}
  Client& client() override { return *client_; }
  std::string connect_string() override { return server_.connect_string(); }
  std::string expirable_connect_string() override {
    return "127.0.0.1:" + std::to_string(proxy_.port()) + chroot_;
  }

  bool expire(Session& s, std::string* error) override {
    // An ephemeral marker of s tells when the server has ended the session.
    const std::string marker = "/ck-expiry-" + std::to_string(s.session_id());
    if (const Code c = s.create(marker, "", CreateMode::kEphemeral); c != Code::kOk) {
      *error = "cannot create " + marker + ": " + std::string(to_string(c));
      return false;
    }
    ConnectOptions o;
    o.connect = connect_string() + chroot_;
    auto observer = client_->connect(o, {}, error);
    if (observer == nullptr) return false;
    Recorder gone;
    if (observer->exists(marker, nullptr, gone.watch()) != Code::kOk) {
      *error = "the marker " + marker + " vanished early";
      return false;
    }
    proxy_.set_blocked(true);
    const bool expired = gone.wait_events(1, std::chrono::seconds(30));
    proxy_.set_blocked(false);
    if (!expired) *error = "the server did not expire session " + std::to_string(s.session_id()) + " in 30 s";
    return expired;
  }

 private:
  ZkTestServer& server_;
  std::unique_ptr<Client> client_;
  TcpProxy proxy_;
  std::string chroot_;
};

// One server for every section of the contract (sections re-enter the test
// case in the same process); stopped at exit.
ZkTestServer& shared_server() {
  ZkTestServer::skip_if_unavailable();
  static ZkTestServer server;
  static std::string error;
  static const bool started = server.start(&error);
  INFO(error);
  REQUIRE(started);
  return server;
}

int64_t ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TEST_CASE("zk contract [real]", "[real]") {
  RealBackend b(shared_server());
  run_contract(b);
}

TEST_CASE("zk connection loss, then reconnect to the restarted server in the same session [real]", "[real]") {
  ZkTestServer::skip_if_unavailable();
  ZkTestServer server;
  std::string error;
  const bool started = server.start(&error);
  INFO(error);
  REQUIRE(started);
  RealBackend b(server);
  Recorder r;
  auto s = connect_or_fail(b, server.connect_string(), r.state(), 20000);
  const int64_t id = s->session_id();
  CHECK(s->session_timeout_ms() == 20000);
  REQUIRE(s->create("/live", "", CreateMode::kEphemeral) == Code::kOk);
  const size_t before = r.states().size();

  server.kill9();
  REQUIRE(r.wait_state(SessionState::kDisconnected, before, 10s));
  const auto t = std::chrono::steady_clock::now();
  CHECK(s->exists("/live") == Code::kConnectionLoss);
  CHECK(ms_since(t) < 10000);

  const size_t down = r.states().size();
  const bool restarted = server.restart(&error);
  INFO(error);
  REQUIRE(restarted);
  REQUIRE(r.wait_state(SessionState::kConnected, down, 20s));
  CHECK(s->session_id() == id);
  Stat st;
  REQUIRE(s->exists("/live", &st) == Code::kOk);
  CHECK(st.ephemeral_owner == id);
}

TEST_CASE("zk connect to a port where nothing listens fails after the timeout [real]", "[real]") {
  auto client = make_zookeeper_client();
  ConnectOptions o;
  o.connect = "127.0.0.1:1/chroot";  // nothing listens on port 1
  o.connection_timeout_ms = 1500;
  std::string error;
  const auto t = std::chrono::steady_clock::now();
  auto s = client->connect(o, {}, &error);
  const int64_t took = ms_since(t);
  CHECK(s == nullptr);
  CHECK(error.find("127.0.0.1:1/chroot") != std::string::npos);
  CHECK(error.find("1500 ms") != std::string::npos);
  CHECK(took >= 1500);
  CHECK(took < 6000);
  std::string bad;
  o.connect = "/only-chroot";
  CHECK(client->connect(o, {}, &bad) == nullptr);
  CHECK(!bad.empty());
}

}  // namespace ciuickafka::replication::zk::testing

namespace ciuickafka::replication::zk::testing {

// The C client's zoo_amulti frees a chrooted sub-op path twice when the
// handle has expired (zookeeper_session.cc, ZkSession::multi): the first
// broker to hit it died of a double free in a chaos run. The multi must
// answer kSessionExpired without reaching it.
TEST_CASE("zk multi on an expired chrooted session answers SESSION_EXPIRED [real]", "[real]") {
  RealBackend b(shared_server(), "/ck-multi-chroot");
  Recorder r;
  auto doomed = connect_or_fail(b, b.expirable_connect_string(), r.state(), 1500);
  REQUIRE(doomed->create("/n", "x", CreateMode::kPersistent) == Code::kOk);
  std::vector<OpResult> res;
  REQUIRE(doomed->multi(std::vector<Op>{Op::check("/n", 0), Op::set_data("/n", "y", 0)}, &res) == Code::kOk);
  std::string error;
  const bool expired = b.expire(*doomed, &error);
  INFO(error);
  REQUIRE(expired);
  REQUIRE(r.wait_state(SessionState::kExpired, 0, 30s));
  CHECK(doomed->multi(std::vector<Op>{Op::check("/n", 1), Op::set_data("/n", "z", 1)}, &res) ==
        Code::kSessionExpired);
  CHECK(res.empty());
  CHECK(doomed->multi(std::vector<Op>{Op::remove("/n", -1)}, &res) == Code::kSessionExpired);
}

}  // namespace ciuickafka::replication::zk::testing
