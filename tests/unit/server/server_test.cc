// tests/unit/server/server_test.cc: a real Broker and Server on
// 127.0.0.1:0 with the real dispatch and ApiVersions handler, driven
// through raw sockets: round trips at every ApiVersions version, pipelining,
// bad size prefixes (each closes only its own connection), a 2 GiB prefix
// that must not allocate, the idle timeout, and a listener that cannot bind.
#include <catch2/catch.hpp>

#include <fstream>

#include "protocol/generated/api_versions.h"
#include "protocol/wire/reader.h"
#include "tests/unit/server/server_test_util.h"

namespace ciuickafka::broker::test {
namespace {

constexpr int16_t kApiVersions = 18;

std::vector<uint8_t> api_versions_request(int16_t version, int32_t correlation_id) {
  protocol::ApiVersionsRequest req;
  req.client_software_name = "ck-server-test";
  req.client_software_version = "1.0";
  protocol::Writer body;
  req.encode(body, version);
  return request_frame(kApiVersions, version, correlation_id, body.buffer());
}

// Decodes an ApiVersions response frame (no size prefix); checks its correlation id.
protocol::ApiVersionsResponse decode_api_versions(const std::vector<uint8_t>& frame, int16_t version,
                                                  int32_t correlation_id) {
  protocol::Reader r(frame);
  protocol::ResponseHeader h;
  h.decode(r, 0);  // ApiVersions responses always use header v0
  CHECK(h.correlation_id == correlation_id);
  protocol::ApiVersionsResponse resp;
  resp.decode(r, version);
  CHECK(r.ok());
  return resp;
}

long rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

TEST_CASE("Server answers ApiVersions v0 to v3 on one connection") {
  ServerFixture fx;
  REQUIRE(fx.port() != 0);
  RawClient c(fx.port());
  for (int16_t v = 0; v <= 3; ++v) {
    REQUIRE(c.send_all(api_versions_request(v, 40 + v)));
    auto frame = c.recv_frame();
    REQUIRE(frame);
    auto resp = decode_api_versions(*frame, v, 40 + v);
    CHECK(resp.error_code == 0);
    bool has_self = false;
    for (const auto& k : resp.api_keys) has_self |= k.api_key == kApiVersions;
    CHECK(has_self);
  }
}

TEST_CASE("Server answers ten pipelined requests in order") {
  ServerFixture fx;
  RawClient c(fx.port());
  std::vector<uint8_t> all;
  for (int i = 0; i < 10; ++i) {
    auto f = api_versions_request(static_cast<int16_t>(i % 4), 1000 + i);
    all.insert(all.end(), f.begin(), f.end());
  }
  REQUIRE(c.send_all(all));  // one write: the frames arrive together
  for (int i = 0; i < 10; ++i) {
    auto frame = c.recv_frame();
    REQUIRE(frame);
    REQUIRE(frame->size() >= 4);
    CHECK(be32(frame->data()) == 1000 + i);
    CHECK(decode_api_versions(*frame, static_cast<int16_t>(i % 4), 1000 + i).error_code == 0);
  }
}

TEST_CASE("A bad size prefix closes that connection only") {
  ServerFixture fx({"socket.request.max.bytes=1000"});
  RawClient good(fx.port());
  REQUIRE(good.send_all(api_versions_request(1, 1)));
  REQUIRE(good.recv_frame());

  SECTION("larger than socket.request.max.bytes") {
    RawClient bad(fx.port());
    REQUIRE(bad.send_all(be32_bytes(1001)));
    CHECK(bad.closed_by_peer());
  }
  SECTION("negative") {
    RawClient bad(fx.port());
    REQUIRE(bad.send_all(be32_bytes(-5)));
    CHECK(bad.closed_by_peer());
  }
  SECTION("a whole oversized request, after a good one") {
    RawClient bad(fx.port());
    auto ok = api_versions_request(2, 7);
    std::vector<uint8_t> big = be32_bytes(5000);
    big.resize(5004, 0xab);
    ok.insert(ok.end(), big.begin(), big.end());
    (void)bad.send_all(ok);
    auto first = bad.recv_frame();  // the good one is still answered
    REQUIRE(first);
    CHECK(be32(first->data()) == 7);
    CHECK(bad.closed_by_peer());
  }
  REQUIRE(good.send_all(api_versions_request(2, 2)));
  auto frame = good.recv_frame();
  REQUIRE(frame);
  CHECK(be32(frame->data()) == 2);
}

TEST_CASE("A 2 GiB size prefix allocates only what arrives") {
  // No byte budget: the 2 GiB frame would otherwise hold the whole
  // queued.max.request.bytes while it trickles in (connection_test.cc tests
  // the budget).
  ServerFixture fx({"socket.request.max.bytes=2147483647", "queued.max.request.bytes=-1"});
  const long before = rss_kib();
  RawClient bad(fx.port());
  std::vector<uint8_t> start = be32_bytes(0x7fffffff);
  start.resize(4 + 100000, 0x11);  // 100 kB of a promised 2 GiB
  REQUIRE(bad.send_all(start));
  // The server keeps serving others while it waits for the rest.
  RawClient good(fx.port());
  REQUIRE(good.send_all(api_versions_request(3, 9)));
  auto frame = good.recv_frame();
  REQUIRE(frame);
  CHECK(be32(frame->data()) == 9);
  const long after = rss_kib();
  CHECK(after - before < 64 * 1024);  // far below 2 GiB (KiB units)
  CHECK(fx.server().connection_count() == 2);
}

TEST_CASE("An idle connection is closed after connections.max.idle.ms") {
  ServerFixture fx({"connections.max.idle.ms=300"});
  RawClient c(fx.port());
  REQUIRE(c.send_all(api_versions_request(0, 1)));
  REQUIRE(c.recv_frame());
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(c.closed_by_peer());
  const auto waited = std::chrono::steady_clock::now() - t0;
  CHECK(waited >= std::chrono::milliseconds(200));
  CHECK(waited < std::chrono::milliseconds(4000));
  CHECK(eventually([&] { return fx.server().connection_count() == 0; }));
}

TEST_CASE("Connections are counted in the broker metrics, by listener") {
  ServerFixture fx;
  auto& gauge = fx.broker().metrics().connection_count("PLAINTEXT");
  const double base = gauge.Value();
  {
    RawClient a(fx.port());
    RawClient b(fx.port());
    REQUIRE(a.send_all(api_versions_request(0, 1)));
    REQUIRE(a.recv_frame());
    REQUIRE(b.send_all(api_versions_request(0, 1)));
    REQUIRE(b.recv_frame());
    CHECK(gauge.Value() == base + 2);
  }
  CHECK(eventually([&] { return gauge.Value() == base; }));
  const std::string text = fx.broker().metrics_registry().text();
  // The value of one exposition line (-1 when absent).
  const auto value = [&text](const std::string& series) {
    const size_t at = ("\n" + text).find("\n" + series + " ");
    return at == std::string::npos ? -1.0 : std::stod(text.substr(at + series.size() + 1));
  };
  CHECK(value("kafka_server_socketservermetrics_connection_creation_total{listener=\"PLAINTEXT\"}") >= 2);
  // The two ApiVersions' split request times, measured through the send.
  const double total = value("kafka_network_requestmetrics_totaltimems_count{request=\"ApiVersions\"}");
  CHECK(total >= 2);
  CHECK(value("kafka_network_requestmetrics_responsesendtimems_count{request=\"ApiVersions\"}") == total);
  CHECK(value("kafka_network_requestmetrics_localtimems_count{request=\"ApiVersions\"}") == total);
  const double idle = value("kafka_network_socketserver_networkprocessoravgidlepercent");
  CHECK(idle >= 0);
  CHECK(idle <= 1);
}

TEST_CASE("A listener that cannot bind is reported with its name and address") {
  ServerFixture first;
  const std::string port = std::to_string(first.port());
  TempDir dir;
  config::ConfigInput in;
  in.overrides = {"listeners=PLAINTEXT://127.0.0.1:" + port, "log.dirs=" + dir.path()};
  auto loaded = config::load_config(in);
  REQUIRE(loaded.is_ok());
  std::string err;
  auto broker = Broker::open(std::move(loaded.value().config), &err);
  REQUIRE(broker);
  {
    Server s(*broker);
    CHECK_FALSE(s.start(&err));
    CHECK(err == "cannot listen on PLAINTEXT://127.0.0.1:" + port + ": Address already in use");
  }
  broker->shutdown();
}

TEST_CASE("Server stop is idempotent and closes client connections") {
  ServerFixture fx;
  RawClient c(fx.port());
  REQUIRE(c.send_all(api_versions_request(0, 1)));
  REQUIRE(c.recv_frame());
  fx.server().stop(std::chrono::milliseconds(500));
  fx.server().stop(std::chrono::milliseconds(500));
  CHECK(c.closed_by_peer());
}

}  // namespace
}  // namespace ciuickafka::broker::test
