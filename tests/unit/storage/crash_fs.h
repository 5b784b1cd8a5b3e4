// tests/unit/storage/crash_fs.h: a FileSystem over a MemFileSystem that
// loses power after the Nth mutating call, for crash-point property tests,
// and the seed loop those tests share.
//
// Mutating calls are counted through the file system and every handle it
// opened: write_at, sync, truncate, preallocate, an open that may create,
// create_dir, remove_file, remove_dir, rename, sync_dir. Call N runs nothing:
// the MemFileSystem is powered off first (crash(): only durable bytes and
// names stay, plus whatever prefix of each unsynced tail `keep` chooses), so
// call N and every later call fail with EIO, as on a machine that died just
// before it. power_on() on the MemFileSystem lets the next owner in.
//
// Thread-safety: the counter is atomic; the rest is the MemFileSystem's.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "storage/io/mem_file.h"

namespace ciuickafka::storage::test {

// How many seeds a crash property runs: 1,000 by default (the unit suite),
// CK_PROPERTY_SEEDS=<n> for a longer run by hand. CK_PROPERTY_SEED=<s> runs
// only seed s (to replay a failure: every property CAPTUREs its seed).
struct SeedRange {
  uint32_t first = 1;
  uint32_t last = 1000;
};
inline SeedRange property_seeds() {
  SeedRange r;
  if (const char* one = std::getenv("CK_PROPERTY_SEED"); one && *one) {
    r.first = r.last = static_cast<uint32_t>(std::strtoul(one, nullptr, 10));
  } else if (const char* n = std::getenv("CK_PROPERTY_SEEDS"); n && *n) {
    r.last = static_cast<uint32_t>(std::strtoul(n, nullptr, 10));
  }
  return r;
}

class CrashFs : public io::FileSystem {
 public:
  explicit CrashFs(io::MemFileSystem& mem) : mem_(mem) {}

  // Power goes off at the nth mutating call from now (0 = never).
  void crash_at(uint64_t n, io::MemFileSystem::KeepFn keep = nullptr) {
    keep_ = std::move(keep);
    crash_at_ = n ? ops_.load() + n : 0;
  }
  uint64_t ops() const { return ops_.load(); }
  bool crashed() const { return mem_.is_powered_off(); }

  Result<std::unique_ptr<io::File>> open(const std::string& path, io::OpenMode mode) override {
    if (mode != io::OpenMode::kReadOnly && mode != io::OpenMode::kReadWrite) tick();
    auto f = mem_.open(path, mode);
    if (!f) return f.status();
    return std::unique_ptr<io::File>(new CrashFile(*this, std::move(f).value()));
  }
  Result<std::vector<std::string>> list_dir(const std::string& dir) override { return mem_.list_dir(dir); }
  Status create_dir(const std::string& dir) override { return tick(), mem_.create_dir(dir); }
  Status remove_file(const std::string& path) override { return tick(), mem_.remove_file(path); }
  Status remove_dir(const std::string& dir) override { return tick(), mem_.remove_dir(dir); }
  Status rename(const std::string& from, const std::string& to) override { return tick(), mem_.rename(from, to); }
  Status sync_dir(const std::string& dir) override { return tick(), mem_.sync_dir(dir); }
  Result<io::FileType> file_type(const std::string& path) override { return mem_.file_type(path); }
  const char* name() const override { return mem_.name(); }

 private:
  class CrashFile : public io::File {
   public:
    CrashFile(CrashFs& fs, std::unique_ptr<io::File> inner)
        : io::File(inner->path()), fs_(fs), inner_(std::move(inner)) {}
    Status write_at(uint64_t offset, std::span<const uint8_t> data) override {
      return fs_.tick(), inner_->write_at(offset, data);
    }
    Result<size_t> read_at(uint64_t offset, std::span<uint8_t> out) override { return inner_->read_at(offset, out); }
    Status sync() override { return fs_.tick(), inner_->sync(); }
    Status truncate(uint64_t size) override { return fs_.tick(), inner_->truncate(size); }
    Result<uint64_t> size() override { return inner_->size(); }
    Status preallocate(uint64_t offset, uint64_t len) override {
      return fs_.tick(), inner_->preallocate(offset, len);
    }
    int fd() const override { return inner_->fd(); }
    Status close() override { return inner_->close(); }

   private:
    CrashFs& fs_;
    std::unique_ptr<io::File> inner_;
  };

  void tick() {
    const uint64_t n = ++ops_;
    if (crash_at_ && n == crash_at_) mem_.power_off(keep_);
  }

  io::MemFileSystem& mem_;
  std::atomic<uint64_t> ops_{0};
  uint64_t crash_at_ = 0;
  io::MemFileSystem::KeepFn keep_;
};

}  // namespace ciuickafka::storage::test
