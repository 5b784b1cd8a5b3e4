// tests/unit/handlers/groups/offsets_test.cc: FindCoordinator, OffsetCommit
// and OffsetFetch for simple (assign()) users, at several versions; the
// group -> partition hash; persistence in __consumer_offsets across
// restarts.
#include <catch2/catch.hpp>

#include <chrono>
#include <optional>

#include "broker/groups/offsets_records.h"
#include "broker/server/disk_ring.h"
#include "broker/groups/partition_for.h"
#include "broker/txn/coordinator.h"
#include "protocol/error_code.h"
#include "protocol/generated/delete_topics.h"
#include "protocol/generated/describe_groups.h"
#include "protocol/generated/find_coordinator.h"
#include "protocol/records/record_batch.h"
#include "storage/log.h"
#include "tests/unit/handlers/groups/groups_test_util.h"

using namespace ciuickafka;
using namespace ciuickafka::broker;
using namespace ciuickafka::broker::test;
using protocol::ErrorCode;
using protocol::to_wire;

// A namespace of this file's own (tests/CMakeLists.txt: the tests are unity
// builds), so that its helpers do not clash with a sibling file's.
namespace CK_UNITY_ID {

namespace {

std::vector<std::string> base_overrides() {
  return {"offsets.topic.num.partitions=5", "group.initial.rebalance.delay.ms=0"};
}

void make_topic(BrokerFixture& f, const std::string& name, int32_t partitions) {
  auto c = f.broker().topics().create(name, partitions, 1, {}, false, Broker::now_ms());
  REQUIRE(c.error.ok());
}

// Every decoded record of partition p, in log order.
std::vector<groups::DecodedOffsetsRecord> offsets_records(Partition& p) {
  std::vector<groups::DecodedOffsetsRecord> seen;
  auto read = p.log().read(0, 16 << 20);
  REQUIRE(read.is_ok());
  auto bytes = storage::read_slices(read.value());
  REQUIRE(bytes.is_ok());
  protocol::BatchSplitter sp(std::span<const uint8_t>(bytes.value()));
  protocol::RecordsEntry e;
  while (sp.next(&e) == protocol::SplitStatus::kEntry) {
    auto view = protocol::RecordBatchView::parse(e.bytes);
    REQUIRE(view.ok());
    auto recs = protocol::decode_records(view.value(), 16 << 20);
    REQUIRE(recs.ok());
    auto rd = recs.value().reader();
    protocol::RecordView rv;
    while (rd.next(&rv)) {
      REQUIRE(rv.key);
      auto d = groups::decode_offsets_record(*rv.key, rv.value);
      REQUIRE(d);
      seen.push_back(*d);
    }
  }
  return seen;
}

void append_records(Partition& p, const std::vector<groups::OffsetsRecord>& records) {
  auto batch = groups::build_offsets_batch(records, Broker::now_ms());
  REQUIRE(batch);
  REQUIRE(p.append(std::span<uint8_t>(*batch), Broker::now_ms()).is_ok());
}

groups::CommittedOffset committed(int64_t offset, const std::string& metadata = "") {
  groups::CommittedOffset c;
  c.offset = offset;
  c.metadata = metadata;
  c.commit_timestamp = Broker::now_ms();
  return c;
}

}  // namespace

TEST_CASE("group partition follows Java's String.hashCode and Utils.abs", "[groups]") {
  using groups::java_string_hash;
  CHECK(java_string_hash("") == 0);
  CHECK(java_string_hash("hello") == 99162322);
  CHECK(java_string_hash("polygenelubricants") == INT32_MIN);  // Math.abs would stay negative
  CHECK(groups::partition_for("polygenelubricants", 50) == 0);
  CHECK(java_string_hash("\xC3\xA9") == 0xE9);                    // U+00E9, one UTF-16 unit
  CHECK(java_string_hash("\xF0\x9F\x98\x80") == 0xD83D * 31 + 0xDE00);  // surrogate pair
  // A negative hash: Utils.abs(h) % n, not (h & 0x7fffffff) % n (which is 36).
  CHECK(java_string_hash("my-group") == -1906497762);
  CHECK(groups::partition_for("my-group", 50) == 12);
  CHECK(groups::partition_for("my-group", 5) == 2);
}

TEST_CASE("FindCoordinator answers this node for groups and transactions", "[groups]") {
  BrokerFixture f(base_overrides());
  protocol::FindCoordinatorRequest req;
  req.key = "g1";
  auto v0 = f.call<protocol::FindCoordinatorResponse>(req, 0);
  CHECK(v0.error_code == 0);
  CHECK(v0.node_id == f.broker().node_id());
  CHECK(v0.host == "127.0.0.1");
  auto topic = f.broker().topics().find("__consumer_offsets");
  REQUIRE(topic);
  CHECK(topic->partitions.size() == 5);
  CHECK(f.broker().topics().config_value(*topic, "cleanup.policy") == std::optional<std::string>("compact"));

  REQUIRE(txn::coordinator(f.broker()).wait_loaded(10000));
  req.key_type = 1;
  auto txn = f.call<protocol::FindCoordinatorResponse>(req, 3);
  CHECK(txn.error_code == 0);
  CHECK(txn.node_id == f.broker().node_id());
  CHECK(f.broker().topics().find("__transaction_state") != nullptr);
  req.key_type = 7;
  CHECK(f.call<protocol::FindCoordinatorResponse>(req, 3).error_code == to_wire(ErrorCode::INVALID_REQUEST));

  protocol::FindCoordinatorRequest batched;
  batched.key_type = 0;
  batched.coordinator_keys = {"a", "b"};
  auto v4 = f.call<protocol::FindCoordinatorResponse>(batched, 4);
  REQUIRE(v4.coordinators.size() == 2);
  CHECK(v4.coordinators[1].key == "b");
  CHECK(v4.coordinators[1].error_code == 0);
  CHECK(v4.coordinators[1].node_id == f.broker().node_id());
  batched.key_type = 1;
  auto v6 = f.call<protocol::FindCoordinatorResponse>(batched, 6);
  REQUIRE(v6.coordinators.size() == 2);
  CHECK(v6.coordinators[0].error_code == 0);
}

TEST_CASE("simple commits round-trip at several versions", "[groups]") {
  BrokerFixture f(base_overrides());
  make_topic(f, "t", 3);
  coordinator(f);
  for (int16_t v : {0, 1, 2, 5, 7, 8, 9}) {
    INFO("OffsetCommit v" << v);
    const std::string group = "g-v" + std::to_string(v);
    auto c = f.call<protocol::OffsetCommitResponse>(commit_request(group, "t", 1, 100 + v, "meta-" + std::to_string(v)), v);
    REQUIRE(c.topics.size() == 1);
    CHECK(c.topics[0].partitions[0].error_code == 0);
    for (int16_t fv : {1, 3, 6, 7}) {
      auto r = f.call<protocol::OffsetFetchResponse>(fetch_request(group, "t", {0, 1}), fv);
      REQUIRE(r.topics.size() == 1);
      REQUIRE(r.topics[0].partitions.size() == 2);
      CHECK(r.topics[0].partitions[0].committed_offset == -1);
      CHECK(r.topics[0].partitions[1].committed_offset == 100 + v);
      CHECK(r.topics[0].partitions[1].metadata == "meta-" + std::to_string(v));
    }
  }
  // v8+: several groups at once; topics null = everything committed.
  protocol::OffsetFetchRequest multi;
  protocol::OffsetFetchRequest::OffsetFetchRequestGroup g1;
  g1.group_id = "g-v5";
  g1.topics = std::nullopt;
  protocol::OffsetFetchRequest::OffsetFetchRequestGroup g2;
  g2.group_id = "nobody";
  protocol::OffsetFetchRequest::OffsetFetchRequestTopics t;
  t.name = "t";
  t.partition_indexes = {2};
  g2.topics = std::vector<protocol::OffsetFetchRequest::OffsetFetchRequestTopics>{t};
  multi.groups = {g1, g2};
  multi.require_stable = true;
  auto r = f.call<protocol::OffsetFetchResponse>(multi, 9);
  REQUIRE(r.groups.size() == 2);
  REQUIRE(r.groups[0].topics.size() == 1);
  CHECK(r.groups[0].topics[0].partitions[0].committed_offset == 105);
  REQUIRE(r.groups[1].topics.size() == 1);
  CHECK(r.groups[1].topics[0].partitions[0].committed_offset == -1);
  CHECK(r.groups[1].topics[0].partitions[0].metadata == "");

  // v2+ with topics null: every committed partition of the group.
  protocol::OffsetFetchRequest all;
  all.group_id = "g-v2";
  all.topics = std::nullopt;
  auto a = f.call<protocol::OffsetFetchResponse>(all, 5);
  REQUIRE(a.topics.size() == 1);
  REQUIRE(a.topics[0].partitions.size() == 1);
  CHECK(a.topics[0].partitions[0].partition_index == 1);
  CHECK(a.topics[0].partitions[0].committed_offset == 102);
}

TEST_CASE("a commit on a network thread is written through its io_uring and answered after the write", "[groups]") {
  // ciuic.acks.all.fsync=false: nothing but the write itself delays the answer.
  auto overrides = base_overrides();
  overrides.push_back("ciuic.acks.all.fsync=false");
  BrokerFixture f(overrides);
  make_topic(f, "t", 1);
  auto& c = coordinator(f);
  asio::io_context ioc;  // this thread plays a network thread
  auto ring = DiskRing::create(ioc);
  std::optional<protocol::OffsetCommitResponse> answer;
  auto commit = [&](int64_t offset) {
    answer.reset();
    c.commit_offsets(commit_request("g-ring", "t", 0, offset, "m"), 8,
                     [&](protocol::OffsetCommitResponse r) { answer = std::move(r); });
  };
  auto committed_offset = [&] {
    auto r = c.fetch_offsets("g-ring", std::nullopt);
    return r.topics.empty() ? int64_t{-1} : r.topics[0].partitions[0].committed_offset;
  };
  if (!ring) {
    // io_uring refused here (the broker logs why): the write is a blocking
    // one, done before commit_offsets returns, and so is the answer.
    commit(5);
    REQUIRE(answer);
    CHECK(answer->topics[0].partitions[0].error_code == 0);
    CHECK(committed_offset() == 5);
    return;
  }
  ring->bind_to_this_thread();
  commit(7);
  // Queued, not written: no answer yet, and OffsetFetch does not see it.
  CHECK(!answer);
  CHECK(DiskRing::current()->in_flight() > 0);
  CHECK(committed_offset() == -1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!answer && std::chrono::steady_clock::now() < deadline) ioc.run_one_for(std::chrono::milliseconds(100));
  REQUIRE(answer);
  CHECK(answer->topics[0].partitions[0].error_code == 0);
  CHECK(committed_offset() == 7);
  ring->drain();
}

TEST_CASE("OffsetCommit error paths", "[groups]") {
  BrokerFixture f({"offsets.topic.num.partitions=5", "offset.metadata.max.bytes=10"});
  make_topic(f, "t", 2);
  coordinator(f);
  auto unknown_topic = f.call<protocol::OffsetCommitResponse>(commit_request("g", "nope", 0, 1), 8);
  CHECK(unknown_topic.topics[0].partitions[0].error_code == to_wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  auto bad_partition = f.call<protocol::OffsetCommitResponse>(commit_request("g", "t", 9, 1), 8);
  CHECK(bad_partition.topics[0].partitions[0].error_code == to_wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  auto too_large = f.call<protocol::OffsetCommitResponse>(commit_request("g", "t", 0, 1, std::string(11, 'x')), 8);
  CHECK(too_large.topics[0].partitions[0].error_code == to_wire(ErrorCode::OFFSET_METADATA_TOO_LARGE));
  auto fits = f.call<protocol::OffsetCommitResponse>(commit_request("g", "t", 0, 1, std::string(10, 'x')), 8);
  CHECK(fits.topics[0].partitions[0].error_code == 0);

  // A generation for a group that does not exist: an old generation.
  auto req = commit_request("ghost", "t", 0, 5);
  req.generation_id_or_member_epoch = 3;
  req.member_id = "m-1";
  auto gen = f.call<protocol::OffsetCommitResponse>(req, 8);
  CHECK(gen.topics[0].partitions[0].error_code == to_wire(ErrorCode::ILLEGAL_GENERATION));
  // The group with commits but no members rejects a member's commit.
  auto member = commit_request("g", "t", 0, 5);
  member.generation_id_or_member_epoch = 1;
  member.member_id = "m-1";
  auto um = f.call<protocol::OffsetCommitResponse>(member, 8);
  CHECK(um.topics[0].partitions[0].error_code == to_wire(ErrorCode::UNKNOWN_MEMBER_ID));
  // Nothing of the failed commits was stored.
  auto r = f.call<protocol::OffsetFetchResponse>(fetch_request("g", "t", {0}), 7);
  CHECK(r.topics[0].partitions[0].committed_offset == 1);
}

TEST_CASE("commits survive restarts and are Kafka records in __consumer_offsets", "[groups]") {
  BrokerFixture f(base_overrides());
  make_topic(f, "t", 2);
  coordinator(f);
  REQUIRE(f.call<protocol::OffsetCommitResponse>(commit_request("keep", "t", 0, 10, "first"), 8)
              .topics[0].partitions[0].error_code == 0);
  REQUIRE(f.call<protocol::OffsetCommitResponse>(commit_request("keep", "t", 0, 42, "second"), 8)
              .topics[0].partitions[0].error_code == 0);
  REQUIRE(f.call<protocol::OffsetCommitResponse>(commit_request("keep", "t", 1, 7, std::nullopt), 8)
              .topics[0].partitions[0].error_code == 0);

  // The records sit in the group's partition, in Kafka's format.
  auto p = f.broker().topics().partition("__consumer_offsets", groups::partition_for("keep", 5));
  REQUIRE(p);
  CHECK(p->high_watermark() == 3);
  auto read = p->log().read(0, 1 << 20);
  REQUIRE(read.is_ok());
  auto bytes = storage::read_slices(read.value());
  REQUIRE(bytes.is_ok());
  protocol::BatchSplitter sp(std::span<const uint8_t>(bytes.value()));
  protocol::RecordsEntry e;
  std::vector<groups::DecodedOffsetsRecord> seen;
  while (sp.next(&e) == protocol::SplitStatus::kEntry) {
    auto view = protocol::RecordBatchView::parse(e.bytes);
    REQUIRE(view.ok());
    auto recs = protocol::decode_records(view.value(), 1 << 20);
    REQUIRE(recs.ok());
    auto rd = recs.value().reader();
    protocol::RecordView rv;
    while (rd.next(&rv)) {
      REQUIRE(rv.key);
      REQUIRE((*rv.key)[0] == 0);
      CHECK((*rv.key)[1] == 1);  // OffsetCommitKey version 1
      REQUIRE(rv.value);
      CHECK((*rv.value)[1] == 3);  // OffsetCommitValue version 3
      auto d = groups::decode_offsets_record(*rv.key, rv.value);
      REQUIRE(d);
      seen.push_back(*d);
    }
  }
  REQUIRE(seen.size() == 3);
  CHECK(seen[1].group == "keep");
  CHECK(seen[1].topic == "t");
  CHECK(seen[1].offset->offset == 42);
  CHECK(seen[1].offset->metadata == "second");

  for (int round = 0; round < 2; ++round) {
    f.restart();
    coordinator(f);
    auto r = f.call<protocol::OffsetFetchResponse>(fetch_request("keep", "t", {0, 1}), 6);
    REQUIRE(r.topics.size() == 1);
    CHECK(r.topics[0].partitions[0].committed_offset == 42);
    CHECK(r.topics[0].partitions[0].metadata == "second");
    CHECK(r.topics[0].partitions[1].committed_offset == 7);
    CHECK(r.topics[0].partitions[1].metadata == "");
  }
}

TEST_CASE("a group an older version wrote to the masked-hash partition is moved to Kafka's partition", "[groups]") {
  // "my-group" hashes to -1906497762: versions before this one wrote it to
  // (h & 0x7fffffff) % 5 = 1, Kafka (and this version) to abs(h) % 5 = 2.
  const std::string g = "my-group";
  constexpr int32_t kOld = 1, kHome = 2;
  REQUIRE(groups::partition_for(g, 5) == kHome);
  BrokerFixture f(base_overrides());
  make_topic(f, "t", 3);
  coordinator(f);
  // The first commit creates __consumer_offsets.
  REQUIRE(f.call<protocol::OffsetCommitResponse>(commit_request("g3", "t", 0, 1), 8).topics[0].partitions[0].error_code ==
          0);
  auto old_p = f.broker().topics().partition("__consumer_offsets", kOld);
  auto home_p = f.broker().topics().partition("__consumer_offsets", kHome);
  REQUIRE(old_p);
  REQUIRE(home_p);
  // What an older version left in partition 1: commits (t-2 then deleted by
  // OffsetDelete), the group's metadata and a neighbour that belongs there.
  protocol::GroupMetadataValue meta;
  meta.protocol_type = "consumer";
  meta.generation = 7;
  meta.protocol = "range";
  meta.leader = std::nullopt;
  const std::string neighbour = "local-group";  // a positive hash: partition 1 under both formulas
  REQUIRE(groups::partition_for(neighbour, 5) == kOld);
  append_records(*old_p, {groups::offset_commit_record(g, "t", 0, committed(10, "old-0")),
                          groups::offset_commit_record(g, "t", 1, committed(20)),
                          groups::offset_commit_record(g, "t", 2, committed(30)),
                          groups::group_metadata_record(g, meta),
                          groups::offset_commit_record(neighbour, "t", 0, committed(5))});
  append_records(*old_p, {groups::offset_commit_record(g, "t", 2, std::nullopt),
                          groups::offset_commit_record(g, "t", 0, committed(11, "old-0b"))});
  // A half-done earlier move: the home already holds a newer t-1.
  append_records(*home_p, {groups::offset_commit_record(g, "t", 1, committed(25, "home-1"))});
  // "resident" (-347124400): old partition 3, home 0, so a load in partition
  // order would read its home first; the home's newer commit must still win.
  const std::string resident = "resident";
  REQUIRE(groups::partition_for(resident, 5) == 0);
  append_records(*f.broker().topics().partition("__consumer_offsets", 3),
                 {groups::offset_commit_record(resident, "t", 0, committed(40))});
  append_records(*f.broker().topics().partition("__consumer_offsets", 0),
                 {groups::offset_commit_record(resident, "t", 0, committed(41))});
  const int64_t old_end = old_p->log_end_offset();
  const int64_t home_end = home_p->log_end_offset();

  auto expect_state = [&] {
    auto r = f.call<protocol::OffsetFetchResponse>(fetch_request(g, "t", {0, 1, 2}), 6);
    REQUIRE(r.topics.size() == 1);
    REQUIRE(r.topics[0].partitions.size() == 3);
    CHECK(r.topics[0].partitions[0].committed_offset == 11);
    CHECK(r.topics[0].partitions[0].metadata == "old-0b");
    CHECK(r.topics[0].partitions[1].committed_offset == 25);
    CHECK(r.topics[0].partitions[1].metadata == "home-1");
    CHECK(r.topics[0].partitions[2].committed_offset == -1);
    protocol::DescribeGroupsRequest d;
    d.groups = {g};
    auto dg = f.call<protocol::DescribeGroupsResponse>(d, 5);
    REQUIRE(dg.groups.size() == 1);
    CHECK(dg.groups[0].error_code == 0);
    CHECK(dg.groups[0].group_state == "Empty");
    CHECK(dg.groups[0].protocol_type == "consumer");
    auto n = f.call<protocol::OffsetFetchResponse>(fetch_request(neighbour, "t", {0}), 6);
    CHECK(n.topics[0].partitions[0].committed_offset == 5);
    auto res = f.call<protocol::OffsetFetchResponse>(fetch_request(resident, "t", {0}), 6);
    CHECK(res.topics[0].partitions[0].committed_offset == 41);
  };

  f.restart();
  coordinator(f);
  expect_state();
  old_p = f.broker().topics().partition("__consumer_offsets", kOld);
  home_p = f.broker().topics().partition("__consumer_offsets", kHome);
  // The home partition now holds the whole state, written after what it had.
  auto home = offsets_records(*home_p);
  REQUIRE(static_cast<int64_t>(home.size()) > home_end);
  std::map<std::pair<std::string, int32_t>, int64_t> home_offsets;
  std::optional<protocol::GroupMetadataValue> home_meta;
  for (const auto& d : home) {
    CHECK(d.group == g);
    if (d.kind == groups::DecodedOffsetsRecord::Kind::kOffset && d.offset) home_offsets[{d.topic, d.partition}] = d.offset->offset;
    if (d.kind == groups::DecodedOffsetsRecord::Kind::kGroup) home_meta = d.metadata;
  }
  CHECK(home_offsets == std::map<std::pair<std::string, int32_t>, int64_t>{{{"t", 0}, 11}, {{"t", 1}, 25}});
  REQUIRE(home_meta);
  CHECK(home_meta->generation == 7);
  CHECK(home_meta->protocol == std::optional<std::string>("range"));
  // The old partition ends with a tombstone for each key the group still had
  // there (t-2 was deleted there already).
  auto old = offsets_records(*old_p);
  REQUIRE(static_cast<int64_t>(old.size()) > old_end);
  std::set<std::pair<std::string, int32_t>> tombstoned;
  bool meta_tombstoned = false;
  for (size_t i = static_cast<size_t>(old_end); i < old.size(); ++i) {
    CHECK(old[i].group == g);
    if (old[i].kind == groups::DecodedOffsetsRecord::Kind::kOffset) {
      CHECK_FALSE(old[i].offset);
      tombstoned.insert({old[i].topic, old[i].partition});
    } else {
      CHECK_FALSE(old[i].metadata);
      meta_tombstoned = true;
    }
  }
  CHECK(tombstoned == std::set<std::pair<std::string, int32_t>>{{"t", 0}, {"t", 1}});
  CHECK(meta_tombstoned);

  // Moved once: a second restart finds nothing to move and the same state.
  const int64_t old_after = old_p->log_end_offset(), home_after = home_p->log_end_offset();
  f.restart();
  coordinator(f);
  expect_state();
  CHECK(f.broker().topics().partition("__consumer_offsets", kOld)->log_end_offset() == old_after);
  CHECK(f.broker().topics().partition("__consumer_offsets", kHome)->log_end_offset() == home_after);
  // New commits go to the home partition.
  REQUIRE(f.call<protocol::OffsetCommitResponse>(commit_request(g, "t", 2, 99), 8).topics[0].partitions[0].error_code ==
          0);
  CHECK(f.broker().topics().partition("__consumer_offsets", kHome)->log_end_offset() == home_after + 1);
}

TEST_CASE("requests before the load finishes are told to retry", "[groups]") {
  BrokerFixture f(base_overrides());
  make_topic(f, "t", 1);
  coordinator(f);
  REQUIRE(f.call<protocol::OffsetCommitResponse>(commit_request("g", "t", 0, 3), 8)
              .topics[0].partitions[0].error_code == 0);
  f.restart();
  // Whatever the first answer is, it is either the load error or the data.
  auto r = f.call<protocol::OffsetFetchResponse>(fetch_request("g", "t", {0}), 6);
  if (r.error_code != 0) {
    CHECK(r.error_code == to_wire(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS));
    coordinator(f);
    r = f.call<protocol::OffsetFetchResponse>(fetch_request("g", "t", {0}), 6);
  }
  CHECK(r.topics[0].partitions[0].committed_offset == 3);
}

// Found by the differential test against Kafka 3.9.1 (tests/differential,
// scenario deleted_topic): Kafka removes a deleted topic's committed offsets
// from every group (tombstones in __consumer_offsets), so OffsetFetch
// answers -1 for them and a topic re-created with the same name does not
// inherit the old positions. We kept them.
TEST_CASE("deleting a topic deletes the groups' committed offsets for it", "[groups]") {
  BrokerFixture f(base_overrides());
  make_topic(f, "gone", 2);
  make_topic(f, "stays", 1);
  coordinator(f);
  for (const char* g : {"g1", "g2"}) {
    REQUIRE(f.call<protocol::OffsetCommitResponse>(commit_request(g, "gone", 0, 10, "m"), 8)
                .topics[0].partitions[0].error_code == 0);
    REQUIRE(f.call<protocol::OffsetCommitResponse>(commit_request(g, "gone", 1, 11, "m"), 8)
                .topics[0].partitions[0].error_code == 0);
    REQUIRE(f.call<protocol::OffsetCommitResponse>(commit_request(g, "stays", 0, 5, "m"), 8)
                .topics[0].partitions[0].error_code == 0);
  }
  protocol::DeleteTopicsRequest del;
  del.topic_names = {"gone"};
  REQUIRE(f.call<protocol::DeleteTopicsResponse>(del, 4).responses.at(0).error_code == 0);

  auto check_gone = [&] {
    for (const char* g : {"g1", "g2"}) {
      CAPTURE(g);
      auto r = f.call<protocol::OffsetFetchResponse>(fetch_request(g, "gone", {0, 1}), 6);
      REQUIRE(r.topics.size() == 1);
      CHECK(r.topics[0].partitions[0].committed_offset == -1);
      CHECK(r.topics[0].partitions[1].committed_offset == -1);
      auto s = f.call<protocol::OffsetFetchResponse>(fetch_request(g, "stays", {0}), 6);
      CHECK(s.topics[0].partitions[0].committed_offset == 5);
    }
  };
  check_gone();
  make_topic(f, "gone", 2);  // re-created: starts with no committed positions
  check_gone();
  f.restart();  // the tombstones are in __consumer_offsets
  coordinator(f);
  check_gone();
}

}  // namespace CK_UNITY_ID
