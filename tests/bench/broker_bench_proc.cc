// tests/bench/broker_bench_proc.cc: the broker's CPU time and RSS from
// /proc/<pid>/stat and /proc/<pid>/status, the raw disk write loop that
// the broker's produce figures are compared with, and the page-cache drop
// and raw cold read of the cold-replay phase.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "tests/bench/broker_bench.h"

namespace ckbench {

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

ProcStat read_proc(int pid) {
  ProcStat out;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return out;
  // The command name may hold spaces and parentheses: fields start after the last ')'.
  auto close = line.rfind(')');
  if (close == std::string::npos) return out;
  std::istringstream rest(line.substr(close + 2));
  std::vector<std::string> f;
  std::string tok;
  while (rest >> tok) f.push_back(tok);
  // rest starts at field 3 (state); utime is field 14, stime 15.
  if (f.size() < 13) return out;
  double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  out.cpu_s = (std::strtod(f[11].c_str(), nullptr) + std::strtod(f[12].c_str(), nullptr)) / ticks;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) out.rss_kib = std::strtol(line.c_str() + 6, nullptr, 10);
  }
  out.ok = true;
  return out;
}

ProcSampler::ProcSampler(int pid) : pid_(pid) {
  thread_ = std::thread([this] {
    while (!stop_.load()) {
      long rss = read_proc(pid_).rss_kib;
      long prev = peak_.load();
      while (rss > prev && !peak_.compare_exchange_weak(prev, rss)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
}

ProcSampler::~ProcSampler() {
  stop_ = true;
  thread_.join();
}

void ProcSampler::reset() { peak_ = read_proc(pid_).rss_kib; }

namespace {

// Writes 1 MiB blocks until max_mib or max_s; returns MB/s, or -1 on error.
double write_loop(const std::string& path, std::size_t max_mib, double max_s, bool sync_each,
                  bool sync_end, std::string* error) {
  constexpr std::size_t kBlock = 1 << 20;
  std::vector<char> block(kBlock);
  for (std::size_t i = 0; i < kBlock; ++i) block[i] = static_cast<char>(i * 131 + 7);
  int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) {
    *error = "open " + path + ": " + std::strerror(errno);
    return -1;
  }
  double t0 = now_s();
  std::size_t written = 0;
  for (std::size_t n = 0; n < max_mib && now_s() - t0 < max_s; ++n) {
    ssize_t w = ::write(fd, block.data(), kBlock);
    if (w != static_cast<ssize_t>(kBlock)) {
      *error = std::string("write: ") + std::strerror(errno);
      break;
    }
    written += kBlock;
    if (sync_each) ::fdatasync(fd);
  }
  if (sync_end) ::fdatasync(fd);
  double secs = now_s() - t0;
  ::close(fd);
  ::unlink(path.c_str());
  return secs > 0 ? written / secs / 1e6 : 0;
}

// Pushes dirty pages out so one mode's writeback does not slow the next.
void settle() { ::sync(); }

}  // namespace

DiskResult disk_bench(const std::string& dir, std::size_t max_mib, double max_s) {
  DiskResult r;
  std::string path = dir + "/broker_bench_disk." + std::to_string(::getpid());
  settle();
  r.buffered_mbps = write_loop(path, max_mib, max_s, false, false, &r.error);
  settle();
  r.sync_end_mbps = write_loop(path, max_mib, max_s, false, true, &r.error);
  settle();
  r.sync_each_mbps = write_loop(path, max_mib, max_s, true, false, &r.error);
  return r;
}

namespace {

std::vector<std::string> log_files(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".log") == 0) out.push_back(dir + "/" + name);
    }
    ::closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

ColdResult drop_cached(const std::string& dir) {
  ColdResult r;
  for (const std::string& path : log_files(dir)) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      r.error = "open " + path + ": " + std::strerror(errno);
      continue;
    }
    ::fdatasync(fd);  // dirty pages cannot be dropped
    if (::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0) r.error = "posix_fadvise " + path;
    struct stat st {};
    if (::fstat(fd, &st) == 0) r.bytes += static_cast<std::uint64_t>(st.st_size);
    // One RWF_NOWAIT probe a MiB: what share the kernel really dropped.
    char b;
    for (off_t off = 0; off < st.st_size; off += 1 << 20) {
      iovec iov{&b, 1};
      r.probes++;
      if (::preadv2(fd, &iov, 1, off, RWF_NOWAIT) < 0 && errno == EAGAIN) r.cold_probes++;
    }
    ::close(fd);
    r.files++;
  }
  return r;
}

double cold_read_mbps(const std::string& dir, double max_s) {
  drop_cached(dir);
  std::vector<char> buf(1 << 20);
  std::uint64_t bytes = 0;
  const double t0 = now_s();
  for (const std::string& path : log_files(dir)) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    for (;;) {
      const ssize_t n = ::read(fd, buf.data(), buf.size());
      if (n <= 0) break;
      bytes += static_cast<std::uint64_t>(n);
      if (now_s() - t0 > max_s) break;
    }
    ::close(fd);
    if (now_s() - t0 > max_s) break;
  }
  const double secs = now_s() - t0;
  return secs > 0 ? bytes / secs / 1e6 : -1;
}

}  // namespace ckbench
