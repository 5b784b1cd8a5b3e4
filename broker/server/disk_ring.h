// broker/server/disk_ring.h: a network thread's io_uring for log writes.
//
// Each network thread owns one storage::io::Ring (architecture.md, "Threads
// and the io_uring boundary"). Produce queues its appends' writes on it
// (storage::Log::append_async) and flushes once per request, so the thread
// never blocks in write(2) and one io_uring_enter carries every partition of
// the request. The ring's eventfd (a dup, so Asio and the ring each close
// their own) is watched by the thread's io_context: when the kernel posts
// completions, poll_completions() runs their callbacks on this thread, which
// publish the writes (storage/log.h) and answer the requests.
//
// current() is the calling thread's ring: nullptr on other threads, and on
// every thread when the kernel (or a seccomp policy) refuses io_uring, or
// CK_STORAGE_IO=posix asks for blocking writes; appends then write with a
// blocking call, as before.
//
// Thread-safety: the DiskRing belongs to its network thread; drain() only
// after that thread has stopped.
#pragma once

#include <memory>

#include "broker/net/asio.h"
#include "storage/io/ring.h"

namespace ciuickafka::broker {

class DiskRing {
 public:
  // nullptr when io_uring is refused or turned off (a line on stderr says
  // which, once per process).
  static std::unique_ptr<DiskRing> create(asio::io_context& ioc);
  ~DiskRing();
  DiskRing(const DiskRing&) = delete;
  DiskRing& operator=(const DiskRing&) = delete;

  // Makes this ring current() for the calling thread and starts watching
  // its eventfd. Called on the network thread before it runs its io_context.
  void bind_to_this_thread();
  static storage::io::Ring* current();

  // After the network thread has stopped: waits for every write still in
  // flight and runs its callbacks here, so the logs publish what was
  // written before they are closed.
  void drain();

 private:
  DiskRing(asio::io_context& ioc, std::unique_ptr<storage::io::Ring> ring, int fd);
  void arm();

  std::unique_ptr<storage::io::Ring> ring_;
  asio::posix::stream_descriptor events_;
};

}  // namespace ciuickafka::broker
