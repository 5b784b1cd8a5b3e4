// storage/io/posix_file.cc: the POSIX File and FileSystem.
#include "storage/io/posix_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace ciuickafka::storage::io {

namespace {

Status errno_status(const char* op, const std::string& path) {
  return Status::from_errno(errno, std::string(op) + " " + path);
}

}  // namespace

PosixFile::~PosixFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status PosixFile::closed_error() const { return Status::from_errno(EBADF, "use of closed file " + path()); }

Status PosixFile::write_at(uint64_t offset, std::span<const uint8_t> data) {
  if (fd_ < 0) return closed_error();
  while (!data.empty()) {
    ssize_t n = ::pwrite(fd_, data.data(), data.size(), static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno_status("pwrite", path());
    }
    if (n == 0) return Status::from_errno(EIO, "pwrite wrote nothing to " + path());
    data = data.subspan(static_cast<size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
  return Status::ok();
}

Result<size_t> PosixFile::read_at(uint64_t offset, std::span<uint8_t> out) {
  if (fd_ < 0) return closed_error();
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno_status("pread", path());
    }
    if (n == 0) break;  // end of file
    done += static_cast<size_t>(n);
  }
  return done;
}

Status PosixFile::sync() {
  if (fd_ < 0) return closed_error();
  if (::fdatasync(fd_) != 0) return errno_status("fdatasync", path());
  return Status::ok();
}

Status PosixFile::truncate(uint64_t size) {
  if (fd_ < 0) return closed_error();
  if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) return errno_status("ftruncate", path());
  return Status::ok();
}

Result<uint64_t> PosixFile::size() {
  if (fd_ < 0) return closed_error();
  struct stat st;
  if (::fstat(fd_, &st) != 0) return errno_status("fstat", path());
  return static_cast<uint64_t>(st.st_size);
}

Status PosixFile::preallocate(uint64_t offset, uint64_t len) {
  if (fd_ < 0) return closed_error();
  if (len == 0) return Status::ok();
  if (::fallocate(fd_, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset), static_cast<off_t>(len)) != 0) {
    if (errno == EOPNOTSUPP || errno == ENOSYS) return Status::ok();  // tmpfs on old kernels, say
    return errno_status("fallocate", path());
  }
  return Status::ok();
}

Status PosixFile::close() {
  if (fd_ < 0) return closed_error();
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) return errno_status("close", path());
  return Status::ok();
}

Result<int> posix_open(const std::string& path, OpenMode mode) {
  int flags = O_CLOEXEC;
  switch (mode) {
    case OpenMode::kReadOnly: flags |= O_RDONLY; break;
    case OpenMode::kReadWrite: flags |= O_RDWR; break;
    case OpenMode::kCreate: flags |= O_RDWR | O_CREAT; break;
    case OpenMode::kCreateTruncate: flags |= O_RDWR | O_CREAT | O_TRUNC; break;
    case OpenMode::kCreateExclusive: flags |= O_RDWR | O_CREAT | O_EXCL; break;
  }
  int fd;
  do {
    fd = ::open(path.c_str(), flags, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return errno_status("open", path);
  return fd;
}

Result<std::unique_ptr<File>> PosixFileSystem::open(const std::string& path, OpenMode mode) {
  auto fd = posix_open(path, mode);
  if (!fd) return fd.status();
  return std::unique_ptr<File>(new PosixFile(path, *fd));
}

Result<std::vector<std::string>> PosixFileSystem::list_dir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return errno_status("opendir", dir);
  std::vector<std::string> names;
  errno = 0;
  while (struct dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
  }
  int err = errno;
  ::closedir(d);
  if (err != 0) return Status::from_errno(err, "readdir " + dir);
  std::sort(names.begin(), names.end());
  return names;
}

Status PosixFileSystem::create_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return errno_status("mkdir", dir);
  return Status::ok();
}

Status PosixFileSystem::remove_file(const std::string& path) {
  if (::unlink(path.c_str()) != 0) return errno_status("unlink", path);
  return Status::ok();
}

Status PosixFileSystem::remove_dir(const std::string& dir) {
  if (::rmdir(dir.c_str()) != 0) return errno_status("rmdir", dir);
  return Status::ok();
}

Status PosixFileSystem::rename(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) return errno_status("rename", from + " -> " + to);
  return Status::ok();
}

Status PosixFileSystem::sync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno_status("open directory", dir);
  Status s;
  if (::fsync(fd) != 0) s = errno_status("fsync directory", dir);
  ::close(fd);
  return s;
}

Result<FileType> PosixFileSystem::file_type(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return FileType::kMissing;
    return errno_status("stat", path);
  }
  return S_ISDIR(st.st_mode) ? FileType::kDirectory : FileType::kFile;
}

}  // namespace ciuickafka::storage::io
