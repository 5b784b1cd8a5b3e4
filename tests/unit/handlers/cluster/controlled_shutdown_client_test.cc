// tests/unit/handlers/cluster/controlled_shutdown_client_test.cc: the
// broker side of a controlled shutdown (broker/cluster/controlled_shutdown.h)
// against a fake controller on 127.0.0.1: the request (v3, broker id and
// epoch) goes to the controller named in the view on the inter-broker
// listener; remaining partitions and errors are retried up to max_retries;
// a controller that never answers is bounded by bound_ms(); no controller,
// or no other broker registered. Then the wait for the other brokers'
// Metadata to show the move, against a fake broker.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <mutex>

#include "broker/cluster/controlled_shutdown.h"
#include "protocol/generated/controlled_shutdown.h"
#include "protocol/generated/metadata.h"
#include "protocol/wire/reader.h"
#include "tests/unit/replication/fake_kafka_server.h"

namespace ciuickafka::broker {
namespace {

namespace fk = replication::net::test;

bool serve_versions_with_shutdown(int fd) {
  auto req = fk::read_request(fd);
  if (!req || req->header.header.request_api_key != 18) return false;
  const int16_t v = req->header.header.request_api_version;
  protocol::ApiVersionsResponse resp = fk::fake_versions();
  resp.api_keys.push_back({7, 0, 3, {}});
  return fk::write_all(fd, fk::response_frame(18, v, req->header.header.correlation_id, fk::encode_body(resp, v)));
}

std::shared_ptr<const replication::ClusterView> view_with_controller(uint16_t port, int32_t controller = 2) {
  auto v = std::make_shared<replication::ClusterView>();
  v->controller_id = controller;
  v->broker_epoch = 4242;
  for (int32_t id : {1, 2}) {
    replication::LiveBroker b;
    b.id = id;
    b.endpoints = {{"INTERNAL", "127.0.0.1", id == 2 ? port : 1, "PLAINTEXT"}};
    v->brokers.push_back(b);
  }
  return v;
}

ControlledShutdownSettings settings() {
  ControlledShutdownSettings s;
  s.broker_id = 1;
  s.max_retries = 3;
  s.retry_backoff_ms = 20;
  s.socket_timeout_ms = 2000;
  s.listener = "INTERNAL";
  return s;
}

}  // namespace

TEST_CASE("controlled shutdown client: retried while partitions remain, then done") {
  std::mutex mu;
  std::vector<protocol::ControlledShutdownRequest> seen;
  std::vector<int16_t> versions;
  fk::FakeKafkaServer server(
      [&](int fd, int index) {
        if (!serve_versions_with_shutdown(fd)) return;
        auto req = fk::read_request(fd);
        if (!req || req->header.header.request_api_key != 7) return;
        const int16_t v = req->header.header.request_api_version;
        protocol::Reader r(std::span<const uint8_t>(req->frame).subspan(req->header.body_offset));
        protocol::ControlledShutdownRequest got;
        got.decode(r, v);
        {
          std::lock_guard<std::mutex> lock(mu);
          seen.push_back(got);
          versions.push_back(v);
        }
        protocol::ControlledShutdownResponse resp;
        if (index == 0) resp.remaining_partitions.push_back({"t", 0, {}});
        (void)fk::write_all(fd, fk::response_frame(7, v, req->header.header.correlation_id, fk::encode_body(resp, v)));
      },
      2);
  const auto view = view_with_controller(server.port());
  ControlledShutdownReport r = run_controlled_shutdown(settings(), [&] { return view; });
  CHECK(r.succeeded);
  CHECK(r.attempts == 2);
  std::lock_guard<std::mutex> lock(mu);
  REQUIRE(seen.size() == 2);
  CHECK(versions[0] == 3);
  CHECK(seen[0].broker_id == 1);
  CHECK(seen[0].broker_epoch == 4242);
}

TEST_CASE("controlled shutdown client: an error answer every time gives up after max_retries") {
  std::atomic<int> answered{0};
  fk::FakeKafkaServer server(
      [&](int fd, int) {
        if (!serve_versions_with_shutdown(fd)) return;
        auto req = fk::read_request(fd);
        if (!req) return;
        const int16_t v = req->header.header.request_api_version;
        protocol::ControlledShutdownResponse resp;
        resp.error_code = 41;  // NOT_CONTROLLER
        ++answered;  // before the answer goes out: the client may check the count as soon as it has it
        (void)fk::write_all(fd, fk::response_frame(7, v, req->header.header.correlation_id, fk::encode_body(resp, v)));
      },
      3);
  const auto view = view_with_controller(server.port());
  ControlledShutdownReport r = run_controlled_shutdown(settings(), [&] { return view; });
  CHECK_FALSE(r.succeeded);
  CHECK(r.attempts == 3);
  CHECK(answered.load() == 3);
  CHECK(r.last.find("NOT_CONTROLLER") != std::string::npos);
}

TEST_CASE("controlled shutdown client: a controller that never answers is bounded by bound_ms()") {
  fk::FakeKafkaServer server(
      [&](int fd, int) {
        if (!serve_versions_with_shutdown(fd)) return;
        fk::wait_for_eof(fd);  // reads the request, never answers
      },
      2);
  ControlledShutdownSettings s = settings();
  s.max_retries = 2;
  s.socket_timeout_ms = 300;
  s.retry_backoff_ms = 100;
  CHECK(s.bound_ms() == 2 * 300 + 100);
  const auto view = view_with_controller(server.port());
  const auto t0 = std::chrono::steady_clock::now();
  ControlledShutdownReport r = run_controlled_shutdown(s, [&] { return view; });
  const auto took = std::chrono::steady_clock::now() - t0;
  CHECK_FALSE(r.succeeded);
  CHECK(r.attempts == 2);
  CHECK(took < std::chrono::milliseconds(s.bound_ms() + 500));
}

TEST_CASE("controlled shutdown client: no controller elected - no other broker registered") {
  ControlledShutdownSettings s = settings();
  s.retry_backoff_ms = 1;
  auto none = view_with_controller(1, -1);
  ControlledShutdownReport r = run_controlled_shutdown(s, [&] { return none; });
  CHECK_FALSE(r.succeeded);
  CHECK(r.attempts == 3);
  CHECK(r.last == "no controller elected");

  auto alone = std::make_shared<replication::ClusterView>();
  alone->controller_id = 1;
  alone->broker_epoch = 7;
  replication::LiveBroker me;
  me.id = 1;
  alone->brokers.push_back(me);
  r = run_controlled_shutdown(s, [&] { return alone; });
  CHECK(r.succeeded);
  CHECK(r.attempts == 0);
}

namespace {

// A fake broker 2 answering Metadata for "t": partition 0 led by broker 1
// (the one shutting down) for the first `stale` answers, by broker 2 after.
void serve_metadata(int fd, int stale, std::atomic<int>* asked, std::atomic<bool>* auto_create_asked) {
  if (!fk::serve_api_versions(fd)) return;
  for (;;) {
    auto req = fk::read_request(fd);
    if (!req || req->header.header.request_api_key != 3) return;
    const int16_t v = req->header.header.request_api_version;
    protocol::Reader r(std::span<const uint8_t>(req->frame).subspan(req->header.body_offset));
    protocol::MetadataRequest got;
    got.decode(r, v);
    if (got.allow_auto_topic_creation) *auto_create_asked = true;
    const int n = asked->fetch_add(1);
    protocol::MetadataResponse resp;
    auto& t = resp.topics.emplace_back();
    t.name = "t";
    auto& p = t.partitions.emplace_back();
    p.partition_index = 0;
    p.leader_id = n < stale ? 1 : 2;
    p.replica_nodes = {1, 2};
    p.isr_nodes = {2};
    if (!fk::write_all(fd, fk::response_frame(3, v, req->header.header.correlation_id, fk::encode_body(resp, v))))
      return;
  }
}

}  // namespace

TEST_CASE("controlled shutdown: the listeners wait until the other brokers' Metadata shows the move") {
  std::atomic<int> asked{0};
  std::atomic<bool> auto_create{false};
  fk::FakeKafkaServer server([&](int fd, int) { serve_metadata(fd, 3, &asked, &auto_create); }, 1);
  const auto view = view_with_controller(server.port());
  std::string why;
  CHECK(wait_others_routed_off(settings(), *view, {"t"}, 5000, &why));
  CHECK(asked.load() == 4);  // three answers still naming broker 1, then the move
  CHECK_FALSE(auto_create.load());
}

TEST_CASE("controlled shutdown: a broker whose Metadata never shows the move is waited for at most the bound") {
  std::atomic<int> asked{0};
  std::atomic<bool> auto_create{false};
  fk::FakeKafkaServer server([&](int fd, int) { serve_metadata(fd, 1 << 30, &asked, &auto_create); }, 1);
  const auto view = view_with_controller(server.port());
  std::string why;
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(wait_others_routed_off(settings(), *view, {"t"}, 300, &why));
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(300));
  CHECK(why == "broker 2 still names this broker as a leader");
  CHECK(asked.load() > 1);  // asked again, not once
  // Nothing moved here: nothing to wait for.
  CHECK(wait_others_routed_off(settings(), *view, {}, 300, &why));
}

}  // namespace ciuickafka::broker
