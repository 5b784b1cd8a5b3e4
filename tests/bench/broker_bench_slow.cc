// tests/bench/broker_bench_slow.cc: a consumer that is slow where it hurts a
// broker: at the socket. It asks for a large Fetch (v4, hand-encoded: header
// v1 then the body) and drains the response at a fixed byte rate through a
// 16 KiB receive buffer, so the broker's send side is blocked most of the
// time. A broker that buffers whole responses in memory shows it in RSS;
// one that sends record bytes from the file (sendfile) does not.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "tests/bench/broker_bench.h"

namespace ckbench {
namespace {

void put16(std::string& b, int v) {
  b.push_back(static_cast<char>((v >> 8) & 0xff));
  b.push_back(static_cast<char>(v & 0xff));
}
void put32(std::string& b, std::int32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<char>((static_cast<std::uint32_t>(v) >> s) & 0xff));
}
void put64(std::string& b, std::int64_t v) {
  for (int s = 56; s >= 0; s -= 8) b.push_back(static_cast<char>((static_cast<std::uint64_t>(v) >> s) & 0xff));
}
void put_str(std::string& b, const std::string& s) {
  put16(b, static_cast<int>(s.size()));
  b += s;
}

std::string fetch_v4(std::int32_t correlation, const std::string& topic, std::int32_t max_bytes) {
  std::string b;
  put16(b, 1);  // api key Fetch
  put16(b, 4);  // version
  put32(b, correlation);
  put_str(b, "broker_bench-slow");
  put32(b, -1);         // replica_id
  put32(b, 500);        // max_wait_ms
  put32(b, 1);          // min_bytes
  put32(b, max_bytes);  // max_bytes
  b.push_back(0);       // isolation_level
  put32(b, 1);          // topics
  put_str(b, topic);
  put32(b, 1);  // partitions
  put32(b, 0);  // partition
  put64(b, 0);  // fetch_offset
  put32(b, max_bytes);
  std::string framed;
  put32(framed, static_cast<std::int32_t>(b.size()));
  return framed + b;
}

}  // namespace

SlowReader::SlowReader(std::string host, int port, std::string topic, double bytes_per_s)
    : host_(std::move(host)), topic_(std::move(topic)), port_(port), rate_(bytes_per_s) {
  thread_ = std::thread([this] { loop(); });
}

SlowReader::~SlowReader() { stop(); }

void SlowReader::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

std::string SlowReader::error() const {
  std::lock_guard<std::mutex> g(mu_);
  return error_;
}

void SlowReader::loop() {
  auto fail = [this](const std::string& what) {
    std::lock_guard<std::mutex> g(mu_);
    if (error_.empty()) error_ = what;
  };
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int rcvbuf = 16 * 1024;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  timeval tv{0, 200000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port_));
  ::inet_pton(AF_INET, host_.c_str(), &addr.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    fail(std::string("connect: ") + std::strerror(errno));
    ::close(fd);
    return;
  }
  char chunk[16 * 1024];
  for (std::int32_t corr = 1; !stop_.load(); ++corr) {
    std::string req = fetch_v4(corr, topic_, 64 << 20);
    if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
      fail(std::string("send: ") + std::strerror(errno));
      break;
    }
    // Size prefix, then the body at rate_ bytes/s.
    unsigned char sz[4];
    std::size_t got = 0;
    while (got < 4 && !stop_.load()) {
      ssize_t n = ::recv(fd, sz + got, 4 - got, 0);
      if (n == 0) {
        fail("broker closed the connection");
        stop_ = true;
      } else if (n > 0) {
        got += static_cast<std::size_t>(n);
      }
    }
    if (got < 4) break;
    std::uint64_t left = (std::uint64_t{sz[0]} << 24) | (sz[1] << 16) | (sz[2] << 8) | sz[3];
    std::uint64_t read = 0;
    double t0 = now_s();
    while (left > 0 && !stop_.load()) {
      double allowed = (now_s() - t0) * rate_ + sizeof chunk;
      if (read >= allowed) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
      ssize_t n = ::recv(fd, chunk, std::min<std::uint64_t>(left, sizeof chunk), 0);
      if (n == 0) {
        fail("broker closed the connection mid-response");
        stop_ = true;
      } else if (n > 0) {
        left -= static_cast<std::uint64_t>(n);
        read += static_cast<std::uint64_t>(n);
        bytes_ += static_cast<std::uint64_t>(n);
      }
    }
    if (left == 0) responses_++;
  }
  ::close(fd);
}

}  // namespace ckbench
