// storage/txn_index.h: Kafka's aborted-transaction index, one
// `<20-digit base offset>.txnindex` file per segment.
//
// Format (Kafka 3.9's AbortedTxn / TransactionIndex): a sequence of 34-byte
// entries, big-endian, no header and no checksum:
//   version int16 (0) | producer_id int64 | first_offset int64 |
//   last_offset int64 (the offset of the ABORT marker) |
//   last_stable_offset int64
// An entry lives in the file of the segment that holds its ABORT marker;
// within a file last_offset increases strictly. The file exists only once a
// segment has an entry (as on Kafka, which creates it on the first append).
//
// Reading: entries are taken from the start while each is whole, has
// version 0 and a last_offset above the one before; the first that is not
// ends the file (a torn or unsynced tail after a crash). truncate_txn_index
// cuts a file to its entries whose last_offset is below an offset (or
// removes it when none is left).
//
// Who writes it: the producer state (broker/produce/produce_service.h), which
// knows the open transactions that an entry's last_stable_offset needs; the
// Log finds the segment and keeps the files with their segments (retention,
// truncation and deletion move them with the .log).
//
// Thread-safety: pure functions plus the file system's own guarantees; the
// Log serialises its calls per partition.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "storage/io/file.h"
#include "storage/status.h"

namespace ciuickafka::storage {

inline constexpr size_t kTxnIndexEntrySize = 34;
inline constexpr int16_t kTxnIndexVersion = 0;

struct TxnIndexEntry {
  int64_t producer_id = -1;
  int64_t first_offset = 0;
  int64_t last_offset = 0;         // the ABORT marker's offset
  int64_t last_stable_offset = 0;  // first offset of the earliest other open transaction, else last_offset + 1
  bool operator==(const TxnIndexEntry&) const = default;
};

void encode_txn_index_entry(const TxnIndexEntry& e, std::span<uint8_t, kTxnIndexEntrySize> out);
// The whole entries of bytes, up to the first invalid one (see above).
std::vector<TxnIndexEntry> decode_txn_index(std::span<const uint8_t> bytes);

// The file's entries; a missing file has none.
Result<std::vector<TxnIndexEntry>> read_txn_index(io::FileSystem& fs, const std::string& path);
// Writes e as entry number `index` (after the file's `index` valid entries;
// the caller knows them), creating the file, and cuts whatever followed (a
// torn tail left by a crash).
Status write_txn_index_entry(io::FileSystem& fs, const std::string& path, uint64_t index, const TxnIndexEntry& e);
// Keeps the entries whose last_offset is below offset; a file left empty is
// removed. *changed says whether the file changed.
Status truncate_txn_index(io::FileSystem& fs, const std::string& path, int64_t offset, bool* changed);

}  // namespace ciuickafka::storage
