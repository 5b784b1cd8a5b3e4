// broker/server/response_writer.cc: send(2) for bytes, sendfile(2) for slices.
#include "broker/server/response_writer.h"

#include <sys/sendfile.h>
#include <sys/socket.h>
#include <algorithm>
#include <cerrno>

namespace ciuickafka::broker {
namespace {

// One sendfile call moves at most this much (Linux caps near 2 GiB anyway);
// smaller calls let other connections of the thread in between.
constexpr uint64_t kMaxSendfile = 4u << 20;
constexpr size_t kBounceSize = 64u << 10;

bool would_block(int e) { return e == EAGAIN || e == EWOULDBLOCK; }

}  // namespace

ResponseWriter::ResponseWriter(int socket_fd, Response response) : fd_(socket_fd), r_(std::move(response)) {
  total_ = r_.total_size();
}

bool ResponseWriter::valid() const {
  size_t prev = 0;
  for (const Splice& sp : r_.splices) {
    if (sp.at < prev || sp.at > r_.bytes.size()) return false;
    prev = sp.at;
    uint64_t sum = 0;
    for (const storage::LogSlice& s : sp.slices) sum += s.slice.length;
    if (sum != sp.length) return false;
  }
  return true;
}

ResponseWriter::Status ResponseWriter::write_some(std::error_code& ec) {
  ec.clear();
  if (!checked_) {
    checked_ = true;
    if (!valid()) {
      ec = std::make_error_code(std::errc::invalid_argument);
      return Status::kFailed;
    }
  }
  for (;;) {
    const bool splice_next = splice_idx_ < r_.splices.size();
    const size_t stop = splice_next ? r_.splices[splice_idx_].at : r_.bytes.size();
    if (byte_pos_ < stop) {
      const Status st = send_bytes(stop, ec);
      if (st != Status::kDone) return st;
      continue;
    }
    if (!splice_next) return Status::kDone;
    const Splice& sp = r_.splices[splice_idx_];
    if (slice_idx_ == sp.slices.size()) {
      ++splice_idx_;
      slice_idx_ = 0;
      slice_done_ = 0;
      continue;
    }
    const storage::LogSlice& s = sp.slices[slice_idx_];
    if (slice_done_ == s.slice.length) {
      ++slice_idx_;
      slice_done_ = 0;
      continue;
    }
    const Status st = s.slice.fd >= 0 ? send_slice(s, ec) : copy_slice(s, ec);
    if (st != Status::kDone) return st;
  }
}

ResponseWriter::Status ResponseWriter::send_bytes(size_t end, std::error_code& ec) {
  // MSG_MORE when more of this response follows (record data after a
  // header): they leave in full packets. Never on the last piece, which
  // would sit corked.
  const size_t len = end - byte_pos_;
  const int flags = MSG_NOSIGNAL | (written_ + len < total_ ? MSG_MORE : 0);
  const ssize_t n = ::send(fd_, r_.bytes.data() + byte_pos_, len, flags);
  if (n < 0) {
    if (errno == EINTR) return Status::kDone;  // caller loops
    if (would_block(errno)) return Status::kWouldBlock;
    ec = std::error_code(errno, std::system_category());
    return Status::kFailed;
  }
  byte_pos_ += static_cast<size_t>(n);
  written_ += static_cast<uint64_t>(n);
  return Status::kDone;
}

ResponseWriter::Status ResponseWriter::send_slice(const storage::LogSlice& s, std::error_code& ec) {
  off_t offset = static_cast<off_t>(s.slice.position + slice_done_);
  const uint64_t want = std::min(s.slice.length - slice_done_, kMaxSendfile);
  const ssize_t n = ::sendfile(fd_, s.slice.fd, &offset, want);
  if (n < 0) {
    if (errno == EINTR) return Status::kDone;
    if (would_block(errno)) return Status::kWouldBlock;
    ec = std::error_code(errno, std::system_category());
    return Status::kFailed;
  }
  if (n == 0) {  // end of file before the slice's end: the file shrank
    ec = std::make_error_code(std::errc::io_error);
    return Status::kFailed;
  }
  slice_done_ += static_cast<uint64_t>(n);
  written_ += static_cast<uint64_t>(n);
  return Status::kDone;
}

ResponseWriter::Status ResponseWriter::copy_slice(const storage::LogSlice& s, std::error_code& ec) {
  if (bounce_pos_ == bounce_.size()) {
    if (s.slice.file == nullptr) {
      ec = std::make_error_code(std::errc::bad_file_descriptor);
      return Status::kFailed;
    }
    bounce_.resize(std::min<uint64_t>(s.slice.length - slice_done_, kBounceSize));
    bounce_pos_ = 0;
    auto got = s.slice.file->read_at(s.slice.position + slice_done_, bounce_);
    if (!got.is_ok() || *got == 0) {
      bounce_.clear();
      ec = std::make_error_code(std::errc::io_error);
      return Status::kFailed;
    }
    bounce_.resize(*got);
  }
  const size_t len = bounce_.size() - bounce_pos_;
  const int flags = MSG_NOSIGNAL | (written_ + len < total_ ? MSG_MORE : 0);
  const ssize_t n = ::send(fd_, bounce_.data() + bounce_pos_, len, flags);
  if (n < 0) {
    if (errno == EINTR) return Status::kDone;
    if (would_block(errno)) return Status::kWouldBlock;
    ec = std::error_code(errno, std::system_category());
    return Status::kFailed;
  }
  bounce_pos_ += static_cast<size_t>(n);
  slice_done_ += static_cast<uint64_t>(n);
  written_ += static_cast<uint64_t>(n);
  if (bounce_pos_ == bounce_.size()) {
    bounce_.clear();
    bounce_pos_ = 0;
  }
  return Status::kDone;
}

}  // namespace ciuickafka::broker
