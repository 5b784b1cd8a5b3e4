// tests/unit/replication/membership_test.cc: ClusterMembership against the
// in-memory ZooKeeper (fake_zk.h): registration payloads and broker epochs,
// the cluster id rules, controller election (one winner, fencing epoch),
// failover on session expiry, re-registration with a new epoch, waiting out
// a stale registration, and riding out an outage.
#include <catch2/catch.hpp>

#include <algorithm>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "replication/membership.h"
#include "replication/zk/fake_zk.h"
#include "replication/zk_data.h"

namespace ciuickafka::replication {
namespace {

using namespace std::chrono_literals;

MembershipConfig config_for(int32_t id, std::string local_cluster_id = "") {
  MembershipConfig c;
  c.zk.connect = "fake:2181/kafka";
  c.zk.session_timeout_ms = 6000;
  c.zk.connection_timeout_ms = 2000;
  c.broker_id = id;
  c.local_cluster_id = std::move(local_cluster_id);
  c.retry_backoff_ms = 20;
  if (id == 2) c.rack = "r2";
  return c;
}

std::vector<ListenerEndpoint> endpoints_for(int32_t id) {
  return {{"PLAINTEXT", "127.0.0.1", 9090 + id, "PLAINTEXT"}, {"INTERNAL", "10.0.0.1", 19090 + id, "PLAINTEXT"}};
}

// Waits until pred(view) holds for m (views change on its event thread).
template <class Pred>
bool eventually(const ClusterMembership& m, Pred pred, std::chrono::milliseconds timeout = 5s) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto v = m.view();
    if (v && pred(*v)) return true;
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(5ms);  // polling a snapshot; no ordering relies on it
  }
}

struct Cluster {
  zk::FakeZkServer server;
  std::unique_ptr<zk::Client> client = server.client();
  std::vector<std::unique_ptr<ClusterMembership>> members;

  ClusterMembership& add(int32_t id, std::string local_id = "") {
    std::string error;
    auto m = ClusterMembership::open(*client, config_for(id, std::move(local_id)), &error);
    INFO(error);
    REQUIRE(m);
    REQUIRE(m->start(endpoints_for(id), 5000, &error));
    members.push_back(std::move(m));
    return *members.back();
  }

  // A stale /brokers/ids/<id> owned by a session of its own (a process
  // killed a moment ago whose session has not timed out); that session.
  std::unique_ptr<zk::Session> stale_registration(int32_t id) {
    auto s = reader();
    REQUIRE(zk::ensure_path(*s, "/brokers/ids") == zk::Code::kOk);
    REQUIRE(s->create("/brokers/ids/" + std::to_string(id), "{}", zk::CreateMode::kEphemeral) == zk::Code::kOk);
    return s;
  }

  // A session that reads the tree as a tool would (in the chroot).
  std::unique_ptr<zk::Session> reader() {
    std::string error;
    zk::ConnectOptions o;
    o.connect = "fake:2181/kafka";
    auto s = client->connect(o, {}, &error);
    REQUIRE(s);
    return s;
  }
};

int32_t count_controllers(const Cluster& c) {
  int32_t n = 0;
  for (const auto& m : c.members) {
    auto v = m->view();
    if (v && v->this_is_controller) ++n;
  }
  return n;
}

TEST_CASE("three brokers register with Kafka's payloads and agree on one controller") {
  Cluster c;
  c.add(1);
  c.add(2);
  c.add(3);
  for (const auto& m : c.members)
    REQUIRE(eventually(*m, [](const ClusterView& v) { return v.brokers.size() == 3 && v.controller_id > 0; }));
  auto reader = c.reader();
  std::vector<std::string> ids;
  REQUIRE(reader->children("/brokers/ids", &ids) == zk::Code::kOk);
  std::sort(ids.begin(), ids.end());
  CHECK(ids == std::vector<std::string>{"1", "2", "3"});

  std::string data;
  zk::Stat st;
  REQUIRE(reader->get("/brokers/ids/2", &data, &st) == zk::Code::kOk);
  auto reg = decode_broker_registration(data);
  REQUIRE(reg.ok());
  CHECK(reg->version == 5);
  REQUIRE(reg->endpoints.size() == 2);
  CHECK(reg->endpoints[0] == BrokerEndPoint{"PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT"});
  CHECK(reg->endpoints[1] == BrokerEndPoint{"INTERNAL", "10.0.0.1", 19092, "PLAINTEXT"});
  CHECK(reg->rack == std::optional<std::string>("r2"));
  CHECK(st.ephemeral_owner != 0);
  // The broker epoch is the registration's czxid (KIP-380).
  CHECK(c.members[1]->view()->broker_epoch == st.czxid);

  // One controller, named by /controller, and the epoch it bumped.
  CHECK(count_controllers(c) == 1);
  REQUIRE(reader->get("/controller", &data) == zk::Code::kOk);
  auto ctl = decode_controller(data);
  REQUIRE(ctl.ok());
  REQUIRE(reader->get("/controller_epoch", &data) == zk::Code::kOk);
  CHECK(data == "1");
  for (const auto& m : c.members) {
    CHECK(m->view()->controller_id == ctl->broker_id);
    CHECK(m->view()->controller_epoch == 1);
  }
  // Every persistent path Kafka creates exists under the chroot.
  for (std::string_view p : kPersistentPaths) CHECK(reader->exists(std::string(p)) == zk::Code::kOk);
  // The view carries the others' endpoints and racks.
  const auto& brokers = c.members[0]->view()->brokers;
  REQUIRE(brokers.size() == 3);
  CHECK(brokers[1].id == 2);
  CHECK(brokers[1].rack == std::optional<std::string>("r2"));
  CHECK(brokers[2].endpoints == endpoints_for(3));
}

TEST_CASE("new endpoints (listeners changed live) rewrite the same registration - the broker epoch stays") {
  Cluster c;
  ClusterMembership& m = c.add(1);
  REQUIRE(eventually(m, [](const ClusterView& v) { return v.brokers.size() == 1; }));
  auto reader = c.reader();
  zk::Stat before;
  REQUIRE(reader->exists("/brokers/ids/1", &before) == zk::Code::kOk);
  std::vector<ListenerEndpoint> moved = endpoints_for(1);
  moved.push_back({"EXTRA", "127.0.0.1", 29091, "PLAINTEXT"});
  m.update_endpoints(moved);
  REQUIRE(eventually(m, [&](const ClusterView& v) { return v.brokers.size() == 1 && v.brokers[0].endpoints == moved; }));
  std::string data;
  zk::Stat after;
  REQUIRE(reader->get("/brokers/ids/1", &data, &after) == zk::Code::kOk);
  auto reg = decode_broker_registration(data);
  REQUIRE(reg.ok());
  CHECK(reg->endpoints == moved);
  CHECK(after.czxid == before.czxid);  // the same node: the same broker epoch
  CHECK(after.version == before.version + 1);
  CHECK(m.view()->broker_epoch == before.czxid);
}

TEST_CASE("the cluster id comes from ZooKeeper - a log dir of another cluster is refused") {
  Cluster c;
  c.add(1, "Zm9vYmFyYmF6cXV4cXV1eA");  // a single-node data dir's id is proposed
  CHECK(c.members[0]->cluster_id() == "Zm9vYmFyYmF6cXV4cXV1eA");
  auto& fresh = c.add(2);  // a new dir takes ZooKeeper's
  CHECK(fresh.cluster_id() == "Zm9vYmFyYmF6cXV4cXV1eA");
  std::string error;
  auto wrong = ClusterMembership::open(*c.client, config_for(3, "AAAAAAAAAAAAAAAAAAAAAA"), &error);
  CHECK_FALSE(wrong);
  CHECK(error.find("AAAAAAAAAAAAAAAAAAAAAA") != std::string::npos);
  CHECK(error.find("Zm9vYmFyYmF6cXV4cXV1eA") != std::string::npos);
  CHECK(error.find("wrong cluster") != std::string::npos);
}

TEST_CASE("when the controller's session expires another broker takes over with a higher epoch") {
  Cluster c;
  c.add(1);
  c.add(2);
  c.add(3);
  for (const auto& m : c.members) REQUIRE(eventually(*m, [](const ClusterView& v) { return v.controller_id > 0; }));
  const int32_t first = c.members[0]->view()->controller_id;
  ClusterMembership& old = *c.members[first - 1];
  const int64_t old_epoch = old.view()->broker_epoch;

  // Expire the controller's session (as ZooKeeper does after a kill -9 or
  // a long pause): its ephemerals go, the others elect.
  auto reader = c.reader();
  std::string data;
  zk::Stat st;
  REQUIRE(reader->get("/brokers/ids/" + std::to_string(first), &data, &st) == zk::Code::kOk);
  c.server.expire_session(st.ephemeral_owner);

  for (const auto& m : c.members)
    REQUIRE(eventually(*m, [&](const ClusterView& v) { return v.controller_id > 0 && v.controller_epoch == 2; }));
  // The expired broker came back with a new session and a new broker epoch.
  REQUIRE(eventually(old, [&](const ClusterView& v) { return v.broker_epoch > old_epoch && v.brokers.size() == 3; }));
  CHECK(old.session_expirations() == 1);
  CHECK(count_controllers(c) == 1);
  REQUIRE(reader->get("/controller_epoch", &data) == zk::Code::kOk);
  CHECK(data == "2");
}

TEST_CASE("a registration left by an earlier session is waited out") {
  Cluster c;
  c.add(1);
  auto stale = c.stale_registration(2);
  const int64_t stale_id = stale->session_id();

  std::string error;
  auto m = ClusterMembership::open(*c.client, config_for(2), &error);
  REQUIRE(m);
  bool started = false;
  std::thread starter([&] { started = m->start(endpoints_for(2), 5000, &error); });
  // Expire the holder once start() has found the node held and retried.
  const auto end = std::chrono::steady_clock::now() + 5s;
  while (m->registration_attempts() < 2 && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(2ms);
  const uint64_t attempts_while_held = m->registration_attempts();
  c.server.expire_session(stale_id);
  starter.join();
  CHECK(attempts_while_held >= 2);
  INFO(error);
  REQUIRE(started);
  auto reader = c.reader();
  std::string data;
  zk::Stat st;
  REQUIRE(reader->get("/brokers/ids/2", &data, &st) == zk::Code::kOk);
  CHECK(st.ephemeral_owner != stale_id);
  CHECK(decode_broker_registration(data).ok());

  // Held for longer than the deadline: start() gives up and says why.
  REQUIRE(stale.get() != nullptr);
  auto holder = c.reader();
  REQUIRE(holder->create("/brokers/ids/5", "{}", zk::CreateMode::kEphemeral) == zk::Code::kOk);
  auto blocked = ClusterMembership::open(*c.client, config_for(5), &error);
  REQUIRE(blocked);
  CHECK_FALSE(blocked->start(endpoints_for(5), 200, &error));
  CHECK(error.find("broker.id 5 is registered by another live broker") != std::string::npos);
}

TEST_CASE("a session that expires while start() waits out a stale registration is replaced, not fatal") {
  // A broker restarted right after a kill -9 waits for its old registration;
  // paused meanwhile (chaos runs SIGSTOP it) past the session timeout, its
  // own new session expires too. It used to give up and exit.
  Cluster c;
  c.add(1);
  auto stale = c.stale_registration(3);
  const int64_t stale_id = stale->session_id();
  const std::vector<int64_t> before = c.server.session_ids();

  std::string error;
  auto m = ClusterMembership::open(*c.client, config_for(3), &error);
  REQUIRE(m);
  std::vector<int64_t> mine;
  for (int64_t id : c.server.session_ids())
    if (std::find(before.begin(), before.end(), id) == before.end()) mine.push_back(id);
  REQUIRE(mine.size() == 1);
  bool started = false;
  std::thread starter([&] { started = m->start(endpoints_for(3), 5000, &error); });
  const auto end = std::chrono::steady_clock::now() + 5s;
  while (m->registration_attempts() < 2 && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(2ms);
  REQUIRE(c.server.expire_session(mine[0]));  // its own session first
  const uint64_t attempts = m->registration_attempts();
  while (m->registration_attempts() < attempts + 2 && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(2ms);
  c.server.expire_session(stale_id);  // then the old registration goes
  starter.join();
  INFO(error);
  REQUIRE(started);
  auto reader = c.reader();
  zk::Stat st;
  std::string data;
  REQUIRE(reader->get("/brokers/ids/3", &data, &st) == zk::Code::kOk);
  CHECK(st.ephemeral_owner != stale_id);
  CHECK(st.ephemeral_owner != mine[0]);
  // The replaced session's expiry is not replayed as a bounce: the
  // registration stays the one start() made.
  CHECK(eventually(*m, [](const ClusterView& v) { return v.brokers.size() == 2; }));
  zk::Stat again;
  REQUIRE(reader->get("/brokers/ids/3", &data, &again) == zk::Code::kOk);
  CHECK(again.czxid == st.czxid);
  CHECK(m->session_expirations() == 0);
}

TEST_CASE("an outage leaves the view as it was - on return everything is registered") {
  Cluster c;
  c.add(1);
  c.add(2);
  for (const auto& m : c.members)
    REQUIRE(eventually(*m, [](const ClusterView& v) { return v.brokers.size() == 2 && v.controller_id > 0; }));
  std::vector<uint64_t> gens, failed;
  for (const auto& m : c.members) {
    gens.push_back(m->view()->generation);
    failed.push_back(m->failed_syncs());
  }
  c.server.set_available(false);
  // Each member syncs against the outage, fails, and retries after its
  // backoff: wait until each has failed twice, then its view must be the
  // one it had.
  for (size_t i = 0; i < c.members.size(); ++i) {
    ClusterMembership& m = *c.members[i];
    m.request_sync();
    const auto end = std::chrono::steady_clock::now() + 5s;
    while (m.failed_syncs() < failed[i] + 2 && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(2ms);  // polling a counter; no ordering relies on it
    REQUIRE(m.failed_syncs() >= failed[i] + 2);
    CHECK(m.view()->brokers.size() == 2);
    CHECK(m.view()->controller_id > 0);
    CHECK(m.view()->generation == gens[i]);
  }
  c.server.set_available(true);
  c.add(3);
  for (const auto& m : c.members)
    REQUIRE(eventually(*m, [](const ClusterView& v) { return v.brokers.size() == 3 && v.controller_id > 0; }));
  CHECK(count_controllers(c) == 1);
}

TEST_CASE("a clean stop removes the registration and hands the controller over at once") {
  Cluster c;
  c.add(1);
  c.add(2);
  for (const auto& m : c.members) REQUIRE(eventually(*m, [](const ClusterView& v) { return v.controller_id > 0; }));
  const int32_t ctl = c.members[0]->view()->controller_id;
  c.members[ctl - 1]->stop();
  ClusterMembership& other = *c.members[ctl == 1 ? 1 : 0];
  REQUIRE(eventually(other, [&](const ClusterView& v) {
    return v.this_is_controller && v.brokers.size() == 1 && v.controller_epoch == 2;
  }));
}

}  // namespace
}  // namespace ciuickafka::replication

namespace ciuickafka::replication {

TEST_CASE("the election's winner is handed the session and the epoch's zkVersion - expiry takes the role back") {
  zk::FakeZkServer server;
  auto client = server.client();
  std::string error;
  auto m = ClusterMembership::open(*client, config_for(1), &error);
  REQUIRE(m);
  struct Handover {
    std::shared_ptr<zk::Session> session;
    int32_t epoch = 0;
    int32_t zk_version = -1;
  };
  std::mutex mu;
  std::vector<Handover> handovers;
  std::vector<bool> role_changes;
  MembershipListener l;
  l.became_controller = [&](std::shared_ptr<zk::Session> s, int32_t epoch, int32_t zk_version) {
    std::lock_guard<std::mutex> lock(mu);
    handovers.push_back({std::move(s), epoch, zk_version});
  };
  l.controller_changed = [&](bool is) {
    std::lock_guard<std::mutex> lock(mu);
    role_changes.push_back(is);
  };
  m->set_listener(l);
  REQUIRE(m->start(endpoints_for(1), 5000, &error));
  auto count = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return handovers.size();
  };
  REQUIRE(eventually(*m, [&](const ClusterView&) { return count() == 1; }));
  zk::ConnectOptions o;
  o.connect = "fake:2181/kafka";
  auto reader = client->connect(o, {}, &error);
  REQUIRE(reader);
  std::string data;
  zk::Stat st;
  REQUIRE(reader->get("/controller_epoch", &data, &st) == zk::Code::kOk);
  Handover first;
  {
    std::lock_guard<std::mutex> lock(mu);
    first = handovers[0];
    REQUIRE(role_changes == std::vector<bool>{true});
  }
  CHECK(first.session != nullptr);
  CHECK(first.epoch == 1);
  CHECK(data == "1");
  CHECK(first.zk_version == st.version);
  // The token fences: a check on it passes on the handed session.
  const zk::Op check[] = {zk::Op::check("/controller_epoch", first.zk_version)};
  std::vector<zk::OpResult> results;
  CHECK(first.session->multi(check, &results) == zk::Code::kOk);

  // Session expiry: the role is taken back, then won again on a new session.
  REQUIRE(server.expire_session(first.session->session_id()));
  REQUIRE(eventually(*m, [&](const ClusterView&) { return count() == 2; }));
  std::lock_guard<std::mutex> lock(mu);
  CHECK(role_changes == std::vector<bool>{true, false, true});
  CHECK(handovers[1].epoch == 2);
  CHECK(handovers[1].zk_version == first.zk_version + 1);
  CHECK(handovers[1].session != first.session);
  handovers.clear();  // release the sessions before the membership stops
  first.session.reset();
}

}  // namespace ciuickafka::replication
