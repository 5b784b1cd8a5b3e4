// storage/io/file.h: the I/O boundary of the storage engine.
//
// Everything storage does to a disk goes through two small interfaces, in the
// manner of LevelDB's Env and Seastar's file_impl:
//   File        one open file: positional writes, appends, positional reads,
//               fdatasync, truncate, size, preallocate, and fd() for sendfile.
//   FileSystem  opens Files and does the directory work (list, remove,
//               rename, fsync a directory).
// Three implementations: io_uring (uring_file.h), POSIX (posix_file.h) and
// in-memory with fault hooks for tests (mem_file.h). make_file_system()
// picks POSIX for the blocking calls (measured: see below) or, when asked,
// io_uring with a fallback to POSIX when the kernel refuses a ring.
//
// Every call reports failure as a Status whose message names the path; none
// throws. Writes are complete or fail: implementations loop over short writes,
// so a caller never sees a partial success. A failed write may still have
// changed part of the range (a torn write); callers that care (the log) treat
// the file's tail as unknown until recovery.
//
// Thread-safety: a File may be used by one thread at a time; distinct Files
// are independent. One exception, which the log's readers rely on: read_at
// may run on other threads concurrently with any call but close() (pread, a
// per-thread ring, and a locked in-memory image make this safe in all three
// implementations). Likewise sync() may run concurrently with write_at
// (group commit's fdatasync outside the log's append lock): fdatasync, a
// per-thread ring, and the in-memory lock make that safe too. FileSystem
// implementations are safe to share between threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "storage/status.h"

namespace ciuickafka::storage::io {

class File {
 public:
  virtual ~File() = default;
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  const std::string& path() const { return path_; }

  // Writes all of data at offset, extending the file if needed.
  virtual Status write_at(uint64_t offset, std::span<const uint8_t> data) = 0;
  // Writes all of data at the current end of file (size()).
  Status append(std::span<const uint8_t> data);
  // Reads up to out.size() bytes at offset; returns how many were read, less
  // than asked only at end of file.
  virtual Result<size_t> read_at(uint64_t offset, std::span<uint8_t> out) = 0;
  // fdatasync: every write completed before the call is durable when it
  // returns ok (data and the size; not necessarily mtime).
  virtual Status sync() = 0;
  virtual Status truncate(uint64_t size) = 0;
  virtual Result<uint64_t> size() = 0;
  // Reserves disk blocks for [offset, offset + len) without changing size()
  // (fallocate with KEEP_SIZE), so later appends do not fail for space and
  // allocate less. A file system that cannot preallocate makes this a no-op.
  // Blocks reserved past the end stay reserved until truncate() (even to the
  // same size) frees them.
  virtual Status preallocate(uint64_t offset, uint64_t len) = 0;
  // The kernel descriptor for sendfile/io_uring submissions, or -1 where there
  // is none (in-memory files).
  virtual int fd() const = 0;
  // Closes the file; later calls fail. The destructor closes too, silently.
  virtual Status close() = 0;

 protected:
  explicit File(std::string path) : path_(std::move(path)) {}

 private:
  std::string path_;
};

enum class OpenMode {
  kReadOnly,        // must exist
  kReadWrite,       // must exist
  kCreate,          // read-write, created empty if missing
  kCreateTruncate,  // read-write, created or emptied
  kCreateExclusive, // read-write, must not exist yet
};

enum class FileType { kMissing, kFile, kDirectory };

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  virtual Result<std::unique_ptr<File>> open(const std::string& path, OpenMode mode) = 0;
  // Names in dir (no "." or ".."), sorted.
  virtual Result<std::vector<std::string>> list_dir(const std::string& dir) = 0;
  // Creates dir (not its parents); ok if it already exists.
  virtual Status create_dir(const std::string& dir) = 0;
  virtual Status remove_file(const std::string& path) = 0;
  virtual Status remove_dir(const std::string& dir) = 0;  // must be empty
  // rename(2): replaces to atomically if it exists.
  virtual Status rename(const std::string& from, const std::string& to) = 0;
  // fsync of the directory, making creations, renames and removals in it durable.
  virtual Status sync_dir(const std::string& dir) = 0;
  virtual Result<FileType> file_type(const std::string& path) = 0;
  // "io_uring", "posix" or "memory", for logs and test names.
  virtual const char* name() const = 0;
};

enum class Backend { kPosix, kUring };

// The file system for the engine's blocking File calls: POSIX unless the
// environment says CK_STORAGE_IO=io_uring. Why POSIX by default: every call
// of the storage engine today is blocking, and a blocking call through a
// private ring (submit, then wait for the completion) is the same syscall
// plus the ring's bookkeeping, and for buffered writes the kernel often
// punts the write to an io-wq worker thread (a wake-up and two context
// switches per write). Measured with tests/bench/storage_bench on ext4,
// kernel 6.18: 1 KiB appends 111 MB/s (posix) vs 43 MB/s (io_uring), 1 MiB
// appends 1688 vs 687 MB/s, and 2.5x the CPU per GB. The asynchronous
// path does not go through these calls: Log::append_async queues its write
// on the network thread's Ring (storage/io/ring.h) by the file's
// descriptor, whichever backend opened it, and group commit queues its
// fdatasyncs on its own ring.
std::unique_ptr<FileSystem> make_file_system(Status* uring_status = nullptr);
// backend kUring: io_uring when io_uring_queue_init succeeds on this
// thread, else POSIX, with the status of the attempt in *uring_status (ok
// when io_uring was chosen). kPosix: POSIX, *uring_status ok.
std::unique_ptr<FileSystem> make_file_system(Backend backend, Status* uring_status = nullptr);

// The directory part of path ("." when there is none).
std::string parent_dir(const std::string& path);

// Replaces path with data so that after a crash the file holds either its old
// contents or all of data, never a mix: write path + ".tmp", fdatasync, rename
// over path, fsync the directory. A leftover ".tmp" from a crash is simply
// overwritten next time.
Status write_file_atomically(FileSystem& fs, const std::string& path, std::span<const uint8_t> data);
// The whole contents of path.
Result<std::vector<uint8_t>> read_file(FileSystem& fs, const std::string& path);
// Removes dir and everything under it (files and directories).
Status remove_tree(FileSystem& fs, const std::string& dir);

}  // namespace ciuickafka::storage::io
