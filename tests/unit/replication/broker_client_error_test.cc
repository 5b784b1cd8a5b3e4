// tests/unit/replication/broker_client_error_test.cc: BrokerClient against
// a fake server that misbehaves: every failure gives its own error kind, a
// bounded wait, and a dead client (ok() false).
#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <thread>

#include "protocol/generated/metadata.h"
#include "replication/net/broker_client.h"
#include "replication/net/reconnecting_client.h"
#include "tests/unit/replication/fake_kafka_server.h"

namespace ciuickafka::replication::net::test {
namespace {

using std::chrono::milliseconds;

ClientOptions quick_options(int32_t request_timeout_ms = 5000) {
  ClientOptions o;
  o.client_id = "net-test";
  o.connect_timeout_ms = 5000;
  o.request_timeout_ms = request_timeout_ms;
  o.max_response_bytes = 1024;
  return o;
}

std::unique_ptr<BrokerClient> connect_ok(uint16_t port, ClientOptions o = quick_options()) {
  NetResult<std::unique_ptr<BrokerClient>> c = BrokerClient::connect("127.0.0.1", port, std::move(o));
  if (!c) FAIL(c.error().message);
  return std::move(c.value());
}

Status metadata_call(BrokerClient& c, int16_t version = 9) {
  protocol::MetadataRequest req;
  protocol::MetadataResponse resp;
  return c.call(req, version, &resp);
}

// A socket bound to a free loopback port that never listens: connecting to
// the port is refused while the socket holds it. Returns the fd (the test
// closes it); *port is the port.
int bound_unlistened_socket(uint16_t* port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  *port = ntohs(a.sin_port);
  return fd;
}

// Connects, sends one Metadata request and expects it to fail with kind,
// leaving the client dead.
void expect_metadata_call_fails(uint16_t port, NetErrorKind kind) {
  auto c = connect_ok(port);
  Status st = metadata_call(*c);
  REQUIRE_FALSE(st.ok());
  CHECK(st.kind() == kind);
  CHECK_FALSE(c->ok());
}

// A handler that answers ApiVersions, reads one request and passes it to f.
template <class F>
FakeKafkaServer::Handler after_api_versions(F f) {
  return [f](int fd, int) {
    if (!serve_api_versions(fd)) return;
    std::optional<FakeRequest> req = read_request(fd);
    if (!req) return;
    f(fd, *req);
  };
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

TEST_CASE("negotiation keeps the broker's ranges and picks the highest common version") {
  FakeKafkaServer server([](int fd, int) {
    if (serve_api_versions(fd)) wait_for_eof(fd);
  });
  auto c = connect_ok(server.port());
  CHECK(c->ok());
  CHECK(c->api_versions_version() == 3);
  CHECK(c->pick_version(3, 12) == 12);
  CHECK(c->pick_version(3, 9) == 9);
  CHECK(c->pick_version(1, 17) == 17);
  CHECK(c->pick_version(1, 3) == std::nullopt);      // broker's minimum is 4
  CHECK(c->pick_version(1, 20, 18) == std::nullopt);  // above the broker's maximum
  CHECK(c->pick_version(4, 7) == std::nullopt);       // LeaderAndIsr not offered
  CHECK(c->pick_version(-1, 7) == std::nullopt);
  CHECK(c->pick_version(9999, 7) == std::nullopt);
}

TEST_CASE("ApiVersions falls back when the broker answers UNSUPPORTED_VERSION with its list") {
  std::promise<int16_t> second_version;
  FakeKafkaServer server([&](int fd, int) {
    std::optional<FakeRequest> first = read_request(fd);
    if (!first) return;
    protocol::ApiVersionsResponse refusal;
    refusal.error_code = 35;
    refusal.api_keys = {{18, 0, 2, {}}, {3, 0, 12, {}}};
    // A broker that lacks the version answers with a v0 body.
    write_all(fd, response_frame(18, 0, first->header.header.correlation_id, encode_body(refusal, 0)));
    std::optional<FakeRequest> second = read_request(fd);
    if (!second) return;
    const int16_t v = second->header.header.request_api_version;
    second_version.set_value(v);
    protocol::ApiVersionsResponse ok;
    ok.api_keys = {{18, 0, 2, {}}, {3, 0, 12, {}}};
    write_all(fd, response_frame(18, v, second->header.header.correlation_id, encode_body(ok, v)));
    wait_for_eof(fd);
  });
  auto c = connect_ok(server.port());
  CHECK(second_version.get_future().get() == 2);
  CHECK(c->api_versions_version() == 2);
  CHECK(c->pick_version(3, 12) == 12);
}

TEST_CASE("a port nobody listens on fails fast with connect refused") {
  // A bound socket that never listens: the port stays ours and refuses.
  uint16_t port = 0;
  const int fd = bound_unlistened_socket(&port);
  const auto start = std::chrono::steady_clock::now();
  auto c = BrokerClient::connect("127.0.0.1", port, quick_options());
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().kind == NetErrorKind::kConnectRefused);
  CHECK(seconds_since(start) < 1.0);
  ::close(fd);
}

TEST_CASE("a server that accepts and closes") {
  SECTION("at once: connect reports the closed connection") {
    FakeKafkaServer server([](int, int) {});
    auto c = BrokerClient::connect("127.0.0.1", server.port(), quick_options());
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().kind == NetErrorKind::kConnectionClosed);
  }
  SECTION("on the first request after ApiVersions") {
    FakeKafkaServer server(after_api_versions([](int, const FakeRequest&) {}));
    auto c = connect_ok(server.port());
    Status st = metadata_call(*c);
    REQUIRE_FALSE(st.ok());
    CHECK(st.kind() == NetErrorKind::kConnectionClosed);
    CHECK_FALSE(c->ok());
    Status again = metadata_call(*c);
    REQUIRE_FALSE(again.ok());
    CHECK(again.kind() == NetErrorKind::kNotConnected);
  }
}

TEST_CASE("a server that never answers: the request timeout is honoured") {
  FakeKafkaServer server(after_api_versions([](int fd, const FakeRequest&) { wait_for_eof(fd); }));
  auto c = connect_ok(server.port(), quick_options(300));
  const auto start = std::chrono::steady_clock::now();
  Status st = metadata_call(*c);
  const double took = seconds_since(start);
  REQUIRE_FALSE(st.ok());
  CHECK(st.kind() == NetErrorKind::kTimeout);
  CHECK(took >= 0.29);
  CHECK(took < 3.0);
  CHECK_FALSE(c->ok());
  INFO(st.message());
  CHECK(st.message().find("Metadata v9") != std::string::npos);
}

TEST_CASE("connect times out when ApiVersions is never answered") {
  FakeKafkaServer server([](int fd, int) { wait_for_eof(fd); });
  ClientOptions o = quick_options();
  o.connect_timeout_ms = 300;
  const auto start = std::chrono::steady_clock::now();
  auto c = BrokerClient::connect("127.0.0.1", server.port(), o);
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().kind == NetErrorKind::kTimeout);
  CHECK(seconds_since(start) < 3.0);
}

TEST_CASE("a response cut short") {
  SECTION("by the peer closing: connection closed") {
    FakeKafkaServer server(after_api_versions([](int fd, const FakeRequest& req) {
      std::vector<uint8_t> frame = response_frame(3, 9, req.header.header.correlation_id,
                                                  encode_body(protocol::MetadataResponse{}, 9));
      frame.resize(frame.size() / 2);
      write_all(fd, frame);
    }));
    auto c = connect_ok(server.port());
    Status st = metadata_call(*c);
    REQUIRE_FALSE(st.ok());
    CHECK(st.kind() == NetErrorKind::kConnectionClosed);
    CHECK_FALSE(c->ok());
  }
  SECTION("by a stall: the deadline covers the whole response") {
    FakeKafkaServer server(after_api_versions([](int fd, const FakeRequest& req) {
      std::vector<uint8_t> frame = response_frame(3, 9, req.header.header.correlation_id,
                                                  encode_body(protocol::MetadataResponse{}, 9));
      frame.resize(frame.size() - 1);
      write_all(fd, frame);
      wait_for_eof(fd);
    }));
    auto c = connect_ok(server.port(), quick_options(300));
    const auto start = std::chrono::steady_clock::now();
    Status st = metadata_call(*c);
    REQUIRE_FALSE(st.ok());
    CHECK(st.kind() == NetErrorKind::kTimeout);
    CHECK(seconds_since(start) < 3.0);
    CHECK_FALSE(c->ok());
  }
}

TEST_CASE("a response with the wrong correlation id") {
  FakeKafkaServer server(after_api_versions([](int fd, const FakeRequest& req) {
    protocol::MetadataResponse resp;
    write_all(fd, response_frame(3, 9, req.header.header.correlation_id + 7, encode_body(resp, 9)));
    wait_for_eof(fd);
  }));
  expect_metadata_call_fails(server.port(), NetErrorKind::kCorrelationMismatch);
}

TEST_CASE("a response frame above max_response_bytes is refused before it is read") {
  FakeKafkaServer server(after_api_versions([](int fd, const FakeRequest&) {
    write_all(fd, {0x00, 0x00, 0x04, 0x01});  // 1025 bytes announced, none sent
    wait_for_eof(fd);
  }));
  expect_metadata_call_fails(server.port(), NetErrorKind::kResponseTooLarge);
}

TEST_CASE("garbage responses are malformed, never a crash") {
  std::vector<uint8_t> body;
  bool right_correlation = true;
  SECTION("a body that does not decode") { body = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}; }
  SECTION("a valid body with trailing bytes") {
    body = encode_body(protocol::MetadataResponse{}, 9);
    body.push_back(0);
  }
  SECTION("a frame too short for its header") {
    right_correlation = false;
    body = {0, 0, 0, 2, 0, 0};
  }
  SECTION("a negative frame size") {
    right_correlation = false;
    body = {0xff, 0xff, 0xff, 0xfe};
  }
  SECTION("an empty frame") {
    right_correlation = false;
    body = {0, 0, 0, 0};
  }
  FakeKafkaServer server(after_api_versions([&](int fd, const FakeRequest& req) {
    if (right_correlation)
      write_all(fd, response_frame(3, 9, req.header.header.correlation_id, body));
    else
      write_all(fd, body);
    wait_for_eof(fd);
  }));
  expect_metadata_call_fails(server.port(), NetErrorKind::kMalformedResponse);
}

TEST_CASE("close() from another thread unblocks a waiting call") {
  std::promise<void> got_request;
  FakeKafkaServer server(after_api_versions([&](int fd, const FakeRequest&) {
    got_request.set_value();
    wait_for_eof(fd);
  }));
  auto c = connect_ok(server.port(), quick_options(30000));
  std::promise<Status> result;
  const auto start = std::chrono::steady_clock::now();
  std::thread caller([&] { result.set_value(metadata_call(*c)); });
  got_request.get_future().wait();
  c->close();
  Status st = result.get_future().get();
  caller.join();
  REQUIRE_FALSE(st.ok());
  CHECK(st.kind() == NetErrorKind::kClosed);
  CHECK(seconds_since(start) < 5.0);
  CHECK_FALSE(c->ok());
}

TEST_CASE("ReconnectingClient: close() cuts a backoff wait short") {
  // A refused port: the first call fails and starts a long backoff.
  uint16_t port = 0;
  const int fd = bound_unlistened_socket(&port);
  ReconnectingClient rc("127.0.0.1", port, quick_options(), BackoffOptions{60000, 60000});
  protocol::MetadataRequest req;
  protocol::MetadataResponse resp;
  Status first = rc.call(req, 9, &resp);
  REQUIRE_FALSE(first.ok());
  CHECK(first.kind() == NetErrorKind::kConnectRefused);

  std::shared_ptr<Interrupter> stop = rc.interrupter();
  std::promise<Status> result;
  const auto start = std::chrono::steady_clock::now();
  std::thread caller([&] { result.set_value(rc.call(req, 9, &resp)); });
  // The caller is in (or about to enter) its 60 s backoff wait; close() ends
  // it either way, since the trigger stays set.
  stop->trigger();
  Status st = result.get_future().get();
  caller.join();
  REQUIRE_FALSE(st.ok());
  CHECK(st.kind() == NetErrorKind::kClosed);
  CHECK(seconds_since(start) < 5.0);
  ::close(fd);
}

TEST_CASE("ReconnectingClient reconnects on the next call after a failure, after the backoff") {
  FakeKafkaServer server(
      [](int fd, int index) {
        if (!serve_api_versions(fd)) return;
        std::optional<FakeRequest> req = read_request(fd);
        if (!req || index == 0) return;  // the first connection dies on its first request
        const int16_t v = req->header.header.request_api_version;
        protocol::MetadataResponse resp;
        resp.controller_id = 42;
        write_all(fd, response_frame(3, v, req->header.header.correlation_id, encode_body(resp, v)));
        wait_for_eof(fd);
      },
      2);
  ReconnectingClient rc("127.0.0.1", server.port(), quick_options(), BackoffOptions{100, 1000});
  protocol::MetadataRequest req;
  protocol::MetadataResponse resp;
  Status first = rc.call(req, 9, &resp);
  REQUIRE_FALSE(first.ok());
  CHECK(first.kind() == NetErrorKind::kConnectionClosed);
  CHECK_FALSE(rc.connected());
  const auto start = std::chrono::steady_clock::now();
  Status second = rc.call(req, 9, &resp);
  REQUIRE(second.ok());
  CHECK(seconds_since(start) >= 0.09);
  CHECK(resp.controller_id == 42);
  CHECK(rc.connects() == 2);

  rc.close();
  Status after_close = rc.call(req, 9, &resp);
  REQUIRE_FALSE(after_close.ok());
  CHECK(after_close.kind() == NetErrorKind::kClosed);
}

}  // namespace
}  // namespace ciuickafka::replication::net::test
