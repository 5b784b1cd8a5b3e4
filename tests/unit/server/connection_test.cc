// tests/unit/server/connection_test.cc: the per-connection response queue
// with a test dispatcher that holds requests until the test answers them:
// answers given out of order leave in request order, kNoResponse is skipped,
// kClose closes after what precedes it, reading pauses at 16 in flight and
// under queued.max.request.bytes, file slices are sent with sendfile, stop()
// lets in-flight requests finish, and answers after the server is gone are
// dropped safely; frames of every size arrive byte for byte (FrameBytes).
#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <stdexcept>
#include <mutex>
#include <thread>

#include "storage/io/posix_file.h"
#include "tests/unit/server/server_test_util.h"
#include "tests/unit/storage/log_test_util.h"

namespace ciuickafka::broker::test {
// A namespace of this file's own (tests/CMakeLists.txt: the tests are unity
// builds), so that its helpers do not clash with a sibling file's.
namespace CK_UNITY_ID {

namespace {


int32_t correlation_of(const RequestContext& ctx) { return be32(ctx.frame->data() + 4); }

// A frame with a minimal header (key, version, correlation id) padded to size bytes.
std::vector<uint8_t> test_frame(int32_t correlation_id, size_t size = 8) {
  std::vector<uint8_t> f = be32_bytes(static_cast<int32_t>(size));
  f.insert(f.end(), {0, 99, 0, 0});
  auto c = be32_bytes(correlation_id);
  f.insert(f.end(), c.begin(), c.end());
  f.resize(4 + size, 0x5a);
  return f;
}

// The answer to a held request: [size][correlation id].
Response echo(const RequestContext& ctx) {
  Response r;
  r.bytes = be32_bytes(4);
  auto c = be32_bytes(correlation_of(ctx));
  r.bytes.insert(r.bytes.end(), c.begin(), c.end());
  return r;
}

std::vector<uint8_t> frames(int from, int to) {
  std::vector<uint8_t> all;
  for (int i = from; i < to; ++i) {
    auto f = test_frame(i);
    all.insert(all.end(), f.begin(), f.end());
  }
  return all;
}

TEST_CASE("Answers given out of order are written in request order") {
  Holder h;
  ServerFixture fx({}, h.dispatcher());
  RawClient c(fx.port());
  REQUIRE(c.send_all(frames(0, 5)));
  REQUIRE(h.wait_for(5));
  // Answer from another thread, last first.
  std::thread t([&] {
    for (int i = 4; i >= 0; --i) {
      auto ctx = h.take(i);
      ctx.respond(echo(ctx));
      ::usleep(20000);
    }
  });
  for (int i = 0; i < 5; ++i) {
    auto f = c.recv_frame();
    REQUIRE(f);
    CHECK(be32(f->data()) == i);
  }
  t.join();
}

TEST_CASE("Frames of every size arrive byte for byte - pipelined, split anywhere, past the 16 MiB reserve") {
  // Sizes around the 16 KiB input buffer and the 16 MiB whole reserve
  // (connection.cc), so every path is taken: copied from the input buffer,
  // read straight into the frame, and grown by doubling.
  Holder h;
  ServerFixture fx({"socket.request.max.bytes=104857600"}, h.dispatcher());
  RawClient c(fx.port());
  const std::vector<size_t> sizes = {8, (16u << 10) - 4, (16u << 10) + 5, 1u << 20, (16u << 20) + 12345, 9};
  std::vector<uint8_t> wire;
  std::vector<std::vector<uint8_t>> sent;
  uint32_t x = 12345;
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto f = test_frame(static_cast<int32_t>(i), sizes[i]);
    for (size_t j = 12; j < f.size(); ++j) {  // past size, key, version, correlation id
      x = x * 1103515245u + 12345u;
      f[j] = static_cast<uint8_t>(x >> 16);
    }
    sent.emplace_back(f.begin() + 4, f.end());
    wire.insert(wire.end(), f.begin(), f.end());
  }
  // Pieces of odd sizes, so prefixes and frames are split at every kind of place.
  for (size_t at = 0, piece = 1; at < wire.size(); piece = piece * 7 % 100003 + 1) {
    const size_t n = std::min(piece, wire.size() - at);
    REQUIRE(c.send_all(std::vector<uint8_t>(wire.begin() + static_cast<long>(at), wire.begin() + static_cast<long>(at + n))));
    at += n;
  }
  REQUIRE(h.wait_for(sizes.size()));
  for (size_t i = 0; i < sizes.size(); ++i) {
    INFO("frame " << i << " of " << sizes[i] << " bytes");
    RequestContext ctx = h.take(i);
    REQUIRE(ctx.frame->size() == sent[i].size());
    CHECK(std::equal(ctx.frame->begin(), ctx.frame->end(), sent[i].begin()));
    ctx.respond(echo(ctx));
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto f = c.recv_frame();
    REQUIRE(f);
    CHECK(be32(f->data()) == static_cast<int32_t>(i));
  }
}

TEST_CASE("FrameBytes keeps its bytes across reserve and resize - fills and copies as asked") {
  FrameBytes f;
  CHECK(f.empty());
  CHECK(f.data() == nullptr);
  f.reserve(4);
  CHECK(f.capacity() == 4);
  f.resize(3);
  f[0] = 1, f[1] = 2, f[2] = 3;
  const uint8_t* before = f.data();
  f.resize(4);  // within capacity: same block
  CHECK(f.data() == before);
  f.resize(1000);  // a new block: the bytes held come along
  CHECK(f.capacity() == 1000);
  CHECK((f[0] == 1 && f[1] == 2 && f[2] == 3));
  f.resize(2);
  CHECK(f.size() == 2);
  CHECK(f.capacity() == 1000);
  const std::vector<uint8_t> v = {9, 8, 7};
  FrameBytes g(v.begin(), v.end());
  CHECK(std::vector<uint8_t>(g.begin(), g.end()) == v);
  FrameBytes k(5, uint8_t{6});
  CHECK(std::vector<uint8_t>(k.begin(), k.end()) == std::vector<uint8_t>(5, 6));
  std::span<const uint8_t> view(k);
  CHECK(view.size() == 5);
  FrameBytes moved(std::move(k));
  CHECK(moved.size() == 5);
}

TEST_CASE("RequestContext::writable gives the frame's own bytes for a view inside it, nothing for others") {
  RequestContext ctx;
  CHECK(ctx.writable(std::span<const uint8_t>()).empty());
  ctx.frame = std::make_shared<FrameBytes>(64, uint8_t{7});
  std::span<const uint8_t> inside(ctx.frame->data() + 10, 20);
  std::span<uint8_t> w = ctx.writable(inside);
  REQUIRE(w.size() == 20);
  CHECK(w.data() == ctx.frame->data() + 10);
  CHECK(ctx.writable(std::span<const uint8_t>(ctx.frame->data() + 60, 5)).empty());  // runs past the end
  const std::vector<uint8_t> elsewhere(8, 1);
  CHECK(ctx.writable(elsewhere).empty());
}

TEST_CASE("kNoResponse is skipped and kClose closes after earlier answers") {
  Holder h;
  ServerFixture fx({}, h.dispatcher());
  RawClient c(fx.port());
  REQUIRE(c.send_all(frames(0, 4)));
  REQUIRE(h.wait_for(4));
  h.take(3).respond(Response::close());
  h.take(1).respond(Response::none());
  h.take(2).respond(echo(h.take(2)));
  h.take(0).respond(echo(h.take(0)));
  auto a = c.recv_frame();
  REQUIRE(a);
  CHECK(be32(a->data()) == 0);
  auto b = c.recv_frame();
  REQUIRE(b);
  CHECK(be32(b->data()) == 2);
  CHECK(c.closed_by_peer());
}

TEST_CASE("Reading pauses at 16 requests in flight and resumes as they are answered") {
  Holder h;
  ServerFixture fx({}, h.dispatcher());
  RawClient c(fx.port());
  REQUIRE(c.send_all(frames(0, 20)));
  REQUIRE(h.wait_for(16));
  // The connection stopped reading at 16 (counted when it did): nothing
  // more can be dispatched until an answer frees a slot.
  REQUIRE(eventually([&] { return fx.server().pipeline_pauses() >= 1; }));
  CHECK(h.count() == 16);
  for (int i = 0; i < 16; ++i) h.take(i).respond(echo(h.take(i)));
  REQUIRE(h.wait_for(20));
  for (int i = 16; i < 20; ++i) h.take(i).respond(echo(h.take(i)));
  for (int i = 0; i < 20; ++i) {
    auto f = c.recv_frame();
    REQUIRE(f);
    CHECK(be32(f->data()) == i);
  }
}

TEST_CASE("A request that holds the later ones is answered before any later one is dispatched") {
  // Request 1 holds (as a handler does before passing its work to the I/O
  // pool): 2 and 3 wait for its answer, then go.
  Holder h({1});
  ServerFixture fx({}, h.dispatcher());
  RawClient c(fx.port());
  REQUIRE(c.send_all(frames(0, 4)));
  REQUIRE(h.wait_for(2));
  h.take(0).respond(echo(h.take(0)));  // an answer to an earlier request does not release it
  auto a = c.recv_frame();
  REQUIRE(a);
  CHECK(be32(a->data()) == 0);
  // The thread that wrote answer 0 then looked at the input again (pump()):
  // once it has finished that, request 2 would have been dispatched.
  REQUIRE(fx.server().quiesce());
  CHECK(h.count() == 2);
  CHECK(fx.server().pipeline_pauses() >= 1);
  h.take(1).respond(echo(h.take(1)));
  REQUIRE(h.wait_for(4));
  for (size_t i = 2; i < 4; ++i) h.take(i).respond(echo(h.take(i)));
  for (int i = 1; i < 4; ++i) {
    auto f = c.recv_frame();
    REQUIRE(f);
    CHECK(be32(f->data()) == i);
  }
}

TEST_CASE("A hold released before the answer lets later requests go and answers stay in order") {
  // Request 1 holds, then releases from another thread before it is
  // answered (a produce on the I/O pool whose records have offsets): 2 and
  // 3 are dispatched while 1 waits; the answers still go out 0, 1, 2, 3.
  Holder h({1});
  ServerFixture fx({}, h.dispatcher());
  RawClient c(fx.port());
  REQUIRE(c.send_all(frames(0, 4)));
  REQUIRE(h.wait_for(2));
  REQUIRE(fx.server().quiesce());
  CHECK(h.count() == 2);  // held: 2 and 3 wait
  std::thread releaser([&] { h.take(1).release_later_requests(); });
  releaser.join();
  REQUIRE(h.wait_for(4));
  h.take(3).respond(echo(h.take(3)));
  h.take(2).respond(echo(h.take(2)));
  // A second release, from a request no longer holding, changes nothing.
  h.take(1).release_later_requests();
  h.take(1).respond(echo(h.take(1)));
  h.take(0).respond(echo(h.take(0)));
  for (int i = 0; i < 4; ++i) {
    auto f = c.recv_frame();
    REQUIRE(f);
    CHECK(be32(f->data()) == i);
  }
}

TEST_CASE("A stale release does not free a later request's hold") {
  // 1 holds and is answered; 2 then holds; 1's late release must leave 2's
  // hold in place (3 waits for 2's answer).
  Holder h({1, 2});
  ServerFixture fx({}, h.dispatcher());
  RawClient c(fx.port());
  REQUIRE(c.send_all(frames(0, 4)));
  REQUIRE(h.wait_for(2));
  h.take(1).respond(echo(h.take(1)));
  REQUIRE(h.wait_for(3));            // 2 dispatched, and holds
  h.take(1).release_later_requests();  // stale: 1 holds nothing now
  REQUIRE(fx.server().quiesce());
  CHECK(h.count() == 3);
  h.take(2).respond(echo(h.take(2)));
  REQUIRE(h.wait_for(4));
  h.take(3).respond(echo(h.take(3)));
  h.take(0).respond(echo(h.take(0)));
  for (int i = 0; i < 4; ++i) {
    auto f = c.recv_frame();
    REQUIRE(f);
    CHECK(be32(f->data()) == i);
  }
}

TEST_CASE("queued.max.request.bytes pauses reading across connections until answers free it") {
  Holder h;
  ServerFixture fx({"queued.max.request.bytes=1000"}, h.dispatcher());
  RawClient a(fx.port());
  RawClient b(fx.port());
  auto f0 = test_frame(0, 400), f1 = test_frame(1, 400), f2 = test_frame(2, 400);
  std::vector<uint8_t> three = f0;
  three.insert(three.end(), f1.begin(), f1.end());
  three.insert(three.end(), f2.begin(), f2.end());
  REQUIRE(a.send_all(three));
  REQUIRE(h.wait_for(2));
  REQUIRE(b.send_all(test_frame(3, 400)));
  // Both connections wait for the budget: neither dispatches meanwhile.
  REQUIRE(eventually([&] { return fx.server().budget().waiting() == 2; }));
  CHECK(h.count() == 2);  // 800 of 1000 bytes held: neither the third nor b's frame fits
  CHECK(fx.server().budget().in_use() == 800);
  h.take(0).respond(echo(h.take(0)));
  REQUIRE(h.wait_for(3));
  // Both were woken; the one that did not fit waits again.
  REQUIRE(eventually([&] { return fx.server().budget().waiting() == 1; }));
  CHECK(h.count() == 3);  // 400 freed: one more fits, not two
  for (size_t i = 1; i < 3; ++i) h.take(i).respond(echo(h.take(i)));
  REQUIRE(h.wait_for(4));
  for (size_t i = 3; i < 4; ++i) h.take(i).respond(echo(h.take(i)));
  std::vector<int32_t> got_a, got_b;
  for (int i = 0; i < 3; ++i) {
    auto f = a.recv_frame();
    REQUIRE(f);
    got_a.push_back(be32(f->data()));
  }
  auto fb = b.recv_frame();
  REQUIRE(fb);
  CHECK(got_a == std::vector<int32_t>{0, 1, 2});
  CHECK(be32(fb->data()) == 3);
  CHECK(eventually([&] { return fx.server().budget().in_use() == 0; }));
}

TEST_CASE("A response with segment slices arrives byte for byte") {
  TempDir dir;
  storage::io::PosixFileSystem fs;
  auto log = storage::test::open_log(fs, dir.path() + "/t-0", storage::LogConfig{});
  for (int i = 0; i < 30; ++i) {
    auto batch = storage::test::make_batch(10, 1000 + i, 3000);
    storage::test::append_ok(*log, batch);
  }
  auto rr = log->read(0, 64u << 20);
  REQUIRE(rr.is_ok());
  auto file_bytes = storage::read_slices(*rr);
  REQUIRE(file_bytes.is_ok());

  // The answer comes later, from another thread: [size][corr][records][trailer].
  std::mutex threads_mu;
  std::vector<std::thread> threads;
  Server::DispatchFn dispatch = [&rr, &threads_mu, &threads](RequestContext ctx) {
    std::lock_guard<std::mutex> lock(threads_mu);
    threads.emplace_back([ctx = std::move(ctx), &rr] {
      ::usleep(50000);
      Response r;
      r.bytes = be32_bytes(static_cast<int32_t>(4 + rr->bytes + 2));
      auto c = be32_bytes(correlation_of(ctx));
      r.bytes.insert(r.bytes.end(), c.begin(), c.end());
      r.splices.push_back({r.bytes.size(), rr->slices, rr->bytes});
      r.bytes.insert(r.bytes.end(), {0xee, 0xff});
      ctx.respond(std::move(r));
    });
  };
  struct Joiner {
    std::mutex& mu;
    std::vector<std::thread>& threads;
    ~Joiner() {
      std::lock_guard<std::mutex> lock(mu);
      for (auto& t : threads) t.join();
    }
  } joiner{threads_mu, threads};
  ServerFixture fx({}, dispatch);
  RawClient c(fx.port());
  REQUIRE(c.send_all(frames(0, 2)));
  for (int i = 0; i < 2; ++i) {
    auto f = c.recv_frame();
    REQUIRE(f);
    REQUIRE(f->size() == 4 + file_bytes->size() + 2);
    CHECK(be32(f->data()) == i);
    CHECK(std::equal(file_bytes->begin(), file_bytes->end(), f->begin() + 4));
    CHECK((*f)[f->size() - 2] == 0xee);
    CHECK((*f)[f->size() - 1] == 0xff);
  }
}

TEST_CASE("stop() lets in-flight requests be answered within the grace period") {
  Holder h;
  ServerFixture fx({}, h.dispatcher());
  RawClient c(fx.port());
  REQUIRE(c.send_all(frames(0, 2)));
  REQUIRE(h.wait_for(2));
  std::thread answer([&] {
    ::usleep(100000);
    for (size_t i = 0; i < 2; ++i) h.take(i).respond(echo(h.take(i)));
  });
  const auto t0 = std::chrono::steady_clock::now();
  fx.server().stop(std::chrono::milliseconds(3000));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(2500));
  answer.join();
  for (int i = 0; i < 2; ++i) {
    auto f = c.recv_frame();
    REQUIRE(f);
    CHECK(be32(f->data()) == i);
  }
  CHECK(c.closed_by_peer());
}

TEST_CASE("stop() closes connections whose answers do not come within the grace period") {
  Holder h;
  ServerFixture fx({}, h.dispatcher());
  RawClient c(fx.port());
  REQUIRE(c.send_all(frames(0, 1)));
  REQUIRE(h.wait_for(1));
  const auto t0 = std::chrono::steady_clock::now();
  fx.server().stop(std::chrono::milliseconds(200));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(2000));
  CHECK(c.closed_by_peer());
  // A late answer, after the server stopped, is dropped without harm.
  h.take(0).respond(echo(h.take(0)));
}

// A request must never be lost without an answer: the slot would stay busy
// and the connection (and its idle timer) stall forever. Two ways a handler
// bug loses one: it drops the context, or async work holding it throws
// (the exception reaches Server::run_thread, which logs it and goes on).
TEST_CASE("A request dropped unanswered, or lost in async work that threw, closes its connection") {
  std::atomic<int> thrown{0};
  Server::DispatchFn dispatch = [&thrown](RequestContext ctx) {
    const int32_t c = correlation_of(ctx);
    if (c == 0) return;  // dropped: the context dies here unanswered
    if (c == 1) {        // async work that throws before it answers
      auto exec = ctx.executor;
      asio::post(exec, [ctx = std::move(ctx), &thrown]() mutable {
        thrown.fetch_add(1);
        throw std::runtime_error("injected failure in async work");
      });
      return;
    }
    ctx.respond(echo(ctx));  // the others are answered
  };
  ServerFixture fx({}, dispatch);
  for (int32_t lost : {0, 1}) {
    RawClient c(fx.port());
    REQUIRE(c.send_all(test_frame(lost)));
    CHECK(c.closed_by_peer());
  }
  CHECK(thrown.load() == 1);
  // The network threads still serve.
  RawClient ok(fx.port());
  REQUIRE(ok.send_all(test_frame(7)));
  auto a = ok.recv_frame();
  REQUIRE(a);
  CHECK(be32(a->data()) == 7);
}

TEST_CASE("An answer after the Server is destroyed is dropped") {
  Holder h;
  std::function<void(Response)> late;
  {
    ServerFixture fx({}, h.dispatcher());
    RawClient c(fx.port());
    REQUIRE(c.send_all(frames(0, 1)));
    REQUIRE(h.wait_for(1));
    late = h.take(0).respond;
  }
  Response r;
  r.bytes = {0, 0, 0, 0};
  late(std::move(r));  // must neither crash nor touch freed memory
  SUCCEED();
}

}  // namespace
}  // namespace CK_UNITY_ID
}  // namespace ciuickafka::broker::test
