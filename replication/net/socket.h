// replication/net/socket.h: a TCP connection with deadlines, for blocking
// callers on dedicated threads.
//
// The socket is non-blocking; every wait is a poll() bounded by a deadline,
// so no call blocks past it. Each wait also watches an Interrupter (an
// eventfd): triggering it from any thread makes the waits return kClosed at
// once, which is how another thread unblocks a call stuck on a silent peer
// without touching the socket's fd (no race with the owner closing it).
// EINTR is retried (threads that own an io_uring see task-work interrupts).
//
// Thread-safety: a TcpSocket belongs to one thread. Interrupter::trigger()
// may be called from any thread, any number of times; once triggered it
// stays triggered.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "replication/net/error.h"

namespace ciuickafka::replication::net {

using Clock = std::chrono::steady_clock;

class Interrupter {
 public:
  // nullptr when no eventfd could be made (the message says why).
  static std::shared_ptr<Interrupter> create(std::string* error);
  ~Interrupter();
  Interrupter(const Interrupter&) = delete;
  Interrupter& operator=(const Interrupter&) = delete;

  void trigger();
  bool triggered() const;
  int fd() const { return fd_; }
  // Waits until the deadline or a trigger; true when triggered.
  bool wait_until(Clock::time_point deadline) const;

 private:
  explicit Interrupter(int fd) : fd_(fd) {}
  int fd_;
};

class TcpSocket {
 public:
  // Resolves host and connects (TCP_NODELAY), trying each address until one
  // answers or the deadline passes. Name resolution itself is getaddrinfo's
  // and not bounded by the deadline: inter-broker addresses are normally
  // numeric or in /etc/hosts.
  static NetResult<std::unique_ptr<TcpSocket>> connect(const std::string& host, uint16_t port,
                                                       Clock::time_point deadline,
                                                       std::shared_ptr<Interrupter> interrupter);
  ~TcpSocket();
  TcpSocket(const TcpSocket&) = delete;
  TcpSocket& operator=(const TcpSocket&) = delete;

  // Writes all of `data`, or fails (timeout, peer closed, interrupted).
  Status send_all(std::span<const uint8_t> data, Clock::time_point deadline);
  // Reads exactly out.size() bytes, or fails.
  Status recv_exact(std::span<uint8_t> out, Clock::time_point deadline);

  const std::string& peer() const { return peer_; }

 private:
  TcpSocket(int fd, std::string peer, std::shared_ptr<Interrupter> interrupter)
      : fd_(fd), peer_(std::move(peer)), interrupter_(std::move(interrupter)) {}
  // Waits for `events` on the socket; kTimeout / kClosed errors otherwise.
  Status wait(short events, Clock::time_point deadline, const char* what);

  int fd_;
  std::string peer_;  // "host:port", for messages
  std::shared_ptr<Interrupter> interrupter_;
};

}  // namespace ciuickafka::replication::net
