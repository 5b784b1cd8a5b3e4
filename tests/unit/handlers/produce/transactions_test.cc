// tests/unit/handlers/produce/transactions_test.cc: transactions on one
// node through the handlers: the producer state's transaction rules (open,
// markers, LSO, aborted list, snapshot), the aborted transactions' .txnindex
// and the producer .snapshot on disk across restarts (read here by a decoder
// written from Kafka's format, not ours), the __transaction_state records,
// and the coordinator's InitProducerId / AddPartitionsToTxn / EndTxn with a
// transactional produce, read_committed fetch and ListOffsets between.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "broker/produce/producer_state.h"
#include "broker/txn/coordinator.h"
#include "broker/txn/txn_records.h"
#include "protocol/generated/add_partitions_to_txn.h"
#include "protocol/generated/describe_transactions.h"
#include "protocol/generated/end_txn.h"
#include "protocol/generated/fetch.h"
#include "protocol/generated/init_producer_id.h"
#include "protocol/generated/list_offsets.h"
#include "protocol/records/crc32c.h"
#include "protocol/wire/writer.h"
#include "tests/unit/handlers/produce/produce_helpers.h"

using namespace ciuickafka;
using namespace ciuickafka::broker;
using namespace ciuickafka::broker::test;
using produce::IncomingBatch;
using produce::ProducerStateTable;
using protocol::ErrorCode;
using protocol::to_wire;

namespace {

IncomingBatch txn_batch(int64_t pid, int16_t epoch, int32_t seq, int32_t delta, bool transactional = true) {
  IncomingBatch b;
  b.producer_id = pid;
  b.epoch = epoch;
  b.base_seq = seq;
  b.last_offset_delta = delta;
  b.transactional = transactional;
  return b;
}

uint64_t be(const std::vector<uint8_t>& b, size_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | b.at(at + static_cast<size_t>(i));
  return v;
}

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Kafka's AbortedTxn: 34 bytes, version int16 0, producerId, firstOffset,
// lastOffset, lastStableOffset (int64 each), big-endian.
std::vector<std::array<int64_t, 4>> read_kafka_txn_index(const std::string& path) {
  auto b = file_bytes(path);
  REQUIRE(b.size() % 34 == 0);
  std::vector<std::array<int64_t, 4>> out;
  for (size_t at = 0; at < b.size(); at += 34) {
    CHECK(be(b, at, 2) == 0);
    out.push_back({static_cast<int64_t>(be(b, at + 2, 8)), static_cast<int64_t>(be(b, at + 10, 8)),
                   static_cast<int64_t>(be(b, at + 18, 8)), static_cast<int64_t>(be(b, at + 26, 8))});
  }
  return out;
}

// Kafka's producer snapshot: version int16 1, CRC32C (uint32) of the bytes
// after it, int32 count, 46-byte entries; returns (producerId, epoch,
// currentTxnFirstOffset) per entry.
std::vector<std::array<int64_t, 3>> read_kafka_snapshot(const std::string& path) {
  auto b = file_bytes(path);
  REQUIRE(b.size() >= 10);
  CHECK(be(b, 0, 2) == 1);
  CHECK(be(b, 2, 4) == protocol::crc32c(std::span<const uint8_t>(b).subspan(6)));
  const auto count = static_cast<size_t>(be(b, 6, 4));
  REQUIRE(b.size() == 10 + 46 * count);
  std::vector<std::array<int64_t, 3>> out;
  for (size_t i = 0, at = 10; i < count; ++i, at += 46)
    out.push_back({static_cast<int64_t>(be(b, at, 8)), static_cast<int16_t>(be(b, at + 8, 2)),
                   static_cast<int64_t>(be(b, at + 38, 8))});
  return out;
}

std::vector<std::string> files_with(const std::string& dir, const std::string& ext) {
  std::vector<std::string> out;
  for (auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ext) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// The pre-Kafka snapshot `ciuic-producer-state` (version 2), written from
// its format description (broker/produce/producer_state.h): one producer
// with no remembered batch and the given aborted transactions.
std::vector<uint8_t> legacy_snapshot(int64_t offset, int64_t pid, int16_t epoch,
                                     const std::vector<std::array<int64_t, 4>>& aborted) {
  protocol::Writer w;
  w.write_raw(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>("CKPS"), 4));
  w.write_int16(2);
  w.write_int64(offset);
  w.write_int32(1);
  w.write_int64(pid);
  w.write_int16(epoch);
  w.write_int64(1);   // last_update_ms
  w.write_int64(-1);  // no open transaction
  w.write_int32(0);   // coordinator epoch
  w.write_int8(0);    // no batches
  w.write_int32(static_cast<int32_t>(aborted.size()));
  for (const auto& a : aborted)
    for (int64_t v : a) w.write_int64(v);
  const uint32_t crc = protocol::crc32c(w.buffer());
  w.write_int32(static_cast<int32_t>(crc));
  return w.release();
}

}  // namespace

TEST_CASE("producer state: transactions open, end by markers and hold the LSO", "[txn]") {
  ProducerStateTable t;
  t.record(txn_batch(7, 0, 0, 1), 10, 11, 1);
  CHECK(t.has_open_txn(7));
  CHECK(t.first_unstable_offset(100) == 10);
  // A non-transactional batch of a producer with an open transaction is refused.
  std::string msg;
  CHECK_FALSE(t.check_txn(txn_batch(7, 0, 2, 0, false), &msg));
  CHECK(!msg.empty());
  t.record(txn_batch(8, 0, 0, 0), 12, 12, 1);
  CHECK(t.first_unstable_offset(100) == 10);
  // Markers: an older epoch or coordinator epoch is fenced.
  CHECK(t.check_marker(7, 0, 0, nullptr) == produce::MarkerVerdict::kAppend);
  t.complete_txn(7, 0, 3, /*commit=*/false, 13);
  CHECK(t.check_marker(7, 0, 2, nullptr) == produce::MarkerVerdict::kCoordinatorFenced);
  CHECK_FALSE(t.has_open_txn(7));
  // The abort stays unstable until the HW passes its marker; pid 8 still open.
  CHECK(t.first_unstable_offset(13) == 10);
  CHECK(t.first_unstable_offset(14) == 12);
  REQUIRE(t.aborted().size() == 1);
  CHECK(t.aborted()[0] == produce::AbortedTxn{7, 10, 13, 12});
  CHECK(t.aborted_between(0, 100).size() == 1);
  CHECK(t.aborted_between(14, 100).empty());   // ended before the fetch offset
  CHECK(t.aborted_between(0, 10).empty());     // starts at the upper bound
  // A marker with a higher epoch bumps the producer (its old batches forgotten).
  t.complete_txn(8, 2, 3, /*commit=*/true, 14);
  CHECK(t.find(8)->epoch == 2);
  CHECK(t.find(8)->batches.empty());
  CHECK(t.check_marker(8, 1, 3, nullptr) == produce::MarkerVerdict::kInvalidEpoch);
  CHECK(t.first_unstable_offset(15) == INT64_MAX);
  // The snapshot keeps open transactions and the aborted list.
  t.record(txn_batch(9, 0, 0, 0), 15, 15, 1);
  auto parsed = ProducerStateTable::parse(t.serialize(), 1);
  REQUIRE(parsed);
  CHECK(parsed->has_open_txn(9));
  CHECK(parsed->first_unstable_offset(100) == 15);
  CHECK(parsed->find(7)->coordinator_epoch == 3);
  // The aborted list is not in the snapshot (Kafka keeps it in .txnindex).
  CHECK(parsed->aborted().empty());
  t.trim_aborted(14);
  CHECK(t.aborted().empty());
  // A producer with an open transaction is never expired.
  CHECK(t.expire(1'000'000, 10) == 2);
  CHECK(t.find(9) != nullptr);
}

TEST_CASE("producer state: the last timestamp is the last batch's or marker's, and survives the snapshot", "[txn]") {
  ProducerStateTable t;
  auto b = txn_batch(7, 0, 0, 1);
  b.max_timestamp = 1000;
  t.record(b, 10, 11, 1);
  CHECK(t.find(7)->last_timestamp == 1000);
  auto b2 = txn_batch(7, 0, 2, 0);
  b2.max_timestamp = 1500;
  t.record(b2, 12, 12, 1);
  CHECK(t.find(7)->last_timestamp == 1500);
  // The COMMIT marker's time, as Kafka's lastTimestamp (DescribeProducers).
  t.complete_txn(7, 0, 3, /*commit=*/true, 13, 2000);
  CHECK(t.find(7)->last_timestamp == 2000);
  // A producer that only wrote a marker here has its time too.
  t.complete_txn(8, 1, 3, /*commit=*/false, 14, 2500);
  CHECK(t.find(8)->last_timestamp == 2500);
  auto parsed = ProducerStateTable::parse(t.serialize(), 1);
  REQUIRE(parsed);
  CHECK(parsed->find(7)->last_timestamp == 2000);
  CHECK(parsed->find(8)->last_timestamp == 2500);
  REQUIRE(parsed->find(7)->batches.size() == 2);
  CHECK(parsed->find(7)->batches.front().timestamp == 1000);  // earlier entries keep their batch's
}

TEST_CASE("__transaction_state records round-trip - ids map as Kafka's partitionFor", "[txn]") {
  txn::TxnRecord r;
  r.producer_id = 42;
  r.producer_epoch = 3;
  r.timeout_ms = 60000;
  r.state = txn::TxnState::kOngoing;
  r.partitions = {{"a", 0}, {"a", 2}, {"b", 1}};
  r.last_update_ms = 5;
  r.start_ms = 4;
  auto key = txn::txn_key("tx");
  auto value = txn::txn_value(r);
  REQUIRE(value);
  auto d = txn::decode_txn_record(key, std::span<const uint8_t>(*value));
  REQUIRE(d);
  CHECK(d->transactional_id == "tx");
  REQUIRE(d->record);
  CHECK(d->record->partitions == r.partitions);
  CHECK(d->record->state == txn::TxnState::kOngoing);
  CHECK(d->record->producer_epoch == 3);
  CHECK_FALSE(txn::decode_txn_record(key, std::nullopt)->record);  // tombstone
  CHECK(txn::state_name(txn::TxnState::kPrepareCommit) == "PrepareCommit");
  // Java: Math.abs("my-group".hashCode()) % 50 == 12 ("my-group".hashCode() == -1906497762).
  CHECK(txn::txn_partition_for("my-group", 50) == 12);
  CHECK(txn::txn_partition_for("polygenelubricants", 50) == 0);  // hashCode == Integer.MIN_VALUE
}

namespace {

protocol::InitProducerIdResponse init_txn(BrokerFixture& f, const std::string& id, int32_t timeout = 60000) {
  protocol::InitProducerIdRequest req;
  req.transactional_id = id;
  req.transaction_timeout_ms = timeout;
  req.producer_id = -1;
  req.producer_epoch = -1;
  return f.call<protocol::InitProducerIdResponse>(req, 4);
}

int16_t add_partition(BrokerFixture& f, const std::string& id, int64_t pid, int16_t epoch, const std::string& topic,
                      int32_t partition) {
  protocol::AddPartitionsToTxnRequest req;
  req.v3_and_below_transactional_id = id;
  req.v3_and_below_producer_id = pid;
  req.v3_and_below_producer_epoch = epoch;
  protocol::AddPartitionsToTxnRequest::AddPartitionsToTxnTopic t;
  t.name = topic;
  t.partitions = {partition};
  req.v3_and_below_topics.push_back(t);
  auto resp = f.call<protocol::AddPartitionsToTxnResponse>(req, 3);
  return resp.results_by_topic_v3_and_below.at(0).results_by_partition.at(0).partition_error_code;
}

int16_t end_txn(BrokerFixture& f, const std::string& id, int64_t pid, int16_t epoch, bool commit) {
  protocol::EndTxnRequest req;
  req.transactional_id = id;
  req.producer_id = pid;
  req.producer_epoch = epoch;
  req.committed = commit;
  return f.call<protocol::EndTxnResponse>(req, 3).error_code;
}

int64_t latest(BrokerFixture& f, const std::string& topic, int8_t isolation) {
  protocol::ListOffsetsRequest req;
  req.replica_id = -1;
  req.isolation_level = isolation;
  protocol::ListOffsetsRequest::ListOffsetsTopic t;
  t.name = topic;
  protocol::ListOffsetsRequest::ListOffsetsPartition p;
  p.partition_index = 0;
  p.timestamp = -1;
  t.partitions.push_back(p);
  req.topics.push_back(t);
  auto resp = f.call<protocol::ListOffsetsResponse>(req, 5);
  return resp.topics.at(0).partitions.at(0).offset;
}

protocol::ProduceResponse::PartitionProduceResponse produce_txn(BrokerFixture& f, const std::string& id,
                                                                const std::vector<uint8_t>& batch) {
  auto req = produce_request("t", 0, batch);
  req.transactional_id = id;
  return only_partition(f.call<protocol::ProduceResponse>(req, 9));
}

// DescribeTransactions of one id.
protocol::DescribeTransactionsResponse::TransactionState describe(BrokerFixture& f, const std::string& id) {
  protocol::DescribeTransactionsRequest req;
  req.transactional_ids = {id};
  return f.call<protocol::DescribeTransactionsResponse>(req, 0).transaction_states.at(0);
}

// Waits (bounded) for cond, polling: the markers are written on the
// background thread after EndTxn is answered.
template <class F>
bool eventually(F cond) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return cond();
}

}  // namespace

TEST_CASE("a transaction: init, add, produce, LSO held, commit, markers", "[txn]") {
  BrokerFixture f;
  create_topic(f, "t");
  REQUIRE(txn::coordinator(f.broker()).wait_loaded(10000));
  CHECK(init_txn(f, "tx", 0).error_code == to_wire(ErrorCode::INVALID_TRANSACTION_TIMEOUT));
  CHECK(init_txn(f, "tx", 900001).error_code == to_wire(ErrorCode::INVALID_TRANSACTION_TIMEOUT));
  auto init = init_txn(f, "tx");
  REQUIRE(init.error_code == 0);
  CHECK(init.producer_epoch == 0);
  const int64_t pid = init.producer_id;
  // A plain write first, so the transaction starts at offset 3.
  REQUIRE(produce_one(f, "t", make_batch({})).error_code == 0);
  auto batch = make_batch({.producer_id = pid, .epoch = 0, .base_sequence = 0, .transactional = true});
  // Not added to the transaction yet: refused, nothing written.
  CHECK(produce_txn(f, "tx", batch).error_code == to_wire(ErrorCode::INVALID_TXN_STATE));
  CHECK(f.broker().topics().partition("t", 0)->log_end_offset() == 3);
  CHECK(add_partition(f, "tx", pid + 1, 0, "t", 0) == to_wire(ErrorCode::INVALID_PRODUCER_ID_MAPPING));
  CHECK(add_partition(f, "tx", pid, 0, "nope", 0) == to_wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  REQUIRE(add_partition(f, "tx", pid, 0, "t", 0) == 0);
  REQUIRE(produce_txn(f, "tx", batch).error_code == 0);
  // Open: read_committed ends at the transaction's first offset.
  CHECK(latest(f, "t", 0) == 6);
  CHECK(latest(f, "t", 1) == 3);
  CHECK(end_txn(f, "tx", pid, 1, true) == to_wire(ErrorCode::PRODUCER_FENCED));  // v2+: PRODUCER_FENCED
  REQUIRE(end_txn(f, "tx", pid, 0, true) == 0);
  // The COMMIT marker lands at offset 6, then LSO == HW == 7.
  CHECK(eventually([&] { return latest(f, "t", 1) == 7; }));
  CHECK(latest(f, "t", 0) == 7);
  CHECK(eventually([&] { return describe(f, "tx").transaction_state == "CompleteCommit"; }));
  CHECK(end_txn(f, "tx", pid, 0, true) == 0);  // a retried commit after success
  CHECK(end_txn(f, "tx", pid, 0, false) == to_wire(ErrorCode::INVALID_TXN_STATE));
  // A second InitProducerId bumps the epoch; the old epoch is fenced.
  auto again = init_txn(f, "tx");
  REQUIRE(again.error_code == 0);
  CHECK(again.producer_id == pid);
  CHECK(again.producer_epoch == 1);
  CHECK(add_partition(f, "tx", pid, 0, "t", 0) == to_wire(ErrorCode::PRODUCER_FENCED));
}

namespace {

protocol::FetchResponse::PartitionData fetch_committed(BrokerFixture& f, const std::string& topic) {
  protocol::FetchRequest req;
  req.replica_id = -1;
  req.max_wait_ms = 0;
  req.min_bytes = 1;
  req.max_bytes = 1 << 20;
  req.isolation_level = 1;
  protocol::FetchRequest::FetchTopic t;
  t.topic = topic;
  protocol::FetchRequest::FetchPartition p;
  p.partition = 0;
  p.fetch_offset = 0;
  p.partition_max_bytes = 1 << 20;
  t.partitions.push_back(p);
  req.topics.push_back(t);
  return f.call<protocol::FetchResponse>(req, 11).responses.at(0).partitions.at(0);
}

// The first offsets of the aborted transactions a read_committed fetch lists.
std::vector<int64_t> aborted_firsts(BrokerFixture& f, const std::string& topic) {
  auto d = fetch_committed(f, topic);
  std::vector<int64_t> out;
  if (d.aborted_transactions)
    for (const auto& a : *d.aborted_transactions) out.push_back(a.first_offset);
  return out;
}

}  // namespace

TEST_CASE("an aborted transaction is listed for read_committed fetches and survives a restart", "[txn]") {
  BrokerFixture f;
  create_topic(f, "t");
  REQUIRE(txn::coordinator(f.broker()).wait_loaded(10000));
  auto init = init_txn(f, "tx");
  REQUIRE(init.error_code == 0);
  const int64_t pid = init.producer_id;
  REQUIRE(add_partition(f, "tx", pid, 0, "t", 0) == 0);
  auto batch = make_batch({.producer_id = pid, .epoch = 0, .base_sequence = 0, .transactional = true});
  REQUIRE(produce_txn(f, "tx", batch).error_code == 0);
  REQUIRE(end_txn(f, "tx", pid, 0, false) == 0);
  CHECK(eventually([&] { return latest(f, "t", 1) == 4; }));  // 3 records + the ABORT marker
  auto fetch = [&] { return fetch_committed(f, "t"); };
  auto d = fetch();
  CHECK(d.last_stable_offset == 4);
  REQUIRE(d.aborted_transactions);
  REQUIRE(d.aborted_transactions->size() == 1);
  CHECK(d.aborted_transactions->at(0).producer_id == pid);
  CHECK(d.aborted_transactions->at(0).first_offset == 0);
  // After a restart (snapshot, or the log scan) the abort is still known.
  f.restart();
  auto d2 = fetch();
  REQUIRE(d2.aborted_transactions);
  CHECK(d2.aborted_transactions->size() == 1);
  CHECK(d2.last_stable_offset == 4);
}

TEST_CASE("aborted transactions are kept in Kafka's .txnindex and .snapshot files: never lost or doubled across restarts",
          "[txn]") {
  BrokerFixture f;
  create_topic(f, "t");
  REQUIRE(txn::coordinator(f.broker()).wait_loaded(10000));
  auto init = init_txn(f, "tx");
  REQUIRE(init.error_code == 0);
  const int64_t pid = init.producer_id;
  const auto abort_one = [&](int32_t seq) {
    REQUIRE(txn::coordinator(f.broker()).wait_loaded(10000));
    REQUIRE(add_partition(f, "tx", pid, 0, "t", 0) == 0);
    auto batch = make_batch({.producer_id = pid, .epoch = 0, .base_sequence = seq, .transactional = true});
    REQUIRE(produce_txn(f, "tx", batch).error_code == 0);
    REQUIRE(end_txn(f, "tx", pid, 0, false) == 0);
    CHECK(eventually([&] { return describe(f, "tx").transaction_state == "CompleteAbort"; }));
  };
  abort_one(0);  // records 0-2, ABORT marker at 3
  REQUIRE(f.broker().topics().partition("t", 0)->log_end_offset() == 4);
  const std::string dir = f.broker().topics().partition("t", 0)->log().dir();
  const std::string index = dir + "/00000000000000000000.txnindex";
  f.close();
  // The entry is in the segment holding the marker: {pid, first 0, marker 3,
  // LSO 4}; the clean shutdown wrote a snapshot at the log end.
  CHECK(read_kafka_txn_index(index) == std::vector<std::array<int64_t, 4>>{{pid, 0, 3, 4}});
  REQUIRE(files_with(dir, ".snapshot") == std::vector<std::string>{"00000000000000000004.snapshot"});
  auto snap = read_kafka_snapshot(dir + "/00000000000000000004.snapshot");
  REQUIRE(!snap.empty());
  CHECK(snap.back() == std::array<int64_t, 3>{pid, 0, -1});
  const auto snapshot4 = file_bytes(dir + "/00000000000000000004.snapshot");

  // A second abort after that snapshot (records 4-6, marker at 7).
  f.restart();
  abort_one(3);
  f.close();
  CHECK(read_kafka_txn_index(index) == std::vector<std::array<int64_t, 4>>{{pid, 0, 3, 4}, {pid, 4, 7, 8}});
  // The newer snapshot and the newest older one are kept (a crash that
  // cut the log below 8 would leave 4 usable).
  CHECK(files_with(dir, ".snapshot") ==
        std::vector<std::string>{"00000000000000000004.snapshot", "00000000000000000008.snapshot"});

  SECTION("a crash before the newer snapshot: the entry past the older one is rebuilt, not doubled") {
    std::filesystem::remove(dir + "/00000000000000000008.snapshot");
    std::ofstream(dir + "/00000000000000000004.snapshot", std::ios::binary)
        .write(reinterpret_cast<const char*>(snapshot4.data()), static_cast<std::streamsize>(snapshot4.size()));
    f.restart();
    CHECK(aborted_firsts(f, "t") == std::vector<int64_t>{0, 4});
    f.close();
    CHECK(read_kafka_txn_index(index) == std::vector<std::array<int64_t, 4>>{{pid, 0, 3, 4}, {pid, 4, 7, 8}});
  }
  SECTION("no snapshot at all: the index is rebuilt from the whole log") {
    std::filesystem::remove(dir + "/00000000000000000004.snapshot");
    std::filesystem::remove(dir + "/00000000000000000008.snapshot");
    f.restart();
    CHECK(aborted_firsts(f, "t") == std::vector<int64_t>{0, 4});
    f.close();
    CHECK(read_kafka_txn_index(index) == std::vector<std::array<int64_t, 4>>{{pid, 0, 3, 4}, {pid, 4, 7, 8}});
  }
  SECTION("with a snapshot, the aborted list below it comes from the index") {
    // An index that lost its second entry (as if never written): the
    // snapshot says the log below 8 needs no scan, so it is not found
    // again. (This is why the index is fsynced before a snapshot.)
    std::filesystem::resize_file(index, 34);
    f.restart();
    CHECK(aborted_firsts(f, "t") == std::vector<int64_t>{0});
  }
  SECTION("upgrade: the pre-Kafka `ciuic-producer-state` is read once, its aborted list indexed") {
    std::filesystem::remove(dir + "/00000000000000000004.snapshot");
    std::filesystem::remove(dir + "/00000000000000000008.snapshot");
    std::filesystem::remove(index);
    // It lists only the first abort: a scan of the whole log would find
    // both, so one proves the old file was read (its offset 8: no scan).
    const auto legacy = legacy_snapshot(8, pid, 0, {{pid, 0, 3, 4}});
    std::ofstream(dir + "/ciuic-producer-state", std::ios::binary)
        .write(reinterpret_cast<const char*>(legacy.data()), static_cast<std::streamsize>(legacy.size()));
    f.restart();
    CHECK(aborted_firsts(f, "t") == std::vector<int64_t>{0});
    f.close();
    CHECK(read_kafka_txn_index(index) == std::vector<std::array<int64_t, 4>>{{pid, 0, 3, 4}});
    CHECK(files_with(dir, ".snapshot") == std::vector<std::string>{"00000000000000000008.snapshot"});
    CHECK_FALSE(std::filesystem::exists(dir + "/ciuic-producer-state"));
  }
}

TEST_CASE("transaction.partition.verification.enable=false writes a transactional batch unchecked", "[txn]") {
  BrokerFixture f({"transaction.partition.verification.enable=false"});
  create_topic(f, "t");
  REQUIRE(txn::coordinator(f.broker()).wait_loaded(10000));
  auto init = init_txn(f, "tx");
  REQUIRE(init.error_code == 0);
  // Never added to the transaction: accepted (Kafka's behaviour with the
  // check off), and the transaction is open here (read_committed stops at it).
  auto batch = make_batch({.producer_id = init.producer_id, .epoch = 0, .base_sequence = 0, .transactional = true});
  CHECK(produce_txn(f, "tx", batch).error_code == 0);
  CHECK(latest(f, "t", 0) == 3);
  CHECK(latest(f, "t", 1) == 0);
}

TEST_CASE("retention deletes no segment past an open transaction's first offset", "[txn]") {
  BrokerFixture f;
  create_topic(f, "t", 1, {{"segment.bytes", "1024"}, {"retention.ms", "60000"}});
  REQUIRE(txn::coordinator(f.broker()).wait_loaded(10000));
  auto init = init_txn(f, "tx");
  REQUIRE(init.error_code == 0);
  const int64_t pid = init.producer_id;
  // Old records (timestamp 1000: due for retention), several segments of
  // them, then the transaction's first batch, then more segments.
  const auto old_plain = [&] {
    REQUIRE(produce_one(f, "t", make_batch({.records = 10, .timestamp = 1000})).error_code == 0);
  };
  for (int i = 0; i < 6; ++i) old_plain();
  REQUIRE(add_partition(f, "tx", pid, 0, "t", 0) == 0);
  auto txn = produce_txn(f, "tx", make_batch({.records = 10, .timestamp = 1000, .producer_id = pid, .epoch = 0,
                                               .base_sequence = 0, .transactional = true}));
  REQUIRE(txn.error_code == 0);
  const int64_t first = txn.base_offset;
  for (int i = 0; i < 6; ++i) old_plain();
  auto p = f.broker().topics().partition("t", 0);
  REQUIRE(p->log().segment_count() >= 4);
  auto tick = [&, later = int64_t{0}]() mutable {
    later += 600'000;  // past log.retention.check.interval.ms each time
    REQUIRE(f.broker().logs().tick(Broker::now_ms() + later).is_ok());
  };
  tick();
  // Segments wholly before the transaction went; none holding it or after.
  CHECK(p->log_start_offset() > 0);
  CHECK(p->log_start_offset() <= first);
  // Committed: the rest may go (all but the active segment).
  REQUIRE(end_txn(f, "tx", pid, 0, true) == 0);
  CHECK(eventually([&] { return describe(f, "tx").transaction_state == "CompleteCommit"; }));
  tick();
  CHECK(p->log_start_offset() > first);
}

TEST_CASE("after a restart retention leaves the producer state's load to the I/O pool and deletes at a later check",
          "[txn]") {
  BrokerFixture f;
  constexpr int32_t kParts = 3;
  create_topic(f, "t", kParts, {{"segment.bytes", "1024"}, {"retention.ms", "60000"}});
  // Old plain records over several segments of each partition: their
  // rolls snapshot the producer state (loaded for it), so after the
  // restart each partition has a snapshot and a state that is not loaded.
  std::vector<std::string> dirs;
  for (int32_t i = 0; i < kParts; ++i) {
    for (int b = 0; b < 24; ++b) {
      auto batch = make_batch({.records = 10, .timestamp = 1000});
      auto resp = f.call<protocol::ProduceResponse>(produce_request("t", i, batch), 9);
      REQUIRE(only_partition(resp).error_code == 0);
    }
    auto p = f.broker().topics().partition("t", i);
    REQUIRE(p->log().segment_count() >= 4);
    dirs.push_back(p->log().dir());
  }
  f.restart();
  for (const auto& d : dirs) REQUIRE_FALSE(files_with(d, ".snapshot").empty());
  auto& producers = f.broker().service<produce::ProduceService>();
  std::vector<std::shared_ptr<Partition>> parts;
  for (int32_t i = 0; i < kParts; ++i) {
    parts.push_back(f.broker().topics().partition("t", i));
    REQUIRE_FALSE(producers.loaded_for_writes(*parts.back()));
  }
  auto tick = [&, later = int64_t{0}]() mutable {
    later += 600'000;  // past log.retention.check.interval.ms each time
    REQUIRE(f.broker().logs().tick(Broker::now_ms() + later).is_ok());
  };
  // The retention check (the background thread's) does not scan the logs
  // itself: the loads are queued for the pool (taken one after another)
  // and nothing is deleted yet ...
  tick();
  for (const auto& p : parts) CHECK(p->log_start_offset() == 0);
  for (const auto& p : parts) REQUIRE(eventually([&] { return producers.loaded_for_writes(*p); }));
  // ... and the next check, with the states loaded, deletes the old segments.
  tick();
  for (const auto& p : parts) CHECK(p->log_start_offset() > 0);
}

TEST_CASE("a transaction found in PrepareCommit at start-up gets its markers and completes", "[txn]") {
  // The state a kill -9 between the durable PrepareCommit and the markers
  // leaves: the data of an open transaction in t-0, and PrepareCommit in
  // __transaction_state. The restarted coordinator must finish the commit.
  BrokerFixture f;
  create_topic(f, "t");
  REQUIRE(txn::coordinator(f.broker()).wait_loaded(10000));
  auto init = init_txn(f, "tx");
  REQUIRE(init.error_code == 0);
  const int64_t pid = init.producer_id;
  REQUIRE(add_partition(f, "tx", pid, 0, "t", 0) == 0);
  auto batch = make_batch({.producer_id = pid, .epoch = 0, .base_sequence = 0, .transactional = true});
  REQUIRE(produce_txn(f, "tx", batch).error_code == 0);
  CHECK(latest(f, "t", 1) == 0);
  // PrepareCommit, appended as the coordinator would, but no marker.
  txn::TxnRecord prepare;
  prepare.producer_id = pid;
  prepare.producer_epoch = 0;
  prepare.timeout_ms = 60000;
  prepare.state = txn::TxnState::kPrepareCommit;
  prepare.partitions = {{"t", 0}};
  prepare.start_ms = prepare.last_update_ms = Broker::now_ms();
  auto topic = f.broker().topics().find(txn::kTxnTopic);
  REQUIRE(topic);
  auto p = topic->partition(txn::txn_partition_for("tx", static_cast<int32_t>(topic->partitions.size())));
  REQUIRE(p);
  auto record = txn::build_txn_batch("tx", prepare, Broker::now_ms());
  REQUIRE(record);
  REQUIRE(p->append(std::span<uint8_t>(*record), Broker::now_ms()).is_ok());
  f.restart();
  REQUIRE(txn::coordinator(f.broker()).wait_loaded(10000));
  CHECK(eventually([&] { return latest(f, "t", 1) == 4; }));  // 3 records + the COMMIT marker
  CHECK(eventually([&] { return describe(f, "tx").transaction_state == "CompleteCommit"; }));
}

TEST_CASE("an Ongoing transaction found at start-up is aborted by its timeout", "[txn]") {
  BrokerFixture f({"transaction.abort.timed.out.transaction.cleanup.interval.ms=100"});
  create_topic(f, "t");
  REQUIRE(txn::coordinator(f.broker()).wait_loaded(10000));
  auto init = init_txn(f, "tx", 500);
  REQUIRE(init.error_code == 0);
  const int64_t pid = init.producer_id;
  REQUIRE(add_partition(f, "tx", pid, 0, "t", 0) == 0);
  auto batch = make_batch({.producer_id = pid, .epoch = 0, .base_sequence = 0, .transactional = true});
  REQUIRE(produce_txn(f, "tx", batch).error_code == 0);
  f.restart();
  REQUIRE(txn::coordinator(f.broker()).wait_loaded(10000));
  CHECK(eventually([&] { return latest(f, "t", 1) == 4; }));  // the ABORT marker
  CHECK(end_txn(f, "tx", pid, 0, true) == to_wire(ErrorCode::PRODUCER_FENCED));  // the epoch was bumped
  CHECK(describe(f, "tx").producer_epoch == 1);
}

TEST_CASE("the coordinator's sweeps create no __transaction_state on a broker no transactional producer used",
          "[txn]") {
  // Kafka creates the topic on the first FindCoordinator(TRANSACTION) or
  // InitProducerId. The sweeps used to create it through their coordinator
  // check, so every broker held 50 partitions a second after starting.
  BrokerFixture f;
  auto& c = txn::coordinator(f.broker());
  REQUIRE(c.wait_loaded(10000));
  const int64_t month_later = Broker::now_ms() + 30LL * 24 * 3600 * 1000;
  CHECK(c.expire_ids(month_later) == 0);
  CHECK(c.abort_timed_out(month_later) == 0);
  CHECK(f.broker().topics().find(txn::kTxnTopic) == nullptr);
  // The first transactional producer still gets it.
  CHECK(init_txn(f, "tx").error_code == 0);
  CHECK(f.broker().topics().find(txn::kTxnTopic) != nullptr);
}

TEST_CASE("an idle transactional id expires: tombstoned, then unknown", "[txn]") {
  BrokerFixture f({"transactional.id.expiration.ms=1000"});
  create_topic(f, "t");
  REQUIRE(txn::coordinator(f.broker()).wait_loaded(10000));
  auto init = init_txn(f, "idle");
  REQUIRE(init.error_code == 0);
  auto& c = txn::coordinator(f.broker());
  CHECK(c.expire_ids(Broker::now_ms()) == 0);  // not idle long enough
  CHECK(c.expire_ids(Broker::now_ms() + 5000) == 1);
  CHECK(eventually([&] { return describe(f, "idle").error_code == to_wire(ErrorCode::TRANSACTIONAL_ID_NOT_FOUND); }));
  // The tombstone survives a restart: the id stays forgotten.
  f.restart();
  REQUIRE(txn::coordinator(f.broker()).wait_loaded(10000));
  const auto unknown = describe(f, "idle");
  CHECK(unknown.error_code == to_wire(ErrorCode::TRANSACTIONAL_ID_NOT_FOUND));
  CHECK(unknown.producer_id == 0);  // an entry with an error leaves them at 0, as Kafka's
  CHECK(unknown.producer_epoch == 0);
  // A new init for the id starts over at epoch 0 with a new producer id.
  auto again = init_txn(f, "idle");
  REQUIRE(again.error_code == 0);
  CHECK(again.producer_epoch == 0);
  CHECK(again.producer_id != init.producer_id);
}
