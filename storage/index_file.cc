// storage/index_file.cc: loading, trimming and flushing index bytes.
#include "storage/index_file.h"

#include <algorithm>

#include "protocol/records/crc32c.h"

namespace ciuickafka::storage {

Result<IndexFile> IndexFile::open(io::FileSystem& fs, const std::string& path, size_t entry_size,
                                  uint32_t max_index_bytes, bool writable) {
  if (max_index_bytes < entry_size)
    return Status::invalid_argument("index size " + std::to_string(max_index_bytes) + " for " + path +
                                    " cannot hold one entry");
  auto f = fs.open(path, writable ? io::OpenMode::kCreate : io::OpenMode::kReadOnly);
  if (!f) return f.status();
  IndexFile ix;
  ix.fs_ = &fs;
  ix.path_ = path;
  ix.open_ = true;
  ix.writable_ = writable;
  ix.entry_size_ = entry_size;
  ix.max_entries_ = max_index_bytes / entry_size;
  auto size = (*f)->size();
  if (!size) return size.status();
  ix.size_at_open_ = ix.file_size_ = *size;
  ix.bytes_.resize(*size / entry_size * entry_size);
  auto n = (*f)->read_at(0, ix.bytes_);
  if (!n) return n.status();
  if (*n != ix.bytes_.size())
    return Status::corruption(path + ": read " + std::to_string(*n) + " of " + std::to_string(ix.bytes_.size()) +
                              " bytes");
  // Trim the zero padding of a preallocated index (see the header).
  while (!ix.bytes_.empty()) {
    const uint8_t* last = ix.bytes_.data() + ix.bytes_.size() - entry_size;
    if (!std::all_of(last, last + entry_size, [](uint8_t b) { return b == 0; })) break;
    ix.bytes_.resize(ix.bytes_.size() - entry_size);
    ++ix.zero_entries_trimmed_;
  }
  ix.bytes_.shrink_to_fit();
  ix.flushed_bytes_ = ix.bytes_.size();
  // The entries live in memory from here; the file is reopened to flush.
  CK_RETURN_IF_ERROR((*f)->close());
  return ix;
}

IndexFile IndexFile::in_memory(io::FileSystem& fs, const std::string& path, size_t entry_size,
                               uint32_t max_index_bytes) {
  IndexFile ix;
  ix.fs_ = &fs;
  ix.path_ = path;
  ix.open_ = true;
  ix.entry_size_ = entry_size;
  ix.max_entries_ = max_index_bytes / entry_size;
  return ix;
}

uint32_t IndexFile::fingerprint() const { return protocol::crc32c(bytes_); }

void IndexFile::append(const uint8_t* entry) {
  bytes_.insert(bytes_.end(), entry, entry + entry_size_);
  dirty_ = true;
}

void IndexFile::truncate_entries(size_t n) {
  if (n * entry_size_ >= bytes_.size()) return;
  bytes_.resize(n * entry_size_);
  dirty_ = true;
  flushed_bytes_ = std::min(flushed_bytes_, bytes_.size());
}

Status IndexFile::flush() {
  if (!open_) return Status::from_errno(EBADF, "flush of closed index " + path_);
  if (!writable_) return Status::from_errno(EBADF, "flush of read-only index " + path_);
  // Opened for this flush only: an index holds no fd between flushes
  // (storage/fd_cache.h). Flushes happen on roll, flush.ms/messages and
  // close, each already paying an fdatasync, so the open is noise.
  auto f = fs_->open(path_, io::OpenMode::kCreate);
  if (!f) return f.status();
  io::File& file = **f;
  if (file_size_ > bytes_.size()) {
    CK_RETURN_IF_ERROR(file.truncate(bytes_.size()));
    file_size_ = bytes_.size();
  }
  if (flushed_bytes_ < bytes_.size()) {
    std::span<const uint8_t> tail(bytes_.data() + flushed_bytes_, bytes_.size() - flushed_bytes_);
    CK_RETURN_IF_ERROR(file.write_at(flushed_bytes_, tail));
    flushed_bytes_ = bytes_.size();
    file_size_ = std::max<uint64_t>(file_size_, bytes_.size());
  }
  CK_RETURN_IF_ERROR(file.sync());
  CK_RETURN_IF_ERROR(file.close());
  dirty_ = false;
  return Status::ok();
}

Status IndexFile::close() {
  open_ = false;
  return Status::ok();
}

}  // namespace ciuickafka::storage
