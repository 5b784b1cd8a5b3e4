// storage/page_cache.cc: residency probes and warm-up reads (see the header).
#include "storage/page_cache.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

namespace ciuickafka::storage {
namespace {

constexpr size_t kWarmChunk = 256 << 10;

}  // namespace

bool byte_cached(int fd, uint64_t offset) {
  uint8_t b;
  iovec iov{&b, 1};
  for (;;) {
    if (::preadv2(fd, &iov, 1, static_cast<off_t>(offset), RWF_NOWAIT) >= 0) return true;
    if (errno == EINTR) continue;
    return errno != EAGAIN;  // EOPNOTSUPP, EINVAL (old kernels): cannot tell
  }
}

bool read_is_cold(const ReadResult& r) {
  for (const LogSlice& s : r.slices) {
    const FileSlice& f = s.slice;
    if (f.fd < 0 || f.length == 0) continue;
    if (!byte_cached(f.fd, f.position) || !byte_cached(f.fd, f.position + f.length - 1)) return true;
  }
  return false;
}

Result<uint64_t> warm_read(const ReadResult& r) {
  thread_local std::vector<uint8_t> buf(kWarmChunk);
  uint64_t total = 0;
  for (const LogSlice& s : r.slices) {
    const FileSlice& f = s.slice;
    if (f.fd < 0 || f.length == 0) continue;
    // Advice only: a failure leaves the reads below to fetch the pages.
    (void)::posix_fadvise(f.fd, static_cast<off_t>(f.position), static_cast<off_t>(f.length),
                          POSIX_FADV_WILLNEED);
    uint64_t at = f.position;
    const uint64_t end = f.position + f.length;
    while (at < end) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(end - at, buf.size()));
      const ssize_t n = ::pread(f.fd, buf.data(), want, static_cast<off_t>(at));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        return Status::from_errno(errno, "pread " + (f.file ? f.file->path() : std::string("a segment")));
      }
      if (n == 0) break;  // the file ended early (truncated meanwhile): sendfile will see it
      at += static_cast<uint64_t>(n);
      total += static_cast<uint64_t>(n);
    }
  }
  return total;
}

}  // namespace ciuickafka::storage
