// storage/io/mem_file.cc: MemFileSystem and its File.
#include "storage/io/mem_file.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace ciuickafka::storage::io {

class MemFile : public File {
 public:
  MemFile(std::string path, MemFileSystem* fs, std::shared_ptr<MemFileSystem::Node> node, bool writable)
      : File(std::move(path)), fs_(fs), node_(std::move(node)), epoch_(fs->epoch_), writable_(writable) {}

  Status write_at(uint64_t offset, std::span<const uint8_t> data) override {
    std::lock_guard lock(fs_->mu_);
    CK_RETURN_IF_ERROR(check(true));
    ++fs_->writes_;
    size_t n = data.size();
    Status fault;
    if (fs_->writes_ == fs_->fail_write_at_) {
      n = std::min(n, fs_->fail_write_landed_);
      fault = Status::from_errno(fs_->fail_write_err_, "injected write fault on " + path());
    }
    auto& d = node_->data;
    if (n > 0) {
      if (d.size() < offset + n) d.resize(offset + n);
      std::memcpy(d.data() + offset, data.data(), n);
    }
    return fault;
  }

  Result<size_t> read_at(uint64_t offset, std::span<uint8_t> out) override {
    fs_->reads_.fetch_add(1);
    size_t n = 0;
    {
      std::lock_guard lock(fs_->mu_);
      CK_RETURN_IF_ERROR(check(false));
      const auto& d = node_->data;
      if (offset >= d.size()) return size_t{0};
      n = std::min(out.size(), static_cast<size_t>(d.size() - offset));
      if (n > 0) std::memcpy(out.data(), d.data() + offset, n);  // an empty span may hold nullptr
    }
    fs_->sleep_read(n);
    return n;
  }

  Status sync() override {
    fs_->sleep_sync_latency();
    std::unique_lock lock(fs_->mu_);
    CK_RETURN_IF_ERROR(check(false));
    ++fs_->syncs_;
    if (fs_->syncs_ == fs_->fail_sync_at_)
      return Status::from_errno(fs_->fail_sync_err_, "injected sync fault on " + path());
    if (fs_->sync_bytes_per_second_ == 0) {
      node_->synced = node_->data;
      return Status::ok();
    }
    // A disk of that bandwidth: the bytes not yet synced take their time,
    // without the file system's lock (other files go on meanwhile); what
    // the sync covers is what was written when it started.
    std::vector<uint8_t> image = node_->data;
    const uint64_t bytes = image.size() > node_->synced.size() ? image.size() - node_->synced.size() : 0;
    const uint64_t bps = fs_->sync_bytes_per_second_;
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::microseconds(bytes * 1'000'000 / bps));
    lock.lock();
    CK_RETURN_IF_ERROR(check(false));
    if (image.size() >= node_->synced.size()) node_->synced = std::move(image);
    return Status::ok();
  }

  Status truncate(uint64_t size) override {
    std::lock_guard lock(fs_->mu_);
    CK_RETURN_IF_ERROR(check(true));
    node_->data.resize(size);
    return Status::ok();
  }

  Result<uint64_t> size() override {
    std::lock_guard lock(fs_->mu_);
    CK_RETURN_IF_ERROR(check(false));
    return static_cast<uint64_t>(node_->data.size());
  }

  Status preallocate(uint64_t, uint64_t) override {
    std::lock_guard lock(fs_->mu_);
    return check(true);
  }

  int fd() const override { return -1; }

  Status close() override {
    std::lock_guard lock(fs_->mu_);
    CK_RETURN_IF_ERROR(check(false));
    node_.reset();
    return Status::ok();
  }

 private:
  Status check(bool write) const {
    if (!node_) return Status::from_errno(EBADF, "use of closed file " + path());
    if (epoch_ != fs_->epoch_) return Status::from_errno(EIO, "file handle from before a crash: " + path());
    if (fs_->off_) return fs_->off_status(path());
    if (write && !writable_) return Status::from_errno(EBADF, "write to read-only file " + path());
    return Status::ok();
  }

  MemFileSystem* fs_;
  std::shared_ptr<MemFileSystem::Node> node_;
  uint64_t epoch_;
  bool writable_;
};

MemFileSystem::MemFileSystem() {
  dirs_.insert("/");
  dirs_.insert(".");
}

bool MemFileSystem::dir_exists(const std::string& dir) const { return dirs_.count(dir) != 0; }

Result<std::unique_ptr<File>> MemFileSystem::open(const std::string& path, OpenMode mode) {
  std::lock_guard lock(mu_);
  if (off_) return off_status("open " + path);
  if (dirs_.count(path)) return Status::from_errno(EISDIR, "open " + path);
  auto it = files_.find(path);
  const bool create = mode == OpenMode::kCreate || mode == OpenMode::kCreateTruncate ||
                      mode == OpenMode::kCreateExclusive;
  if (it == files_.end()) {
    if (!create) return Status::from_errno(ENOENT, "open " + path);
    if (!dir_exists(parent_dir(path))) return Status::from_errno(ENOENT, "open " + path);
    it = files_.emplace(path, std::make_shared<Node>()).first;
  } else if (mode == OpenMode::kCreateExclusive) {
    return Status::from_errno(EEXIST, "open " + path);
  } else if (mode == OpenMode::kCreateTruncate) {
    it->second->data.clear();
  }
  return std::unique_ptr<File>(new MemFile(path, this, it->second, mode != OpenMode::kReadOnly));
}

Result<std::vector<std::string>> MemFileSystem::list_dir(const std::string& dir) {
  std::lock_guard lock(mu_);
  if (off_) return off_status("list dir " + dir);
  if (!dir_exists(dir)) return Status::from_errno(ENOENT, "opendir " + dir);
  std::vector<std::string> names;
  auto child = [&](const std::string& p) {
    if (p != dir && parent_dir(p) == dir) names.push_back(p.substr(dir == "/" ? 1 : dir.size() + 1));
  };
  for (const auto& [p, node] : files_) child(p);
  for (const auto& p : dirs_) child(p);
  std::sort(names.begin(), names.end());
  return names;
}

Status MemFileSystem::create_dir(const std::string& dir) {
  std::lock_guard lock(mu_);
  if (off_) return off_status("create dir " + dir);
  if (dir_exists(dir)) return Status::ok();
  if (files_.count(dir)) return Status::from_errno(EEXIST, "mkdir " + dir);
  if (!dir_exists(parent_dir(dir))) return Status::from_errno(ENOENT, "mkdir " + dir);
  dirs_.insert(dir);
  return Status::ok();
}

Status MemFileSystem::remove_file(const std::string& path) {
  std::lock_guard lock(mu_);
  if (off_) return off_status("remove file " + path);
  if (dirs_.count(path)) return Status::from_errno(EISDIR, "unlink " + path);
  if (files_.erase(path) == 0) return Status::from_errno(ENOENT, "unlink " + path);
  return Status::ok();
}

Status MemFileSystem::remove_dir(const std::string& dir) {
  std::lock_guard lock(mu_);
  if (off_) return off_status("remove dir " + dir);
  if (!dir_exists(dir)) return Status::from_errno(ENOENT, "rmdir " + dir);
  for (const auto& [p, node] : files_)
    if (parent_dir(p) == dir) return Status::from_errno(ENOTEMPTY, "rmdir " + dir);
  for (const auto& p : dirs_)
    if (p != dir && parent_dir(p) == dir) return Status::from_errno(ENOTEMPTY, "rmdir " + dir);
  dirs_.erase(dir);
  return Status::ok();
}

Status MemFileSystem::rename(const std::string& from, const std::string& to) {
  std::lock_guard lock(mu_);
  if (off_) return off_status("rename " + from);
  if (dirs_.count(from)) {
    if (dirs_.count(to) || files_.count(to) || !dir_exists(parent_dir(to)))
      return Status::from_errno(EEXIST, "rename " + from + " -> " + to);
    if (to.compare(0, from.size() + 1, from + "/") == 0)
      return Status::from_errno(EINVAL, "rename " + from + " into itself");
    const std::string prefix = from + "/";
    auto moved = [&](const std::string& p) { return to + p.substr(from.size()); };
    std::set<std::string> dirs;
    for (const auto& d : dirs_) dirs.insert(d == from || d.compare(0, prefix.size(), prefix) == 0 ? moved(d) : d);
    dirs_ = std::move(dirs);
    for (auto* m : {&files_, &durable_files_}) {
      std::map<std::string, std::shared_ptr<Node>> next;
      for (auto& [p, n] : *m) next[p.compare(0, prefix.size(), prefix) == 0 ? moved(p) : p] = n;
      *m = std::move(next);
    }
    return Status::ok();
  }
  auto it = files_.find(from);
  if (it == files_.end()) return Status::from_errno(ENOENT, "rename " + from + " -> " + to);
  if (dirs_.count(to) || !dir_exists(parent_dir(to))) return Status::from_errno(ENOENT, "rename " + from + " -> " + to);
  auto node = it->second;
  files_.erase(it);
  files_[to] = std::move(node);
  return Status::ok();
}

void MemFileSystem::sleep_read(size_t bytes) const {
  const uint64_t bps = read_bytes_per_second_.load();
  if (bps == 0 || bytes == 0) return;
  std::this_thread::sleep_for(std::chrono::microseconds(static_cast<uint64_t>(bytes) * 1000000 / bps));
}

void MemFileSystem::sleep_sync_latency() const {
  if (const uint64_t us = sync_latency_us_.load(); us > 0) std::this_thread::sleep_for(std::chrono::microseconds(us));
}

Status MemFileSystem::sync_dir(const std::string& dir) {
  sleep_sync_latency();
  std::lock_guard lock(mu_);
  if (off_) return off_status("sync dir " + dir);
  if (!dir_exists(dir)) return Status::from_errno(ENOENT, "open directory " + dir);
  for (auto it = durable_files_.begin(); it != durable_files_.end();) {
    if (parent_dir(it->first) == dir && !files_.count(it->first)) {
      it = durable_files_.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& [p, node] : files_)
    if (parent_dir(p) == dir) durable_files_[p] = node;
  return Status::ok();
}

Result<FileType> MemFileSystem::file_type(const std::string& path) {
  std::lock_guard lock(mu_);
  if (off_) return off_status("file type " + path);
  if (dirs_.count(path)) return FileType::kDirectory;
  if (files_.count(path)) return FileType::kFile;
  return FileType::kMissing;
}

void MemFileSystem::fail_nth_write(uint64_t n, int err, size_t landed_bytes) {
  std::lock_guard lock(mu_);
  fail_write_at_ = writes_ + n;
  fail_write_err_ = err;
  fail_write_landed_ = landed_bytes;
}

void MemFileSystem::fail_nth_sync(uint64_t n, int err) {
  std::lock_guard lock(mu_);
  fail_sync_at_ = syncs_ + n;
  fail_sync_err_ = err;
}

void MemFileSystem::clear_faults() {
  std::lock_guard lock(mu_);
  fail_write_at_ = 0;
  fail_sync_at_ = 0;
}

uint64_t MemFileSystem::write_count() const {
  std::lock_guard lock(mu_);
  return writes_;
}

void MemFileSystem::set_sync_bandwidth(uint64_t bytes_per_second) {
  std::lock_guard lock(mu_);
  sync_bytes_per_second_ = bytes_per_second;
}

uint64_t MemFileSystem::sync_count() const {
  std::lock_guard lock(mu_);
  return syncs_;
}

void MemFileSystem::crash(const KeepFn& keep) {
  std::lock_guard lock(mu_);
  crash_locked(keep);
}

void MemFileSystem::power_off(const KeepFn& keep) {
  std::lock_guard lock(mu_);
  off_ = true;
  crash_locked(keep);
}

void MemFileSystem::power_on() {
  std::lock_guard lock(mu_);
  off_ = false;
}

bool MemFileSystem::is_powered_off() const {
  std::lock_guard lock(mu_);
  return off_;
}

Status MemFileSystem::off_status(const std::string& what) {
  return Status::from_errno(EIO, what + ": the file system is powered off");
}

void MemFileSystem::crash_locked(const KeepFn& keep) {
  ++epoch_;
  // Several names may share a node; revert each node once.
  std::set<Node*> done;
  for (const auto& [p, node] : durable_files_) {
    if (!done.insert(node.get()).second) continue;
    std::vector<uint8_t> image = node->synced;
    if (node->data.size() > image.size()) {
      const size_t base = image.size();
      const size_t tail = node->data.size() - base;
      const size_t kept = keep ? std::min(keep(p, tail), tail) : 0;
      image.insert(image.end(), node->data.begin() + static_cast<std::ptrdiff_t>(base),
                   node->data.begin() + static_cast<std::ptrdiff_t>(base + kept));
    }
    node->data = image;
    node->synced = std::move(image);
  }
  files_ = durable_files_;
}

Result<std::vector<uint8_t>> MemFileSystem::contents(const std::string& path) const {
  std::lock_guard lock(mu_);
  auto it = files_.find(path);
  if (it == files_.end()) return Status::from_errno(ENOENT, path);
  return it->second->data;
}

Result<std::vector<uint8_t>> MemFileSystem::synced_contents(const std::string& path) const {
  std::lock_guard lock(mu_);
  auto it = files_.find(path);
  if (it == files_.end()) return Status::from_errno(ENOENT, path);
  return it->second->synced;
}

}  // namespace ciuickafka::storage::io
