// tests/unit/storage/no_sync_fs.h: a FileSystem over real POSIX files whose
// fdatasync/fsync are no-ops, for tests about file descriptors and layout
// with thousands of files, where real syncs (milliseconds each on a shared
// disk) would dominate the run. Never for durability tests.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "storage/io/posix_file.h"

namespace ciuickafka::storage::test {

class NoSyncFile : public io::File {
 public:
  explicit NoSyncFile(std::unique_ptr<io::File> f) : File(f->path()), f_(std::move(f)) {}
  Status write_at(uint64_t offset, std::span<const uint8_t> data) override { return f_->write_at(offset, data); }
  Result<size_t> read_at(uint64_t offset, std::span<uint8_t> out) override { return f_->read_at(offset, out); }
  Status sync() override { return Status::ok(); }
  Status truncate(uint64_t size) override { return f_->truncate(size); }
  Result<uint64_t> size() override { return f_->size(); }
  Status preallocate(uint64_t offset, uint64_t len) override { return f_->preallocate(offset, len); }
  int fd() const override { return f_->fd(); }
  Status close() override { return f_->close(); }

 private:
  std::unique_ptr<io::File> f_;
};

class NoSyncFileSystem : public io::FileSystem {
 public:
  Result<std::unique_ptr<io::File>> open(const std::string& path, io::OpenMode mode) override {
    auto f = posix_.open(path, mode);
    if (!f) return f.status();
    return std::unique_ptr<io::File>(std::make_unique<NoSyncFile>(std::move(f).value()));
  }
  Result<std::vector<std::string>> list_dir(const std::string& dir) override { return posix_.list_dir(dir); }
  Status create_dir(const std::string& dir) override { return posix_.create_dir(dir); }
  Status remove_file(const std::string& path) override { return posix_.remove_file(path); }
  Status remove_dir(const std::string& dir) override { return posix_.remove_dir(dir); }
  Status rename(const std::string& from, const std::string& to) override { return posix_.rename(from, to); }
  Status sync_dir(const std::string&) override { return Status::ok(); }
  Result<io::FileType> file_type(const std::string& path) override { return posix_.file_type(path); }
  const char* name() const override { return "posix-nosync"; }

 private:
  io::PosixFileSystem posix_;
};

}  // namespace ciuickafka::storage::test
