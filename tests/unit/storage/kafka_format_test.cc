// tests/unit/storage/kafka_format_test.cc: the byte-level check of issue
// #3's "Done when": a log directory written by the engine, read back by an
// independent reader written here straight from Kafka's format definitions
// (not from storage/'s code), and golden batches from real clients stored
// byte for byte.
//
// The formats, as Kafka defines them (LogSegment, OffsetIndex, TimeIndex,
// OffsetCheckpointFile, LeaderEpochCheckpointFile, PartitionMetadataFile):
//   <20-digit base offset>.log        v2 record batches back to back:
//       baseOffset i64 | batchLength i32 | partitionLeaderEpoch i32 |
//       magic i8 (=2) | crc u32 (CRC-32C of attributes..end) | attributes i16 |
//       lastOffsetDelta i32 | baseTimestamp i64 | maxTimestamp i64 | ...
//   <base>.index      entries of relativeOffset i32 | position i32 (big-endian)
//   <base>.timeindex  entries of timestamp i64 | relativeOffset i32
//   Index rule (LogSegment.append): before appending a batch, when more than
//   index.interval.bytes were appended since the last entry, add
//   (batch's last offset, batch position) to .index and
//   (max timestamp so far, its offset) to .timeindex when the timestamp is
//   larger than the last entry's; a rolled segment's .timeindex ends with
//   (max timestamp, its offset).
//   checkpoints "<version>\n<count>\n" then "<topic> <partition> <offset>\n"
//   (leader-epoch-checkpoint: "<epoch> <start offset>\n")
//   partition.metadata "version: 0\ntopic_id: <base64url, no padding>\n"
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "fs_fixtures.h"
#include "log_test_util.h"
#include "protocol/generated/api_keys.h"
#include "protocol/generated/messages.h"
#include "protocol/wire/reader.h"
#include "storage/checkpoint.h"
#include "storage/log_manager.h"
#include "tests/golden/golden_data.h"

namespace ciuickafka::storage::test {
namespace {

namespace fsys = std::filesystem;

// --- the independent reader -------------------------------------------------

std::vector<uint8_t> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
std::string slurp_text(const std::string& path) {
  auto b = slurp(path);
  return std::string(b.begin(), b.end());
}
int64_t be(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | p[i];
  if (n == 4) return static_cast<int32_t>(static_cast<uint32_t>(v));
  return static_cast<int64_t>(v);
}
void put_be(uint8_t* p, uint64_t v, int n) {
  for (int i = n - 1; i >= 0; --i, v >>= 8) p[i] = static_cast<uint8_t>(v);
}
// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), bit by bit.
uint32_t crc32c(const uint8_t* p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
  }
  return ~c;
}

struct Batch {
  uint64_t position = 0, size = 0;
  int64_t base = 0, last = 0, max_ts = 0;
  int32_t epoch = 0;
};

std::vector<Batch> parse_log(const std::vector<uint8_t>& f) {
  std::vector<Batch> out;
  size_t pos = 0;
  while (pos < f.size()) {
    REQUIRE(pos + 61 <= f.size());
    const uint8_t* p = f.data() + pos;
    Batch b;
    b.position = pos;
    b.base = be(p, 8);
    const int64_t length = be(p + 8, 4);
    b.size = 12 + static_cast<uint64_t>(length);
    REQUIRE(length >= 49);
    REQUIRE(pos + b.size <= f.size());
    b.epoch = static_cast<int32_t>(be(p + 12, 4));
    REQUIRE(p[16] == 2);  // magic
    REQUIRE(static_cast<uint32_t>(be(p + 17, 4)) == crc32c(p + 21, b.size - 21));
    b.last = b.base + be(p + 23, 4);
    b.max_ts = be(p + 35, 8);
    out.push_back(b);
    pos += b.size;
  }
  return out;
}

struct IndexEntry {
  int64_t key;  // offset (.index) or timestamp (.timeindex)
  int64_t value;
  bool operator==(const IndexEntry&) const = default;
};
std::ostream& operator<<(std::ostream& o, const IndexEntry& e) { return o << "(" << e.key << "," << e.value << ")"; }

std::vector<IndexEntry> parse_offset_index(const std::vector<uint8_t>& f, int64_t base) {
  REQUIRE(f.size() % 8 == 0);
  std::vector<IndexEntry> out;
  for (size_t i = 0; i < f.size(); i += 8) out.push_back({base + be(&f[i], 4), be(&f[i + 4], 4)});
  return out;
}
std::vector<IndexEntry> parse_time_index(const std::vector<uint8_t>& f, int64_t base) {
  REQUIRE(f.size() % 12 == 0);
  std::vector<IndexEntry> out;
  for (size_t i = 0; i < f.size(); i += 12) out.push_back({be(&f[i], 8), base + be(&f[i + 8], 4)});
  return out;
}

// "<version>\n<count>\n<count lines>"; each line split on spaces.
std::vector<std::vector<std::string>> parse_checkpoint(const std::string& text, int fields) {
  std::istringstream in(text);
  std::string version, count;
  REQUIRE(std::getline(in, version));
  REQUIRE(version == "0");
  REQUIRE(std::getline(in, count));
  std::vector<std::vector<std::string>> lines;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    std::vector<std::string> f;
    for (std::string w; l >> w;) f.push_back(w);
    REQUIRE(static_cast<int>(f.size()) == fields);
    lines.push_back(f);
  }
  REQUIRE(std::to_string(lines.size()) == count);
  REQUIRE((text.empty() || text.back() == '\n'));
  return lines;
}

std::vector<uint8_t> base64url_decode(const std::string& s) {
  static const std::string kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::vector<uint8_t> out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    const auto v = kAlphabet.find(c);
    REQUIRE(v != std::string::npos);
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>(acc >> bits));
    }
  }
  return out;
}

// What Kafka's LogSegment.append would have put in the indexes of a segment
// holding these batches (one batch per append), given index.interval.bytes.
void expected_indexes(const std::vector<Batch>& batches, uint32_t interval, bool rolled,
                      std::vector<IndexEntry>* oi, std::vector<IndexEntry>* ti) {
  uint64_t since = 0;
  int64_t max_ts = -1, max_off = 0;
  auto maybe_time = [&](int64_t ts, int64_t off) {
    if (ts == -1) return;
    if (ti->empty() || ts > ti->back().key) ti->push_back({ts, off});
  };
  for (const Batch& b : batches) {
    if (b.max_ts > max_ts) {
      max_ts = b.max_ts;
      max_off = b.last;
    }
    if (since > interval) {
      oi->push_back({b.last, static_cast<int64_t>(b.position)});
      maybe_time(max_ts, max_off);
      since = 0;
    }
    since += b.size;
  }
  if (rolled) maybe_time(max_ts, max_off);
}

}  // namespace

TEST_CASE("a log directory written by the engine reads as Kafka's format, byte for byte") {
  TempDir root;
  io::PosixFileSystem fs;
  const std::string logs = root / "logs";
  LogManagerConfig mc;
  mc.default_config.segment.segment_bytes = 4096;
  mc.default_config.segment.index_interval_bytes = 300;
  mc.default_config.retention_ms = -1;
  mc.default_config.file_delete_delay_ms = 0;
  auto m = LogManager::open(fs, {logs}, mc, 0);
  REQUIRE(m.is_ok());
  protocol::Uuid id;
  for (size_t i = 0; i < 16; ++i) id.bytes[i] = static_cast<uint8_t>(0x10 + i * 7);
  auto log = (*m)->create({"fmt", 3}, id, mc.default_config);
  REQUIRE(log.is_ok());
  std::mt19937 rng(12345);
  int64_t ts = 1'700'000'000'000;
  for (int i = 0; i < 120; ++i) {
    // Timestamps mostly rise, sometimes fall back (the time index only
    // takes a new maximum).
    ts += std::uniform_int_distribution<int>(-40, 100)(rng);
    // One draw per statement: the order of a call's arguments is unspecified
    // (g++ and clang differ), and the data must not depend on the compiler.
    const size_t value_size = std::uniform_int_distribution<size_t>(10, 200)(rng);
    const int records = std::uniform_int_distribution<int>(1, 4)(rng);
    Bytes b = make_batch(records, ts, value_size);
    auto r = (*log)->append(b, 5 + i / 40, 0);
    REQUIRE(r.is_ok());
  }
  // DeleteRecords into the second segment: the first goes, the log start
  // passes the first remaining segment's base.
  auto segs = (*log)->segments();
  REQUIRE(segs->size() >= 5);
  const int64_t new_start = (*segs)[1]->base_offset() + 1;
  REQUIRE((*log)->advance_log_start_offset(new_start).is_ok());
  (*log)->remove_deleted_files(0);
  const int64_t leo = (*log)->log_end_offset();
  const std::string pdir = logs + "/fmt-3";
  // The files the broker writes through storage's writers.
  REQUIRE(write_leader_epoch_checkpoint(fs, pdir + "/leader-epoch-checkpoint",
                                        std::vector<EpochEntry>{{5, 0}, {6, 41}, {7, 90}})
              .is_ok());
  REQUIRE(write_offset_checkpoint(fs, logs + "/replication-offset-checkpoint",
                                  std::vector<PartitionOffset>{{{"fmt", 3}, leo}})
              .is_ok());
  REQUIRE((*m)->shutdown().is_ok());
  m->reset();

  // --- read it back as Kafka would ---
  const std::regex seg_name(R"((\d{20})\.(log|index|timeindex))");
  std::map<int64_t, std::map<std::string, std::string>> by_base;
  std::vector<std::string> others;
  for (const auto& e : fsys::directory_iterator(pdir)) {
    const std::string n = e.path().filename().string();
    std::smatch mm;
    if (std::regex_match(n, mm, seg_name)) {
      by_base[std::stoll(mm[1])][mm[2]] = e.path().string();
    } else {
      others.push_back(n);
    }
  }
  std::sort(others.begin(), others.end());
  CHECK(others == std::vector<std::string>{"leader-epoch-checkpoint", "partition.metadata"});
  REQUIRE(by_base.size() == segs->size() - 1);
  int64_t expect_next = -1;
  size_t seen = 0;
  for (const auto& [base, files] : by_base) {
    INFO("segment " << base);
    REQUIRE(files.size() == 3);
    const auto batches = parse_log(slurp(files.at("log")));
    REQUIRE(!batches.empty());
    CHECK(batches.front().base == base);  // the name is the first offset
    for (const Batch& b : batches) {
      if (expect_next >= 0) CHECK(b.base == expect_next);
      expect_next = b.last + 1;
      CHECK(b.epoch >= 5);
    }
    std::vector<IndexEntry> oi, ti;
    const bool rolled = ++seen < by_base.size();
    expected_indexes(batches, 300, rolled, &oi, &ti);
    CHECK(parse_offset_index(slurp(files.at("index")), base) == oi);
    auto got_ti = parse_time_index(slurp(files.at("timeindex")), base);
    if (!rolled && got_ti.size() == ti.size() + 1) ti.push_back(got_ti.back());  // a final entry at close is allowed
    CHECK(got_ti == ti);
    CHECK(oi.size() >= 2);  // the interval rule really ran
  }
  CHECK(expect_next == leo);

  // Checkpoints in Kafka's text format.
  auto rp = parse_checkpoint(slurp_text(logs + "/recovery-point-offset-checkpoint"), 3);
  REQUIRE(rp.size() == 1);
  CHECK(rp[0] == std::vector<std::string>{"fmt", "3", std::to_string(leo)});
  auto ls = parse_checkpoint(slurp_text(logs + "/log-start-offset-checkpoint"), 3);
  REQUIRE(ls.size() == 1);
  CHECK(ls[0] == std::vector<std::string>{"fmt", "3", std::to_string(new_start)});
  auto ro = parse_checkpoint(slurp_text(logs + "/replication-offset-checkpoint"), 3);
  CHECK(ro == std::vector<std::vector<std::string>>{{"fmt", "3", std::to_string(leo)}});
  auto le = parse_checkpoint(slurp_text(pdir + "/leader-epoch-checkpoint"), 2);
  CHECK(le == std::vector<std::vector<std::string>>{{"5", "0"}, {"6", "41"}, {"7", "90"}});
  CHECK(fsys::exists(logs + "/" + std::string(kCleanShutdownFile)));

  // partition.metadata.
  const std::string pm = slurp_text(pdir + "/partition.metadata");
  std::smatch mm;
  REQUIRE(std::regex_match(pm, mm, std::regex("version: 0\ntopic_id: ([A-Za-z0-9_-]{22})\n?")));
  auto decoded = base64url_decode(mm[1]);
  REQUIRE(decoded.size() == 16);
  CHECK(std::equal(decoded.begin(), decoded.end(), id.bytes.begin()));
}

TEST_CASE("batches produced by real clients are stored exactly, only offsets and epoch rewritten") {
  TempDir root;
  io::PosixFileSystem fs;
  const std::string dir = root / "golden-0";
  REQUIRE(fs.create_dir(dir).is_ok());
  LogConfig cfg;
  auto log = Log::open(fs, dir, cfg, 0);
  REQUIRE(log.is_ok());
  std::vector<uint8_t> expected;
  int64_t next = 0;
  size_t frames = 0;
  std::set<std::string> clients;
  for (const auto& sc : golden::scenarios()) {
    for (const auto& f : sc.frames) {
      if (f.api_key() != 0) continue;
      protocol::Reader r(f.bytes);
      protocol::RequestHeader h;
      h.decode(r, protocol::request_header_version(f.api_key(), f.api_version()));
      protocol::ProduceRequest req;
      req.decode(r, f.api_version());
      REQUIRE(r.ok());
      for (const auto& t : req.topic_data) {
        for (const auto& p : t.partition_data) {
          const auto in = p.records.bytes;
          if (in.size() < 17 || in[16] != 2) continue;  // magic 0/1 message sets: not stored as-is
          // What Kafka stores: the same bytes with baseOffset and
          // partitionLeaderEpoch set (both outside the CRC).
          std::vector<uint8_t> want(in.begin(), in.end());
          for (size_t pos = 0; pos < want.size();) {
            const auto size = static_cast<size_t>(12 + be(&want[pos + 8], 4));
            const int64_t delta = be(&want[pos + 23], 4);
            put_be(&want[pos], static_cast<uint64_t>(next), 8);
            put_be(&want[pos + 12], 9, 4);
            next += delta + 1;
            pos += size;
          }
          std::vector<uint8_t> mine(in.begin(), in.end());
          auto a = (*log)->append(mine, 9, 0);
          INFO(f.path());
          REQUIRE(a.is_ok());
          expected.insert(expected.end(), want.begin(), want.end());
          ++frames;
          clients.insert(sc.client);
        }
      }
    }
  }
  REQUIRE((*log)->flush().is_ok());
  CHECK(frames >= 10);
  CHECK(clients.size() >= 4);  // kcat, confluent, kafka-python, sarama, kafkajs
  const auto file = slurp(dir + "/00000000000000000000.log");
  CHECK(file == expected);
  // The independent reader agrees: CRCs intact, offsets contiguous from 0.
  const auto batches = parse_log(file);
  int64_t o = 0;
  for (const Batch& b : batches) {
    CHECK(b.base == o);
    CHECK(b.epoch == 9);
    o = b.last + 1;
  }
  CHECK(o == (*log)->log_end_offset());
}

}  // namespace ciuickafka::storage::test
