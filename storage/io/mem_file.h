// storage/io/mem_file.h: an in-memory FileSystem with fault hooks, for tests.
//
// Each file keeps two images: the current one (what reads see) and the synced
// one (what a File::sync() last made durable). Likewise the namespace: the
// current directory entries and the durable ones, as of each directory's last
// sync_dir(). crash() throws away everything not durable, the way a power
// loss does, so tests can check that the engine fsyncs what it promises:
//   * a file's contents go back to its synced image, plus, optionally, a
//     prefix of the unsynced bytes past the synced length (the kernel may have
//     written some of the tail back on its own: "lose a random suffix");
//   * unsynced overwrites inside the synced length are lost;
//   * a file created or renamed since its directory's last sync_dir vanishes
//     (or comes back under its old name); a removed one comes back.
// Directories themselves are durable as soon as they are created (a
// simplification: the engine creates them once and fsyncs their parent).
//
// Fault hooks: fail the Nth write from now (optionally after landing a prefix
// of it: a torn write), fail the Nth sync. Writes and syncs are counted
// across the whole file system.
//
// A power cut for a process that goes on running (the broker's test-only
// in-process restart, broker/test_hooks.h): power_off() is crash() and then
// every call, through the file system or any handle, fails with EIO until
// power_on(), so whatever the dying owner still tries (a shutdown's flushes,
// its clean-shutdown marker) changes nothing; the next owner, after
// power_on(), sees exactly what survived the crash.
//
// Thread-safety: the file system and its files share one mutex; any thread
// may use them. The file system must outlive its files. Handles opened before
// a crash() fail with EIO afterwards.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "storage/io/file.h"

namespace ciuickafka::storage::io {

class MemFileSystem : public FileSystem {
 public:
  MemFileSystem();

  Result<std::unique_ptr<File>> open(const std::string& path, OpenMode mode) override;
  Result<std::vector<std::string>> list_dir(const std::string& dir) override;
  Status create_dir(const std::string& dir) override;
  Status remove_file(const std::string& path) override;
  Status remove_dir(const std::string& dir) override;
  // Files, and directories (to must not exist; a directory rename is
  // durable at once, like a directory's creation). Open handles keep
  // working across a rename.
  Status rename(const std::string& from, const std::string& to) override;
  Status sync_dir(const std::string& dir) override;
  Result<FileType> file_type(const std::string& path) override;
  const char* name() const override { return "memory"; }

  // --- fault hooks ---
  // The nth write from now (1 = the next) fails with err after landing the
  // first landed_bytes of its data.
  void fail_nth_write(uint64_t n, int err = EIO, size_t landed_bytes = 0);
  // The nth sync from now fails with err; the file's synced image is unchanged.
  void fail_nth_sync(uint64_t n, int err = EIO);
  void clear_faults();
  uint64_t write_count() const;
  uint64_t sync_count() const;
  uint64_t read_count() const { return reads_.load(); }  // read_at calls so far
  // A slow disk: a file's sync takes (bytes grown since its last sync) /
  // bytes_per_second, slept without the file system's lock. 0 (the
  // default): syncs are instant.
  void set_sync_bandwidth(uint64_t bytes_per_second);
  // A disk with a fixed cost per sync: every file sync and directory sync
  // first sleeps this long (microseconds, without the lock). 0: none.
  void set_sync_latency_us(uint64_t us) { sync_latency_us_.store(us); }
  void sleep_sync_latency() const;
  // A slow disk for reads: a read of n bytes then takes n / bytes_per_second,
  // slept without the lock. 0 (the default): reads are instant.
  void set_read_bandwidth(uint64_t bytes_per_second) { read_bytes_per_second_.store(bytes_per_second); }
  void sleep_read(size_t bytes) const;

  // Simulates a power loss (see the file comment). keep, when given, returns
  // how many of a file's unsynced tail bytes survive (clamped to the tail).
  using KeepFn = std::function<size_t(const std::string& path, size_t unsynced_tail)>;
  void crash(const KeepFn& keep = nullptr);
  // crash(), atomically with refusing every later call (EIO) until power_on().
  void power_off(const KeepFn& keep = nullptr);
  void power_on();
  bool is_powered_off() const;

  // Inspection for tests: the current and the synced image of a file.
  Result<std::vector<uint8_t>> contents(const std::string& path) const;
  Result<std::vector<uint8_t>> synced_contents(const std::string& path) const;

 private:
  friend class MemFile;
  struct Node {
    std::vector<uint8_t> data;
    std::vector<uint8_t> synced;
  };

  bool dir_exists(const std::string& dir) const;  // mu_ held
  void crash_locked(const KeepFn& keep);           // mu_ held
  static Status off_status(const std::string& what);

  mutable std::mutex mu_;
  uint64_t epoch_ = 0;  // bumped by crash(); older handles are dead
  bool off_ = false;    // between power_off() and power_on()
  std::map<std::string, std::shared_ptr<Node>> files_;
  std::map<std::string, std::shared_ptr<Node>> durable_files_;
  std::set<std::string> dirs_;

  uint64_t writes_ = 0;
  uint64_t syncs_ = 0;
  uint64_t fail_write_at_ = 0;  // absolute write number, 0 = none
  int fail_write_err_ = 0;
  size_t fail_write_landed_ = 0;
  uint64_t fail_sync_at_ = 0;
  int fail_sync_err_ = 0;
  uint64_t sync_bytes_per_second_ = 0;
  std::atomic<uint64_t> sync_latency_us_{0};
  std::atomic<uint64_t> read_bytes_per_second_{0};
  std::atomic<uint64_t> reads_{0};
};

}  // namespace ciuickafka::storage::io
