// tests/unit/replication/zk_contract.cc: the contract cases themselves. Each
// SECTION works under its own base path, so sections can share one server.
#include "tests/unit/replication/zk_contract.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>

namespace ciuickafka::replication::zk::testing {
namespace {

std::atomic<int> g_base{0};

std::string fresh_base(Session& s) {
  const std::string base = "/t" + std::to_string(::getpid()) + "-" + std::to_string(g_base++);
  REQUIRE(s.create(base, "", CreateMode::kPersistent) == Code::kOk);
  return base;
}

// Waits until every event the server sent s before now has been delivered:
// watch a fresh node, create it, wait for that event (events are delivered
// in order).
void barrier(Backend& b, Session& s, const std::string& base) {
  static std::atomic<int> n{0};
  const std::string path = base + "/barrier" + std::to_string(n++);
  Recorder r;
  REQUIRE(s.exists(path, nullptr, r.watch()) == Code::kNoNode);
  REQUIRE(s.create(path, "", CreateMode::kPersistent) == Code::kOk);
  REQUIRE(r.wait_events(1, b.event_timeout()));
}

std::vector<std::string> sorted_children(Session& s, const std::string& path) {
  std::vector<std::string> out;
  REQUIRE(s.children(path, &out) == Code::kOk);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::unique_ptr<Session> connect_or_fail(Backend& b, const std::string& connect, StateFn on_state,
                                         int32_t session_timeout_ms) {
  ConnectOptions o;
  o.connect = connect;
  o.session_timeout_ms = session_timeout_ms;
  o.connection_timeout_ms = 15000;
  std::string error;
  auto s = b.client().connect(o, std::move(on_state), &error);
  INFO(error);
  REQUIRE(s != nullptr);
  return s;
}

void run_contract(Backend& b) {
  auto s = connect_or_fail(b, b.connect_string());
  const std::string base = fresh_base(*s);
  const auto timeout = b.event_timeout();

  SECTION("create, get, set and remove honour versions") {
    const std::string a = base + "/a";
    std::string made;
    REQUIRE(s->create(a, "x", CreateMode::kPersistent, &made) == Code::kOk);
    CHECK(made == a);
    CHECK(s->create(a, "again", CreateMode::kPersistent) == Code::kNodeExists);
    std::string data;
    Stat st;
    REQUIRE(s->get(a, &data, &st) == Code::kOk);
    CHECK(data == "x");
    CHECK(st.version == 0);
    CHECK(st.ephemeral_owner == 0);
    CHECK(st.czxid > 0);
    CHECK(st.mzxid == st.czxid);
    CHECK(st.ctime > 0);
    CHECK(s->set(a, "y", 1) == Code::kBadVersion);
    Stat st2;
    REQUIRE(s->set(a, "y", 0, &st2) == Code::kOk);
    CHECK(st2.version == 1);
    CHECK(st2.czxid == st.czxid);
    CHECK(st2.mzxid > st.mzxid);
    REQUIRE(s->get(a, &data) == Code::kOk);
    CHECK(data == "y");
    REQUIRE(s->set(a, "", -1) == Code::kOk);
    REQUIRE(s->get(a, &data, &st) == Code::kOk);
    CHECK(data.empty());
    CHECK(st.version == 2);
    Stat parent;
    REQUIRE(s->exists(base, &parent) == Code::kOk);
    CHECK(parent.num_children == 1);
    CHECK(s->remove(a, 0) == Code::kBadVersion);
    CHECK(s->remove(a, 2) == Code::kOk);
    CHECK(s->get(a, &data) == Code::kNoNode);
    CHECK(s->exists(a) == Code::kNoNode);
    CHECK(s->set(a, "z", -1) == Code::kNoNode);
    CHECK(s->remove(a) == Code::kNoNode);
    CHECK(s->create(base + "/missing/child", "", CreateMode::kPersistent) == Code::kNoNode);
    CHECK(s->create("no-slash", "", CreateMode::kPersistent) == Code::kBadArguments);
    CHECK(s->get(base + "/", &data) == Code::kBadArguments);
    REQUIRE(s->exists(base, &parent) == Code::kOk);
    CHECK(parent.num_children == 0);
    CHECK(parent.cversion == 2);  // one create, one delete
  }

  SECTION("a node with children cannot be removed") {
    REQUIRE(s->create(base + "/p", "", CreateMode::kPersistent) == Code::kOk);
    REQUIRE(s->create(base + "/p/c", "", CreateMode::kPersistent) == Code::kOk);
    CHECK(s->remove(base + "/p") == Code::kNotEmpty);
    CHECK(s->remove(base + "/p/c") == Code::kOk);
    CHECK(s->remove(base + "/p") == Code::kOk);
  }

  SECTION("ephemeral nodes belong to their session and go with it") {
    const std::string e = base + "/e";
    auto owner = connect_or_fail(b, b.connect_string());
    REQUIRE(owner->create(e, "1", CreateMode::kEphemeral) == Code::kOk);
    Stat st;
    REQUIRE(s->exists(e, &st) == Code::kOk);
    CHECK(st.ephemeral_owner == owner->session_id());
    CHECK(st.ephemeral_owner != s->session_id());
    CHECK(s->create(e + "/child", "", CreateMode::kPersistent) == Code::kNoChildrenForEphemerals);
    owner.reset();  // a clean close deletes the session at once
    CHECK(s->exists(e) == Code::kNoNode);
    auto again = connect_or_fail(b, b.connect_string());
    REQUIRE(again->create(e, "2", CreateMode::kEphemeral) == Code::kOk);
    Stat st2;
    REQUIRE(s->exists(e, &st2) == Code::kOk);
    CHECK(st2.czxid > st.czxid);  // the broker epoch grows
    CHECK(st2.ephemeral_owner == again->session_id());
  }

  SECTION("sequential names come from the parent's cversion") {
    const std::string q = base + "/q";
    REQUIRE(s->create(q, "", CreateMode::kPersistent) == Code::kOk);
    std::string p0, p1, p2;
    REQUIRE(s->create(q + "/n-", "", CreateMode::kPersistentSequential, &p0) == Code::kOk);
    CHECK(p0 == q + "/n-0000000000");
    REQUIRE(s->create(q + "/n-", "", CreateMode::kEphemeralSequential, &p1) == Code::kOk);
    CHECK(p1 == q + "/n-0000000001");
    REQUIRE(s->create(q + "/plain", "", CreateMode::kPersistent) == Code::kOk);
    REQUIRE(s->remove(q + "/plain") == Code::kOk);
    Stat qs;
    REQUIRE(s->exists(q, &qs) == Code::kOk);
    CHECK(qs.cversion == 4);  // three creates and a delete
    REQUIRE(s->create(q + "/m", "", CreateMode::kPersistentSequential, &p2) == Code::kOk);
    CHECK(p2 == q + "/m0000000003");  // creates counted, not deletes
    Stat st;
    REQUIRE(s->exists(p1, &st) == Code::kOk);
    CHECK(st.ephemeral_owner == s->session_id());
  }

  SECTION("children lists names") {
    REQUIRE(s->create(base + "/k", "", CreateMode::kPersistent) == Code::kOk);
    CHECK(sorted_children(*s, base + "/k").empty());
    REQUIRE(s->create(base + "/k/b", "", CreateMode::kPersistent) == Code::kOk);
    REQUIRE(s->create(base + "/k/a", "", CreateMode::kEphemeral) == Code::kOk);
    CHECK(sorted_children(*s, base + "/k") == std::vector<std::string>{"a", "b"});
    std::vector<std::string> out;
    CHECK(s->children(base + "/none", &out) == Code::kNoNode);
  }

  SECTION("each watch fires once with its event type") {
    auto other = connect_or_fail(b, b.connect_string());
    const std::string w = base + "/w";
    REQUIRE(s->create(w, "0", CreateMode::kPersistent) == Code::kOk);
    Recorder data_w, exists_w, child_w, gone_w, own_child_w, missing_w;
    std::string data;
    REQUIRE(s->get(w, &data, nullptr, data_w.watch()) == Code::kOk);
    REQUIRE(s->exists(base + "/x", nullptr, exists_w.watch()) == Code::kNoNode);
    REQUIRE(s->children(base, nullptr, child_w.watch()) == Code::kOk);
    REQUIRE(s->get(base + "/none", &data, nullptr, missing_w.watch()) == Code::kNoNode);
    // Changes by another session, each twice: every watch fires once.
    REQUIRE(other->set(w, "1", -1) == Code::kOk);
    REQUIRE(other->set(w, "2", -1) == Code::kOk);
    REQUIRE(other->create(base + "/x", "", CreateMode::kPersistent) == Code::kOk);
    REQUIRE(other->create(base + "/none", "", CreateMode::kPersistent) == Code::kOk);
    REQUIRE(data_w.wait_events(1, timeout));
    REQUIRE(exists_w.wait_events(1, timeout));
    REQUIRE(child_w.wait_events(1, timeout));
    REQUIRE(s->exists(base + "/x", nullptr, gone_w.watch()) == Code::kOk);
    REQUIRE(s->children(base + "/x", nullptr, own_child_w.watch()) == Code::kOk);
    REQUIRE(other->remove(base + "/x") == Code::kOk);
    REQUIRE(gone_w.wait_events(1, timeout));
    REQUIRE(own_child_w.wait_events(1, timeout));
    barrier(b, *s, base);
    using E = Recorder::Event;
    CHECK(data_w.events() == std::vector<E>{{EventType::kDataChanged, w}});
    CHECK(exists_w.events() == std::vector<E>{{EventType::kCreated, base + "/x"}});
    CHECK(child_w.events() == std::vector<E>{{EventType::kChildrenChanged, base}});
    CHECK(gone_w.events() == std::vector<E>{{EventType::kDeleted, base + "/x"}});
    CHECK(own_child_w.events() == std::vector<E>{{EventType::kDeleted, base + "/x"}});
    CHECK(missing_w.events().empty());  // a get on a missing node sets no watch
  }

  SECTION("a data watch sees the delete") {
    REQUIRE(s->create(base + "/d", "", CreateMode::kPersistent) == Code::kOk);
    Recorder r;
    std::string data;
    REQUIRE(s->get(base + "/d", &data, nullptr, r.watch()) == Code::kOk);
    REQUIRE(s->remove(base + "/d") == Code::kOk);
    REQUIRE(r.wait_events(1, timeout));
    barrier(b, *s, base);
    CHECK(r.events() == std::vector<Recorder::Event>{{EventType::kDeleted, base + "/d"}});
  }

  SECTION("multi applies all or nothing") {
    REQUIRE(s->create(base + "/m0", "a", CreateMode::kPersistent) == Code::kOk);
    REQUIRE(s->create(base + "/m2", "", CreateMode::kPersistent) == Code::kOk);
    const std::vector<Op> ok_ops{Op::check(base + "/m0", 0), Op::create(base + "/m1", "n"),
                                 Op::set_data(base + "/m0", "b", 0), Op::remove(base + "/m2", -1),
                                 Op::create(base + "/s-", "", CreateMode::kPersistentSequential)};
    std::vector<OpResult> res;
    REQUIRE(s->multi(ok_ops, &res) == Code::kOk);
    REQUIRE(res.size() == 5);
    for (const OpResult& r : res) CHECK(r.code == Code::kOk);
    CHECK(res[1].created_path == base + "/m1");
    CHECK(res[2].stat.version == 1);
    CHECK(res[4].created_path == base + "/s-0000000003");
    CHECK(s->exists(base + "/m2") == Code::kNoNode);

    const std::vector<Op> bad_ops{Op::create(base + "/n1", ""), Op::set_data(base + "/m0", "c", -1),
                                  Op::check(base + "/m0", 0), Op::create(base + "/n2", "")};
    REQUIRE(s->multi(bad_ops, &res) == Code::kBadVersion);
    REQUIRE(res.size() == 4);
    CHECK(res[0].code == Code::kOk);  // before the failing op
    CHECK(res[1].code == Code::kOk);
    CHECK(res[2].code == Code::kBadVersion);
    CHECK(res[3].code == Code::kRuntimeInconsistency);  // after it
    CHECK(s->exists(base + "/n1") == Code::kNoNode);
    std::string data;
    Stat st;
    REQUIRE(s->get(base + "/m0", &data, &st) == Code::kOk);
    CHECK(data == "b");
    CHECK(st.version == 1);

    const std::vector<Op> missing{Op::remove(base + "/nothing", -1)};
    CHECK(s->multi(missing, &res) == Code::kNoNode);
    REQUIRE(res.size() == 1);
    CHECK(res[0].code == Code::kNoNode);
  }

  SECTION("a chroot is created and isolates") {
    const std::string root = base + "/root/deep";
    Recorder r;
    auto c = connect_or_fail(b, b.connect_string() + root);
    REQUIRE(s->exists(root) == Code::kOk);
    REQUIRE(c->exists("/x", nullptr, r.watch()) == Code::kNoNode);
    std::string made;
    REQUIRE(c->create("/x", "in", CreateMode::kPersistent) == Code::kOk);
    REQUIRE(c->create("/s-", "", CreateMode::kEphemeralSequential, &made) == Code::kOk);
    CHECK(made == "/s-0000000001");
    std::string data;
    REQUIRE(s->get(root + "/x", &data) == Code::kOk);
    CHECK(data == "in");
    CHECK(sorted_children(*c, "/") == std::vector<std::string>{"s-0000000001", "x"});
    REQUIRE(r.wait_events(1, timeout));
    CHECK(r.events() == std::vector<Recorder::Event>{{EventType::kCreated, "/x"}});
    std::vector<OpResult> res;
    REQUIRE(c->multi(std::vector<Op>{Op::create("/y", "")}, &res) == Code::kOk);
    CHECK(res.at(0).created_path == "/y");
  }

  SECTION("an expired session loses its ephemerals and stays dead") {
    Recorder r;
    auto doomed = connect_or_fail(b, b.expirable_connect_string(), r.state(), 1500);
    REQUIRE(doomed->create(base + "/eph", "", CreateMode::kEphemeral) == Code::kOk);
    Recorder w;
    REQUIRE(doomed->exists(base + "/eph", nullptr, w.watch()) == Code::kOk);
    std::string error;
    const bool expired = b.expire(*doomed, &error);
    INFO(error);
    REQUIRE(expired);
    REQUIRE(r.wait_state(SessionState::kExpired, 0, timeout));
    CHECK(s->exists(base + "/eph") == Code::kNoNode);
    CHECK(doomed->exists(base + "/eph") == Code::kSessionExpired);
    CHECK(doomed->create(base + "/more", "", CreateMode::kPersistent) == Code::kSessionExpired);
    barrier(b, *s, base);
    CHECK(w.events().empty());  // an expired session's watches are dropped
  }
}

}  // namespace ciuickafka::replication::zk::testing
