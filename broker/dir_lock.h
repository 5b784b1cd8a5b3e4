// broker/dir_lock.h: one broker per log directory.
//
// Like Kafka, the broker takes an exclusive flock(2) on a `.lock` file in
// every log dir before reading anything there, and holds it until the
// process exits (the kernel drops it on any exit, kill -9 included, so a
// crash never leaves a stale lock). A second process finds the lock held
// and stops at once, having written nothing; its message names the
// directory and the holder's pid, which the holder writes into the file.
//
// Thread-safety: lock_dirs() is called once at startup; DirLocks is owned by
// the broker and only closes its descriptors when destroyed.
#pragma once

#include <string>
#include <vector>

namespace ciuickafka::broker {

class DirLocks {
 public:
  DirLocks() = default;
  ~DirLocks();
  DirLocks(DirLocks&& other) noexcept : fds_(std::move(other.fds_)) { other.fds_.clear(); }
  DirLocks& operator=(DirLocks&&) = delete;
  DirLocks(const DirLocks&) = delete;

  // Locks dir/.lock for each dir (created if absent). On failure every lock
  // taken so far is released and *error says which dir and who holds it.
  bool lock(const std::vector<std::string>& dirs, std::string* error);

 private:
  std::vector<int> fds_;
};

}  // namespace ciuickafka::broker
