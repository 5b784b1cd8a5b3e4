// storage/txn_index.cc: the .txnindex file format (see the header).
#include "storage/txn_index.h"

#include <array>

namespace ciuickafka::storage {
namespace {

void put_be(uint8_t* p, uint64_t v, int n) {
  for (int i = n - 1; i >= 0; --i) {
    p[i] = static_cast<uint8_t>(v);
    v >>= 8;
  }
}

uint64_t get_be(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

void encode_txn_index_entry(const TxnIndexEntry& e, std::span<uint8_t, kTxnIndexEntrySize> out) {
  uint8_t* p = out.data();
  put_be(p, static_cast<uint16_t>(kTxnIndexVersion), 2);
  put_be(p + 2, static_cast<uint64_t>(e.producer_id), 8);
  put_be(p + 10, static_cast<uint64_t>(e.first_offset), 8);
  put_be(p + 18, static_cast<uint64_t>(e.last_offset), 8);
  put_be(p + 26, static_cast<uint64_t>(e.last_stable_offset), 8);
}

std::vector<TxnIndexEntry> decode_txn_index(std::span<const uint8_t> bytes) {
  std::vector<TxnIndexEntry> out;
  for (size_t at = 0; at + kTxnIndexEntrySize <= bytes.size(); at += kTxnIndexEntrySize) {
    const uint8_t* p = bytes.data() + at;
    if (static_cast<int16_t>(get_be(p, 2)) != kTxnIndexVersion) break;
    TxnIndexEntry e;
    e.producer_id = static_cast<int64_t>(get_be(p + 2, 8));
    e.first_offset = static_cast<int64_t>(get_be(p + 10, 8));
    e.last_offset = static_cast<int64_t>(get_be(p + 18, 8));
    e.last_stable_offset = static_cast<int64_t>(get_be(p + 26, 8));
    if (e.last_offset < 0 || e.first_offset < 0 || e.first_offset > e.last_offset) break;
    if (!out.empty() && e.last_offset <= out.back().last_offset) break;
    out.push_back(e);
  }
  return out;
}

Result<std::vector<TxnIndexEntry>> read_txn_index(io::FileSystem& fs, const std::string& path) {
  auto bytes = io::read_file(fs, path);
  if (!bytes) {
    if (bytes.status().code() == StatusCode::kNotFound) return std::vector<TxnIndexEntry>{};
    return bytes.status();
  }
  return decode_txn_index(bytes.value());
}

Status write_txn_index_entry(io::FileSystem& fs, const std::string& path, uint64_t index, const TxnIndexEntry& e) {
  auto f = fs.open(path, io::OpenMode::kCreate);
  if (!f) return f.status();
  std::array<uint8_t, kTxnIndexEntrySize> buf{};
  encode_txn_index_entry(e, buf);
  const uint64_t at = index * kTxnIndexEntrySize;
  CK_RETURN_IF_ERROR((*f)->write_at(at, buf));
  auto size = (*f)->size();
  if (!size) return size.status();
  if (*size > at + kTxnIndexEntrySize) CK_RETURN_IF_ERROR((*f)->truncate(at + kTxnIndexEntrySize));
  return (*f)->close();
}

Status truncate_txn_index(io::FileSystem& fs, const std::string& path, int64_t offset, bool* changed) {
  *changed = false;
  auto bytes = io::read_file(fs, path);
  if (!bytes) return bytes.status().code() == StatusCode::kNotFound ? Status::ok() : bytes.status();
  const auto entries = decode_txn_index(bytes.value());
  size_t keep = 0;
  while (keep < entries.size() && entries[keep].last_offset < offset) ++keep;
  const uint64_t size = keep * kTxnIndexEntrySize;
  if (size == bytes->size()) return Status::ok();
  *changed = true;
  if (keep == 0) return fs.remove_file(path);
  auto f = fs.open(path, io::OpenMode::kReadWrite);
  if (!f) return f.status();
  CK_RETURN_IF_ERROR((*f)->truncate(size));
  CK_RETURN_IF_ERROR((*f)->sync());
  return (*f)->close();
}

}  // namespace ciuickafka::storage
