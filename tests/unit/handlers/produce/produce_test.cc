// tests/unit/handlers/produce/produce_test.cc: Produce through dispatch on a
// real broker: appends, every per-partition error, acks 0/1/-1,
// LogAppendTime, recompression and message-set conversion.
#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <string>

#include "broker/produce/prepare.h"
#include "broker/server/io_pool.h"
#include "protocol/error_code.h"
#include "protocol/records/crc32c.h"
#include "tests/unit/handlers/produce/produce_helpers.h"

using namespace ciuickafka;
using namespace ciuickafka::broker::test;
using ciuickafka::broker::Broker;
using ciuickafka::broker::Response;
using protocol::ErrorCode;
using protocol::to_wire;

TEST_CASE("produce appends and the records are readable with their offsets") {
  BrokerFixture f;
  create_topic(f, "t");
  auto b1 = make_batch({.records = 3});
  auto b2 = make_batch({.records = 2, .value_prefix = "second-"});
  for (int16_t v : {3, 7, 9, 11}) {
    INFO("version " << v);
    auto pr = produce_one(f, "t", b1, v);
    CHECK(pr.error_code == 0);
    CHECK(pr.log_append_time_ms == -1);
  }
  auto pr = produce_one(f, "t", b2, 8);
  CHECK(pr.error_code == 0);
  CHECK(pr.base_offset == 12);
  CHECK(pr.log_start_offset == 0);
  auto recs = stored_records(f, "t");
  REQUIRE(recs.size() == 14);
  for (size_t i = 0; i < recs.size(); ++i) CHECK(recs[i].offset == static_cast<int64_t>(i));
  CHECK(recs[13].value == "second-1");
  CHECK(recs[0].key == "key-0");
  // The test's own bytes are untouched (the fixture's frame is a copy: the
  // broker rewrites the frame in place).
  auto again = protocol::RecordBatchView::parse(b2);
  REQUIRE(again.ok());
  CHECK(again.value().base_offset() == 0);
  // Metrics: bytes and messages in.
  auto m = f.broker().metrics().topic("t");
  CHECK(m.counters()->messages_in.load() == 14);
  CHECK(m.counters()->bytes_in.load() == 4 * b1.size() + b2.size());
}

TEST_CASE("unknown topics and partitions get UNKNOWN_TOPIC_OR_PARTITION") {
  BrokerFixture f;
  create_topic(f, "t", 2);
  auto b = make_batch({});
  CHECK(produce_one(f, "nope", b).error_code == to_wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  auto resp = f.call<protocol::ProduceResponse>(produce_request("t", 2, b), 9);
  CHECK(only_partition(resp).error_code == to_wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  CHECK(only_partition(resp).base_offset == -1);
  // Several partitions: each answered on its own, in request order.
  auto req = produce_request("t", 1, b);
  protocol::ProduceRequest::PartitionProduceData extra;
  extra.index = 7;
  extra.records = protocol::Records(b);
  req.topic_data[0].partition_data.push_back(extra);
  auto two = f.call<protocol::ProduceResponse>(req, 9);
  REQUIRE(two.responses[0].partition_responses.size() == 2);
  CHECK(two.responses[0].partition_responses[0].index == 1);
  CHECK(two.responses[0].partition_responses[0].error_code == 0);
  CHECK(two.responses[0].partition_responses[1].index == 7);
  CHECK(two.responses[0].partition_responses[1].error_code == to_wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
}

TEST_CASE("a bad CRC or truncated batch is CORRUPT_MESSAGE and nothing is written") {
  BrokerFixture f;
  create_topic(f, "t");
  auto b = make_batch({});
  auto bad = b;
  bad[bad.size() - 1] ^= 0x01;
  CHECK(produce_one(f, "t", bad).error_code == to_wire(ErrorCode::CORRUPT_MESSAGE));
  std::vector<uint8_t> cut(b.begin(), b.end() - 5);
  CHECK(produce_one(f, "t", cut).error_code == to_wire(ErrorCode::CORRUPT_MESSAGE));
  CHECK(f.broker().topics().partition("t", 0)->log_end_offset() == 0);
  CHECK(f.broker().metrics().topic("t").counters()->failed_produce.load() == 2);
}

TEST_CASE("batch count rules: v3+ needs exactly one v2 batch, counts must match") {
  BrokerFixture f;
  create_topic(f, "t");
  auto b = make_batch({});
  std::vector<uint8_t> two = b;
  two.insert(two.end(), b.begin(), b.end());
  auto pr = produce_one(f, "t", two, 9);
  CHECK(pr.error_code == to_wire(ErrorCode::INVALID_RECORD));
  CHECK(pr.error_message.value_or("").find("exactly one record batch") != std::string::npos);
  // Produce v2 accepts two v2 batches.
  CHECK(produce_one(f, "t", two, 2).error_code == 0);
  std::vector<uint8_t> none;
  CHECK(produce_one(f, "t", none, 9).error_code == to_wire(ErrorCode::INVALID_RECORD));
  // recordCount disagreeing with lastOffsetDelta (CRC made valid again).
  auto bad = b;
  bad[protocol::batch_v2::kRecordCountOffset + 3] = 7;
  protocol::rewrite_crc(bad);
  pr = produce_one(f, "t", bad, 9);
  CHECK(pr.error_code == to_wire(ErrorCode::INVALID_RECORD));
  CHECK(pr.error_message.has_value());
  // A base offset other than 0 (outside the CRC): refused, as Kafka's
  // LogValidator does; the broker assigns offsets.
  const size_t before = stored_records(f, "t").size();
  auto based = b;
  based[protocol::batch_v2::kBaseOffsetOffset + 7] = 5;
  for (int16_t v : {2, 3, 9, 11}) {
    CAPTURE(v);
    pr = produce_one(f, "t", based, v);
    CHECK(pr.error_code == to_wire(ErrorCode::INVALID_RECORD));
    if (v >= 8) CHECK(pr.error_message.value_or("").find("should be 0, but it is 5") != std::string::npos);
    // A batch the validator refuses is answered with the partition's log
    // start offset, as Kafka does (framing and request-level errors: -1).
    if (v >= 5) CHECK(pr.log_start_offset == 0);
  }
  CHECK(stored_records(f, "t").size() == before);
}

namespace {
// A batch of two records whose second has offset delta 2, with a header that
// is consistent (lastOffsetDelta 1, CRC): only reading the records (inside
// the compressed payload, for a codec) finds what is wrong.
std::vector<uint8_t> batch_with_bad_inner_delta(protocol::Codec codec = protocol::Codec::kNone) {
  protocol::BatchOptions opt;
  opt.codec = codec;
  protocol::BatchBuilder bb(opt);
  bb.add(Broker::now_ms(), protocol::as_bytes("k"), protocol::as_bytes("v0"), {}, 0);
  bb.add(Broker::now_ms(), protocol::as_bytes("k"), protocol::as_bytes("v1"), {}, 2);
  auto built = bb.build();
  REQUIRE(built.ok());
  auto b = built.value();
  b[protocol::batch_v2::kLastOffsetDeltaOffset + 3] = 1;
  protocol::rewrite_crc(b);
  return b;
}
}  // namespace

TEST_CASE("a record with a wrong offset delta is INVALID_RECORD with record_errors") {
  BrokerFixture f;
  create_topic(f, "t");
  auto pr = produce_one(f, "t", batch_with_bad_inner_delta(), 9);
  CHECK(pr.error_code == to_wire(ErrorCode::INVALID_RECORD));
  REQUIRE(pr.record_errors.size() == 1);
  CHECK(pr.record_errors[0].batch_index == 1);
}

TEST_CASE("a compressed batch kept as sent has its records checked, unless ciuic.produce.validate.compressed=false") {
  {
    BrokerFixture f;
    create_topic(f, "t");  // compression.type=producer: the batch is stored as sent
    auto pr = produce_one(f, "t", batch_with_bad_inner_delta(protocol::Codec::kLz4), 9);
    CHECK(pr.error_code == to_wire(ErrorCode::INVALID_RECORD));
    REQUIRE(pr.record_errors.size() == 1);
    CHECK(pr.record_errors[0].batch_index == 1);
    // A well-formed compressed batch is still stored byte for byte.
    auto good = make_batch({.records = 3, .codec = protocol::Codec::kLz4});
    CHECK(produce_one(f, "t", good).error_code == 0);
    auto kept = stored_bytes(f, "t");
    REQUIRE(kept.size() == good.size());
    CHECK(std::equal(kept.begin() + 17, kept.end(), good.begin() + 17));
  }
  {
    // The explicit opt-in to the cheap path: header checks only.
    BrokerFixture f({"ciuic.produce.validate.compressed=false"});
    create_topic(f, "t");
    CHECK(produce_one(f, "t", batch_with_bad_inner_delta(protocol::Codec::kLz4), 9).error_code == 0);
  }
}

TEST_CASE("max.message.bytes gives MESSAGE_TOO_LARGE, segment.bytes RECORD_LIST_TOO_LARGE") {
  BrokerFixture f;
  create_topic(f, "small", 1, {{"max.message.bytes", "200"}});
  auto big = make_batch({.records = 20});
  REQUIRE(big.size() > 200);
  CHECK(produce_one(f, "small", big).error_code == to_wire(ErrorCode::MESSAGE_TOO_LARGE));
  CHECK(produce_one(f, "small", make_batch({.records = 1})).error_code == 0);

  // Kafka's segment.bytes minimum is 14; a batch is larger than that.
  auto seg = f.broker().topics().create("seg", 1, 1, {{"segment.bytes", "14"}}, false, Broker::now_ms());
  REQUIRE(seg.error.ok());
  CHECK(produce_one(f, "seg", big).error_code == to_wire(ErrorCode::RECORD_LIST_TOO_LARGE));
}

TEST_CASE("CreateTime bounds give INVALID_TIMESTAMP with record errors") {
  BrokerFixture f;
  create_topic(f, "t", 1,
               {{"message.timestamp.before.max.ms", "60000"}, {"message.timestamp.after.max.ms", "60000"}});
  const int64_t now = Broker::now_ms();
  auto old = make_batch({.records = 2, .timestamp = now - 3'600'000});
  auto pr = produce_one(f, "t", old, 9);
  CHECK(pr.error_code == to_wire(ErrorCode::INVALID_TIMESTAMP));
  CHECK(pr.record_errors.size() == 2);
  auto future = make_batch({.records = 1, .timestamp = now + 3'600'000});
  CHECK(produce_one(f, "t", future, 9).error_code == to_wire(ErrorCode::INVALID_TIMESTAMP));
  // Compressed under `producer`: checked by the header timestamps.
  auto old_gz = make_batch({.records = 2, .codec = protocol::Codec::kGzip, .timestamp = now - 3'600'000});
  CHECK(produce_one(f, "t", old_gz, 9).error_code == to_wire(ErrorCode::INVALID_TIMESTAMP));
  CHECK(produce_one(f, "t", make_batch({}), 9).error_code == 0);
}

TEST_CASE("LogAppendTime stamps the broker time with a valid CRC") {
  BrokerFixture f;
  create_topic(f, "t", 1, {{"message.timestamp.type", "LogAppendTime"}});
  const int64_t before = Broker::now_ms();
  for (auto codec : {protocol::Codec::kNone, protocol::Codec::kLz4}) {
    auto b = make_batch({.records = 2, .codec = codec, .timestamp = 1000});
    auto pr = produce_one(f, "t", b, 9);
    CHECK(pr.error_code == 0);
    CHECK(pr.log_append_time_ms >= before);
  }
  auto bytes = stored_bytes(f, "t");
  protocol::BatchSplitter sp{std::span<const uint8_t>(bytes)};
  protocol::RecordsEntry e;
  int n = 0;
  while (sp.next(&e) == protocol::SplitStatus::kEntry) {
    auto v = protocol::RecordBatchView::parse_and_validate(e.bytes);
    REQUIRE(v.ok());  // CRC valid after the rewrite
    CHECK(v.value().timestamp_type() == protocol::TimestampType::kLogAppendTime);
    CHECK(v.value().max_timestamp() >= before);
    ++n;
  }
  CHECK(n == 2);
  for (const auto& r : stored_records(f, "t")) CHECK(r.timestamp >= before);
}

TEST_CASE("compression.type recompresses - producer keeps the batch as sent") {
  BrokerFixture f;
  create_topic(f, "keep");
  create_topic(f, "z", 1, {{"compression.type", "zstd"}});
  create_topic(f, "plain", 1, {{"compression.type", "uncompressed"}});
  auto gz = make_batch({.records = 4, .codec = protocol::Codec::kGzip});
  CHECK(produce_one(f, "keep", gz).error_code == 0);
  CHECK(produce_one(f, "z", gz).error_code == 0);
  CHECK(produce_one(f, "z", make_batch({.records = 2})).error_code == 0);
  CHECK(produce_one(f, "plain", gz).error_code == 0);

  std::vector<protocol::Codec> codecs;
  auto kept = stored_bytes(f, "keep");
  // Byte for byte as sent, apart from baseOffset and leader epoch (outside the CRC).
  REQUIRE(kept.size() == gz.size());
  CHECK(std::equal(kept.begin() + 17, kept.end(), gz.begin() + 17));

  auto z = stored_records(f, "z", &codecs);
  REQUIRE(codecs.size() == 2);
  CHECK(codecs[0] == protocol::Codec::kZstd);
  CHECK(codecs[1] == protocol::Codec::kZstd);
  REQUIRE(z.size() == 6);
  CHECK(z[3].value == "value-3");
  CHECK(z[5].offset == 5);
  codecs.clear();
  auto plain = stored_records(f, "plain", &codecs);
  CHECK(codecs == std::vector<protocol::Codec>{protocol::Codec::kNone});
  CHECK(plain.size() == 4);
}

TEST_CASE("zstd needs Produce v7 - transactional batches outside a transaction and control batches are refused") {
  BrokerFixture f;
  create_topic(f, "t");
  auto z = make_batch({.codec = protocol::Codec::kZstd});
  CHECK(produce_one(f, "t", z, 6).error_code == to_wire(ErrorCode::UNSUPPORTED_COMPRESSION_TYPE));
  CHECK(produce_one(f, "t", z, 7).error_code == 0);
  auto txn = read_binary(test_data_dir() + "/records/v2_zstd_txn.bin");
  CHECK(produce_one(f, "t", txn, 9).error_code == to_wire(ErrorCode::INVALID_TXN_STATE));
  auto marker = protocol::build_end_txn_marker_batch(protocol::ControlRecordType::kCommit, 5, 0, 0, Broker::now_ms());
  REQUIRE(marker.ok());
  // A control batch is transactional too; either refusal keeps it out.
  CHECK(produce_one(f, "t", marker.value(), 9).error_code != 0);
  CHECK(f.broker().topics().partition("t", 0)->log_end_offset() == 3);
}

TEST_CASE("an invalid acks value is INVALID_REQUIRED_ACKS and nothing is written") {
  BrokerFixture f;
  create_topic(f, "t");
  auto b = make_batch({});
  auto resp = f.call<protocol::ProduceResponse>(produce_request("t", 0, b, 2), 9);
  CHECK(only_partition(resp).error_code == to_wire(ErrorCode::INVALID_REQUIRED_ACKS));
  CHECK(f.broker().topics().partition("t", 0)->log_end_offset() == 0);
}

TEST_CASE("acks=0 answers nothing, closes on error - acks=1 answers") {
  BrokerFixture f;
  create_topic(f, "t");
  auto b = make_batch({});
  auto req = produce_request("t", 0, b, 0);
  protocol::Writer w;
  req.encode(w, 9);
  Response::Action action;
  f.call_raw(protocol::ProduceRequest::kApiKey, 9, w.buffer(), &action);
  CHECK(action == Response::Action::kNoResponse);
  CHECK(f.broker().topics().partition("t", 0)->log_end_offset() == 3);
  auto bad_req = produce_request("missing", 0, b, 0);
  protocol::Writer w2;
  bad_req.encode(w2, 9);
  f.call_raw(protocol::ProduceRequest::kApiKey, 9, w2.buffer(), &action);
  CHECK(action == Response::Action::kClose);
}

TEST_CASE("acks=-1 waits for the group-commit fsync") {
  BrokerFixture f;
  create_topic(f, "t", 2);
  auto b = make_batch({});
  const auto before = f.broker().logs().group_commit_stats();
  auto req = produce_request("t", 0, b, -1);
  protocol::ProduceRequest::PartitionProduceData p1;
  p1.index = 1;
  p1.records = protocol::Records(b);
  req.topic_data[0].partition_data.push_back(p1);
  auto resp = f.call<protocol::ProduceResponse>(req, 9);
  for (const auto& p : resp.responses[0].partition_responses) CHECK(p.error_code == 0);
  const auto after = f.broker().logs().group_commit_stats();
  CHECK(after.requests >= before.requests + 2);
  CHECK(after.syncs > before.syncs);
  // Durable: each log's recovery point covers the batch.
  CHECK(f.broker().topics().partition("t", 0)->log().recovery_point() >= 3);
  CHECK(f.broker().topics().partition("t", 1)->log().recovery_point() >= 3);
  CHECK(f.broker().metrics().produce_purgatory().Value() == 0);
}

TEST_CASE("acks=-1 without ciuic.acks.all.fsync answers after the append") {
  BrokerFixture f({"ciuic.acks.all.fsync=false"});
  create_topic(f, "t");
  const auto before = f.broker().logs().group_commit_stats();
  CHECK(produce_one(f, "t", make_batch({}), 9, -1).error_code == 0);
  CHECK(f.broker().logs().group_commit_stats().requests == before.requests);
}

TEST_CASE("v0/v1 message sets are converted to v2 on write") {
  BrokerFixture f;
  create_topic(f, "t");
  int64_t expected_offset = 0;
  for (int magic : {0, 1}) {
    for (const char* codec : {"none", "gzip", "snappy", "lz4"}) {
      const std::string file = "legacy_v" + std::to_string(magic) + "_" + codec + ".bin";
      INFO(file);
      auto set = read_binary(test_data_dir() + "/records/" + file);
      auto pr = produce_one(f, "t", set, magic == 0 ? 0 : 2);
      CHECK(pr.error_code == 0);
      CHECK(pr.base_offset == expected_offset);
      expected_offset += 4;
    }
  }
  auto recs = stored_records(f, "t");
  REQUIRE(recs.size() == 32);
  CHECK(recs[0].key == "k0");
  CHECK(recs[2].key == "<null>");
  CHECK(recs[1].value == "legacy-value-1-zzzzzzzzzz");
  CHECK(recs[20].timestamp == 1600000000000);  // v1 keeps the producer's timestamps
  for (size_t i = 0; i < recs.size(); ++i) CHECK(recs[i].offset == static_cast<int64_t>(i));
  // A v0/v1 set in Produce v3+ is refused; a corrupt one is CORRUPT_MESSAGE.
  auto set = read_binary(test_data_dir() + "/records/legacy_v1_none.bin");
  CHECK(produce_one(f, "t", set, 3).error_code == to_wire(ErrorCode::INVALID_RECORD));
  set[20] ^= 0x40;
  CHECK(produce_one(f, "t", set, 2).error_code == to_wire(ErrorCode::CORRUPT_MESSAGE));
}

TEST_CASE("a message set converted for a recompressing topic gets its codec") {
  BrokerFixture f;
  create_topic(f, "t", 1, {{"compression.type", "lz4"}});
  auto set = read_binary(test_data_dir() + "/records/legacy_v1_gzip.bin");
  CHECK(produce_one(f, "t", set, 2).error_code == 0);
  std::vector<protocol::Codec> codecs;
  auto recs = stored_records(f, "t", &codecs);
  CHECK(recs.size() == 4);
  CHECK(codecs == std::vector<protocol::Codec>{protocol::Codec::kLz4});
}

TEST_CASE("compacted topics require keys") {
  BrokerFixture f;
  create_topic(f, "c", 1, {{"cleanup.policy", "compact"}});
  auto pr = produce_one(f, "c", make_batch({.records = 2, .null_keys = true}), 9);
  CHECK(pr.error_code == to_wire(ErrorCode::INVALID_RECORD));
  CHECK(pr.record_errors.size() == 2);
  CHECK(produce_one(f, "c", make_batch({.records = 2, .codec = protocol::Codec::kSnappy, .null_keys = true}), 9)
            .error_code == to_wire(ErrorCode::INVALID_RECORD));
  CHECK(produce_one(f, "c", make_batch({}), 9).error_code == 0);
}

TEST_CASE("compresses_anew finds the records a topic's compression.type makes the broker compress") {
  using broker::produce::compresses_anew;
  using protocol::Codec;
  broker::produce::TopicSettings producer, zstd, none;
  zstd.target_codec = Codec::kZstd;
  none.target_codec = Codec::kNone;
  const auto plain = make_batch({.records = 2});
  const auto gz = make_batch({.records = 2, .codec = Codec::kGzip});
  const auto zs = make_batch({.records = 2, .codec = Codec::kZstd});
  CHECK(!compresses_anew(plain, producer));
  CHECK(!compresses_anew(gz, producer));
  CHECK(compresses_anew(plain, zstd));
  CHECK(compresses_anew(gz, zstd));
  CHECK(!compresses_anew(zs, zstd));
  CHECK(compresses_anew(gz, none));  // decompressed and stored plain
  CHECK(!compresses_anew(plain, none));
  // v0/v1 message sets: a compressed wrapper is converted with a codec.
  const auto v1_plain = read_binary(test_data_dir() + "/records/legacy_v1_none.bin");
  const auto v1_gzip = read_binary(test_data_dir() + "/records/legacy_v1_gzip.bin");
  CHECK(!compresses_anew(v1_plain, producer));
  CHECK(compresses_anew(v1_gzip, producer));
  CHECK(compresses_anew(v1_plain, zstd));
  // Framing it cannot read is not its to refuse.
  CHECK(!compresses_anew(std::vector<uint8_t>(5, 0xff), zstd));
}

TEST_CASE("compressed_batch_bytes counts the compressed v2 batches only") {
  using broker::produce::compressed_batch_bytes;
  using protocol::Codec;
  const auto plain = make_batch({.records = 2});
  const auto gz = make_batch({.records = 3, .codec = Codec::kGzip});
  const auto lz = make_batch({.records = 4, .codec = Codec::kLz4});
  CHECK(compressed_batch_bytes(plain) == 0);
  CHECK(compressed_batch_bytes(gz) == gz.size());
  std::vector<uint8_t> three = plain;
  three.insert(three.end(), gz.begin(), gz.end());
  three.insert(three.end(), lz.begin(), lz.end());
  CHECK(compressed_batch_bytes(three) == gz.size() + lz.size());
  // v0/v1 message sets are compresses_anew's case; framing it cannot read counts nothing.
  CHECK(compressed_batch_bytes(read_binary(test_data_dir() + "/records/legacy_v1_gzip.bin")) == 0);
  CHECK(compressed_batch_bytes(std::vector<uint8_t>(5, 0xff)) == 0);
}

TEST_CASE("prepare_records keeps one v2 batch in the request's writable bytes and patches it there") {
  using broker::produce::prepare_records;
  using broker::produce::TopicSettings;
  using protocol::Codec;
  const int64_t now = Broker::now_ms();
  TopicSettings keep;
  const auto sent = make_batch({.records = 3, .timestamp = 1000});

  SECTION("kept as sent: no copy, the bytes are the request's own") {
    std::vector<uint8_t> frame = sent;
    auto prep = prepare_records(frame, 9, keep, now, frame);
    REQUIRE(prep.ok());
    CHECK(prep.buffer.empty());
    CHECK(prep.in_place.data() == frame.data());
    CHECK(prep.stored().size() == sent.size());
    REQUIRE(prep.batches.size() == 1);
    CHECK(prep.batches[0].position == 0);
    CHECK(prep.batches[0].record_count == 3);
    CHECK(frame == sent);
  }
  SECTION("LogAppendTime is written into the request's bytes, CRC valid") {
    TopicSettings lat;
    lat.log_append_time = true;
    std::vector<uint8_t> frame = sent;
    auto prep = prepare_records(frame, 9, lat, now, frame);
    REQUIRE(prep.ok());
    CHECK(prep.in_place.data() == frame.data());
    auto v = protocol::RecordBatchView::parse_and_validate(frame);
    REQUIRE(v.ok());
    CHECK(v.value().timestamp_type() == protocol::TimestampType::kLogAppendTime);
    CHECK(v.value().max_timestamp() == now);
    CHECK(prep.log_append_time == now);
  }
  SECTION("a wrong maxTimestamp (sarama's -1) is fixed in place") {
    std::vector<uint8_t> frame = sent;
    namespace v2 = protocol::batch_v2;
    for (size_t i = 0; i < 8; ++i) frame[v2::kMaxTimestampOffset + i] = 0xff;  // maxTimestamp = -1
    protocol::rewrite_crc(frame);
    auto prep = prepare_records(frame, 9, keep, now, frame);
    REQUIRE(prep.ok());
    CHECK(prep.in_place.data() == frame.data());
    auto v = protocol::RecordBatchView::parse_and_validate(frame);
    REQUIRE(v.ok());
    CHECK(v.value().max_timestamp() == 1000);
  }
  SECTION("without writable bytes, the batch is copied and the request untouched") {
    TopicSettings lat;
    lat.log_append_time = true;
    std::vector<uint8_t> frame = sent;
    auto prep = prepare_records(frame, 9, lat, now);
    REQUIRE(prep.ok());
    CHECK(prep.in_place.empty());
    CHECK(prep.buffer.size() == sent.size());
    CHECK(prep.stored().data() == prep.buffer.data());
    CHECK(frame == sent);
    // Other bytes than the records are not taken as writable either.
    std::vector<uint8_t> other = sent;
    auto prep2 = prepare_records(frame, 9, lat, now, other);
    CHECK(prep2.in_place.empty());
    CHECK(other == sent);
  }
  SECTION("a topic codec builds a new batch: the request's bytes are not rewritten") {
    TopicSettings zstd;
    zstd.target_codec = Codec::kZstd;
    std::vector<uint8_t> frame = sent;
    auto prep = prepare_records(frame, 9, zstd, now, frame);
    REQUIRE(prep.ok());
    CHECK(prep.in_place.empty());
    CHECK(frame == sent);
    auto v = protocol::RecordBatchView::parse_and_validate(prep.stored());
    REQUIRE(v.ok());
    CHECK(v.value().codec() == Codec::kZstd);
  }
  SECTION("several batches (Produce v0-2) are copied") {
    std::vector<uint8_t> frame = sent;
    frame.insert(frame.end(), sent.begin(), sent.end());
    const std::vector<uint8_t> before = frame;
    auto prep = prepare_records(frame, 2, keep, now, frame);
    REQUIRE(prep.ok());
    CHECK(prep.in_place.empty());
    CHECK(prep.stored().size() == frame.size());
    REQUIRE(prep.batches.size() == 2);
    CHECK(prep.batches[1].position == sent.size());
    CHECK(frame == before);
  }
}

namespace {

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("a new partition's leader epoch 0 is in its leader-epoch-checkpoint before any Produce") {
  // As Kafka's makeLeader records it: the first Produce to each partition
  // then writes no file (two fsyncs each on the thread that appends).
  BrokerFixture f;
  create_topic(f, "fresh", 3);
  for (int p = 0; p < 3; ++p) {
    INFO("partition " << p);
    CHECK(file_text(f.dir() + "/fresh-" + std::to_string(p) + "/leader-epoch-checkpoint") == "0\n1\n0 0\n");
    CHECK(f.broker().topics().partition("fresh", p)->log().leader_epochs().records(0));
  }
  // A partition added later, too; and the files survive a restart unchanged.
  REQUIRE(f.broker().topics().add_partitions("fresh", 4, false, Broker::now_ms()).ok());
  CHECK(file_text(f.dir() + "/fresh-3/leader-epoch-checkpoint") == "0\n1\n0 0\n");
  f.restart();
  CHECK(file_text(f.dir() + "/fresh-0/leader-epoch-checkpoint") == "0\n1\n0 0\n");
  CHECK(f.broker().topics().partition("fresh", 0)->log().leader_epochs().records(0));
}

TEST_CASE("a Produce whose leader epoch is not yet recorded is appended on the I/O pool, later ones inline") {
  BrokerFixture f;
  create_topic(f, "t");
  auto& pool = f.broker().service<broker::IoPool>();
  const uint64_t before = pool.posted();
  CHECK(produce_one(f, "t", make_batch({.records = 2}), 9).error_code == 0);
  CHECK(pool.posted() == before);  // epoch 0 was recorded at creation: inline
  // A new leader epoch (as a role change sets it) that the file lacks.
  auto p = f.broker().topics().partition("t", 0);
  broker::PartitionRoleState st = *p->role_state();
  st.leader_epoch = 5;
  p->set_role(std::move(st));
  REQUIRE_FALSE(p->log().leader_epochs().records(5));
  auto pr = produce_one(f, "t", make_batch({.records = 3}), 9);
  CHECK(pr.error_code == 0);
  CHECK(pr.base_offset == 2);
  CHECK(pool.posted() == before + 1);  // the file write and its fsyncs ran there
  CHECK(file_text(f.dir() + "/t-0/leader-epoch-checkpoint") == "0\n2\n0 0\n5 2\n");
  CHECK(p->log().leader_epochs().records(5));
  CHECK(produce_one(f, "t", make_batch({.records = 1}), 9).base_offset == 5);
  CHECK(pool.posted() == before + 1);  // recorded now: inline again
  auto recs = stored_records(f, "t");
  REQUIRE(recs.size() == 6);
  for (size_t i = 0; i < recs.size(); ++i) CHECK(recs[i].offset == static_cast<int64_t>(i));
}
