// storage/lazy_file.h: a segment file that is open only while the FdCache
// (storage/fd_cache.h) keeps it, or while someone uses it.
//
// get() returns the open File: the cache's when it holds one, otherwise the
// file is opened again (read-write; it must exist) and inserted. A caller
// keeps the returned shared_ptr for as long as it uses the File (one append,
// one read, one slice's life), so eviction never closes a file under it.
//
// Identity: a reopen must find the same file, not whatever now has its
// name. The log renames a deleted segment's files to `<name>.deleted`, and
// compaction's swap puts a *different* file at the old name, while readers
// may still hold the old Segment. So the first open records the file's
// device and inode (fstat), and a reopen accepts the path, or else
// `<path>.deleted`, only when they match; otherwise it fails (kNotFound),
// never reading another file's bytes. A reader of a deleted segment thus
// keeps reading until the files are unlinked (file.delete.delay.ms later).
// In-memory files (fd() < 0) hold no descriptor: they are kept, not cached.
//
// Thread-safety: get() and path() may be called from any thread; close()
// and rename_to() are for the segment's single writer.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "storage/fd_cache.h"
#include "storage/io/file.h"
#include "storage/status.h"

namespace ciuickafka::storage {

class LazyFile {
 public:
  // Takes an already open file (the one Segment::open created or opened) and
  // hands it to cache.
  LazyFile(io::FileSystem& fs, FdCache& cache, std::unique_ptr<io::File> opened);
  ~LazyFile();
  LazyFile(const LazyFile&) = delete;
  LazyFile& operator=(const LazyFile&) = delete;

  std::string path() const;
  Result<std::shared_ptr<io::File>> get() const;
  // Whether the cache holds the file open now (tests).
  bool cached() const;
  // Later get() calls fail; users already holding the File keep it.
  Status close();
  // The file now lives at new_path (the caller renamed it).
  void rename_to(std::string new_path);

 private:
  // Whether f is the file first opened (same device and inode).
  bool same_file(const io::File& f) const;

  io::FileSystem& fs_;
  FdCache& cache_;
  const uint64_t key_;
  mutable std::mutex mu_;  // guards path_ and closed_
  std::string path_;
  bool closed_ = false;
  std::shared_ptr<io::File> pinned_;  // in-memory files: never evicted
  uint64_t dev_ = 0, ino_ = 0;
};

}  // namespace ciuickafka::storage
