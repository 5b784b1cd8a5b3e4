// storage/io/ring.h: an io_uring owned by one thread, its completions
// signalled on an eventfd.
//
// Ring is the asynchronous half of the I/O boundary. Its owner submits writes,
// reads and fdatasyncs with a callback each; queued submissions go to the
// kernel on flush() (so many appends cost one io_uring_enter); completions are
// reaped and their callbacks run by poll_completions() or wait_completions(),
// always on the owner's thread.
//
// The eventfd contract (what a network thread relies on):
//   * event_fd() is registered with the ring: the kernel adds to it whenever
//     it posts a completion. It is non-blocking and close-on-exec.
//   * The owner watches it for readability (Boost.Asio:
//     posix::stream_descriptor::async_wait(wait_read)); when it fires, it
//     calls poll_completions(), which first resets the counter and then
//     drains the completion queue, so a completion posted at any moment either
//     is reaped by that call or makes the eventfd readable again. No wakeup is
//     lost; a spurious one (poll_completions() finds nothing) is harmless.
//   * poll_completions() never blocks and returns how many callbacks it ran.
//
// Group commit: submit_write(..., link_next=true) followed by
// submit_fdatasync() is an io_uring link (the sync starts after the write
// completes; if the write fails or is short, the sync completes with
// ECANCELED and the caller resubmits it). Without links, many writes followed
// by one fdatasync, completed together, give a batched fsync: the sync's
// callback fans out to every waiter whose write finished before it was
// submitted.
//
// Short writes are resubmitted for the remainder inside the ring; a write's
// callback runs once, when the whole range is written or has failed. Buffers
// passed to submit_* must stay valid until their callback has run.
//
// process_stats() sums every Ring of the process (operations submitted to
// the kernel, completions reaped, operations in flight, rings alive) with
// relaxed atomics: a metrics collector may read it from any thread.
//
// Thread-safety: none (process_stats() excepted). One thread owns a Ring (one per network thread is the
// intended use, see architecture.md); other threads must not touch it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "storage/status.h"

struct io_uring;

namespace ciuickafka::storage::io {

class Ring {
 public:
  using Callback = std::function<void(Status)>;
  using ReadCallback = std::function<void(Result<size_t>)>;

  // entries: submission queue size (the completion queue is twice that).
  // Fails with kUnsupported when the kernel or a seccomp policy refuses
  // io_uring_queue_init.
  static Result<std::unique_ptr<Ring>> create(unsigned entries = 256);
  // Waits for every operation in flight (the kernel may still be using their
  // buffers) and drops their callbacks without running them.
  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  int event_fd() const { return event_fd_; }

  // Queue an operation. link_next makes the next queued operation wait for
  // this one (IOSQE_IO_LINK). Fails only if the queue stays full after a flush.
  Status submit_write(int fd, uint64_t offset, std::span<const uint8_t> data, Callback cb,
                      bool link_next = false);
  // The callback gets the bytes read: fewer than asked only at end of file.
  Status submit_read(int fd, uint64_t offset, std::span<uint8_t> out, ReadCallback cb);
  Status submit_fdatasync(int fd, Callback cb, bool link_next = false);
  // fallocate(fd, FALLOC_FL_KEEP_SIZE, offset, len): reserves blocks without
  // changing the file's size (io::File::preallocate, asynchronously).
  Status submit_preallocate(int fd, uint64_t offset, uint64_t len, Callback cb);

  // Hands every queued operation to the kernel (io_uring_submit).
  Status flush();
  // Non-blocking: resets the eventfd, reaps every posted completion and runs
  // its callback, then flushes whatever those callbacks queued. Returns the
  // number of callbacks run.
  size_t poll_completions();
  // Flushes, then blocks until at least min callbacks have run (or nothing is
  // left in flight). Returns the number run.
  Result<size_t> wait_completions(size_t min = 1);

  // Operations submitted or queued whose callback has not run yet.
  size_t in_flight() const { return in_flight_; }

  struct ProcessStats {
    uint64_t submitted = 0;  // submission queue entries handed to the kernel (io_uring_submit)
    uint64_t completed = 0;  // completion queue entries reaped
    int64_t in_flight = 0;   // operations queued or submitted whose callback has not run
    int64_t rings = 0;       // Rings alive
  };
  static ProcessStats process_stats();

 private:
  struct Op;
  Ring() = default;
  Status queue(Op* op, bool link_next);
  // Reaps what is in the completion queue; runs callbacks if run is true.
  size_t drain(bool run);
  void complete(Op* op, int res, bool run);

  std::unique_ptr<struct io_uring> ring_;
  int event_fd_ = -1;
  size_t in_flight_ = 0;
  bool counted_ = false;  // in the process' ring count
};

}  // namespace ciuickafka::storage::io
