// storage/checkpoint.h: Kafka's small text files that say where the logs
// stand.
//
// Per log directory (offset checkpoints):
//   recovery-point-offset-checkpoint  offsets below which data is flushed
//   log-start-offset-checkpoint       first offset still readable
//   replication-offset-checkpoint     high watermarks
// all in one format:
//   0                       version
//   <n>                     entry count
//   <topic> <partition> <offset>      n lines
// Per partition directory:
//   leader-epoch-checkpoint: 0, <n>, then n lines "<epoch> <startOffset>"
//   partition.metadata:      "version: 0" and "topic_id: <base64url uuid>"
// Every line ends in '\n'. Files are replaced atomically (write_file_atomically:
// temp file, fdatasync, rename, fsync of the directory). A malformed file is a
// kCorruption Status whose message is "<file>:<line>: <what is wrong>"; no
// input makes the parser crash or accept garbage. A missing file is
// kNotFound: the caller decides what that means (Kafka: empty).
//
// Thread-safety: pure functions plus the file system's own guarantees.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/wire/types.h"
#include "storage/file_names.h"
#include "storage/io/file.h"
#include "storage/status.h"

namespace ciuickafka::storage {

inline constexpr std::string_view kRecoveryPointCheckpointFile = "recovery-point-offset-checkpoint";
inline constexpr std::string_view kLogStartOffsetCheckpointFile = "log-start-offset-checkpoint";
inline constexpr std::string_view kReplicationOffsetCheckpointFile = "replication-offset-checkpoint";
inline constexpr std::string_view kLeaderEpochCheckpointFile = "leader-epoch-checkpoint";
inline constexpr std::string_view kPartitionMetadataFile = "partition.metadata";

struct PartitionOffset {
  TopicPartition tp;
  int64_t offset = 0;
  bool operator==(const PartitionOffset&) const = default;
};

struct EpochEntry {
  int32_t epoch = 0;
  int64_t start_offset = 0;
  bool operator==(const EpochEntry&) const = default;
};

// Offset checkpoints. Entries are written in the order given; duplicates
// and negative offsets are refused on both sides.
std::string format_offset_checkpoint(std::span<const PartitionOffset> entries);
Result<std::vector<PartitionOffset>> parse_offset_checkpoint(std::string_view text, std::string_view file_name);
Status write_offset_checkpoint(io::FileSystem& fs, const std::string& path,
                               std::span<const PartitionOffset> entries);
Result<std::vector<PartitionOffset>> read_offset_checkpoint(io::FileSystem& fs, const std::string& path);

// Leader epoch checkpoint. Epochs and start offsets must increase from line
// to line (the epoch cache's invariant); the parser checks it.
std::string format_leader_epoch_checkpoint(std::span<const EpochEntry> entries);
Result<std::vector<EpochEntry>> parse_leader_epoch_checkpoint(std::string_view text, std::string_view file_name);
Status write_leader_epoch_checkpoint(io::FileSystem& fs, const std::string& path,
                                     std::span<const EpochEntry> entries);
Result<std::vector<EpochEntry>> read_leader_epoch_checkpoint(io::FileSystem& fs, const std::string& path);

// partition.metadata.
std::string format_partition_metadata(const protocol::Uuid& topic_id);
Result<protocol::Uuid> parse_partition_metadata(std::string_view text, std::string_view file_name);
Status write_partition_metadata(io::FileSystem& fs, const std::string& path, const protocol::Uuid& topic_id);
Result<protocol::Uuid> read_partition_metadata(io::FileSystem& fs, const std::string& path);

// Kafka's Uuid.toString: the 16 bytes in URL-safe base64 without padding
// (22 characters), and its inverse.
std::string uuid_to_string(const protocol::Uuid& id);
Result<protocol::Uuid> uuid_from_string(std::string_view text);

}  // namespace ciuickafka::storage
