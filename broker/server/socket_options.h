// broker/server/socket_options.h: socket.send.buffer.bytes and
// socket.receive.buffer.bytes applied to an accepted connection.
//
// A value of -1 (or any negative value) leaves the kernel's default; 0 and
// above are passed to SO_SNDBUF / SO_RCVBUF as Kafka's acceptor does (Linux
// doubles them for bookkeeping and caps them at net.core.[wr]mem_max). A
// failing setsockopt is not fatal: the connection keeps the default and the
// error is returned for the caller to log.
//
// Thread-safety: a pure function of its socket descriptor.
#pragma once

#include <sys/socket.h>

#include <cerrno>
#include <cstdint>

namespace ciuickafka::broker {

// Returns 0, or the errno of the first setsockopt that failed.
inline int apply_socket_buffers(int fd, int32_t send_bytes, int32_t receive_bytes) {
  int err = 0;
  if (send_bytes >= 0 && ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &send_bytes, sizeof send_bytes) != 0) err = errno;
  if (receive_bytes >= 0 && ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_bytes, sizeof receive_bytes) != 0 &&
      err == 0)
    err = errno;
  return err;
}

}  // namespace ciuickafka::broker
