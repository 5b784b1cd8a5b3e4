// storage/file_names.h: Kafka's names for log directories and segment files.
//
//   <log.dir>/<topic>-<partition>/                 one directory per partition
//   00000000000000000000.log / .index / .timeindex / .txnindex / .snapshot
//                                                  a segment's files, named by
//                                                  its 20-digit base offset
//   ...log.deleted / .cleaned / .swap              retention and compaction
//                                                  in progress (later work)
// Topic names may contain '-', so a directory name splits at its last '-'.
//
// Thread-safety: pure functions.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "storage/status.h"

namespace ciuickafka::storage {

struct TopicPartition {
  std::string topic;
  int32_t partition = 0;
  auto operator<=>(const TopicPartition&) const = default;
};

enum class SegmentFileKind {
  kLog,               // .log: record batches
  kIndex,             // .index: offset -> position
  kTimeIndex,         // .timeindex: timestamp -> offset
  kTxnIndex,          // .txnindex: aborted transactions
  kProducerSnapshot,  // .snapshot: producer state at that offset
};

// A suffix that marks a file in the middle of an operation.
enum class FileSuffix { kNone, kDeleted, kCleaned, kSwap };

std::string_view extension(SegmentFileKind kind);  // ".log", ".index", ...
std::string_view suffix_text(FileSuffix s);        // "", ".deleted", ".cleaned", ".swap"

// "00000000000000000042.log": base_offset must be >= 0.
std::string segment_file_name(int64_t base_offset, SegmentFileKind kind, FileSuffix suffix = FileSuffix::kNone);

struct SegmentFileName {
  int64_t base_offset = 0;
  SegmentFileKind kind = SegmentFileKind::kLog;
  FileSuffix suffix = FileSuffix::kNone;
  bool operator==(const SegmentFileName&) const = default;
};
// Parses a segment file name; nullopt for anything else (checkpoints,
// partition.metadata, temp files, names whose offset is not all digits or
// overflows).
std::optional<SegmentFileName> parse_segment_file_name(std::string_view name);

// "<topic>-<partition>".
std::string partition_dir_name(const TopicPartition& tp);
// Splits at the last '-'; the topic must be a legal Kafka topic name (1-249
// of [a-zA-Z0-9._-]) and the partition a non-negative int32 in decimal.
Result<TopicPartition> parse_partition_dir_name(std::string_view name);

// Whether name is a legal Kafka topic name.
bool is_valid_topic_name(std::string_view name);

}  // namespace ciuickafka::storage
