// tests/unit/storage/checkpoint_test.cc: Kafka's checkpoint files, written
// byte for byte as Kafka writes them and read back; malformed files give an
// error naming the file and line.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "storage/checkpoint.h"
#include "storage/io/mem_file.h"
#include "storage/io/posix_file.h"
#include "temp_dir.h"

using namespace ciuickafka::storage;
using namespace ciuickafka::storage::io;
using ciuickafka::protocol::Uuid;
using ciuickafka::storage::test::TempDir;

namespace {

std::string file_text(FileSystem& fs, const std::string& path) {
  auto b = read_file(fs, path);
  REQUIRE(b.is_ok());
  return std::string(b->begin(), b->end());
}

// Hand-written in Kafka's format (OffsetCheckpointFile: version, count, then
// "topic partition offset", '\n' line ends).
const char kRecoveryPoints[] =
    "0\n"
    "3\n"
    "orders 0 1200\n"
    "orders 1 0\n"
    "payments-eu-west 12 9223372036854775807\n";

const char kLeaderEpochs[] =
    "0\n"
    "3\n"
    "0 0\n"
    "2 1500\n"
    "5 1500\n";

}  // namespace

TEST_CASE("checkpoint: offset checkpoint round trip, byte exact", "[storage][checkpoint]") {
  TempDir dir;
  PosixFileSystem fs;
  const std::string path = dir / std::string(kRecoveryPointCheckpointFile);
  const std::vector<PartitionOffset> entries = {
      {{"orders", 0}, 1200},
      {{"orders", 1}, 0},
      {{"payments-eu-west", 12}, INT64_MAX},
  };
  REQUIRE(write_offset_checkpoint(fs, path, entries).is_ok());
  CHECK(file_text(fs, path) == kRecoveryPoints);
  auto back = read_offset_checkpoint(fs, path);
  REQUIRE(back.is_ok());
  CHECK(*back == entries);
  CHECK(*fs.list_dir(dir.path()) == std::vector<std::string>{"recovery-point-offset-checkpoint"});

  // Empty checkpoint: "0\n0\n".
  const std::string empty_path = dir / std::string(kLogStartOffsetCheckpointFile);
  REQUIRE(write_offset_checkpoint(fs, empty_path, {}).is_ok());
  CHECK(file_text(fs, empty_path) == "0\n0\n");
  CHECK(read_offset_checkpoint(fs, empty_path)->empty());
  CHECK(read_offset_checkpoint(fs, dir / std::string(kReplicationOffsetCheckpointFile)).status().code() ==
        StatusCode::kNotFound);
}

TEST_CASE("checkpoint: leader-epoch-checkpoint round trip, byte exact", "[storage][checkpoint]") {
  TempDir dir;
  PosixFileSystem fs;
  const std::string path = dir / std::string(kLeaderEpochCheckpointFile);
  const std::vector<EpochEntry> entries = {{0, 0}, {2, 1500}, {5, 1500}};
  REQUIRE(write_leader_epoch_checkpoint(fs, path, entries).is_ok());
  CHECK(file_text(fs, path) == kLeaderEpochs);
  CHECK(*read_leader_epoch_checkpoint(fs, path) == entries);
  // Out of order epochs are refused on write.
  const std::vector<EpochEntry> bad = {{3, 10}, {2, 20}};
  CHECK(write_leader_epoch_checkpoint(fs, path, bad).code() == StatusCode::kInvalidArgument);
  CHECK(file_text(fs, path) == kLeaderEpochs);  // untouched
}

TEST_CASE("checkpoint: partition.metadata and Kafka's Uuid strings", "[storage][checkpoint]") {
  Uuid id;
  for (int i = 0; i < 16; ++i) id.bytes[i] = static_cast<uint8_t>(0x10 + i);
  CHECK(uuid_to_string(id) == "EBESExQVFhcYGRobHB0eHw");
  CHECK(uuid_to_string(Uuid{}) == "AAAAAAAAAAAAAAAAAAAAAA");
  Uuid url_chars;
  url_chars.bytes = {0xfb, 0xff, 0xbf, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe};
  CHECK(uuid_to_string(url_chars) == "-_-__v7-_v7-_v7-_v7-_g");  // '-' and '_', never '+' or '/'
  CHECK(*uuid_from_string("-_-__v7-_v7-_v7-_v7-_g") == url_chars);
  auto from_kafka = uuid_from_string("vHwTm0roRlanPyeyJoQjUw");
  REQUIRE(from_kafka.is_ok());
  CHECK(from_kafka->bytes[0] == 188);
  CHECK(from_kafka->bytes[15] == 83);
  CHECK(uuid_to_string(*from_kafka) == "vHwTm0roRlanPyeyJoQjUw");
  CHECK_FALSE(uuid_from_string("vHwTm0roRlanPyeyJoQjU").is_ok());    // 21 chars
  CHECK_FALSE(uuid_from_string("vHwTm0roRlanPyeyJoQjUw=").is_ok());  // padding
  CHECK_FALSE(uuid_from_string("vHwTm0roRlanPyeyJoQj+w").is_ok());  // not URL-safe
  CHECK_FALSE(uuid_from_string("vHwTm0roRlanPyeyJoQjUx").is_ok());  // trailing bits set

  TempDir dir;
  PosixFileSystem fs;
  const std::string path = dir / std::string(kPartitionMetadataFile);
  REQUIRE(write_partition_metadata(fs, path, *from_kafka).is_ok());
  CHECK(file_text(fs, path) == "version: 0\ntopic_id: vHwTm0roRlanPyeyJoQjUw\n");
  CHECK(*read_partition_metadata(fs, path) == *from_kafka);
}

TEST_CASE("checkpoint: malformed offset checkpoints name the file and line", "[storage][checkpoint]") {
  struct Case {
    const char* text;
    const char* where;  // expected "<file>:<line>:" prefix and a fragment
    const char* what;
  };
  const Case cases[] = {
      {"", "cp:1:", "empty file"},
      {"1\n0\n", "cp:1:", "unsupported checkpoint version 1"},
      {"x\n", "cp:1:", "expected version"},
      {"0\n", "cp:2:", "entry count"},
      {"0\n-1\n", "cp:2:", "non-negative entry count"},
      {"0\n2\norders 0 5\n", "cp:4:", "expected 2 entries, found 1"},
      {"0\n1\norders 0\n", "cp:3:", "expected '<topic> <partition> <offset>'"},
      {"0\n1\norders 0 5 7\n", "cp:3:", "expected '<topic> <partition> <offset>'"},
      {"0\n1\norders x 5\n", "cp:3:", "invalid partition 'x'"},
      {"0\n1\norders -1 5\n", "cp:3:", "invalid partition"},
      {"0\n1\norders 0 5x\n", "cp:3:", "invalid offset '5x'"},
      {"0\n1\norders 0 -5\n", "cp:3:", "invalid offset"},
      {"0\n1\norders 0 99999999999999999999\n", "cp:3:", "invalid offset"},
      {"0\n1\nord/ers 0 5\n", "cp:3:", "invalid topic name"},
      {"0\n1\norders 0 5\nextra 1 2\n", "cp:4:", "expected end of file after 1 entries"},
      {"0\n1\norders 0 5\n\n", "cp:4:", "expected end of file"},
      {"0\n2\norders 0 5\norders 0 6\n", "cp:4:", "duplicate entry for orders-0"},
  };
  for (const auto& c : cases) {
    INFO("input: " << c.text);
    auto r = parse_offset_checkpoint(c.text, "cp");
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == StatusCode::kCorruption);
    CHECK(r.status().message().rfind(c.where, 0) == 0);
    CHECK(r.status().message().find(c.what) != std::string::npos);
  }
  // Tolerated as Kafka reads them: no final newline, CRLF, runs of spaces.
  CHECK(parse_offset_checkpoint("0\n1\norders 0 5", "cp").is_ok());
  CHECK(parse_offset_checkpoint("0\r\n1\r\norders 0 5\r\n", "cp").is_ok());
  CHECK(parse_offset_checkpoint("0\n1\norders  0\t5\n", "cp")->at(0).offset == 5);
}

TEST_CASE("checkpoint: malformed leader epoch and partition.metadata files", "[storage][checkpoint]") {
  auto epoch_error = [](const char* text) {
    auto r = parse_leader_epoch_checkpoint(text, "leader-epoch-checkpoint");
    REQUIRE_FALSE(r.is_ok());
    return r.status().message();
  };
  CHECK(epoch_error("0\n1\n3\n").rfind("leader-epoch-checkpoint:3: expected '<epoch> <startOffset>'", 0) == 0);
  CHECK(epoch_error("0\n2\n3 10\n2 20\n").rfind("leader-epoch-checkpoint:4: epoch 2 is not above", 0) == 0);
  CHECK(epoch_error("0\n2\n3 10\n4 5\n").find("start offset 5 is below") != std::string::npos);
  CHECK(epoch_error("0\n1\n-1 0\n").find("invalid epoch") != std::string::npos);
  CHECK(epoch_error("0\n1\n2147483648 0\n").find("invalid epoch") != std::string::npos);

  auto meta_error = [](const char* text) {
    auto r = parse_partition_metadata(text, "partition.metadata");
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == StatusCode::kCorruption);
    return r.status().message();
  };
  CHECK(meta_error("").rfind("partition.metadata:1: empty file", 0) == 0);
  CHECK(meta_error("version: 1\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n").find("unsupported") != std::string::npos);
  CHECK(meta_error("versio: 0\n").rfind("partition.metadata:1:", 0) == 0);
  CHECK(meta_error("version: 0\n").rfind("partition.metadata:2: file ends", 0) == 0);
  CHECK(meta_error("version: 0\ntopic: x\n").rfind("partition.metadata:2: expected 'topic_id", 0) == 0);
  CHECK(meta_error("version: 0\ntopic_id: short\n").find("not 22 characters") != std::string::npos);
  CHECK(meta_error("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\nmore\n").rfind("partition.metadata:3:", 0) == 0);
  // Kafka splits on ':' and optional spaces: both spellings read.
  CHECK(parse_partition_metadata("version:0\ntopic_id:AAAAAAAAAAAAAAAAAAAAAA", "pm").is_ok());
}

TEST_CASE("checkpoint: garbage input never crashes the parsers", "[storage][checkpoint]") {
  // Deterministic pseudo-random inputs built from checkpoint-like pieces.
  const char* pieces[] = {"0", "1", "2", "\n", " ", "\t", "-", "orders", "99999999999999999999", "x", "\r",
                          "version:", "topic_id:", "AAAAAAAAAAAAAAAAAAAAAA", ":", "\0"};
  uint64_t state = 42;
  for (int i = 0; i < 2000; ++i) {
    std::string text;
    int n = static_cast<int>(state % 12);
    for (int j = 0; j < n; ++j) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      text += pieces[(state >> 33) % (sizeof pieces / sizeof pieces[0])];
    }
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    (void)parse_offset_checkpoint(text, "f").is_ok();
    (void)parse_leader_epoch_checkpoint(text, "f").is_ok();
    (void)parse_partition_metadata(text, "f").is_ok();
  }
  SUCCEED();
}

TEST_CASE("checkpoint: writes are atomic through the in-memory file system", "[storage][checkpoint]") {
  MemFileSystem fs;
  REQUIRE(fs.create_dir("/logs").is_ok());
  const std::string path = "/logs/recovery-point-offset-checkpoint";
  const std::vector<PartitionOffset> v1 = {{{"t", 0}, 10}};
  const std::vector<PartitionOffset> v2 = {{{"t", 0}, 20}, {{"t", 1}, 5}};
  REQUIRE(write_offset_checkpoint(fs, path, v1).is_ok());
  fs.fail_nth_sync(1);  // the temp file's fdatasync fails
  CHECK_FALSE(write_offset_checkpoint(fs, path, v2).is_ok());
  fs.crash();
  CHECK(*read_offset_checkpoint(fs, path) == v1);
  REQUIRE(write_offset_checkpoint(fs, path, v2).is_ok());
  fs.crash();
  CHECK(*read_offset_checkpoint(fs, path) == v2);
  CHECK(write_offset_checkpoint(fs, path, std::vector<PartitionOffset>{{{"t", 0}, -1}}).code() ==
        StatusCode::kInvalidArgument);
}
