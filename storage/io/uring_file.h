// storage/io/uring_file.h: File and FileSystem whose data path is io_uring.
//
// UringFile's blocking calls (write_at, read_at, sync) submit to a small ring
// private to the calling thread (Ring::for_blocking_calls()) and wait for
// their own completion, so they never run another caller's callbacks and need
// no lock. Metadata calls (truncate, size, preallocate, close) and all
// directory work are the POSIX ones. The append path of the log does not use
// these blocking calls: it submits to its thread's Ring (ring.h) with fd()
// and is resumed by the eventfd.
//
// Thread-safety: as in file.h.
#pragma once

#include "storage/io/posix_file.h"
#include "storage/io/ring.h"

namespace ciuickafka::storage::io {

class UringFile : public PosixFile {
 public:
  using PosixFile::PosixFile;

  Status write_at(uint64_t offset, std::span<const uint8_t> data) override;
  Result<size_t> read_at(uint64_t offset, std::span<uint8_t> out) override;
  Status sync() override;
};

class UringFileSystem : public PosixFileSystem {
 public:
  Result<std::unique_ptr<File>> open(const std::string& path, OpenMode mode) override;
  const char* name() const override { return "io_uring"; }
};

// The calling thread's ring for blocking calls, created on first use (and
// destroyed at thread exit). Fails where io_uring is unavailable.
Result<Ring*> ring_for_blocking_calls();

}  // namespace ciuickafka::storage::io
