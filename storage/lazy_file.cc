// storage/lazy_file.cc: reopening a segment file through the FdCache.
#include "storage/lazy_file.h"

#include <sys/stat.h>

#include "storage/file_names.h"

namespace ciuickafka::storage {

namespace {

bool identity(const io::File& f, uint64_t* dev, uint64_t* ino) {
  struct stat st {};
  if (f.fd() < 0 || ::fstat(f.fd(), &st) != 0) return false;
  *dev = static_cast<uint64_t>(st.st_dev);
  *ino = static_cast<uint64_t>(st.st_ino);
  return true;
}

}  // namespace

LazyFile::LazyFile(io::FileSystem& fs, FdCache& cache, std::unique_ptr<io::File> opened)
    : fs_(fs), cache_(cache), key_(cache.new_key()), path_(opened->path()) {
  if (!identity(*opened, &dev_, &ino_)) {
    pinned_ = std::move(opened);
    return;
  }
  cache_.insert(key_, std::shared_ptr<io::File>(std::move(opened)));
}

LazyFile::~LazyFile() { cache_.erase(key_); }

std::string LazyFile::path() const {
  std::lock_guard lock(mu_);
  return path_;
}

bool LazyFile::same_file(const io::File& f) const {
  uint64_t dev = 0, ino = 0;
  return identity(f, &dev, &ino) && dev == dev_ && ino == ino_;
}

Result<std::shared_ptr<io::File>> LazyFile::get() const {
  {
    std::lock_guard lock(mu_);
    if (closed_) return Status::from_errno(EBADF, "use of closed segment file " + path_);
    if (pinned_) return pinned_;
  }
  if (auto f = cache_.lookup(key_)) return f;
  std::string path;  // copied only on a miss: every read and probe of a segment calls get()
  {
    std::lock_guard lock(mu_);
    path = path_;
  }
  for (const std::string& candidate : {path, path + std::string(suffix_text(FileSuffix::kDeleted))}) {
    auto opened = fs_.open(candidate, io::OpenMode::kReadWrite);
    if (!opened) {
      if (opened.status().code() == StatusCode::kNotFound) continue;
      return opened.status();
    }
    if (!same_file(**opened)) continue;  // another file took the name (compaction's swap)
    return cache_.insert(key_, std::shared_ptr<io::File>(std::move(opened).value()));
  }
  return Status::not_found(path + ": the segment's file was removed or replaced since it was opened");
}

bool LazyFile::cached() const { return cache_.contains(key_); }

Status LazyFile::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    pinned_.reset();
  }
  cache_.erase(key_);
  return Status::ok();
}

void LazyFile::rename_to(std::string new_path) {
  std::lock_guard lock(mu_);
  path_ = std::move(new_path);
}

}  // namespace ciuickafka::storage
