// tests/unit/handlers/fetch/offsets_test.cc: ListOffsets (special
// timestamps, by timestamp, v0's offset arrays, fencing), DeleteRecords and
// OffsetForLeaderEpoch.
#include <catch2/catch.hpp>

#include "protocol/error_code.h"
#include "protocol/generated/delete_records.h"
#include "protocol/generated/fetch.h"
#include "protocol/generated/list_offsets.h"
#include "protocol/generated/offset_for_leader_epoch.h"
#include "tests/unit/handlers/fetch/fetch_helpers.h"

using namespace ciuickafka;
using namespace ciuickafka::broker;
using namespace ciuickafka::broker::test;
using protocol::ErrorCode;
using protocol::ListOffsetsRequest;
using protocol::ListOffsetsResponse;

namespace {

ListOffsetsRequest list_request(const std::string& topic, int32_t partition, int64_t timestamp) {
  ListOffsetsRequest req;
  req.replica_id = -1;
  ListOffsetsRequest::ListOffsetsTopic t;
  t.name = topic;
  ListOffsetsRequest::ListOffsetsPartition p;
  p.partition_index = partition;
  p.timestamp = timestamp;
  t.partitions.push_back(p);
  req.topics.push_back(t);
  return req;
}

ListOffsetsResponse::ListOffsetsPartitionResponse list_one(BrokerFixture& f, const std::string& topic, int64_t ts,
                                                           int16_t v = 9) {
  auto req = list_request(topic, 0, ts);
  if (v == 0) req.topics[0].partitions[0].max_num_offsets = 10;  // a v0-only field
  auto resp = f.call<ListOffsetsResponse>(req, v);
  REQUIRE(resp.topics.size() == 1);
  REQUIRE(resp.topics[0].partitions.size() == 1);
  return resp.topics[0].partitions[0];
}

protocol::DeleteRecordsResponse::DeleteRecordsPartitionResult delete_records(BrokerFixture& f, const std::string& topic,
                                                                             int32_t partition, int64_t offset) {
  protocol::DeleteRecordsRequest req;
  protocol::DeleteRecordsRequest::DeleteRecordsTopic t;
  t.name = topic;
  t.partitions.push_back({partition, offset, {}});
  req.topics.push_back(t);
  req.timeout_ms = 1000;
  auto resp = f.call<protocol::DeleteRecordsResponse>(req, 2);
  return resp.topics.at(0).partitions.at(0);
}

}  // namespace

TEST_CASE("ListOffsets answers every special timestamp and lookups by time", "[handlers][list_offsets]") {
  FetchFixture f;
  auto topic = create_topic(f, "t");
  auto& p = *topic->partitions[0];

  auto e = list_one(f, "t", -1);  // empty log
  CHECK(e.offset == 0);
  CHECK(list_one(f, "t", -3).offset == -1);

  append(p, make_batch(3, 10, 1'000));  // offsets 0-2, ts 1000-1002
  append(p, make_batch(3, 10, 9'000));  // offsets 3-5, ts 9000-9002
  append(p, make_batch(2, 10, 2'000));  // offsets 6-7, ts 2000-2001

  auto latest = list_one(f, "t", -1);
  CHECK(latest.error_code == 0);
  CHECK(latest.offset == 8);
  CHECK(latest.timestamp == -1);
  CHECK(latest.leader_epoch == p.leader_epoch());
  CHECK(list_one(f, "t", -2).offset == 0);
  CHECK(list_one(f, "t", -4).offset == 0);
  auto max = list_one(f, "t", -3);
  CHECK(max.offset == 5);
  CHECK(max.timestamp == 9'002);
  auto tiered = list_one(f, "t", -5);
  CHECK(tiered.offset == -1);
  CHECK(tiered.error_code == 0);

  auto by_time = list_one(f, "t", 1'001);
  CHECK(by_time.offset == 1);
  CHECK(by_time.timestamp == 1'001);
  by_time = list_one(f, "t", 5'000);
  CHECK(by_time.offset == 3);
  CHECK(by_time.timestamp == 9'000);
  by_time = list_one(f, "t", 100'000);
  CHECK(by_time.offset == -1);
  CHECK(by_time.timestamp == -1);

  for (int16_t v = 1; v <= 9; ++v) CHECK(list_one(f, "t", -1, v).offset == 8);
}

TEST_CASE("ListOffsets v0 answers offset arrays", "[handlers][list_offsets]") {
  FetchFixture f;
  auto topic = create_topic(f, "t");
  append(*topic->partitions[0], make_batch(4, 10));
  auto latest = list_one(f, "t", -1, 0);
  REQUIRE(!latest.old_style_offsets.empty());
  CHECK(latest.old_style_offsets.front() == 4);
  CHECK(latest.old_style_offsets.back() == 0);
  auto earliest = list_one(f, "t", -2, 0);
  CHECK(earliest.old_style_offsets == std::vector<int64_t>{0});
}

TEST_CASE("ListOffsets errors: unknown partitions, fenced epochs, duplicates", "[handlers][list_offsets]") {
  FetchFixture f;
  auto topic = create_topic(f, "t");
  auto resp = f.call<ListOffsetsResponse>(list_request("nope", 0, -1), 5);
  CHECK(resp.topics[0].partitions[0].error_code == protocol::to_wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  CHECK(resp.topics[0].partitions[0].offset == -1);

  auto req = list_request("t", 0, -1);
  req.topics[0].partitions[0].current_leader_epoch = topic->partitions[0]->leader_epoch() + 1;
  resp = f.call<ListOffsetsResponse>(req, 4);
  CHECK(resp.topics[0].partitions[0].error_code == protocol::to_wire(ErrorCode::UNKNOWN_LEADER_EPOCH));

  req = list_request("t", 0, -1);
  req.topics[0].partitions.push_back(req.topics[0].partitions[0]);
  resp = f.call<ListOffsetsResponse>(req, 5);
  CHECK(resp.topics[0].partitions[0].error_code == protocol::to_wire(ErrorCode::INVALID_REQUEST));

  // A negative timestamp that names no special offset (below -5): not a
  // search by time, UNSUPPORTED_VERSION as Kafka answers.
  append(*topic->partitions[0], make_batch(3, 10));
  for (int16_t v : {0, 1, 5, 9}) {
    CAPTURE(v);
    auto odd = list_one(f, "t", -9, v);
    CHECK(odd.error_code == protocol::to_wire(ErrorCode::UNSUPPORTED_VERSION));
    CHECK(odd.offset == -1);
    CHECK(odd.timestamp == -1);
    CHECK(odd.old_style_offsets.empty());
  }
}

TEST_CASE("DeleteRecords moves the log start - fetches below it are out of range", "[handlers][delete_records]") {
  FetchFixture f;
  auto topic = create_topic(f, "t");
  auto& p = *topic->partitions[0];
  append(p, make_batch(5, 10));
  append(p, make_batch(5, 10));

  auto r = delete_records(f, "t", 0, 11);
  CHECK(r.error_code == protocol::to_wire(ErrorCode::OFFSET_OUT_OF_RANGE));
  CHECK(r.low_watermark == -1);
  r = delete_records(f, "t", 0, 6);
  CHECK(r.error_code == 0);
  CHECK(r.low_watermark == 6);
  CHECK(list_one(f, "t", -2).offset == 6);

  auto fetch = f.call<protocol::FetchResponse>(fetch_request("t", {{0, 2}}), 11);
  CHECK(fetch.responses[0].partitions[0].error_code == protocol::to_wire(ErrorCode::OFFSET_OUT_OF_RANGE));
  fetch = f.call<protocol::FetchResponse>(fetch_request("t", {{0, 6}}), 11);
  CHECK(fetch.responses[0].partitions[0].error_code == 0);
  CHECK(fetch.responses[0].partitions[0].log_start_offset == 6);

  r = delete_records(f, "t", 0, -1);  // up to the high watermark
  CHECK(r.error_code == 0);
  CHECK(r.low_watermark == 10);
  CHECK(delete_records(f, "nope", 0, 1).error_code == protocol::to_wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
}

TEST_CASE("OffsetForLeaderEpoch: our epoch ends at the LEO, a later one is unknown", "[handlers][offset_for_leader_epoch]") {
  FetchFixture f;
  auto topic = create_topic(f, "t");
  auto& p = *topic->partitions[0];
  append(p, make_batch(3, 10));
  auto ask = [&](int32_t epoch, int32_t current, int16_t v) {
    protocol::OffsetForLeaderEpochRequest req;
    protocol::OffsetForLeaderEpochRequest::OffsetForLeaderTopic t;
    t.topic = "t";
    protocol::OffsetForLeaderEpochRequest::OffsetForLeaderPartition part;
    part.partition = 0;
    part.leader_epoch = epoch;
    part.current_leader_epoch = current;
    t.partitions.push_back(part);
    req.topics.push_back(t);
    return f.call<protocol::OffsetForLeaderEpochResponse>(req, v).topics.at(0).partitions.at(0);
  };
  for (int16_t v = 0; v <= 4; ++v) {
    auto r = ask(p.leader_epoch(), -1, v);
    CHECK(r.error_code == 0);
    CHECK(r.end_offset == 3);
    if (v >= 1) CHECK(r.leader_epoch == p.leader_epoch());
  }
  auto r = ask(p.leader_epoch() + 1, -1, 4);
  CHECK(r.end_offset == -1);
  CHECK(r.leader_epoch == -1);
  r = ask(p.leader_epoch(), p.leader_epoch() + 1, 4);
  CHECK(r.error_code == protocol::to_wire(ErrorCode::UNKNOWN_LEADER_EPOCH));
  if (p.leader_epoch() > 0) {
    r = ask(p.leader_epoch(), p.leader_epoch() - 1, 4);
    CHECK(r.error_code == protocol::to_wire(ErrorCode::FENCED_LEADER_EPOCH));
  }
}

TEST_CASE("OffsetForLeaderEpoch: an older epoch ends where the next one starts (Kafka's epoch cache)",
          "[handlers][offset_for_leader_epoch]") {
  FetchFixture f;
  auto topic = create_topic(f, "t");
  auto& p = *topic->partitions[0];
  const int32_t e0 = p.leader_epoch();
  append(p, make_batch(3, 10));  // offsets 0-2 under e0
  auto at_epoch = [&](int32_t epoch) {
    PartitionRoleState s = *p.role_state();
    s.leader_epoch = epoch;
    p.set_role(s);
  };
  at_epoch(e0 + 2);
  append(p, make_batch(2, 10));  // offsets 3-4 under e0 + 2
  at_epoch(e0 + 5);              // a new leader epoch, nothing written in it yet
  auto ask = [&](int32_t epoch) {
    protocol::OffsetForLeaderEpochRequest req;
    protocol::OffsetForLeaderEpochRequest::OffsetForLeaderTopic t;
    t.topic = "t";
    protocol::OffsetForLeaderEpochRequest::OffsetForLeaderPartition part;
    part.partition = 0;
    part.leader_epoch = epoch;
    part.current_leader_epoch = e0 + 5;
    t.partitions.push_back(part);
    req.topics.push_back(t);
    return f.call<protocol::OffsetForLeaderEpochResponse>(req, 4).topics.at(0).partitions.at(0);
  };
  struct Want {
    int32_t asked, epoch;
    int64_t end;
  };
  for (const Want& w : {Want{e0 + 5, e0 + 5, 5},   // the current epoch: the LEO
                        Want{e0 + 2, e0 + 2, 5},   // the latest written: the LEO too
                        Want{e0 + 1, e0, 3},       // between: the floor epoch, the next one's start
                        Want{e0, e0, 3},
                        Want{e0 + 6, -1, -1}}) {   // above every known epoch
    INFO("asked for epoch " << w.asked);
    auto r = ask(w.asked);
    CHECK(r.error_code == 0);
    CHECK(r.leader_epoch == w.epoch);
    CHECK(r.end_offset == w.end);
  }
}
