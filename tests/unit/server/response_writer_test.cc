// tests/unit/server/response_writer_test.cc: ResponseWriter over a Unix
// socket pair: bytes and file slices in order, partial sends and EAGAIN with
// a slow reader, a file that is shorter than its slice, inconsistent splices,
// and the bounce path for in-memory files.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "broker/server/response_writer.h"
#include "storage/io/mem_file.h"
#include "storage/io/posix_file.h"
#include "tests/unit/storage/log_test_util.h"
#include "tests/unit/storage/temp_dir.h"

namespace ciuickafka::broker {
namespace {

using storage::test::TempDir;

struct SocketPair {
  int w = -1, r = -1;
  explicit SocketPair(int sndbuf = 0) {
    int fds[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
    w = fds[0];
    r = fds[1];
    if (sndbuf > 0) ::setsockopt(w, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    ::fcntl(w, F_SETFL, ::fcntl(w, F_GETFL) | O_NONBLOCK);
  }
  ~SocketPair() {
    if (w >= 0) ::close(w);
    if (r >= 0) ::close(r);
  }
};

// Reads everything from fd until EOF on a thread, slowly when asked.
class Drain {
 public:
  Drain(int fd, bool slow) {
    t_ = std::thread([this, fd, slow] {
      uint8_t buf[8192];
      for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) break;
        out_.insert(out_.end(), buf, buf + n);
        if (slow) ::usleep(200);
      }
    });
  }
  std::vector<uint8_t> finish() {
    t_.join();
    return std::move(out_);
  }

 private:
  std::thread t_;
  std::vector<uint8_t> out_;
};

// Runs the writer to completion, waiting for writability; counts waits.
ResponseWriter::Status run(ResponseWriter& w, int fd, int* waits, std::error_code& ec) {
  for (;;) {
    const auto st = w.write_some(ec);
    if (st != ResponseWriter::Status::kWouldBlock) return st;
    ++*waits;
    pollfd p{fd, POLLOUT, 0};
    ::poll(&p, 1, 5000);
  }
}

std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

TEST_CASE("ResponseWriter sends a plain response whole") {
  SocketPair sp;
  Response r;
  r.bytes = {0, 0, 0, 5, 'h', 'e', 'l', 'l', 'o'};
  ResponseWriter w(sp.w, r);
  std::error_code ec;
  REQUIRE(w.write_some(ec) == ResponseWriter::Status::kDone);
  CHECK(w.written() == 9);
  ::shutdown(sp.w, SHUT_WR);
  Drain d(sp.r, false);
  CHECK(d.finish() == r.bytes);
}

TEST_CASE("ResponseWriter interleaves bytes and segment slices with sendfile, through EAGAIN") {
  TempDir dir;
  storage::io::PosixFileSystem fs;
  storage::LogConfig cfg;
  cfg.segment.segment_bytes = 1 << 20;  // several segments: slices from more than one file
  auto log = storage::test::open_log(fs, dir.path() + "/t-0", cfg);
  for (int i = 0; i < 40; ++i) {
    auto batch = storage::test::make_batch(8, 1000 + i, 8000);
    storage::test::append_ok(*log, batch);
  }
  auto rr = log->read(0, 64u << 20);
  REQUIRE(rr.is_ok());
  REQUIRE(rr->slices.size() >= 2);
  for (const auto& s : rr->slices) REQUIRE(s.slice.fd >= 0);
  auto expected_records = storage::read_slices(*rr);
  REQUIRE(expected_records.is_ok());

  // [head][records][middle][records again][tail]
  Response r;
  r.bytes = bytes_of("HEAD-MIDDLE-TAIL");
  r.splices.push_back({4, rr->slices, rr->bytes});
  r.splices.push_back({11, rr->slices, rr->bytes});
  std::vector<uint8_t> expected = bytes_of("HEAD");
  expected.insert(expected.end(), expected_records->begin(), expected_records->end());
  const auto mid = bytes_of("-MIDDLE");
  expected.insert(expected.end(), mid.begin(), mid.end());
  expected.insert(expected.end(), expected_records->begin(), expected_records->end());
  const auto tail = bytes_of("-TAIL");
  expected.insert(expected.end(), tail.begin(), tail.end());

  SocketPair sp(16 << 10);
  Drain d(sp.r, true);
  ResponseWriter w(sp.w, std::move(r));
  CHECK(w.total_size() == expected.size());
  int waits = 0;
  std::error_code ec;
  REQUIRE(run(w, sp.w, &waits, ec) == ResponseWriter::Status::kDone);
  CHECK(waits > 0);  // the slow reader forced partial sends
  CHECK(w.written() == expected.size());
  ::shutdown(sp.w, SHUT_WR);
  const auto got = d.finish();
  REQUIRE(got.size() == expected.size());
  CHECK(got == expected);
}

TEST_CASE("ResponseWriter fails when a file is shorter than its slice") {
  TempDir dir;
  const std::string path = dir.path() + "/short";
  const int fd = ::open(path.c_str(), O_CREAT | O_RDWR, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, "0123456789", 10) == 10);
  storage::LogSlice s;
  s.slice.fd = fd;
  s.slice.position = 4;
  s.slice.length = 100;  // only 6 bytes are there
  Response r;
  r.bytes = {'a', 'b'};
  r.splices.push_back({2, {s}, 100});
  SocketPair sp;
  ResponseWriter w(sp.w, std::move(r));
  std::error_code ec;
  int waits = 0;
  CHECK(run(w, sp.w, &waits, ec) == ResponseWriter::Status::kFailed);
  CHECK(ec == std::errc::io_error);
  CHECK(w.written() == 2 + 6);
  ::close(fd);
}

TEST_CASE("ResponseWriter refuses inconsistent splices before sending anything") {
  storage::LogSlice s;
  s.slice.fd = 0;
  s.slice.length = 10;
  SocketPair sp;
  std::error_code ec;
  SECTION("length does not match the slices") {
    Response r;
    r.bytes = {1, 2, 3};
    r.splices.push_back({1, {s}, 11});
    ResponseWriter w(sp.w, std::move(r));
    CHECK(w.write_some(ec) == ResponseWriter::Status::kFailed);
    CHECK(w.written() == 0);
  }
  SECTION("position past the bytes") {
    Response r;
    r.bytes = {1, 2, 3};
    r.splices.push_back({4, {s}, 10});
    ResponseWriter w(sp.w, std::move(r));
    CHECK(w.write_some(ec) == ResponseWriter::Status::kFailed);
  }
  SECTION("positions out of order") {
    Response r;
    r.bytes = {1, 2, 3};
    r.splices.push_back({2, {s}, 10});
    r.splices.push_back({1, {s}, 10});
    ResponseWriter w(sp.w, std::move(r));
    CHECK(w.write_some(ec) == ResponseWriter::Status::kFailed);
  }
}

TEST_CASE("ResponseWriter copies slices of in-memory files through its bounce buffer") {
  storage::io::MemFileSystem fs;
  REQUIRE(fs.create_dir("/d").is_ok());
  auto f = fs.open("/d/f", storage::io::OpenMode::kCreate);
  REQUIRE(f.is_ok());
  std::vector<uint8_t> data(300000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7);
  REQUIRE((*f)->append(data).is_ok());
  REQUIRE((*f)->fd() < 0);
  storage::LogSlice s;
  s.slice.file = f->get();
  s.slice.position = 1000;
  s.slice.length = data.size() - 1000;
  Response r;
  r.bytes = {9};
  r.splices.push_back({1, {s}, s.slice.length});
  SocketPair sp(16 << 10);
  Drain d(sp.r, false);
  ResponseWriter w(sp.w, std::move(r));
  std::error_code ec;
  int waits = 0;
  REQUIRE(run(w, sp.w, &waits, ec) == ResponseWriter::Status::kDone);
  ::shutdown(sp.w, SHUT_WR);
  auto got = d.finish();
  std::vector<uint8_t> expected{9};
  expected.insert(expected.end(), data.begin() + 1000, data.end());
  CHECK(got == expected);
}

}  // namespace
}  // namespace ciuickafka::broker
