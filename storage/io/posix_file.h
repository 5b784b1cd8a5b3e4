// storage/io/posix_file.h: File and FileSystem over plain system calls.
//
// pwrite/pread/fdatasync/ftruncate/fallocate. The fallback when io_uring is
// unavailable, the directory half of the io_uring file system, and the
// reference the other implementations are tested against.
//
// Thread-safety: as in file.h.
#pragma once

#include <memory>
#include <string>

#include "storage/io/file.h"

namespace ciuickafka::storage::io {

class PosixFile : public File {
 public:
  // Takes ownership of fd.
  PosixFile(std::string path, int fd) : File(std::move(path)), fd_(fd) {}
  ~PosixFile() override;

  Status write_at(uint64_t offset, std::span<const uint8_t> data) override;
  Result<size_t> read_at(uint64_t offset, std::span<uint8_t> out) override;
  Status sync() override;
  Status truncate(uint64_t size) override;
  Result<uint64_t> size() override;
  Status preallocate(uint64_t offset, uint64_t len) override;
  int fd() const override { return fd_; }
  Status close() override;

 protected:
  Status closed_error() const;
  int fd_;
};

// open(2) flags for a mode, and the open itself; shared with the io_uring
// file system.
Result<int> posix_open(const std::string& path, OpenMode mode);

class PosixFileSystem : public FileSystem {
 public:
  Result<std::unique_ptr<File>> open(const std::string& path, OpenMode mode) override;
  Result<std::vector<std::string>> list_dir(const std::string& dir) override;
  Status create_dir(const std::string& dir) override;
  Status remove_file(const std::string& path) override;
  Status remove_dir(const std::string& dir) override;
  Status rename(const std::string& from, const std::string& to) override;
  Status sync_dir(const std::string& dir) override;
  Result<FileType> file_type(const std::string& path) override;
  const char* name() const override { return "posix"; }
};

}  // namespace ciuickafka::storage::io
