// tests/unit/server/live_listeners_test.cc: listeners, advertised.listeners
// and listener.security.protocol.map changed live on a single node (Kafka's
// DynamicListenerConfig) against a real Server on 127.0.0.1: a new listener
// serves at once and is advertised, a removed one stops and its connections
// close, a moved one serves on its new port only; what cannot be bound or
// breaks Kafka's rules is refused and changes nothing; the change is kept
// for the next start.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <span>
#include <tuple>

#include "broker/admin/cluster_info.h"
#include "broker/admin/dynamic_configs.h"
#include "protocol/generated/metadata.h"
#include "protocol/wire/reader.h"
#include "tests/unit/server/server_test_util.h"

namespace ciuickafka::broker::test {
namespace CK_UNITY_ID {

namespace {

using protocol::ErrorCode;

// The brokers (node id, host, port) a Metadata v1 answer on c lists.
std::vector<std::tuple<int32_t, std::string, int32_t>> metadata_brokers(RawClient& c, int32_t correlation_id) {
  protocol::MetadataRequest req;
  req.topics = std::nullopt;  // v1: null is every topic
  protocol::Writer body;
  req.encode(body, 1);
  std::vector<std::tuple<int32_t, std::string, int32_t>> out;
  if (!c.send_all(request_frame(3, 1, correlation_id, body.buffer()))) return out;
  auto f = c.recv_frame();
  if (!f || f->size() < 4 || be32(f->data()) != correlation_id) return out;
  protocol::Reader r(std::span<const uint8_t>(f->data() + 4, f->size() - 4));
  protocol::MetadataResponse resp;
  resp.decode(r, 1);
  if (!r.ok()) return out;
  for (const auto& b : resp.brokers) out.emplace_back(b.node_id, b.host, b.port);
  return out;
}

// A socket listening on 127.0.0.1 (port 0: any), holding its port.
class Squatter {
 public:
  explicit Squatter(uint16_t port = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(fd_, 4) != 0)
      throw std::runtime_error("cannot listen on 127.0.0.1");
    socklen_t len = sizeof(a);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~Squatter() { release(); }
  void release() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

// Whether a TCP connection to 127.0.0.1:port is refused.
bool refused(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool r = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 && errno == ECONNREFUSED;
  ::close(fd);
  return r;
}

const std::string kMap = "PLAINTEXT:PLAINTEXT,EXTRA:PLAINTEXT";

}  // namespace

TEST_CASE("A listener added live serves at once and is advertised - one removed live stops and closes its connections") {
  ServerFixture fx;
  auto& dyn = fx.broker().service<admin::DynamicConfigs>();
  const uint16_t plain = fx.port();
  RawClient a(plain);
  REQUIRE(served(a, 1));

  REQUIRE(dyn.replace(false,
                      {{"listeners", "PLAINTEXT://127.0.0.1:0,EXTRA://127.0.0.1:0"},
                       {"listener.security.protocol.map", kMap}},
                      false)
              .ok());
  CHECK(fx.server().listener_switches() == 1);
  const auto ports = fx.server().bound_ports();
  REQUIRE(ports.size() == 2);
  CHECK(ports[0] == plain);  // unchanged, so kept: its connection too
  const uint16_t extra = ports[1];
  RawClient b(extra);
  CHECK(served(b, 2));
  CHECK(served(a, 3));
  auto listeners = fx.broker().listeners();
  REQUIRE(listeners->advertised.size() == 2);
  CHECK(listeners->advertised[1].name == "EXTRA");
  CHECK(admin::advertised_endpoint(fx.broker(), "EXTRA").port == extra);
  CHECK(admin::advertised_endpoint(fx.broker(), "PLAINTEXT").port == plain);
  // Metadata answers each listener with its own address.
  using Row = std::tuple<int32_t, std::string, int32_t>;
  const int32_t me = fx.broker().node_id();
  CHECK(metadata_brokers(b, 10) == std::vector<Row>{{me, "127.0.0.1", extra}});
  CHECK(metadata_brokers(a, 11) == std::vector<Row>{{me, "127.0.0.1", plain}});
  CHECK(fx.broker().config().get_string("listeners") == "PLAINTEXT://127.0.0.1:0,EXTRA://127.0.0.1:0");

  // PLAINTEXT goes: its connection is closed and its port no longer listens.
  REQUIRE(dyn.replace(false, {{"listeners", "EXTRA://127.0.0.1:0"}, {"listener.security.protocol.map", kMap}}, false)
              .ok());
  CHECK(a.closed_by_peer());
  CHECK(refused(plain));
  CHECK(served(b, 4));
  REQUIRE(fx.server().bound_ports() == std::vector<uint16_t>{extra});
  listeners = fx.broker().listeners();
  REQUIRE(listeners->advertised.size() == 1);
  CHECK(listeners->advertised[0].name == "EXTRA");
  CHECK(listeners->inter_broker == "EXTRA");
  REQUIRE(eventually([&] { return fx.server().connection_count() == 1; }));

  // Kept for the next start: the file wins over server.properties.
  config::ConfigInput in;
  in.overrides = {"listeners=PLAINTEXT://127.0.0.1:0", "log.dirs=" + fx.broker().config().log_dirs().front()};
  auto loaded = config::load_config(in);
  REQUIRE(loaded.is_ok());
  config::BrokerConfig next = std::move(loaded.value().config);
  REQUIRE(admin::DynamicConfigs::load(fx.broker().fs(), fx.broker().config().log_dirs().front(), next).is_ok());
  auto resolved = config::resolve_listeners(next);
  REQUIRE(resolved.is_ok());
  REQUIRE(resolved.value().bound.size() == 1);
  CHECK(resolved.value().bound[0].name == "EXTRA");

  // Deleted: back to server.properties' listener (a new port, as it asks for 0).
  REQUIRE(dyn.replace(false, {}, false).ok());
  REQUIRE(fx.server().bound_ports().size() == 1);
  CHECK(b.closed_by_peer());
  RawClient c(fx.server().bound_ports()[0]);
  CHECK(served(c, 5));
  CHECK(fx.broker().listeners()->advertised[0].name == "PLAINTEXT");
}

TEST_CASE("A listener moved live to another port serves there only") {
  ServerFixture fx;
  auto& dyn = fx.broker().service<admin::DynamicConfigs>();
  const uint16_t before = fx.port();
  RawClient a(before);
  REQUIRE(served(a, 1));
  Squatter spot;  // a free port, held until the change
  const uint16_t to = spot.port();
  spot.release();
  REQUIRE(dyn.replace(false, {{"listeners", "PLAINTEXT://127.0.0.1:" + std::to_string(to)}}, false).ok());
  CHECK(fx.server().bound_ports() == std::vector<uint16_t>{to});
  CHECK(a.closed_by_peer());
  CHECK(refused(before));
  RawClient b(to);
  CHECK(served(b, 2));
  CHECK(admin::advertised_endpoint(fx.broker(), "PLAINTEXT").port == to);
}

TEST_CASE("A listener renamed on its port is handed over - one that cannot bind there gives the port back") {
  Squatter spot;  // a free port, held until the broker is configured
  const uint16_t port = spot.port();
  spot.release();
  const std::string at = "127.0.0.1:" + std::to_string(port);
  ServerFixture fx({"listeners=PLAINTEXT://" + at});
  auto& dyn = fx.broker().service<admin::DynamicConfigs>();
  RawClient a(port);
  REQUIRE(served(a, 1));

  // Not bindable (a documentation address): the old listener takes the
  // port back, its connection untouched, and nothing changed.
  auto e = dyn.replace(false,
                       {{"listeners", "CLIENT://192.0.2.1:" + std::to_string(port)},
                        {"listener.security.protocol.map", "CLIENT:PLAINTEXT"}},
                       false);
  CHECK(e.code == ErrorCode::INVALID_REQUEST);
  CHECK_THAT(e.message, Catch::Contains("192.0.2.1"));
  CHECK(dyn.current(false).empty());
  CHECK(fx.broker().listeners()->bound.at(0).name == "PLAINTEXT");
  CHECK(served(a, 2));
  RawClient b(port);
  CHECK(served(b, 3));

  // Renamed on the same port: the new name takes it over.
  REQUIRE(dyn.replace(false,
                      {{"listeners", "CLIENT://" + at}, {"listener.security.protocol.map", "CLIENT:PLAINTEXT"}}, false)
              .ok());
  CHECK(a.closed_by_peer());
  CHECK(b.closed_by_peer());
  CHECK(fx.server().bound_ports() == std::vector<uint16_t>{port});
  RawClient c(port);
  CHECK(served(c, 4));
  CHECK(fx.broker().listeners()->advertised.at(0).name == "CLIENT");
  CHECK(admin::advertised_endpoint(fx.broker(), "CLIENT").port == port);
}

TEST_CASE("Listener changes that cannot be bound or break Kafka's rules are refused and change nothing") {
  ServerFixture fx;
  auto& dyn = fx.broker().service<admin::DynamicConfigs>();
  const uint16_t plain = fx.port();
  RawClient a(plain);
  REQUIRE(served(a, 1));
  const auto unchanged = [&] {
    CHECK(dyn.current(false).empty());
    CHECK(fx.server().bound_ports() == std::vector<uint16_t>{plain});
    CHECK(fx.broker().listeners()->advertised.size() == 1);
    CHECK(fx.server().listener_switches() == 0);
  };

  SECTION("a port another socket holds") {
    Squatter squatter;
    const std::string at = "EXTRA://127.0.0.1:" + std::to_string(squatter.port());
    auto e = dyn.replace(false, {{"listeners", "PLAINTEXT://127.0.0.1:0," + at}, {"listener.security.protocol.map", kMap}},
                         false);
    CHECK(e.code == ErrorCode::INVALID_REQUEST);
    CHECK_THAT(e.message, Catch::Contains(at) && Catch::Contains("in use"));
  }
  SECTION("the cluster-wide default") {
    auto e = dyn.replace(true, {{"listeners", "PLAINTEXT://127.0.0.1:0"}}, false);
    CHECK(e.code == ErrorCode::INVALID_REQUEST);
    CHECK_THAT(e.message, Catch::Contains("default cluster level") && Catch::Contains("listeners"));
    CHECK(dyn.current(true).empty());
  }
  SECTION("a listener's security protocol") {
    auto e = dyn.replace(false, {{"listener.security.protocol.map", "PLAINTEXT:SSL"}}, false);
    CHECK(e.code == ErrorCode::INVALID_REQUEST);
    CHECK(e.message == "Security protocol cannot be updated for existing listener PLAINTEXT");
  }
  SECTION("a new listener that is not PLAINTEXT") {
    auto e = dyn.replace(false,
                         {{"listeners", "PLAINTEXT://127.0.0.1:0,SECURE://127.0.0.1:0"},
                          {"listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,SECURE:SSL"}},
                         false);
    CHECK(e.code == ErrorCode::INVALID_REQUEST);
    CHECK_THAT(e.message, Catch::Contains("SECURE") && Catch::Contains("PLAINTEXT only"));
  }
  SECTION("a listener the protocol map does not name") {
    auto e = dyn.replace(false, {{"listeners", "PLAINTEXT://127.0.0.1:0,OTHER://127.0.0.1:0"}}, false);
    CHECK(e.code == ErrorCode::INVALID_REQUEST);
    CHECK_THAT(e.message, Catch::Contains("listener.security.protocol.map") && Catch::Contains("OTHER"));
  }
  SECTION("advertised listeners that are not listeners") {
    auto e = dyn.replace(false, {{"advertised.listeners", "ELSEWHERE://broker-1:9092"}}, false);
    CHECK(e.code == ErrorCode::INVALID_REQUEST);
    CHECK_THAT(e.message, Catch::Contains("advertised.listeners") && Catch::Contains("ELSEWHERE"));
  }
  SECTION("validate only") {
    CHECK(dyn.replace(false, {{"listeners", "PLAINTEXT://127.0.0.1:0,EXTRA://127.0.0.1:0"},
                              {"listener.security.protocol.map", kMap}},
                      true)
              .ok());
  }
  unchanged();
  CHECK(served(a, 2));
}

TEST_CASE("advertised.listeners changed live is what Metadata advertises, on the same bound port") {
  ServerFixture fx;
  auto& dyn = fx.broker().service<admin::DynamicConfigs>();
  const uint16_t plain = fx.port();
  RawClient a(plain);
  REQUIRE(dyn.replace(false, {{"advertised.listeners", "PLAINTEXT://broker-7.example:19092"}}, false).ok());
  using Row = std::tuple<int32_t, std::string, int32_t>;
  CHECK(metadata_brokers(a, 1) == std::vector<Row>{{fx.broker().node_id(), "broker-7.example", 19092}});
  CHECK(fx.server().bound_ports() == std::vector<uint16_t>{plain});
  CHECK(served(a, 2));  // nothing rebound: the connection stays
}

TEST_CASE("Listeners set live are the broker's listeners at its next start, over server.properties") {
  TempDir dir;
  const auto open = [&dir] {
    config::ConfigInput in;
    in.overrides = {"listeners=PLAINTEXT://127.0.0.1:0", "log.dirs=" + dir.path()};
    auto loaded = config::load_config(in);
    REQUIRE(loaded.is_ok());
    std::string err;
    auto b = Broker::open(std::move(loaded.value().config), &err);
    REQUIRE(b);
    return b;
  };
  {
    auto b = open();
    REQUIRE(b->service<admin::DynamicConfigs>()
                .replace(false, {{"listeners", "EXTRA://127.0.0.1:0"}, {"listener.security.protocol.map", kMap}}, false)
                .ok());
    CHECK(b->listeners()->bound.at(0).name == "EXTRA");  // no server: only the snapshot changes
    b->shutdown();
  }
  auto b = open();
  REQUIRE(b->listeners()->bound.size() == 1);
  CHECK(b->listeners()->bound[0].name == "EXTRA");
  CHECK(b->listeners()->inter_broker == "EXTRA");
  b->shutdown();
}

}  // namespace CK_UNITY_ID
}  // namespace ciuickafka::broker::test
