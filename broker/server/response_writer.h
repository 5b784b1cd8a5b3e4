// broker/server/response_writer.h: writes one Response to a non-blocking
// socket: its bytes with send(2), its file slices with sendfile(2).
//
// The writer is a synchronous state machine over a socket descriptor. Each
// write_some() call sends as much as the socket accepts right now and
// remembers where it stopped (partial sends, EAGAIN), so the caller waits
// for writability (asio's async_wait) and calls again. Record bytes go from
// the segment file to the socket inside the kernel: no record byte is copied
// into user space. Only slices without a descriptor (the in-memory file
// system of tests) are read through a small bounce buffer.
//
// A slice that ends early (sendfile returns 0: the file shrank under us)
// fails the write: the frame's size prefix has already promised its bytes,
// so the connection must close. A Response whose splices do not add up
// (positions out of order or past the bytes, lengths that do not match their
// slices) fails before anything is sent.
//
// The Response and its slices (segment references that keep the files open)
// are held until the writer is destroyed; nothing else is.
//
// Thread-safety: one writer belongs to one connection's thread.
#pragma once

#include <cstdint>
#include <memory>
#include <system_error>
#include <vector>

#include "broker/server/response.h"

namespace ciuickafka::broker {

class ResponseWriter {
 public:
  enum class Status { kDone, kWouldBlock, kFailed };

  ResponseWriter(int socket_fd, Response response);

  // Sends until done, until the socket would block, or until an error (ec).
  Status write_some(std::error_code& ec);

  uint64_t total_size() const { return total_; }
  uint64_t written() const { return written_; }

 private:
  Status send_bytes(size_t end, std::error_code& ec);
  Status send_slice(const storage::LogSlice& s, std::error_code& ec);
  Status copy_slice(const storage::LogSlice& s, std::error_code& ec);
  bool valid() const;

  int fd_;
  Response r_;
  uint64_t total_ = 0;
  uint64_t written_ = 0;
  size_t byte_pos_ = 0;     // next byte of r_.bytes to send
  size_t splice_idx_ = 0;   // next splice to send (its `at` is reached)
  size_t slice_idx_ = 0;    // next slice within that splice
  uint64_t slice_done_ = 0; // bytes of that slice already sent
  bool checked_ = false;
  // Bounce buffer for slices without a descriptor.
  std::vector<uint8_t> bounce_;
  size_t bounce_pos_ = 0;
};

}  // namespace ciuickafka::broker
