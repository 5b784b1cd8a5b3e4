// tests/unit/replication/controller_channel_test.cc: ControllerChannel
// against a tiny Kafka-framing server in the test (fake_kafka_server.h):
// requests arrive in order, a connection the server drops is survived by
// resending, a broker without the API gets nothing, removal stops the
// sender thread.
#include <catch2/catch.hpp>

#include <chrono>
#include <mutex>
#include <thread>

#include "fake_kafka_server.h"
#include "protocol/generated/leader_and_isr.h"
#include "protocol/generated/stop_replica.h"
#include "protocol/generated/update_metadata.h"
#include "replication/controller/channel.h"
#include "tests/unit/replication/controller_runtime_util.h"

namespace ciuickafka::replication::controller::test {
namespace {

using net::test::FakeKafkaServer;
using net::test::FakeRequest;
using net::test::read_request;
using net::test::response_frame;
using net::test::write_all;
using net::test::encode_body;

// What the server saw: (api key, version, controller epoch of the request).
struct Seen {
  int16_t api_key;
  int16_t version;
  int32_t controller_epoch;
};

struct Recorder {
  std::mutex mu;
  std::vector<Seen> seen;
  void add(Seen s) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(s);
  }
  std::vector<Seen> get() {
    std::lock_guard<std::mutex> lock(mu);
    return seen;
  }
};

bool serve_versions(int fd, bool with_control_apis) {
  std::optional<FakeRequest> req = read_request(fd);
  if (!req || req->header.header.request_api_key != 18) return false;
  const int16_t v = req->header.header.request_api_version;
  protocol::ApiVersionsResponse resp;
  resp.api_keys = {{18, 0, 4, {}}};
  if (with_control_apis) resp.api_keys.insert(resp.api_keys.end(), {{4, 0, 7, {}}, {5, 0, 4, {}}, {6, 0, 8, {}}});
  return write_all(fd, response_frame(18, v, req->header.header.correlation_id, encode_body(resp, v)));
}

// Reads one control request; answers it unless answer is false.
bool serve_one(int fd, Recorder& rec, bool answer = true) {
  std::optional<FakeRequest> req = read_request(fd);
  if (!req) return false;
  const auto& h = req->header.header;
  protocol::Reader r(std::span<const uint8_t>(req->frame).subspan(req->header.body_offset));
  int32_t epoch = -1;
  std::vector<uint8_t> body;
  switch (h.request_api_key) {
    case 4: {
      protocol::LeaderAndIsrRequest m;
      m.decode(r, h.request_api_version);
      epoch = m.controller_epoch;
      body = encode_body(protocol::LeaderAndIsrResponse{}, h.request_api_version);
      break;
    }
    case 5: {
      protocol::StopReplicaRequest m;
      m.decode(r, h.request_api_version);
      epoch = m.controller_epoch;
      body = encode_body(protocol::StopReplicaResponse{}, h.request_api_version);
      break;
    }
    case 6: {
      protocol::UpdateMetadataRequest m;
      m.decode(r, h.request_api_version);
      epoch = m.controller_epoch;
      body = encode_body(protocol::UpdateMetadataResponse{}, h.request_api_version);
      break;
    }
    default:
      return false;
  }
  rec.add({h.request_api_key, h.request_api_version, epoch});
  if (!answer) return true;
  return write_all(fd, response_frame(h.request_api_key, h.request_api_version, h.correlation_id, body));
}

LiveBroker at(int32_t id, uint16_t port, int64_t epoch = 10) {
  LiveBroker b;
  b.id = id;
  b.epoch = epoch;
  b.endpoints = {{"CLIENT", "127.0.0.1", 1, "PLAINTEXT"}, {"INTERNAL", "127.0.0.1", port, "PLAINTEXT"}};
  return b;
}

ChannelOptions options() {
  ChannelOptions o;
  o.inter_broker_listener = "INTERNAL";
  o.client.connect_timeout_ms = 2000;
  o.client.request_timeout_ms = 2000;
  o.backoff.backoff_ms = 20;
  o.backoff.backoff_max_ms = 100;
  return o;
}

// One step's requests to broker b, each carrying controller epoch `epoch`.
ControlRequests requests(int32_t b, int32_t epoch, bool metadata_first, bool stop = false) {
  ControlRequests r;
  r.leader_and_isr[b].controller_epoch = epoch;
  r.update_metadata[b].controller_epoch = epoch;
  if (stop) r.stop_replica[b].controller_epoch = epoch;
  r.metadata_first = metadata_first;
  return r;
}

}  // namespace

TEST_CASE("ControllerChannel: requests to a broker arrive in order, at our highest versions",
          "[controller][channel]") {
  Recorder rec;
  FakeKafkaServer server([&](int fd, int) {
    if (!serve_versions(fd, true)) return;
    while (serve_one(fd, rec)) {
    }
  });
  ControllerChannel ch(options());
  ch.set_brokers({at(1, server.port())});
  ch.send(requests(1, 1, false, true));
  ch.send(requests(1, 2, true));
  ch.send(requests(2, 3, false));  // no queue for broker 2: nothing
  REQUIRE(wait_until([&] { return rec.get().size() == 5; }));
  const std::vector<Seen> s = rec.get();
  CHECK((s[0].api_key == 4 && s[0].controller_epoch == 1 && s[0].version == 7));
  CHECK((s[1].api_key == 6 && s[1].controller_epoch == 1 && s[1].version == 8));
  CHECK((s[2].api_key == 5 && s[2].controller_epoch == 1 && s[2].version == 4));
  CHECK((s[3].api_key == 6 && s[3].controller_epoch == 2));  // metadata first
  CHECK((s[4].api_key == 4 && s[4].controller_epoch == 2));
  REQUIRE(wait_until([&] { return ch.sent() == 5; }));
  CHECK(ch.brokers() == std::vector<int32_t>{1});
}

TEST_CASE("ControllerChannel: a request whose connection died is sent again", "[controller][channel]") {
  Recorder rec;
  FakeKafkaServer server(
      [&](int fd, int index) {
        if (!serve_versions(fd, true)) return;
        if (index == 0) {
          serve_one(fd, rec, false);  // read, never answered: the "server" dies
          return;
        }
        while (serve_one(fd, rec)) {
        }
      },
      2);
  ControllerChannel ch(options());
  ch.set_brokers({at(1, server.port())});
  ControlRequests r;
  r.update_metadata[1].controller_epoch = 7;
  ch.send(r);
  r.update_metadata[1].controller_epoch = 8;
  ch.send(r);
  REQUIRE(wait_until([&] { return rec.get().size() == 3; }));
  const std::vector<Seen> s = rec.get();
  CHECK(s[0].controller_epoch == 7);  // lost with the first connection
  CHECK(s[1].controller_epoch == 7);  // resent on the second
  CHECK(s[2].controller_epoch == 8);
  REQUIRE(wait_until([&] { return ch.sent() == 2; }));
}

TEST_CASE("ControllerChannel: a broker without the API gets the request dropped", "[controller][channel]") {
  Recorder rec;
  std::atomic<bool> versions_served{false};
  FakeKafkaServer server([&](int fd, int) {
    if (!serve_versions(fd, false)) return;
    versions_served = true;
    while (serve_one(fd, rec)) {
    }
  });
  ControllerChannel ch(options());
  ch.set_brokers({at(1, server.port())});
  ch.send(requests(1, 1, false));
  REQUIRE(wait_until([&] { return ch.dropped() == 2; }));
  CHECK(versions_served.load());
  CHECK(rec.get().empty());
  CHECK(ch.sent() == 0);
}

TEST_CASE("ControllerChannel: removing a broker stops its sender, even mid-request", "[controller][channel]") {
  Recorder rec;
  std::atomic<bool> saw_eof{false};
  FakeKafkaServer server([&](int fd, int) {
    if (!serve_versions(fd, true)) return;
    serve_one(fd, rec, false);  // never answered
    net::test::wait_for_eof(fd);
    saw_eof = true;
  });
  ChannelOptions o = options();
  o.client.request_timeout_ms = 30000;
  ControllerChannel ch(o);
  ch.set_brokers({at(1, server.port())});
  ch.send(requests(1, 1, false));
  REQUIRE(wait_until([&] { return rec.get().size() == 1; }));
  const auto t0 = Clock::now();
  ch.set_brokers({});
  CHECK(Clock::now() - t0 < std::chrono::seconds(2));
  CHECK(ch.brokers().empty());
  REQUIRE(wait_until([&] { return saw_eof.load(); }));
  CHECK(ch.sent() == 0);
}

TEST_CASE("ControllerChannel: a bounced broker (new epoch) gets a fresh queue - no endpoint, no queue",
          "[controller][channel]") {
  Recorder rec;
  FakeKafkaServer server(
      [&](int fd, int) {
        if (!serve_versions(fd, true)) return;
        while (serve_one(fd, rec)) {
        }
      },
      2);
  ControllerChannel ch(options());
  ch.set_brokers({at(1, server.port(), 10)});
  ch.send(requests(1, 1, false));
  REQUIRE(wait_until([&] { return rec.get().size() == 2; }));
  ch.set_brokers({at(1, server.port(), 11)});
  ch.send(requests(1, 2, false));
  REQUIRE(wait_until([&] { return rec.get().size() == 4; }));
  CHECK(rec.get()[3].controller_epoch == 2);
  LiveBroker other = at(2, server.port());
  other.endpoints.pop_back();  // no INTERNAL endpoint
  ch.set_brokers({at(1, server.port(), 11), other});
  CHECK(ch.brokers() == std::vector<int32_t>{1});
}

}  // namespace ciuickafka::replication::controller::test
