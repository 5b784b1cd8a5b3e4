// tests/unit/server/connection_limits_test.cc: the broker-wide bounds of
// the network side against a real Server on 127.0.0.1:0:
// max.connections.per.ip (and its overrides) closes the connection over the
// limit at once; max.connections pauses accepting until a connection closes,
// refusing nothing; queued.max.requests pauses reading of pipelined requests
// across connections and drops nothing; the config checks name key and value;
// socket.send/receive.buffer.bytes reach the socket; num.network.threads
// grows and shrinks live.
#include <catch2/catch.hpp>

#include <mutex>

#include "broker/admin/dynamic_configs.h"
#include "broker/server/connection_rate.h"
#include "broker/server/socket_options.h"
#include "tests/unit/server/server_test_util.h"

namespace ciuickafka::broker::test {
// A namespace of this file's own (tests/CMakeLists.txt: the tests are unity
// builds), so that its helpers do not clash with a sibling file's.
namespace CK_UNITY_ID {

namespace {

std::string load_error(std::vector<std::string> overrides) {
  config::ConfigInput in;
  in.overrides = std::move(overrides);
  auto loaded = config::load_config(in);
  return loaded.is_ok() ? std::string() : loaded.error().message;
}

TEST_CASE("max.connections.per.ip closes a connection over the limit at once - a freed slot admits again") {
  ServerFixture fx({"max.connections.per.ip=2"});
  auto c1 = std::make_unique<RawClient>(fx.port());
  RawClient c2(fx.port());
  REQUIRE(served(*c1, 1));
  REQUIRE(served(c2, 2));
  RawClient c3(fx.port());     // the TCP handshake succeeds (the kernel's backlog) ...
  CHECK(c3.closed_by_peer());  // ... then the broker closes it, reading nothing
  CHECK(fx.server().refused_per_ip() == 1);
  CHECK(fx.server().connection_count() == 2);
  c1.reset();
  REQUIRE(eventually([&] { return fx.server().connection_count() == 1; }));
  RawClient c4(fx.port());
  CHECK(served(c4, 4));
  CHECK(fx.server().refused_per_ip() == 1);
}

TEST_CASE("max.connections.per.ip.overrides sets the limit of one address") {
  SECTION("raised above the default") {
    ServerFixture fx({"max.connections.per.ip=1", "max.connections.per.ip.overrides=10.9.9.9:0, 127.0.0.1:3"});
    RawClient a(fx.port()), b(fx.port()), c(fx.port());
    CHECK(served(a, 1));
    CHECK(served(b, 2));
    CHECK(served(c, 3));
    RawClient d(fx.port());
    CHECK(d.closed_by_peer());
    CHECK(fx.server().refused_per_ip() == 1);
  }
  SECTION("a default of 0 with an override letting one address in") {
    ServerFixture fx({"max.connections.per.ip=0", "max.connections.per.ip.overrides=127.0.0.1:1"});
    RawClient a(fx.port());
    CHECK(served(a, 1));
    RawClient b(fx.port());
    CHECK(b.closed_by_peer());
  }
  SECTION("an override of 0 refuses that address entirely") {
    ServerFixture fx({"max.connections.per.ip.overrides=127.0.0.1:0"});
    RawClient a(fx.port());
    CHECK(a.closed_by_peer());
    CHECK(fx.server().refused_per_ip() == 1);
  }
}

TEST_CASE("max.connections pauses accepting until a connection closes, refusing nothing") {
  ServerFixture fx({"max.connections=2"});
  auto c1 = std::make_unique<RawClient>(fx.port());
  RawClient c2(fx.port());
  REQUIRE(served(*c1, 1));
  REQUIRE(served(c2, 2));
  // The third completes its handshake in the listen backlog and sends a
  // request; the acceptor has paused, so nobody reads it.
  RawClient c3(fx.port());
  REQUIRE(c3.send_all(api_versions_request(3)));
  REQUIRE(eventually([&] { return fx.server().acceptor_pauses() >= 1; }));
  CHECK(fx.server().connection_count() == 2);
  c1.reset();  // a slot frees: c3 is accepted and answered
  auto f = c3.recv_frame();
  REQUIRE(f);
  CHECK(be32(f->data()) == 3);
  CHECK(fx.server().connection_count() == 2);
  CHECK(fx.server().refused_per_ip() == 0);
  CHECK(served(c2, 4));
}


std::vector<uint8_t> frames(int from, int to) {
  std::vector<uint8_t> all;
  for (int i = from; i < to; ++i) {
    auto f = be32_bytes(8);
    f.insert(f.end(), {0, 99, 0, 0});
    auto c = be32_bytes(i);
    f.insert(f.end(), c.begin(), c.end());
    all.insert(all.end(), f.begin(), f.end());
  }
  return all;
}

TEST_CASE("queued.max.requests pauses reading of pipelined requests across connections - nothing is dropped") {
  Holder h;
  ServerFixture fx({"queued.max.requests=3"}, h.dispatcher());
  RawClient a(fx.port());
  RawClient b(fx.port());
  // a pipelines six: its first is free, the next two take two of the three
  // slots, and its per-connection cap (min(16, 3)) stops it there.
  REQUIRE(a.send_all(frames(0, 6)));
  REQUIRE(h.wait_for(3));
  REQUIRE(eventually([&] { return fx.server().budget().requests_in_use() == 2; }));
  // b's first is its only request in flight (free); its second takes the
  // last slot; its third waits for the broker-wide bound.
  REQUIRE(b.send_all(frames(10, 13)));
  REQUIRE(h.wait_for(5));
  REQUIRE(eventually([&] { return fx.server().budget().waiting() == 1; }));
  CHECK(h.count() == 5);
  CHECK(fx.server().budget().requests_in_use() == 3);
  // Answering one of a's pipelined requests gives its slot to b.
  h.answer(1);
  REQUIRE(h.wait_for(6));
  CHECK(fx.server().budget().requests_in_use() == 3);
  // Answer everything as it arrives: all eleven get through, in order.
  size_t answered_upto = 0;
  std::vector<bool> done(9, false);
  done[1] = true;
  while (answered_upto < 9) {
    REQUIRE(h.wait_for(answered_upto + 1));
    const size_t n = h.count();
    for (size_t i = 0; i < n; ++i)
      if (!done[i]) {
        h.answer(i);
        done[i] = true;
      }
    answered_upto = n;
  }
  std::vector<int32_t> got_a, got_b;
  for (int i = 0; i < 6; ++i) {
    auto f = a.recv_frame();
    REQUIRE(f);
    got_a.push_back(be32(f->data()));
  }
  for (int i = 0; i < 3; ++i) {
    auto f = b.recv_frame();
    REQUIRE(f);
    got_b.push_back(be32(f->data()));
  }
  CHECK(got_a == std::vector<int32_t>{0, 1, 2, 3, 4, 5});
  CHECK(got_b == std::vector<int32_t>{10, 11, 12});
  CHECK(eventually([&] { return fx.server().budget().requests_in_use() == 0; }));
  CHECK(fx.server().budget().waits() >= 1);
}

TEST_CASE("A connection pipelines at most min(16, queued.max.requests) requests") {
  Holder h;
  ServerFixture fx({"queued.max.requests=3"}, h.dispatcher());
  RawClient a(fx.port());
  REQUIRE(a.send_all(frames(0, 6)));
  REQUIRE(h.wait_for(3));
  // The fourth is read only after one is answered (the per-connection cap of
  // 3 and the broker-wide bound agree here: 1 free + 2 counted = 3).
  h.answer(0);
  REQUIRE(h.wait_for(4));
  for (size_t i = 1; i < 4; ++i) h.answer(i);
  REQUIRE(h.wait_for(6));
  for (size_t i = 4; i < 6; ++i) h.answer(i);
  for (int i = 0; i < 6; ++i) {
    auto f = a.recv_frame();
    REQUIRE(f);
    CHECK(be32(f->data()) == i);
  }
}

TEST_CASE("Connection limit keys are checked with the key and value named") {
  CHECK_THAT(load_error({"max.connections.per.ip=0"}),
             Catch::Contains("max.connections.per.ip") && Catch::Contains("\"0\"") &&
                 Catch::Contains("max.connections.per.ip.overrides"));
  CHECK(load_error({"max.connections.per.ip=0", "max.connections.per.ip.overrides=127.0.0.1:5"}).empty());
  CHECK_THAT(load_error({"max.connections.per.ip.overrides=127.0.0.1"}),
             Catch::Contains("max.connections.per.ip.overrides") && Catch::Contains("127.0.0.1"));
  CHECK_THAT(load_error({"max.connections.per.ip.overrides=h:-1"}), Catch::Contains("h:-1"));
  CHECK_THAT(load_error({"max.connections=-1"}), Catch::Contains("max.connections") && Catch::Contains("-1"));
  CHECK_THAT(load_error({"queued.max.request.bytes=0"}),
             Catch::Contains("queued.max.request.bytes") && Catch::Contains("\"0\""));
  CHECK(load_error({"queued.max.request.bytes=-1"}).empty());
  CHECK(load_error({"max.connections.per.ip.overrides=[::1]:4, ::2:5 ,host-a:7"}).empty());
  auto o = config::parse_ip_overrides("[::1]:4, ::2:5 ,host-a:7");
  REQUIRE(o);
  REQUIRE(o->size() == 3);
  CHECK((*o)[0].host == "::1");
  CHECK((*o)[1].host == "::2");
  CHECK((*o)[1].max == 5);
  CHECK((*o)[2].host == "host-a");
}

TEST_CASE("Connection limits are dynamic broker configs: new connections get the new limits") {
  ServerFixture fx({"max.connections.per.ip=1"});
  auto& dyn = fx.broker().service<admin::DynamicConfigs>();
  // 0 without an override is refused as at start-up; nothing changes.
  auto refused = dyn.replace(false, {{"max.connections.per.ip", "0"}}, false);
  CHECK(refused.code == protocol::ErrorCode::INVALID_REQUEST);
  CHECK_THAT(refused.message, Catch::Contains("max.connections.per.ip") && Catch::Contains("overrides"));
  CHECK(fx.broker().config().get_int("max.connections.per.ip") == 1);
  RawClient a(fx.port());
  REQUIRE(served(a, 1));
  RawClient b(fx.port());
  CHECK(b.closed_by_peer());
  REQUIRE(dyn.replace(false, {{"max.connections.per.ip", "2"}}, false).ok());
  RawClient c(fx.port());
  CHECK(served(c, 2));
  // Lowered again: the open connections stay, a new one is refused.
  REQUIRE(dyn.replace(false, {{"max.connections.per.ip", "1"}}, false).ok());
  CHECK(served(a, 3));
  CHECK(served(c, 4));
  RawClient d(fx.port());
  CHECK(d.closed_by_peer());
  // An override for this address, set for every broker.
  REQUIRE(dyn.replace(true, {{"max.connections.per.ip.overrides", "127.0.0.1:3"}}, false).ok());
  RawClient e(fx.port());
  CHECK(served(e, 5));
  RawClient g(fx.port());
  CHECK(g.closed_by_peer());
  CHECK(fx.server().refused_per_ip() == 3);
}

TEST_CASE("max.connections raised by a dynamic config resumes a paused acceptor") {
  ServerFixture fx({"max.connections=1"});
  RawClient a(fx.port());
  REQUIRE(served(a, 1));
  RawClient b(fx.port());
  REQUIRE(b.send_all(api_versions_request(2)));
  REQUIRE(eventually([&] { return fx.server().acceptor_pauses() >= 1; }));
  CHECK(fx.server().connection_count() == 1);
  REQUIRE(fx.broker().service<admin::DynamicConfigs>().replace(true, {{"max.connections", "2"}}, false).ok());
  auto f = b.recv_frame();  // accepted and answered while a stays open
  REQUIRE(f);
  CHECK(be32(f->data()) == 2);
  CHECK(fx.server().connection_count() == 2);
}

TEST_CASE("ConnectionRate measures and limits as Kafka's connection rate quota (sampled windows, bounded wait)") {
  // quota.window.num 11, quota.window.size.seconds 1 (Kafka's defaults):
  // the rate is taken over at least 10 s, so a fresh broker accepts a burst
  // of 10 x the quota before the first wait.
  ConnectionRate r(11, 1000);
  const int64_t t0 = 1'000'000;
  for (int i = 1; i <= 20; ++i) CHECK(r.record(t0, 2) == 0);  // 20 / 10 s = 2/s: within
  CHECK(r.rate(t0) == Approx(2.0));
  // The 21st: 2.1/s, over by 0.1 of the quota: wait 0.05 x 10 s.
  CHECK(r.record(t0, 2) == 500);
  // Far over: the wait is at most one window.
  for (int i = 0; i < 100; ++i) (void)r.record(t0 + 1, 2);
  CHECK(r.record(t0 + 2, 2) == 1000);
  // Once every window has passed with no record, the count is gone.
  CHECK(r.rate(t0 + 11 * 1000 + 2) == Approx(0.0));
  CHECK(r.record(t0 + 11 * 1000 + 2, 2) == 0);
  // Quota 0: every connection waits one window.
  ConnectionRate zero(11, 1000);
  CHECK(zero.record(t0, 0) == 1000);
  // Two samples of 2 s: the rate is taken over at least one window (2 s).
  ConnectionRate small(2, 2000);
  CHECK(small.record(t0, 1) == 0);
  CHECK(small.record(t0, 1) == 0);  // 2 / 2 s
  CHECK(small.record(t0, 1) == 1000);  // 1.5/s: over by half, half of 2 s
  // A steady rate of half the quota never waits over many windows; one at
  // the quota does once the current window's record is counted with ten
  // whole ones (11 in 10 s), as in Kafka.
  ConnectionRate steady(11, 1000);
  for (int i = 0; i < 60; ++i) CHECK(steady.record(t0 + i * 2000, 1) == 0);
  CHECK(steady.rate(t0 + 59 * 2000) == Approx(0.6));
  ConnectionRate full(11, 1000);
  int64_t waited = 0;
  for (int i = 0; i < 30; ++i) waited += full.record(t0 + i * 1000, 1);
  CHECK(waited > 0);
}

TEST_CASE("max.connection.creation.rate holds a connection over the rate, then serves it - and is dynamic") {
  // Two samples of 2 s: a quota of 1 allows 2 connections in the first
  // window; the third waits (3 - 2) / 2 x 2 s = 1 s (not one is refused).
  ServerFixture fx({"max.connection.creation.rate=1", "quota.window.num=2", "quota.window.size.seconds=2"});
  RawClient a(fx.port()), b(fx.port());
  REQUIRE(served(a, 1));
  REQUIRE(served(b, 2));
  CHECK(fx.server().connections_throttled() == 0);
  RawClient c(fx.port(), 10000);
  REQUIRE(c.send_all(api_versions_request(3)));
  REQUIRE(eventually([&] { return fx.server().connections_throttled() == 1; }));
  // Held by the acceptor (its wait is a second): not a connection yet.
  CHECK(fx.server().connection_count() == 2);
  auto f = c.recv_frame();  // then handed on and answered
  REQUIRE(f);
  CHECK(be32(f->data()) == 3);
  CHECK(fx.server().connection_count() == 3);
  CHECK(fx.server().refused_per_ip() == 0);
  // Raised live: the next connections are not held.
  auto& dyn = fx.broker().service<admin::DynamicConfigs>();
  REQUIRE(dyn.replace(false, {{"max.connection.creation.rate", "1000"}}, false).ok());
  RawClient d(fx.port()), e(fx.port());
  CHECK(served(d, 4));
  CHECK(served(e, 5));
  CHECK(fx.server().connections_throttled() == 1);
  // A bad value names the key and changes nothing.
  auto bad = dyn.replace(false, {{"max.connection.creation.rate", "-1"}}, false);
  CHECK(bad.code == protocol::ErrorCode::INVALID_REQUEST);
  CHECK_THAT(bad.message, Catch::Contains("max.connection.creation.rate") && Catch::Contains("-1"));
  CHECK(fx.broker().config().get_int("max.connection.creation.rate") == 1000);
  // The window keys are read at start-up, as in Kafka.
  CHECK_FALSE(dyn.replace(false, {{"quota.window.num", "5"}}, false).ok());
  CHECK_THAT(load_error({"quota.window.num=0"}), Catch::Contains("quota.window.num") && Catch::Contains("\"0\""));
  CHECK_THAT(load_error({"quota.window.size.seconds=0"}), Catch::Contains("quota.window.size.seconds"));
}

// Two listeners: PLAINTEXT (bound_ports()[0]) and INTERNAL, the
// inter-broker one ([1]).
std::vector<std::string> two_listeners(std::vector<std::string> more) {
  std::vector<std::string> o{"listeners=PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
                             "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
                             "inter.broker.listener.name=INTERNAL"};
  o.insert(o.end(), more.begin(), more.end());
  return o;
}

TEST_CASE("listener.name.<l>.max.connections bounds one listener's connections - the other listener still accepts") {
  ServerFixture fx(two_listeners({"listener.name.plaintext.max.connections=1"}));
  const uint16_t plain = fx.server().bound_ports().at(0), internal = fx.server().bound_ports().at(1);
  auto a = std::make_unique<RawClient>(plain);
  REQUIRE(served(*a, 1));
  RawClient b(plain);
  REQUIRE(b.send_all(api_versions_request(2)));
  REQUIRE(eventually([&] { return fx.server().acceptor_pauses() >= 1; }));
  CHECK(fx.server().connection_count() == 1);
  RawClient i1(internal), i2(internal);
  CHECK(served(i1, 3));
  CHECK(served(i2, 4));
  a.reset();  // PLAINTEXT's slot frees: b is accepted and answered
  auto f = b.recv_frame();
  REQUIRE(f);
  CHECK(be32(f->data()) == 2);
  CHECK(fx.server().connection_count() == 3);
  CHECK(fx.server().refused_per_ip() == 0);
}

TEST_CASE("The inter-broker listener is exempt from max.connections, not from its own limit (the broker's by default)") {
  ServerFixture fx(two_listeners({"max.connections=1"}));
  const uint16_t plain = fx.server().bound_ports().at(0), internal = fx.server().bound_ports().at(1);
  RawClient p1(plain);
  REQUIRE(served(p1, 1));
  RawClient i1(internal);  // over the broker's limit, and served ...
  CHECK(served(i1, 2));
  CHECK(p1.closed_by_peer());  // ... and the client connection makes room
  REQUIRE(eventually([&] { return fx.server().connection_count() == 1; }));
  // Its own limit is max.connections (Kafka's valuesWithPrefixOverride):
  // a second inter-broker connection waits.
  RawClient i2(internal);
  REQUIRE(i2.send_all(api_versions_request(3)));
  REQUIRE(eventually([&] { return fx.server().acceptor_pauses() >= 1; }));
  CHECK(fx.server().connection_count() == 1);
  // Raised for that listener alone, live: it resumes; PLAINTEXT stays full
  // (nothing of another listener is left to close).
  auto& dyn = fx.broker().service<admin::DynamicConfigs>();
  REQUIRE(dyn.replace(false, {{"listener.name.internal.max.connections", "3"}}, false).ok());
  auto f = i2.recv_frame();
  REQUIRE(f);
  CHECK(be32(f->data()) == 3);
  RawClient p2(plain);
  REQUIRE(p2.send_all(api_versions_request(4)));
  REQUIRE(eventually([&] { return fx.server().acceptor_pauses() >= 2; }));
  CHECK(fx.server().connection_count() == 2);
  CHECK(fx.server().connections_evicted() == 1);
}

TEST_CASE("Inter-broker connections past max.connections close the least recently active client connection") {
  ServerFixture fx(two_listeners({"max.connections=2"}));
  const uint16_t plain = fx.server().bound_ports().at(0), internal = fx.server().bound_ports().at(1);
  RawClient p1(plain), p2(plain);
  REQUIRE(served(p1, 1));
  REQUIRE(served(p2, 2));
  REQUIRE(served(p1, 3));  // p2 is now the least recently active
  RawClient i1(internal);
  CHECK(served(i1, 4));    // not held back, and room is made
  CHECK(p2.closed_by_peer());
  CHECK(fx.server().connections_evicted() == 1);
  REQUIRE(eventually([&] { return fx.server().connection_count() == 2; }));
  CHECK(served(p1, 5));
  CHECK(served(i1, 6));
}

TEST_CASE("max.connections lowered live closes the least recently active connections down to it") {
  ServerFixture fx;
  RawClient a(fx.port()), b(fx.port()), c(fx.port());
  REQUIRE(served(a, 1));
  REQUIRE(served(b, 2));
  REQUIRE(served(c, 3));
  REQUIRE(served(a, 4));  // oldest activity now: b, then c
  REQUIRE(fx.broker().service<admin::DynamicConfigs>().replace(false, {{"max.connections", "1"}}, false).ok());
  CHECK(b.closed_by_peer());
  CHECK(c.closed_by_peer());
  CHECK(served(a, 5));
  CHECK(fx.server().connections_evicted() == 2);
  REQUIRE(eventually([&] { return fx.server().connection_count() == 1; }));
}

TEST_CASE("listener.name.<l>.max.connection.creation.rate limits one listener's rate") {
  // PLAINTEXT at 1 connection/s over two windows of 2 s: its third
  // connection is held about a second; INTERNAL has the broker's (unlimited)
  // rate and holds none.
  ServerFixture fx(two_listeners({"listener.name.plaintext.max.connection.creation.rate=1", "quota.window.num=2",
                                  "quota.window.size.seconds=2"}));
  const uint16_t plain = fx.server().bound_ports().at(0), internal = fx.server().bound_ports().at(1);
  std::vector<std::unique_ptr<RawClient>> in;
  for (int i = 0; i < 5; ++i) {
    in.push_back(std::make_unique<RawClient>(internal));
    REQUIRE(served(*in.back(), 10 + i));
  }
  RawClient a(plain), b(plain);
  REQUIRE(served(a, 1));
  REQUIRE(served(b, 2));
  CHECK(fx.server().connections_throttled() == 0);
  RawClient c(plain, 10000);
  REQUIRE(c.send_all(api_versions_request(3)));
  REQUIRE(eventually([&] { return fx.server().connections_throttled() == 1; }));
  auto f = c.recv_frame();  // held, then served
  REQUIRE(f);
  CHECK(be32(f->data()) == 3);
  CHECK(fx.server().connection_count() == 8);
  CHECK(fx.server().connections_throttled() == 1);
}

TEST_CASE("num.network.threads is dynamic: new threads take new connections and the leaving ones' connections close") {
  ServerFixture fx;  // 2 network threads
  auto& dyn = fx.broker().service<admin::DynamicConfigs>();
  std::vector<std::unique_ptr<RawClient>> clients;
  int32_t corr = 0;
  auto connect = [&] {
    clients.push_back(std::make_unique<RawClient>(fx.port()));
    REQUIRE(served(*clients.back(), ++corr));
  };
  for (int i = 0; i < 4; ++i) connect();
  CHECK(fx.server().connections_per_thread() == std::vector<size_t>{2, 2});

  // Kafka's DynamicThreadPool rule, with Kafka's text; nothing changes.
  auto refused = dyn.replace(false, {{"num.network.threads", "5"}}, false);
  CHECK(refused.code == protocol::ErrorCode::INVALID_REQUEST);
  CHECK_THAT(refused.message, Catch::Contains("num.network.threads=5") &&
                                  Catch::Contains("not be greater than double the current value 2"));

  // Doubled: the new threads take new connections; the open ones stay.
  REQUIRE(dyn.replace(false, {{"num.network.threads", "4"}}, false).ok());
  REQUIRE(eventually([&] { return fx.server().resizes() == 1; }));
  CHECK(fx.server().thread_count() == 4);
  // Round-robin: the accept pending at the change had picked thread 0; the
  // next ones take 1, 2, 3, then 0, 1, and the one pending after them is
  // for thread 2.
  for (int i = 0; i < 6; ++i) connect();
  const std::vector<size_t> spread = fx.server().connections_per_thread();
  CHECK(spread == std::vector<size_t>{4, 4, 1, 1});
  for (auto& c : clients) CHECK(served(*c, ++corr));

  // Halved: threads 2 and 3 leave; their two connections are closed, the
  // other eight keep being served, and the socket accepted next (it was
  // meant for thread 2) moves to a thread that stays.
  REQUIRE(dyn.replace(false, {{"num.network.threads", "2"}}, false).ok());
  REQUIRE(eventually([&] { return fx.server().resizes() == 2; }));
  CHECK(fx.server().thread_count() == 2);
  CHECK(fx.server().connection_count() == 8);
  int still_served = 0, closed = 0;
  for (auto& c : clients) {
    c->set_timeout(2000);
    if (served(*c, ++corr)) {
      ++still_served;
    } else {
      ++closed;
    }
  }
  CHECK(still_served == 8);
  CHECK(closed == 2);
  connect();
  CHECK(fx.server().sockets_moved() == 1);
  for (int i = 0; i < 3; ++i) connect();
  const std::vector<size_t> after = fx.server().connections_per_thread();
  CHECK(after.size() == 2);
  CHECK(after[0] + after[1] == 12);
  CHECK(fx.broker().config().source("num.network.threads") == config::ConfigSource::kDynamicBroker);
}

TEST_CASE("queued.max.request.bytes defaults to a bound, not Kafka's unlimited -1") {
  ServerFixture fx;
  CHECK(fx.server().budget().limit() == 268435456);
  CHECK(fx.server().budget().request_limit() == 500);
}

TEST_CASE("An unresolvable override host fails start-up naming the key") {
  config::ConfigInput in;
  TempDir dir;
  in.overrides = {"listeners=PLAINTEXT://127.0.0.1:0", "log.dirs=" + dir.path(),
                  "max.connections.per.ip.overrides=no-such-host.invalid:3"};
  auto loaded = config::load_config(in);
  REQUIRE(loaded.is_ok());
  std::string err;
  auto broker = Broker::open(std::move(loaded.value().config), &err);
  REQUIRE(broker);
  {
    Server s(*broker);
    CHECK_FALSE(s.start(&err));
    CHECK_THAT(err, Catch::Contains("max.connections.per.ip.overrides") && Catch::Contains("no-such-host.invalid"));
  }
  broker->shutdown();
}

TEST_CASE("socket.send.buffer.bytes and socket.receive.buffer.bytes reach the socket - -1 keeps the default") {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  int def_snd = 0, def_rcv = 0;
  socklen_t len = sizeof(int);
  ::getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &def_snd, &len);
  ::getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &def_rcv, &len);
  CHECK(apply_socket_buffers(fd, -1, -1) == 0);
  int snd = 0, rcv = 0;
  ::getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &snd, &len);
  ::getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, &len);
  CHECK(snd == def_snd);
  CHECK(rcv == def_rcv);
  CHECK(apply_socket_buffers(fd, 8192, 12288) == 0);
  ::getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &snd, &len);
  ::getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, &len);
  CHECK(snd == 2 * 8192);  // Linux doubles what it is given
  CHECK(rcv == 2 * 12288);
  ::close(fd);
}

}  // namespace
}  // namespace CK_UNITY_ID
}  // namespace ciuickafka::broker::test
