// storage/io/file.cc: the helpers shared by every File and FileSystem.
#include "storage/io/file.h"

#include <cstdlib>
#include <string_view>

#include "storage/io/posix_file.h"
#include "storage/io/uring_file.h"

namespace ciuickafka::storage::io {

Status File::append(std::span<const uint8_t> data) {
  auto end = size();
  if (!end) return end.status();
  return write_at(*end, data);
}

std::unique_ptr<FileSystem> make_file_system(Status* uring_status) {
  const char* env = std::getenv("CK_STORAGE_IO");
  const bool uring = env != nullptr && std::string_view(env) == "io_uring";
  return make_file_system(uring ? Backend::kUring : Backend::kPosix, uring_status);
}

std::unique_ptr<FileSystem> make_file_system(Backend backend, Status* uring_status) {
  if (backend == Backend::kPosix) {
    if (uring_status != nullptr) *uring_status = Status::ok();
    return std::make_unique<PosixFileSystem>();
  }
  auto ring = Ring::create(8);  // a probe: can this process set up a ring at all?
  if (uring_status != nullptr) *uring_status = ring.status();
  if (ring) return std::make_unique<UringFileSystem>();
  return std::make_unique<PosixFileSystem>();
}

std::string parent_dir(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status write_file_atomically(FileSystem& fs, const std::string& path, std::span<const uint8_t> data) {
  const std::string tmp = path + ".tmp";
  {
    auto f = fs.open(tmp, OpenMode::kCreateTruncate);
    if (!f) return f.status();
    CK_RETURN_IF_ERROR((*f)->write_at(0, data));
    CK_RETURN_IF_ERROR((*f)->sync());
    CK_RETURN_IF_ERROR((*f)->close());
  }
  CK_RETURN_IF_ERROR(fs.rename(tmp, path));
  return fs.sync_dir(parent_dir(path));
}

Result<std::vector<uint8_t>> read_file(FileSystem& fs, const std::string& path) {
  auto f = fs.open(path, OpenMode::kReadOnly);
  if (!f) return f.status();
  auto size = (*f)->size();
  if (!size) return size.status();
  std::vector<uint8_t> data(*size);
  auto n = (*f)->read_at(0, data);
  if (!n) return n.status();
  data.resize(*n);
  return data;
}

Status remove_tree(FileSystem& fs, const std::string& dir) {
  auto names = fs.list_dir(dir);
  if (!names) return names.status();
  for (const auto& n : *names) {
    const std::string p = dir + "/" + n;
    auto t = fs.file_type(p);
    if (!t) return t.status();
    if (*t == FileType::kDirectory) {
      CK_RETURN_IF_ERROR(remove_tree(fs, p));
    } else if (*t == FileType::kFile) {
      CK_RETURN_IF_ERROR(fs.remove_file(p));
    }
  }
  return fs.remove_dir(dir);
}

}  // namespace ciuickafka::storage::io
