// tests/unit/handlers/broker_fixture.h: a real Broker in a temp dir, and a
// way to call its handlers the way a connection does, without sockets.
//
//   BrokerFixture f({"num.partitions=3"});
//   auto resp = f.call<protocol::MetadataResponse>(protocol::MetadataRequest{...}, 12);
//
// call() encodes the request with a v1/v2 header, runs dispatch_frame (so
// the registry, version checks and metrics are exercised), waits for
// respond() (handlers may answer from another thread), fills in spliced
// record bytes from the segment files, checks the frame size and the
// correlation id, and decodes the body at the same version.
//
// Thread-safety: one test thread.
#pragma once

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "broker/broker.h"
#include "broker/config/broker_config.h"
#include "broker/server/dispatch.h"
#include "protocol/generated/api_keys.h"
#include "protocol/generated/headers.h"
#include "protocol/wire/reader.h"
#include "protocol/wire/writer.h"

namespace ciuickafka::broker::test {

class BrokerFixture {
 public:
  explicit BrokerFixture(std::vector<std::string> overrides = {}) {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/ck_broker_XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
    dir_ = tmpl;
    overrides_ = std::move(overrides);
    open();
  }
  ~BrokerFixture() {
    close();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  BrokerFixture(const BrokerFixture&) = delete;
  BrokerFixture& operator=(const BrokerFixture&) = delete;

  Broker& broker() { return *broker_; }
  const std::string& dir() const { return dir_; }

  // Clean restart on the same data dir.
  void restart() {
    close();
    open();
  }
  void close() {
    if (broker_) broker_->shutdown();
    broker_.reset();
  }

  // The raw response frame (size prefix included, splices filled in).
  std::vector<uint8_t> call_raw(int16_t api_key, int16_t version, const std::vector<uint8_t>& body,
                                Response::Action* action = nullptr) {
    protocol::Writer w;
    protocol::RequestHeader h;
    h.request_api_key = api_key;
    h.request_api_version = version;
    h.correlation_id = ++correlation_;
    h.client_id = "fixture";
    int16_t hv = protocol::request_header_version(api_key, version);
    if (hv < 0) hv = 1;
    h.encode(w, hv);
    w.write_raw(body);
    const std::vector<uint8_t> bytes = w.release();
    auto frame = std::make_shared<FrameBytes>(bytes.begin(), bytes.end());

    std::promise<Response> done;
    auto fut = done.get_future();
    RequestContext ctx;
    ctx.broker = broker_.get();
    ctx.frame = frame;
    ctx.executor = io_.get_executor();
    ctx.listener = "PLAINTEXT";
    ctx.peer = "test";
    ctx.connection_id = 1;
    ctx.received = std::chrono::steady_clock::now();
    auto shared = std::make_shared<std::promise<Response>>(std::move(done));
    ctx.respond = [shared, this](Response r) {
      responder_ = std::this_thread::get_id();  // read after the future is ready
      shared->set_value(std::move(r));
    };
    dispatch_frame(std::move(ctx));
    // Handlers that wait (long polls) post timers on ctx.executor: run it.
    while (fut.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) {
      io_.restart();
      io_.run_for(std::chrono::milliseconds(5));
    }
    Response r = fut.get();
    if (action != nullptr) *action = r.action;
    if (r.action != Response::Action::kSend) return {};
    return materialize(r);
  }

  // Encodes req, calls, decodes the response at the same version.
  // Throws std::runtime_error when the broker closed the connection or the
  // response does not decode (a test failure, with a reason).
  template <class Resp, class Req>
  Resp call(const Req& req, int16_t version) {
    protocol::Writer body;
    req.encode(body, version);
    if (!body.ok()) throw std::runtime_error("request does not encode at this version");
    Response::Action action;
    std::vector<uint8_t> raw = call_raw(Req::kApiKey, version, body.buffer(), &action);
    if (action != Response::Action::kSend) throw std::runtime_error("no response (connection closed or acks=0)");
    protocol::Reader r(raw);
    const int32_t size = r.read_int32();
    if (size != static_cast<int32_t>(raw.size() - 4)) throw std::runtime_error("frame size mismatch");
    protocol::ResponseHeader rh;
    rh.decode(r, protocol::response_header_version(Req::kApiKey, version));
    if (rh.correlation_id != correlation_) throw std::runtime_error("correlation id mismatch");
    Resp resp;
    resp.decode(r, version);
    if (!r.ok()) throw std::runtime_error("response does not decode");
    // Keep the frame alive for views (records) in the decoded response.
    frames_.push_back(std::move(raw));
    return resp;
  }

  asio::io_context& io() { return io_; }
  // The thread that answered the last call(): this one for a handler that
  // answers inline, an I/O pool thread for one that hands its work there.
  std::thread::id last_responder() const { return responder_; }

 private:
  void open() {
    config::ConfigInput in;
    in.overrides = {"listeners=PLAINTEXT://127.0.0.1:0", "log.dirs=" + dir_};  // Broker::open starts no metrics endpoint
    for (const auto& o : overrides_) in.overrides.push_back(o);
    auto loaded = config::load_config(in);
    if (!loaded.is_ok()) throw std::runtime_error(loaded.error().message);
    std::string err;
    broker_ = Broker::open(std::move(loaded.value().config), &err);
    if (!broker_) throw std::runtime_error(err);
  }

  static std::vector<uint8_t> materialize(const Response& r) {
    std::vector<uint8_t> out;
    size_t from = 0;
    for (const Splice& s : r.splices) {
      out.insert(out.end(), r.bytes.begin() + static_cast<long>(from), r.bytes.begin() + static_cast<long>(s.at));
      for (const storage::LogSlice& ls : s.slices) {
        std::vector<uint8_t> buf(ls.slice.length);
        auto n = ls.slice.file->read_at(ls.slice.position, buf);
        if (!n.is_ok() || n.value() != buf.size()) throw std::runtime_error("short read of a splice");
        out.insert(out.end(), buf.begin(), buf.end());
      }
      from = s.at;
    }
    out.insert(out.end(), r.bytes.begin() + static_cast<long>(from), r.bytes.end());
    return out;
  }

  std::string dir_;
  std::vector<std::string> overrides_;
  std::unique_ptr<Broker> broker_;
  asio::io_context io_;
  int32_t correlation_ = 0;
  std::thread::id responder_;
  std::vector<std::vector<uint8_t>> frames_;
};

}  // namespace ciuickafka::broker::test
