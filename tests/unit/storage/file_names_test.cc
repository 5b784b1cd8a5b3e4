// tests/unit/storage/file_names_test.cc: segment file names and partition
// directory names.
#include <catch2/catch.hpp>

#include "storage/file_names.h"

using namespace ciuickafka::storage;

TEST_CASE("file names: segment files are named by a 20-digit base offset", "[storage][names]") {
  CHECK(segment_file_name(0, SegmentFileKind::kLog) == "00000000000000000000.log");
  CHECK(segment_file_name(368769, SegmentFileKind::kIndex) == "00000000000000368769.index");
  CHECK(segment_file_name(42, SegmentFileKind::kTimeIndex) == "00000000000000000042.timeindex");
  CHECK(segment_file_name(42, SegmentFileKind::kTxnIndex) == "00000000000000000042.txnindex");
  CHECK(segment_file_name(42, SegmentFileKind::kProducerSnapshot) == "00000000000000000042.snapshot");
  CHECK(segment_file_name(INT64_MAX, SegmentFileKind::kLog) == "09223372036854775807.log");
  CHECK(segment_file_name(7, SegmentFileKind::kLog, FileSuffix::kDeleted) == "00000000000000000007.log.deleted");
  CHECK(segment_file_name(7, SegmentFileKind::kIndex, FileSuffix::kSwap) == "00000000000000000007.index.swap");
}

TEST_CASE("file names: parsing segment file names", "[storage][names]") {
  auto p = parse_segment_file_name("00000000000000368769.timeindex");
  REQUIRE(p.has_value());
  CHECK(*p == SegmentFileName{368769, SegmentFileKind::kTimeIndex, FileSuffix::kNone});
  CHECK(*parse_segment_file_name("00000000000000000007.log.cleaned") ==
        SegmentFileName{7, SegmentFileKind::kLog, FileSuffix::kCleaned});
  CHECK(*parse_segment_file_name("09223372036854775807.log") ==
        SegmentFileName{INT64_MAX, SegmentFileKind::kLog, FileSuffix::kNone});
  for (auto kind : {SegmentFileKind::kLog, SegmentFileKind::kIndex, SegmentFileKind::kTimeIndex,
                    SegmentFileKind::kTxnIndex, SegmentFileKind::kProducerSnapshot}) {
    CHECK(parse_segment_file_name(segment_file_name(123456789, kind))->kind == kind);
  }
  CHECK_FALSE(parse_segment_file_name("recovery-point-offset-checkpoint"));
  CHECK_FALSE(parse_segment_file_name("partition.metadata"));
  CHECK_FALSE(parse_segment_file_name("leader-epoch-checkpoint.tmp"));
  CHECK_FALSE(parse_segment_file_name("00000000000000000000.log.tmp"));
  CHECK_FALSE(parse_segment_file_name("00000000000000000000.txt"));
  CHECK_FALSE(parse_segment_file_name(".log"));
  CHECK_FALSE(parse_segment_file_name("-0000000000000000001.log"));
  CHECK_FALSE(parse_segment_file_name("0000000000000000000a.log"));
  CHECK_FALSE(parse_segment_file_name("99999999999999999999.log"));  // overflows int64
  CHECK_FALSE(parse_segment_file_name(".deleted"));
}

TEST_CASE("file names: partition directories split at the last '-'", "[storage][names]") {
  CHECK(partition_dir_name({"orders", 3}) == "orders-3");
  CHECK(*parse_partition_dir_name("orders-3") == TopicPartition{"orders", 3});
  CHECK(*parse_partition_dir_name("payments-eu-west-12") == TopicPartition{"payments-eu-west", 12});
  CHECK(*parse_partition_dir_name("__consumer_offsets-49") == TopicPartition{"__consumer_offsets", 49});
  CHECK(*parse_partition_dir_name("a.b_c-0") == TopicPartition{"a.b_c", 0});
  CHECK(*parse_partition_dir_name("t--1") == TopicPartition{"t-", 1});  // a topic may end in '-'

  for (const char* bad : {"orders", "orders-", "-3", "orders-x", "orders-3a", "orders-99999999999",
                          "bad topic-0", "orders-0.abc-delete", "..-0", ""}) {
    INFO(bad);
    auto r = parse_partition_dir_name(bad);
    CHECK_FALSE(r.is_ok());
    if (!r.is_ok()) CHECK(r.status().code() == StatusCode::kInvalidArgument);
  }
  CHECK(is_valid_topic_name(std::string(249, 'a')));
  CHECK_FALSE(is_valid_topic_name(std::string(250, 'a')));
}
