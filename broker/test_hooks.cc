// broker/test_hooks.cc: the in-memory file system of CK_TEST_MEMFS (test builds only).
#include "broker/test_hooks.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace ciuickafka::broker::test_hooks {
namespace {

using storage::Result;
using storage::Status;
using storage::io::File;
using storage::io::FileType;
using storage::io::OpenMode;

class BorrowedFileSystem : public storage::io::FileSystem {
 public:
  explicit BorrowedFileSystem(storage::io::FileSystem& fs) : fs_(fs) {}
  Result<std::unique_ptr<File>> open(const std::string& path, OpenMode mode) override {
    return fs_.open(path, mode);
  }
  Result<std::vector<std::string>> list_dir(const std::string& dir) override { return fs_.list_dir(dir); }
  Status create_dir(const std::string& dir) override { return fs_.create_dir(dir); }
  Status remove_file(const std::string& path) override { return fs_.remove_file(path); }
  Status remove_dir(const std::string& dir) override { return fs_.remove_dir(dir); }
  Status rename(const std::string& from, const std::string& to) override { return fs_.rename(from, to); }
  Status sync_dir(const std::string& dir) override { return fs_.sync_dir(dir); }
  Result<FileType> file_type(const std::string& path) override { return fs_.file_type(path); }
  const char* name() const override { return fs_.name(); }

 private:
  storage::io::FileSystem& fs_;
};

}  // namespace

storage::io::MemFileSystem* memfs() {
  // Never destroyed: Brokers, and the threads of a dying one, may use it
  // until the process exits.
  static storage::io::MemFileSystem* const fs = [] {
    const char* v = std::getenv(kMemFsEnv);
    if (v == nullptr || std::strcmp(v, "1") != 0) return static_cast<storage::io::MemFileSystem*>(nullptr);
    auto* mem = new storage::io::MemFileSystem();
    if (const char* bps = std::getenv(kSyncBandwidthEnv); bps != nullptr && *bps != '\0')
      mem->set_sync_bandwidth(std::strtoull(bps, nullptr, 10));
    if (const char* us = std::getenv(kSyncLatencyEnv); us != nullptr && *us != '\0')
      mem->set_sync_latency_us(std::strtoull(us, nullptr, 10));
    if (const char* bps = std::getenv(kReadBandwidthEnv); bps != nullptr && *bps != '\0')
      mem->set_read_bandwidth(std::strtoull(bps, nullptr, 10));
    return mem;
  }();
  return fs;
}

storage::io::MemFileSystem::KeepFn power_cut_keep(int cut, std::string* what) {
  what->clear();
  const char* v = std::getenv(kTornEnv);
  if (v == nullptr || *v == '\0') return nullptr;
  const uint64_t seed = std::strtoull(v, nullptr, 10);
  *what = "each file keeps a random prefix of its unsynced tail (" + std::string(kTornEnv) + "=" +
          std::to_string(seed) + ")";
  // Called under the file system's lock, one file after another.
  auto rng = std::make_shared<std::mt19937_64>(seed * 1000003u + static_cast<uint64_t>(cut));
  return [rng](const std::string&, size_t tail) {
    return std::uniform_int_distribution<size_t>(0, tail)(*rng);
  };
}

std::unique_ptr<storage::io::FileSystem> borrow(storage::io::FileSystem& fs) {
  return std::make_unique<BorrowedFileSystem>(fs);
}

Status create_dirs(storage::io::FileSystem& fs, const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  // Each prefix ending before a '/', then d itself.
  for (size_t slash = d.find('/', 1); slash != std::string::npos; slash = d.find('/', slash + 1)) {
    if (auto s = fs.create_dir(d.substr(0, slash)); !s.is_ok()) return s;
  }
  return fs.create_dir(d);
}

}  // namespace ciuickafka::broker::test_hooks
