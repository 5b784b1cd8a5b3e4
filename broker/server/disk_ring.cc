// broker/server/disk_ring.cc: see disk_ring.h.
#include "broker/server/disk_ring.h"

#include "broker/server/busy_time.h"
#include "metrics/log/log.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace ciuickafka::broker {

namespace {

thread_local storage::io::Ring* t_current = nullptr;

void say_once(const std::string& line) {
  static std::once_flag once;
  std::call_once(once, [&] { CK_LOG_INFO("storage", "%s", line.c_str()); });
}

}  // namespace

std::unique_ptr<DiskRing> DiskRing::create(asio::io_context& ioc) {
  const char* mode = std::getenv("CK_STORAGE_IO");
  if (mode != nullptr && std::strcmp(mode, "posix") == 0) {
    say_once("CK_STORAGE_IO=posix: log appends use blocking writes on the network threads");
    return nullptr;
  }
  auto ring = storage::io::Ring::create(256);
  if (!ring) {
    say_once("io_uring is unavailable (" + ring.status().to_string() +
             "): log appends use blocking writes on the network threads");
    return nullptr;
  }
  const int fd = ::dup((*ring)->event_fd());
  if (fd < 0) {
    say_once(std::string("dup of the io_uring eventfd failed: ") + std::strerror(errno) +
             ": log appends use blocking writes");
    return nullptr;
  }
  return std::unique_ptr<DiskRing>(new DiskRing(ioc, std::move(ring).value(), fd));
}

DiskRing::DiskRing(asio::io_context& ioc, std::unique_ptr<storage::io::Ring> ring, int fd)
    : ring_(std::move(ring)), events_(ioc, fd) {}

DiskRing::~DiskRing() {
  if (t_current == ring_.get()) t_current = nullptr;
  boost::system::error_code ec;
  events_.close(ec);
}

void DiskRing::bind_to_this_thread() {
  t_current = ring_.get();
  arm();
}

storage::io::Ring* DiskRing::current() { return t_current; }

void DiskRing::arm() {
  events_.async_wait(asio::posix::stream_descriptor::wait_read, [this](const boost::system::error_code& ec) {
    if (ec) return;  // closed: the thread is stopping
    BusyScope busy;
    ring_->poll_completions();
    arm();
  });
}

void DiskRing::drain() {
  while (ring_->in_flight() > 0) {
    auto n = ring_->wait_completions(1);
    if (!n) {
      CK_LOG_WARN("storage", "waiting for log writes at shutdown: %s", n.status().to_string().c_str());
      return;
    }
  }
}

}  // namespace ciuickafka::broker
