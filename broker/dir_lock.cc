// broker/dir_lock.cc: flock on each log dir's .lock, holder pid inside.
#include "broker/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ciuickafka::broker {
namespace {

constexpr char kLockFile[] = ".lock";

std::string read_holder(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  std::string pid = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid;
}

}  // namespace

DirLocks::~DirLocks() {
  for (int fd : fds_) ::close(fd);
}

bool DirLocks::lock(const std::vector<std::string>& dirs, std::string* error) {
  for (const std::string& dir : dirs) {
    const std::string path = dir + "/" + kLockFile;
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      *error = "log.dirs: cannot open " + path + ": " + std::strerror(errno);
      break;
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      const std::string holder = read_holder(fd);
      ::close(fd);
      if (err == EWOULDBLOCK) {
        *error = "log.dirs: " + dir + " is in use by another broker (" +
                 (holder.empty() ? std::string("a process") : "process " + holder) + " holds " + path + ")";
      } else {
        *error = "log.dirs: cannot lock " + path + ": " + std::strerror(err);
      }
      break;
    }
    // Ours now: say who holds it, for the message a second process prints.
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
      // The lock is what matters; the pid is only for the message.
    }
    fds_.push_back(fd);
  }
  if (fds_.size() == dirs.size()) return true;
  for (int fd : fds_) ::close(fd);
  fds_.clear();
  return false;
}

}  // namespace ciuickafka::broker
