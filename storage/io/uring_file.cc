// storage/io/uring_file.cc: blocking File calls over a per-thread ring.
#include "storage/io/uring_file.h"

#include <cerrno>
#include <optional>

namespace ciuickafka::storage::io {

Result<Ring*> ring_for_blocking_calls() {
  thread_local std::unique_ptr<Ring> ring;
  if (!ring) {
    auto r = Ring::create(8);
    if (!r) return r.status();
    ring = std::move(r).value();
  }
  return ring.get();
}

namespace {

// Runs the ring until the operation whose completion sets *done has finished.
Status wait_for(Ring& ring, const bool& done) {
  CK_RETURN_IF_ERROR(ring.flush());
  while (!done) {
    auto n = ring.wait_completions(1);
    if (!n) return n.status();
  }
  return Status::ok();
}

Status with_path(Status s, const std::string& path) {
  if (s.is_ok()) return s;
  return Status::from_errno(s.err() != 0 ? s.err() : EIO, s.message() + " (" + path + ")");
}

}  // namespace

Status UringFile::write_at(uint64_t offset, std::span<const uint8_t> data) {
  if (fd_ < 0) return closed_error();
  if (data.empty()) return Status::ok();
  auto ring = ring_for_blocking_calls();
  if (!ring) return ring.status();
  bool done = false;
  Status result;
  CK_RETURN_IF_ERROR((*ring)->submit_write(fd_, offset, data, [&](Status s) {
    result = std::move(s);
    done = true;
  }));
  CK_RETURN_IF_ERROR(wait_for(**ring, done));
  return with_path(std::move(result), path());
}

Result<size_t> UringFile::read_at(uint64_t offset, std::span<uint8_t> out) {
  if (fd_ < 0) return closed_error();
  auto ring = ring_for_blocking_calls();
  if (!ring) return ring.status();
  size_t total = 0;
  while (total < out.size()) {
    bool done = false;
    std::optional<Result<size_t>> got;
    CK_RETURN_IF_ERROR((*ring)->submit_read(fd_, offset + total, out.subspan(total), [&](Result<size_t> r) {
      got.emplace(std::move(r));
      done = true;
    }));
    CK_RETURN_IF_ERROR(wait_for(**ring, done));
    if (!*got) return with_path(got->status(), path());
    if (**got == 0) break;  // end of file
    total += **got;
  }
  return total;
}

Status UringFile::sync() {
  if (fd_ < 0) return closed_error();
  auto ring = ring_for_blocking_calls();
  if (!ring) return ring.status();
  bool done = false;
  Status result;
  CK_RETURN_IF_ERROR((*ring)->submit_fdatasync(fd_, [&](Status s) {
    result = std::move(s);
    done = true;
  }));
  CK_RETURN_IF_ERROR(wait_for(**ring, done));
  return with_path(std::move(result), path());
}

Result<std::unique_ptr<File>> UringFileSystem::open(const std::string& path, OpenMode mode) {
  auto ring = ring_for_blocking_calls();
  if (!ring) return ring.status();
  auto fd = posix_open(path, mode);
  if (!fd) return fd.status();
  return std::unique_ptr<File>(new UringFile(path, *fd));
}

}  // namespace ciuickafka::storage::io
