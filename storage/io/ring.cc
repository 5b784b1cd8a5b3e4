// storage/io/ring.cc: Ring over liburing.
#include "storage/io/ring.h"

#include <fcntl.h>
#include <liburing.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <string>
#include <utility>
#include <vector>

namespace ciuickafka::storage::io {

namespace {
// Process-wide figures over every Ring (for metrics; relaxed atomics).
std::atomic<uint64_t> g_submitted{0};   // SQEs io_uring_submit handed to the kernel
std::atomic<uint64_t> g_completed{0};   // CQEs reaped
std::atomic<int64_t> g_in_flight{0};    // operations queued or submitted, callback not yet run
std::atomic<int64_t> g_rings{0};        // Rings alive
}  // namespace

Ring::ProcessStats Ring::process_stats() {
  ProcessStats st;
  st.submitted = g_submitted.load(std::memory_order_relaxed);
  st.completed = g_completed.load(std::memory_order_relaxed);
  st.in_flight = g_in_flight.load(std::memory_order_relaxed);
  st.rings = g_rings.load(std::memory_order_relaxed);
  return st;
}


namespace {
// A single SQE moves at most this much; longer writes continue as "short".
constexpr size_t kMaxChunk = size_t{1} << 30;
}  // namespace

struct Ring::Op {
  enum class Kind { kWrite, kRead, kSync, kFallocate } kind;
  int fd = -1;
  uint64_t offset = 0;
  const uint8_t* wdata = nullptr;
  uint8_t* rdata = nullptr;
  size_t len = 0;
  size_t done = 0;  // bytes written so far (writes resubmit the rest)
  Callback cb;
  ReadCallback rcb;

  std::string describe() const {
    const char* what = kind == Kind::kWrite  ? "write"
                       : kind == Kind::kRead ? "read"
                       : kind == Kind::kSync ? "fdatasync"
                                             : "fallocate";
    return std::string("io_uring ") + what + " fd " + std::to_string(fd) + " offset " + std::to_string(offset);
  }
};

Result<std::unique_ptr<Ring>> Ring::create(unsigned entries) {
  std::unique_ptr<Ring> r(new Ring());
  r->ring_ = std::make_unique<struct io_uring>();
  int rc = io_uring_queue_init(entries, r->ring_.get(), 0);
  if (rc < 0) {
    r->ring_.reset();
    return Status::unsupported(-rc, "io_uring_queue_init");
  }
  r->event_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (r->event_fd_ < 0) return Status::from_errno(errno, "eventfd");
  rc = io_uring_register_eventfd(r->ring_.get(), r->event_fd_);
  if (rc < 0) return Status::unsupported(-rc, "io_uring_register_eventfd");
  r->counted_ = true;
  g_rings.fetch_add(1, std::memory_order_relaxed);
  return r;
}

Ring::~Ring() {
  if (ring_) {
    (void)io_uring_submit(ring_.get());
    while (in_flight_ > 0) {
      struct io_uring_cqe* cqe = nullptr;
      int rc = io_uring_wait_cqe(ring_.get(), &cqe);
      if (rc == -EINTR) continue;
      if (rc < 0) break;  // nothing more will come; leak the rest rather than hang
      drain(false);
    }
    io_uring_queue_exit(ring_.get());
  }
  // Operations whose callbacks will never run leave the in-flight figure.
  g_in_flight.fetch_sub(static_cast<int64_t>(in_flight_), std::memory_order_relaxed);
  if (counted_) g_rings.fetch_sub(1, std::memory_order_relaxed);
  if (event_fd_ >= 0) ::close(event_fd_);
}

Status Ring::queue(Op* op, bool link_next) {
  struct io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
  if (sqe == nullptr) {
    // Queue full: hand what is there to the kernel and retry once.
    CK_RETURN_IF_ERROR(flush());
    sqe = io_uring_get_sqe(ring_.get());
  }
  if (sqe == nullptr) return Status::from_errno(EBUSY, op->describe() + ": submission queue full");
  switch (op->kind) {
    case Op::Kind::kWrite: {
      size_t n = std::min(op->len - op->done, kMaxChunk);  // the rest continues as a short write
      io_uring_prep_write(sqe, op->fd, op->wdata + op->done, static_cast<unsigned>(n), op->offset + op->done);
      break;
    }
    case Op::Kind::kRead:
      io_uring_prep_read(sqe, op->fd, op->rdata, static_cast<unsigned>(op->len), op->offset);
      break;
    case Op::Kind::kSync:
      io_uring_prep_fsync(sqe, op->fd, IORING_FSYNC_DATASYNC);
      break;
    case Op::Kind::kFallocate:
      io_uring_prep_fallocate(sqe, op->fd, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(op->offset),
                              static_cast<off_t>(op->len));
      break;
  }
  if (link_next) sqe->flags |= IOSQE_IO_LINK;
  io_uring_sqe_set_data(sqe, op);
  return Status::ok();
}

Status Ring::submit_write(int fd, uint64_t offset, std::span<const uint8_t> data, Callback cb,
                          bool link_next) {
  std::unique_ptr<Op> op(
      new Op{Op::Kind::kWrite, fd, offset, data.data(), nullptr, data.size(), 0, std::move(cb), {}});
  CK_RETURN_IF_ERROR(queue(op.get(), link_next));
  op.release();
  ++in_flight_;
  g_in_flight.fetch_add(1, std::memory_order_relaxed);
  return Status::ok();
}

Status Ring::submit_read(int fd, uint64_t offset, std::span<uint8_t> out, ReadCallback cb) {
  size_t len = out.size() > kMaxChunk ? kMaxChunk : out.size();
  std::unique_ptr<Op> op(new Op{Op::Kind::kRead, fd, offset, nullptr, out.data(), len, 0, {}, std::move(cb)});
  CK_RETURN_IF_ERROR(queue(op.get(), false));
  op.release();
  ++in_flight_;
  g_in_flight.fetch_add(1, std::memory_order_relaxed);
  return Status::ok();
}

Status Ring::submit_fdatasync(int fd, Callback cb, bool link_next) {
  std::unique_ptr<Op> op(new Op{Op::Kind::kSync, fd, 0, nullptr, nullptr, 0, 0, std::move(cb), {}});
  CK_RETURN_IF_ERROR(queue(op.get(), link_next));
  op.release();
  ++in_flight_;
  g_in_flight.fetch_add(1, std::memory_order_relaxed);
  return Status::ok();
}

Status Ring::submit_preallocate(int fd, uint64_t offset, uint64_t len, Callback cb) {
  std::unique_ptr<Op> op(new Op{Op::Kind::kFallocate, fd, offset, nullptr, nullptr, len, 0, std::move(cb), {}});
  CK_RETURN_IF_ERROR(queue(op.get(), false));
  op.release();
  ++in_flight_;
  g_in_flight.fetch_add(1, std::memory_order_relaxed);
  return Status::ok();
}

Status Ring::flush() {
  int rc;
  do {
    rc = io_uring_submit(ring_.get());
  } while (rc == -EINTR);
  if (rc < 0) return Status::from_errno(-rc, "io_uring_submit");
  g_submitted.fetch_add(static_cast<uint64_t>(rc), std::memory_order_relaxed);
  return Status::ok();
}

void Ring::complete(Op* op, int res, bool run) {
  g_completed.fetch_add(1, std::memory_order_relaxed);
  if (op->kind == Op::Kind::kWrite && res > 0 && op->done + static_cast<size_t>(res) < op->len) {
    // Short write: continue with the rest under the same callback.
    op->done += static_cast<size_t>(res);
    if (run && queue(op, false).is_ok() && flush().is_ok()) return;
    if (!run) {
      --in_flight_;
      g_in_flight.fetch_sub(1, std::memory_order_relaxed);
      delete op;
      return;
    }
    res = -EIO;
  }
  --in_flight_;
  g_in_flight.fetch_sub(1, std::memory_order_relaxed);
  std::unique_ptr<Op> owned(op);
  if (!run) return;
  if (op->kind == Op::Kind::kRead) {
    if (res < 0) {
      op->rcb(Status::from_errno(-res, op->describe()));
    } else {
      op->rcb(static_cast<size_t>(res));
    }
    return;
  }
  if (res < 0) {
    op->cb(Status::from_errno(-res, op->describe()));
  } else if (op->kind == Op::Kind::kWrite && res == 0 && op->done < op->len) {
    op->cb(Status::from_errno(EIO, op->describe() + ": wrote nothing"));
  } else {
    op->cb(Status::ok());
  }
}

size_t Ring::drain(bool run) {
  size_t ran = 0;
  std::vector<std::pair<Op*, int>> batch;
  for (;;) {
    batch.clear();
    struct io_uring_cqe* cqe;
    unsigned head;
    unsigned seen = 0;
    io_uring_for_each_cqe(ring_.get(), head, cqe) {
      batch.emplace_back(static_cast<Op*>(io_uring_cqe_get_data(cqe)), cqe->res);
      ++seen;
    }
    if (seen == 0) return ran;
    // Release the slots before running callbacks: they may submit more.
    io_uring_cq_advance(ring_.get(), seen);
    for (auto [op, res] : batch) {
      size_t before = in_flight_;
      complete(op, res, run);
      if (in_flight_ < before) ++ran;
    }
  }
}

size_t Ring::poll_completions() {
  uint64_t counter;
  (void)!::read(event_fd_, &counter, sizeof counter);  // reset first, then drain: no lost wakeup
  size_t ran = drain(true);
  // Callbacks may have queued more work; hand it to the kernel in one go.
  if (io_uring_sq_ready(ring_.get()) > 0) (void)flush();
  return ran;
}

Result<size_t> Ring::wait_completions(size_t min) {
  CK_RETURN_IF_ERROR(flush());
  size_t ran = poll_completions();
  while (ran < min && in_flight_ > 0) {
    CK_RETURN_IF_ERROR(flush());
    struct io_uring_cqe* cqe = nullptr;
    int rc = io_uring_wait_cqe(ring_.get(), &cqe);
    if (rc == -EINTR) continue;
    if (rc < 0) return Status::from_errno(-rc, "io_uring_wait_cqe");
    ran += poll_completions();
  }
  return ran;
}

}  // namespace ciuickafka::storage::io
