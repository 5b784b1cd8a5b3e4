// tests/unit/storage/txn_index_test.cc: the aborted-transaction index
// (`.txnindex`): Kafka's 34-byte entries byte for byte, a torn or
// inconsistent tail ends the file, and the Log keeps the files with their
// segments (the marker's segment gets the entry; truncation cuts entries
// and deletes producer snapshots past the cut; retention retires the files).
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "fs_fixtures.h"
#include "log_test_util.h"
#include "replica_test_util.h"
#include "storage/file_names.h"
#include "storage/txn_index.h"

using namespace ciuickafka::storage;
using namespace ciuickafka::storage::test;

namespace {

std::string txn_path(const std::string& dir, int64_t base) {
  return dir + "/" + segment_file_name(base, SegmentFileKind::kTxnIndex);
}

bool exists(io::FileSystem& fs, const std::string& path) {
  auto t = fs.file_type(path);
  return t.is_ok() && t.value() == io::FileType::kFile;
}

std::vector<TxnIndexEntry> entries_of(io::FileSystem& fs, const std::string& path) {
  auto e = read_txn_index(fs, path);
  REQUIRE(e.is_ok());
  return *e;
}

}  // namespace

TEST_CASE("txnindex entries are Kafka's 34-byte AbortedTxn", "[storage][txn]") {
  std::array<uint8_t, kTxnIndexEntrySize> b{};
  encode_txn_index_entry({0x0102030405060708, 0x10, 0x1234, 0x1235}, b);
  // version 0 | producerId | firstOffset | lastOffset | lastStableOffset, big-endian.
  const std::vector<uint8_t> want = {0x00, 0x00,                                           //
                                     0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,       //
                                     0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10,       //
                                     0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x12, 0x34,       //
                                     0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x12, 0x35};
  CHECK(std::vector<uint8_t>(b.begin(), b.end()) == want);

  std::vector<uint8_t> file;
  const auto add = [&](TxnIndexEntry e) {
    encode_txn_index_entry(e, b);
    file.insert(file.end(), b.begin(), b.end());
  };
  add({7, 0, 3, 4});
  add({8, 5, 9, 10});
  CHECK(decode_txn_index(file) == std::vector<TxnIndexEntry>{{7, 0, 3, 4}, {8, 5, 9, 10}});
  SECTION("a torn tail is not an entry") {
    file.insert(file.end(), {0, 0, 1, 2, 3});
    CHECK(decode_txn_index(file).size() == 2);
  }
  SECTION("an entry that does not follow the one before ends the file") {
    add({9, 1, 9, 10});  // the same marker offset
    add({9, 11, 12, 13});
    CHECK(decode_txn_index(file).size() == 2);
  }
  SECTION("another version ends the file") {
    add({9, 11, 12, 13});
    file[2 * kTxnIndexEntrySize + 1] = 1;
    CHECK(decode_txn_index(file).size() == 2);
  }
}

TEST_CASE("txnindex files follow their segments: marker's segment, truncation, retention",
          "[storage][txn]") {
  MemFs t;
  const std::string dir = "/t/x-0";
  auto log = open_log(t.fs, dir, small_segments());
  fill_leader(*log, 60);
  std::vector<int64_t> bases;
  for (const auto& s : *log->segments()) bases.push_back(s->base_offset());
  REQUIRE(bases.size() >= 4);
  const int64_t leo = log->log_end_offset();

  // Entries land in the segment holding their marker (last_offset).
  const TxnIndexEntry in1{5, bases[1], bases[1] + 1, bases[1] + 2};
  const TxnIndexEntry in2{6, bases[2] - 3, bases[2] + 1, bases[2] + 2};  // starts in the segment before
  const TxnIndexEntry last{7, leo - 2, leo - 1, leo};
  for (const auto& e : {in1, in2, last}) REQUIRE(log->append_aborted_txn(e).is_ok());
  CHECK(entries_of(t.fs, txn_path(dir, bases[1])) == std::vector<TxnIndexEntry>{in1});
  CHECK(entries_of(t.fs, txn_path(dir, bases[2])) == std::vector<TxnIndexEntry>{in2});
  CHECK(entries_of(t.fs, txn_path(dir, bases.back())) == std::vector<TxnIndexEntry>{last});
  CHECK_FALSE(exists(t.fs, txn_path(dir, bases[0])));  // no entry, no file (as on Kafka)
  REQUIRE(log->sync_aborted_txns().is_ok());
  {
    auto all = log->aborted_txns_below(leo);
    REQUIRE(all.is_ok());
    CHECK(*all == std::vector<TxnIndexEntry>{in1, in2, last});
    auto below = log->aborted_txns_below(last.last_offset);
    REQUIRE(below.is_ok());
    CHECK(*below == std::vector<TxnIndexEntry>{in1, in2});
  }
  // A marker offset must grow within a file.
  CHECK_FALSE(log->append_aborted_txn(last).is_ok());

  // Entries at or past an offset go (a file left empty is removed).
  REQUIRE(log->truncate_aborted_txns(in2.last_offset).is_ok());
  CHECK_FALSE(exists(t.fs, txn_path(dir, bases.back())));
  CHECK_FALSE(exists(t.fs, txn_path(dir, bases[2])));
  CHECK(entries_of(t.fs, txn_path(dir, bases[1])) == std::vector<TxnIndexEntry>{in1});
  for (const auto& e : {in2, last}) REQUIRE(log->append_aborted_txn(e).is_ok());

  // A replica's truncation into segment 2, at in2's marker: in2 and the
  // later segments' entries go; so do producer snapshots past the cut.
  for (int64_t o : {bases[1], in2.last_offset + 1, leo}) {
    auto f = t.fs.open(dir + "/" + segment_file_name(o, SegmentFileKind::kProducerSnapshot), io::OpenMode::kCreate);
    REQUIRE(f.is_ok());
  }
  auto cut = log->truncate_to(in2.last_offset, 1);
  REQUIRE(cut.is_ok());
  // (At the start of the batch holding it: a truncation cuts whole batches.)
  CHECK(*cut <= in2.last_offset);
  CHECK(*cut > in1.last_offset);
  CHECK_FALSE(exists(t.fs, txn_path(dir, bases[2])));
  CHECK_FALSE(exists(t.fs, txn_path(dir, bases.back())));
  CHECK(exists(t.fs, dir + "/" + segment_file_name(bases[1], SegmentFileKind::kProducerSnapshot)));
  CHECK_FALSE(exists(t.fs, dir + "/" + segment_file_name(in2.last_offset + 1, SegmentFileKind::kProducerSnapshot)));
  CHECK_FALSE(exists(t.fs, dir + "/" + segment_file_name(leo, SegmentFileKind::kProducerSnapshot)));
  {
    auto all = log->aborted_txns_below(INT64_MAX);
    REQUIRE(all.is_ok());
    CHECK(*all == std::vector<TxnIndexEntry>{in1});
  }
  // The files survive a reopen.
  REQUIRE(log->close().is_ok());
  log.reset();
  log = open_log(t.fs, dir, small_segments());
  {
    auto all = log->aborted_txns_below(INT64_MAX);
    REQUIRE(all.is_ok());
    CHECK(*all == std::vector<TxnIndexEntry>{in1});
  }

  // Retention (here DeleteRecords) retires a segment's .txnindex with its .log.
  REQUIRE(log->advance_log_start_offset(bases[2]).is_ok());
  CHECK_FALSE(exists(t.fs, txn_path(dir, bases[1])));
  CHECK(exists(t.fs, dir + "/" + segment_file_name(bases[1], SegmentFileKind::kTxnIndex, FileSuffix::kDeleted)));
  auto none = log->aborted_txns_below(INT64_MAX);
  REQUIRE(none.is_ok());
  CHECK(none->empty());
  // An entry below the log start has no segment to go to: nothing written.
  REQUIRE(log->append_aborted_txn({9, bases[0], bases[0] + 1, bases[0] + 2}).is_ok());
  CHECK_FALSE(exists(t.fs, txn_path(dir, bases[0])));
}
