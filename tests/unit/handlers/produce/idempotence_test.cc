// tests/unit/handlers/produce/idempotence_test.cc: InitProducerId, sequence
// checks, deduplication (also across a restart), DescribeProducers, and the
// producer state table and its snapshot codec on their own.
#include <catch2/catch.hpp>

#include <filesystem>
#include <algorithm>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>
#include <set>

#include "broker/produce/produce_service.h"
#include "broker/produce/producer_state.h"
#include "protocol/error_code.h"
#include "protocol/generated/describe_producers.h"
#include "protocol/generated/incremental_alter_configs.h"
#include "protocol/generated/init_producer_id.h"
#include "tests/unit/handlers/produce/produce_helpers.h"

using namespace ciuickafka;
using namespace ciuickafka::broker::test;
using ciuickafka::broker::Broker;
using ciuickafka::broker::Response;
using ciuickafka::broker::produce::IncomingBatch;
using ciuickafka::broker::produce::ProducerStateTable;
using ciuickafka::broker::produce::SeqVerdict;
using protocol::ErrorCode;
using protocol::to_wire;

namespace {

int64_t init_producer_id(BrokerFixture& f, int16_t version = 4) {
  protocol::InitProducerIdRequest req;
  req.transactional_id = std::nullopt;
  req.transaction_timeout_ms = 60000;
  auto resp = f.call<protocol::InitProducerIdResponse>(req, version);
  REQUIRE(resp.error_code == 0);
  CHECK(resp.producer_epoch == 0);
  return resp.producer_id;
}

// The partition directory's producer snapshots (`<offset>.snapshot`).
std::vector<std::string> snapshot_files(const std::string& dir) {
  std::vector<std::string> out;
  for (auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".snapshot") out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<uint8_t> idem_batch(int64_t pid, int16_t epoch, int32_t seq, int records = 2) {
  return make_batch({.records = records, .producer_id = pid, .epoch = epoch, .base_sequence = seq});
}

}  // namespace

TEST_CASE("InitProducerId hands out new ids, never reused across restarts") {
  BrokerFixture f;
  std::set<int64_t> seen;
  for (int16_t v = 0; v <= 5; ++v) seen.insert(init_producer_id(f, v));
  CHECK(seen.size() == 6);
  f.restart();
  for (int i = 0; i < 3; ++i) {
    const int64_t id = init_producer_id(f);
    CHECK(seen.count(id) == 0);
    CHECK(id > *seen.rbegin());
    seen.insert(id);
  }
  // An empty transactional id is invalid (transactional ids: transactions_test.cc).
  protocol::InitProducerIdRequest txn;
  txn.transactional_id = "";
  CHECK(f.call<protocol::InitProducerIdResponse>(txn, 4).error_code == to_wire(ErrorCode::INVALID_REQUEST));
}

TEST_CASE("a retried batch is answered with its original offset and not written twice") {
  BrokerFixture f;
  create_topic(f, "t");
  const int64_t pid = init_producer_id(f);
  auto b0 = idem_batch(pid, 0, 0);
  auto b1 = idem_batch(pid, 0, 2);
  CHECK(produce_one(f, "t", b0).base_offset == 0);
  CHECK(produce_one(f, "t", b1).base_offset == 2);
  auto retry = produce_one(f, "t", b0);
  CHECK(retry.error_code == 0);
  CHECK(retry.base_offset == 0);
  CHECK(produce_one(f, "t", b1).base_offset == 2);
  CHECK(f.broker().topics().partition("t", 0)->log_end_offset() == 4);
  // Next in sequence continues.
  CHECK(produce_one(f, "t", idem_batch(pid, 0, 4)).base_offset == 4);
  // Acks=all on a duplicate still answers (already durable or synced now).
  CHECK(produce_one(f, "t", b1, 9, -1).base_offset == 2);
}

TEST_CASE("gaps are OUT_OF_ORDER_SEQUENCE_NUMBER, stale epochs INVALID_PRODUCER_EPOCH") {
  BrokerFixture f;
  create_topic(f, "t");
  const int64_t pid = init_producer_id(f);
  CHECK(produce_one(f, "t", idem_batch(pid, 3, 0)).error_code == 0);
  auto gap = produce_one(f, "t", idem_batch(pid, 3, 5));
  CHECK(gap.error_code == to_wire(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER));
  CHECK(gap.error_message.has_value());
  CHECK(produce_one(f, "t", idem_batch(pid, 2, 2)).error_code == to_wire(ErrorCode::INVALID_PRODUCER_EPOCH));
  // A bumped epoch must start at 0 (KIP-360 client-side bump).
  CHECK(produce_one(f, "t", idem_batch(pid, 4, 2)).error_code == to_wire(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER));
  CHECK(produce_one(f, "t", idem_batch(pid, 4, 0)).error_code == 0);
  // An unknown producer is accepted at any sequence (Kafka 3.x).
  CHECK(produce_one(f, "t", idem_batch(pid + 100, 0, 17)).error_code == 0);
  // A sequence-less idempotent batch is invalid.
  CHECK(produce_one(f, "t", idem_batch(pid, 4, -1)).error_code == to_wire(ErrorCode::INVALID_RECORD));
  CHECK(f.broker().topics().partition("t", 0)->log_end_offset() == 6);
}

TEST_CASE("deduplication survives a clean restart (snapshot) and a lost snapshot (log scan)") {
  BrokerFixture f;
  create_topic(f, "t");
  const int64_t pid = init_producer_id(f);
  std::vector<std::vector<uint8_t>> batches;
  for (int i = 0; i < 6; ++i) {
    batches.push_back(idem_batch(pid, 0, 2 * i));
    CHECK(produce_one(f, "t", batches.back()).base_offset == 2 * i);
  }
  f.restart();
  const std::string dir = f.broker().topics().partition("t", 0)->log().dir();
  // Kafka's name: the offset the snapshot covers up to (the log end).
  CHECK(snapshot_files(dir) == std::vector<std::string>{"00000000000000000012.snapshot"});
  // The last 5 are remembered; the oldest fell out of the window.
  for (int i = 1; i < 6; ++i) CHECK(produce_one(f, "t", batches[i]).base_offset == 2 * i);
  CHECK(produce_one(f, "t", batches[0]).error_code == to_wire(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER));
  CHECK(produce_one(f, "t", idem_batch(pid, 0, 12)).base_offset == 12);
  CHECK(f.broker().topics().partition("t", 0)->log_end_offset() == 14);

  // Without the snapshot the state comes back from the log headers.
  f.close();
  // The restart above wrote a newer snapshot and kept the older one (the
  // newest below it) for a crash that cuts the log below the newer one.
  CHECK(snapshot_files(dir) ==
        std::vector<std::string>{"00000000000000000012.snapshot", "00000000000000000014.snapshot"});
  for (const auto& n : snapshot_files(dir)) std::filesystem::remove(dir + "/" + n);
  f.restart();
  CHECK(produce_one(f, "t", idem_batch(pid, 0, 12)).base_offset == 12);
  CHECK(produce_one(f, "t", idem_batch(pid, 0, 16)).error_code == to_wire(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER));
  CHECK(produce_one(f, "t", idem_batch(pid, 0, 14)).base_offset == 14);
}

TEST_CASE("a snapshot beyond the log end is discarded") {
  BrokerFixture f;
  create_topic(f, "t");
  const int64_t pid = init_producer_id(f);
  CHECK(produce_one(f, "t", idem_batch(pid, 0, 0)).error_code == 0);
  f.close();
  auto dir = f.dir();
  // Forge a snapshot claiming offset 1000 that remembers a different batch.
  ProducerStateTable table;
  table.record(IncomingBatch{pid, 0, 0, 1, -1}, 500, 501, 1);
  std::string path;
  for (auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.path().filename() == "00000000000000000000.log") path = e.path().parent_path().string();
  REQUIRE(!path.empty());
  for (const auto& n : snapshot_files(path)) std::filesystem::remove(path + "/" + n);
  write_bytes(path + "/00000000000000001000.snapshot", table.serialize());
  f.restart();
  // Rebuilt from the log: the retry gets offset 0, not the forged 500.
  CHECK(produce_one(f, "t", idem_batch(pid, 0, 0)).base_offset == 0);
  CHECK(snapshot_files(path).empty());  // removed when the producer state started: the log ends at 2
}

TEST_CASE("a corrupt snapshot is removed and the state rebuilt from the log") {
  BrokerFixture f;
  create_topic(f, "t");
  const int64_t pid = init_producer_id(f);
  auto first = idem_batch(pid, 0, 0);
  CHECK(produce_one(f, "t", first).error_code == 0);
  const std::string dir = f.broker().topics().partition("t", 0)->log().dir();
  f.close();
  REQUIRE(snapshot_files(dir) == std::vector<std::string>{"00000000000000000002.snapshot"});
  {
    std::fstream io(dir + "/00000000000000000002.snapshot", std::ios::binary | std::ios::in | std::ios::out);
    io.seekp(12);
    io.put('\x7f');  // inside the first entry: the CRC no longer matches
  }
  f.restart();
  CHECK(produce_one(f, "t", first).base_offset == 0);  // still a duplicate: found by the scan
  CHECK(snapshot_files(dir).empty());
}

TEST_CASE("a snapshot that fails to write leaves the table owed one: the clean shutdown writes it") {
  BrokerFixture f;
  create_topic(f, "t");
  const int64_t pid = init_producer_id(f);
  auto first = idem_batch(pid, 0, 0);
  REQUIRE(produce_one(f, "t", first).base_offset == 0);
  auto p = f.broker().topics().partition("t", 0);
  const std::string dir = p->log().dir();
  auto& svc = f.broker().service<ciuickafka::broker::produce::ProduceService>();
  auto st = svc.existing_state(*p);
  REQUIRE(st);
  // A directory where the snapshot's temporary file goes: its open fails.
  const std::string blocker = dir + "/00000000000000000002.snapshot.tmp";
  std::filesystem::create_directories(blocker + "/x");
  CHECK_FALSE(svc.snapshot_now(st).is_ok());
  CHECK(snapshot_files(dir).empty());
  std::filesystem::remove_all(blocker);
  // Nothing appended since: the clean shutdown still writes it (it used to
  // take the table for clean and skip it, leaving the next start a scan).
  f.close();
  CHECK(snapshot_files(dir) == std::vector<std::string>{"00000000000000000002.snapshot"});
  f.restart();
  CHECK(produce_one(f, "t", first).base_offset == 0);  // still a duplicate
  CHECK(f.broker().topics().partition("t", 0)->log_end_offset() == 2);
}

TEST_CASE("DescribeProducers lists the partition's producers") {
  BrokerFixture f;
  create_topic(f, "t");
  const int64_t pid = init_producer_id(f);
  CHECK(produce_one(f, "t", idem_batch(pid, 0, 0, 3)).error_code == 0);
  CHECK(produce_one(f, "t", make_batch({})).error_code == 0);
  protocol::DescribeProducersRequest req;
  protocol::DescribeProducersRequest::TopicRequest tr;
  tr.name = "t";
  tr.partition_indexes = {0, 5};
  req.topics.push_back(tr);
  tr.name = "nope";
  tr.partition_indexes = {0};
  req.topics.push_back(tr);
  auto resp = f.call<protocol::DescribeProducersResponse>(req, 0);
  REQUIRE(resp.topics.size() == 2);
  REQUIRE(resp.topics[0].partitions.size() == 2);
  const auto& p0 = resp.topics[0].partitions[0];
  CHECK(p0.error_code == 0);
  REQUIRE(p0.active_producers.size() == 1);
  CHECK(p0.active_producers[0].producer_id == pid);
  CHECK(p0.active_producers[0].producer_epoch == 0);
  CHECK(p0.active_producers[0].last_sequence == 2);
  CHECK(p0.active_producers[0].coordinator_epoch == -1);
  CHECK(resp.topics[0].partitions[1].error_code == to_wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  CHECK(resp.topics[1].partitions[0].error_code == to_wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
}

TEST_CASE("producer state table: rules and snapshot round trip") {
  ProducerStateTable t;
  IncomingBatch b{7, 1, 0, 4, 100};
  CHECK(t.check(b).verdict == SeqVerdict::kAppend);
  t.record(b, 10, 14, 1);
  CHECK(t.check(b).verdict == SeqVerdict::kDuplicate);
  CHECK(t.check(b).duplicate.first_offset == 10);
  IncomingBatch next{7, 1, 5, 0, 101};
  CHECK(t.check(next).verdict == SeqVerdict::kAppend);
  IncomingBatch gap{7, 1, 6, 0, 101};
  CHECK(t.check(gap).verdict == SeqVerdict::kOutOfOrder);
  IncomingBatch old{7, 0, 5, 0, 101};
  CHECK(t.check(old).verdict == SeqVerdict::kInvalidEpoch);
  // Sequence wrap: INT32_MAX is followed by 0.
  IncomingBatch wrap{8, 0, INT32_MAX - 1, 2, 1};
  CHECK(wrap.last_seq() == 0);
  t.record(IncomingBatch{9, 0, INT32_MAX, 0, 1}, 20, 20, 1);
  CHECK(t.check(IncomingBatch{9, 0, 0, 0, 1}).verdict == SeqVerdict::kAppend);
  // Only 5 batches are remembered.
  for (int i = 1; i <= 6; ++i) t.record(IncomingBatch{7, 1, 5 * i, 4, 1}, 100 + 5 * i, 104 + 5 * i, 2);
  CHECK(t.find(7)->batches.size() == 5);
  CHECK(t.check(IncomingBatch{7, 1, 5, 4, 1}).verdict == SeqVerdict::kOutOfOrder);
  CHECK(t.check(IncomingBatch{7, 1, 10, 4, 1}).verdict == SeqVerdict::kDuplicate);

  auto bytes = t.serialize();
  auto parsed = ProducerStateTable::parse(bytes, 5);
  REQUIRE(parsed.has_value());
  REQUIRE(parsed->find(7) != nullptr);
  CHECK(parsed->find(7)->batches == t.find(7)->batches);  // all five, oldest first
  CHECK(parsed->find(9)->epoch == 0);
  CHECK(parsed->find(9)->batches == t.find(9)->batches);  // INT32_MAX..INT32_MAX
  CHECK(parsed->find(7)->last_update_ms == 5);             // the load time
  for (size_t i = 0; i < bytes.size(); i += 7) {
    auto bad = bytes;
    bad[i] ^= 0x10;
    CHECK_FALSE(ProducerStateTable::parse(bad, 5).has_value());
  }
  auto cut = bytes;
  cut.pop_back();
  CHECK_FALSE(ProducerStateTable::parse(cut, 5).has_value());
  CHECK(t.expire(2 + 86'400'001, 86'400'000) == 2);  // both idle longer than a day
}

namespace {

size_t described_producers(BrokerFixture& f, const std::string& topic) {
  protocol::DescribeProducersRequest req;
  auto& tr = req.topics.emplace_back();
  tr.name = topic;
  tr.partition_indexes = {0};
  auto resp = f.call<protocol::DescribeProducersResponse>(req, 0);
  REQUIRE(resp.topics.size() == 1);
  REQUIRE(resp.topics[0].partitions.size() == 1);
  return resp.topics[0].partitions[0].active_producers.size();
}

}  // namespace

TEST_CASE("producers idle for producer.id.expiration.ms (dynamic) are forgotten, as by Kafka's periodic check") {
  BrokerFixture f;
  create_topic(f, "t");
  auto& svc = f.broker().service<broker::produce::ProduceService>();
  const int64_t pid = init_producer_id(f);
  auto first = idem_batch(pid, 0, 0);
  REQUIRE(produce_one(f, "t", first).base_offset == 0);
  REQUIRE(produce_one(f, "t", idem_batch(pid, 0, 2)).base_offset == 2);
  const int64_t written = Broker::now_ms();

  // Kafka's key, changed live (IncrementalAlterConfigs on every broker).
  protocol::IncrementalAlterConfigsRequest req;
  auto& r = req.resources.emplace_back();
  r.resource_type = 4;  // BROKER
  r.resource_name = "";
  auto& c = r.configs.emplace_back();
  c.name = "producer.id.expiration.ms";
  c.config_operation = 0;  // SET
  c.value = "60000";
  auto alter = f.call<protocol::IncrementalAlterConfigsResponse>(req, 1);
  REQUIRE(alter.responses.size() == 1);
  REQUIRE(alter.responses[0].error_code == 0);
  CHECK(f.broker().config().get_int("producer.id.expiration.ms") == 60000);

  // Idle for less than that: kept, and a retry of its first batch is still
  // a duplicate (answered with the original offset, not written).
  CHECK(svc.expire_producers(written + 59'000) == 0);
  CHECK(described_producers(f, "t") == 1);
  CHECK(produce_one(f, "t", first).base_offset == 0);
  CHECK(f.broker().topics().partition("t", 0)->log_end_offset() == 4);

  // Idle for longer: forgotten, so the same batch is now a new producer's
  // first and is written.
  CHECK(svc.expire_producers(Broker::now_ms() + 61'000) == 1);
  CHECK(described_producers(f, "t") == 0);
  CHECK(produce_one(f, "t", first).base_offset == 4);
  CHECK(described_producers(f, "t") == 1);

  // A bad value names the key and changes nothing.
  c.value = "0";
  alter = f.call<protocol::IncrementalAlterConfigsResponse>(req, 1);
  REQUIRE(alter.responses.size() == 1);
  CHECK(alter.responses[0].error_code == to_wire(ErrorCode::INVALID_REQUEST));  // as Kafka answers for a broker
  CHECK_THAT(alter.responses[0].error_message.value_or(""), Catch::Contains("producer.id.expiration.ms"));
  CHECK(f.broker().config().get_int("producer.id.expiration.ms") == 60000);
}

TEST_CASE("producers rebuilt from the log expire producer.id.expiration.ms after the load") {
  ProducerStateTable t;
  t.replay(IncomingBatch{7, 0, 0, 1, 1}, 0, 1);
  CHECK(t.find(7)->last_update_ms == -1);
  CHECK(t.expire(1'000'000'000, 10) == 0);  // no update time: kept
  t.stamp_unknown_update_times(500);
  CHECK(t.find(7)->last_update_ms == 500);
  CHECK(t.expire(510, 10) == 0);
  CHECK(t.expire(511, 10) == 1);
}

namespace {

// The partition's newest producer snapshot offset (-1: none).
int64_t newest_snapshot(const std::string& dir) {
  auto files = snapshot_files(dir);
  return files.empty() ? -1 : std::stoll(files.back().substr(0, 20));
}

// Waits (up to 20 s) until pred() holds; whether it did.
template <class Pred>
bool wait_for(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// A kill -9: the data dir as the running broker left it (page cache
// included, no clean-shutdown marker, no stop() snapshot), copied aside,
// then put back after the broker is gone; the fixture reopens it.
void crash_and_reopen(BrokerFixture& f, const std::function<void(const std::string& copy)>& mangle = {}) {
  const std::string copy = f.dir() + ".crash";
  std::filesystem::remove_all(copy);
  // File by file: the broker's background work may remove a file meanwhile
  // (a replaced snapshot or checkpoint), as it may just before a crash.
  std::filesystem::create_directory(copy);
  for (auto it = std::filesystem::recursive_directory_iterator(f.dir()); it != std::filesystem::recursive_directory_iterator();
       ++it) {
    const std::string to = copy + it->path().string().substr(f.dir().size());
    std::error_code ec;
    if (it->is_directory(ec)) {
      std::filesystem::create_directories(to);
    } else {
      std::filesystem::copy_file(it->path(), to, ec);
      if (ec && ec != std::errc::no_such_file_or_directory) FAIL("copy " << it->path() << ": " << ec.message());
    }
  }
  f.close();
  std::filesystem::remove_all(f.dir());
  if (mangle) mangle(copy);
  std::filesystem::rename(copy, f.dir());
  f.restart();
}

int64_t loaded_from(BrokerFixture& f, const std::string& topic) {
  auto p = f.broker().topics().partition(topic, 0);
  auto st = f.broker().service<ciuickafka::broker::produce::ProduceService>().existing_state(*p);
  REQUIRE(st);
  std::lock_guard<std::mutex> lock(st->mu);
  REQUIRE(st->loaded);
  return st->loaded_from;
}

}  // namespace

TEST_CASE("producer snapshots of different partitions are written at once: one held does not hold the others") {
  BrokerFixture f;
  create_topic(f, "a", 1, {{"segment.bytes", "1024"}});
  create_topic(f, "b", 1, {{"segment.bytes", "1024"}});
  auto pa = f.broker().topics().partition("a", 0);
  auto pb = f.broker().topics().partition("b", 0);
  const std::string b_dir = pb->log().dir();
  const int64_t pid = init_producer_id(f);
  // An idempotent write loads each partition's table.
  REQUIRE(produce_one(f, "a", idem_batch(pid, 0, 0)).error_code == 0);
  REQUIRE(produce_one(f, "b", idem_batch(pid, 0, 0)).error_code == 0);
  auto sa = f.broker().service<ciuickafka::broker::produce::ProduceService>().existing_state(*pa);
  REQUIRE(sa);
  auto roll = [&](const std::string& topic, ciuickafka::broker::Partition& p) {
    const size_t segments = p.log().segment_count();
    while (p.log().segment_count() == segments) REQUIRE(produce_one(f, topic, make_batch({.records = 2})).error_code == 0);
    return p.log().segments()->back()->base_offset();
  };
  {
    // a's snapshot file is held, as by a write that takes long (a slow
    // fsync): its roll's snapshot task waits for it on a pool thread, once
    // it has taken its offset.
    std::unique_lock<std::mutex> hold(sa->file_mu);
    const int64_t a_active = roll("a", *pa);
    REQUIRE(wait_for([&] {
      std::lock_guard<std::mutex> lock(sa->mu);
      return sa->snapshot_offset >= a_active;
    }));
    // b's roll is snapshotted meanwhile.
    const int64_t b_active = roll("b", *pb);
    CHECK(wait_for([&] { return newest_snapshot(b_dir) >= b_active; }));
  }
  // Released: a's snapshot is written too.
  const std::string a_dir = pa->log().dir();
  CHECK(wait_for([&] { return newest_snapshot(a_dir) >= pa->log().segments()->back()->base_offset(); }));
}

TEST_CASE("a leader snapshots the producer state at every roll: a load after a crash scans the active segment only") {
  BrokerFixture f;
  create_topic(f, "plain", 1, {{"segment.bytes", "1024"}});
  create_topic(f, "idem", 1, {{"segment.bytes", "1024"}});
  auto plain = f.broker().topics().partition("plain", 0);
  auto idem = f.broker().topics().partition("idem", 0);
  const std::string plain_dir = plain->log().dir();
  const std::string idem_dir = idem->log().dir();
  const int64_t pid = init_producer_id(f);
  std::vector<std::vector<uint8_t>> sent;
  // Two rounds of writes, each over several rolls; after each, the
  // snapshot the last roll asked for (written in the background). The
  // plain partition's table was never loaded (no idempotent write): the
  // roll loads it.
  int64_t plain_active = 0;
  int64_t idem_active = 0;
  int64_t first_round_snapshot = 0;
  for (int round = 0; round < 2; ++round) {
    const size_t plain_segments = plain->log().segment_count();
    const size_t idem_segments = idem->log().segment_count();
    for (int i = 0; i < 40; ++i) {
      REQUIRE(produce_one(f, "plain", make_batch({.records = 2})).error_code == 0);
      sent.push_back(idem_batch(pid, 0, 2 * static_cast<int32_t>(sent.size())));
      REQUIRE(produce_one(f, "idem", sent.back()).error_code == 0);
    }
    REQUIRE(plain->log().segment_count() >= plain_segments + 2);
    REQUIRE(idem->log().segment_count() >= idem_segments + 2);
    plain_active = plain->log().segments()->back()->base_offset();
    idem_active = idem->log().segments()->back()->base_offset();
    // (Each write removes the older ones after it: wait for that too.) An
    // idempotent batch and its offsets are recorded in one step, so the
    // idempotent partition's snapshot after its last roll holds the batch
    // that rolled it: it is past the active segment's base. (One written
    // just before that roll may be at the base.)
    REQUIRE(wait_for([&] { return newest_snapshot(plain_dir) >= plain_active && snapshot_files(plain_dir).size() <= 2; }));
    REQUIRE(wait_for([&] { return newest_snapshot(idem_dir) > idem_active && snapshot_files(idem_dir).size() <= 2; }));
    if (round == 0) first_round_snapshot = newest_snapshot(idem_dir);
  }
  // The newest snapshot and the newest older one are kept.
  CHECK(snapshot_files(plain_dir).size() == 2);
  REQUIRE(snapshot_files(idem_dir).size() == 2);
  CHECK(std::stoll(snapshot_files(idem_dir).front().substr(0, 20)) >= first_round_snapshot);
  const int64_t plain_end = plain->log_end_offset();
  const int64_t idem_end = idem->log_end_offset();
  plain.reset();
  idem.reset();

  SECTION("kill -9: each load starts at a snapshot in the active segment") {
    crash_and_reopen(f);
    // An idempotent write loads each table. Without the roll snapshots the
    // plain partition had none and its load scanned from offset 0.
    const int64_t pid2 = init_producer_id(f);
    CHECK(produce_one(f, "plain", idem_batch(pid2, 0, 0)).base_offset == plain_end);
    CHECK(loaded_from(f, "plain") >= plain_active);
    // The retry of the last batch before the crash is still a duplicate.
    CHECK(produce_one(f, "idem", sent.back()).base_offset == idem_end - 2);
    CHECK(loaded_from(f, "idem") >= idem_active);
    CHECK(f.broker().topics().partition("idem", 0)->log_end_offset() == idem_end);
  }
  SECTION("a power cut that loses the active segment: a snapshot below the cut is used") {
    crash_and_reopen(f, [&](const std::string& copy) {
      const std::string d = copy + idem_dir.substr(f.dir().size());
      char name[32];
      std::snprintf(name, sizeof(name), "%020lld.log", static_cast<long long>(idem_active));
      std::filesystem::resize_file(d + "/" + name, 0);
    });
    REQUIRE(f.broker().topics().partition("idem", 0)->log_end_offset() == idem_active);
    // Snapshots past the log's end are gone; the newest one left (usually
    // the older of the two, unless the background thread was slow enough
    // that both were past the cut) is where the load starts. The batch just
    // below the cut is still a duplicate; the first one lost is written
    // anew at the cut.
    const int64_t left = newest_snapshot(idem_dir);
    CHECK(left <= idem_active);
    const size_t lost = static_cast<size_t>(idem_active / 2);  // 2 records per batch, in order
    CHECK(produce_one(f, "idem", sent[lost - 1]).base_offset == idem_active - 2);
    CHECK(loaded_from(f, "idem") == std::max<int64_t>(left, 0));
    CHECK(produce_one(f, "idem", sent[lost]).base_offset == idem_active);
  }
}

TEST_CASE("the older snapshot kept beside the newest is used when the newest is past the log end") {
  BrokerFixture f;
  create_topic(f, "t");
  const int64_t pid = init_producer_id(f);
  const auto first = idem_batch(pid, 0, 0);
  REQUIRE(produce_one(f, "t", first).base_offset == 0);
  REQUIRE(produce_one(f, "t", idem_batch(pid, 0, 2)).base_offset == 2);
  const std::string dir = f.broker().topics().partition("t", 0)->log().dir();
  f.close();
  REQUIRE(snapshot_files(dir) == std::vector<std::string>{"00000000000000000004.snapshot"});
  // As a crash would leave it: a newer snapshot the log does not reach.
  ProducerStateTable forged;
  forged.record(IncomingBatch{pid, 0, 0, 1, -1}, 500, 501, 1);
  write_bytes(dir + "/00000000000000001000.snapshot", forged.serialize());
  f.restart();
  CHECK(snapshot_files(dir) == std::vector<std::string>{"00000000000000000004.snapshot"});
  CHECK(produce_one(f, "t", first).base_offset == 0);  // a duplicate, as the older snapshot says
  CHECK(loaded_from(f, "t") == 4);
  CHECK(produce_one(f, "t", idem_batch(pid, 0, 4)).base_offset == 4);
}

namespace {

// Bytes this process has read through read(2)/pread(2) so far (/proc/self/io
// rchar), page cache hits included.
uint64_t process_read_bytes() {
  std::ifstream in("/proc/self/io");
  std::string key;
  uint64_t value = 0;
  while (in >> key >> value)
    if (key == "rchar:") return value;
  return 0;
}

}  // namespace

TEST_CASE("a producer state load reads each batch's header and not its records") {
  BrokerFixture f;
  create_topic(f, "t");
  const int64_t pid = init_producer_id(f);
  // 12 batches of 100 records of 10 KB: 12 MB of records.
  std::vector<std::vector<uint8_t>> sent;
  for (int i = 0; i < 12; ++i) {
    sent.push_back(make_batch({.records = 100, .producer_id = pid, .epoch = 0, .base_sequence = 100 * i,
                               .value_prefix = std::string(10000, 'v')}));
    REQUIRE(produce_one(f, "t", sent.back()).base_offset == 100 * i);
  }
  const std::string dir = f.broker().topics().partition("t", 0)->log().dir();
  f.close();
  for (const auto& n : snapshot_files(dir)) std::filesystem::remove(dir + "/" + n);
  f.restart();
  // The retried last batch loads the table from the whole log (no snapshot)
  // and is found a duplicate: the scan saw every batch's producer state.
  const uint64_t before = process_read_bytes();
  CHECK(produce_one(f, "t", sent.back()).base_offset == 1100);
  const uint64_t read = process_read_bytes() - before;
  CHECK(loaded_from(f, "t") == 0);
  CHECK(produce_one(f, "t", make_batch({.records = 1, .producer_id = pid, .epoch = 0, .base_sequence = 1300}))
            .error_code == to_wire(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER));
  // A header window (16 KiB) per batch and the indexes, not 12 MB.
  INFO("bytes read during the load: " << read);
  CHECK(read < 1000000);
}
