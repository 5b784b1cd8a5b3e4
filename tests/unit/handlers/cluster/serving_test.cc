// tests/unit/handlers/cluster/serving_test.cc: cluster-mode serving: Metadata
// and DescribeCluster from the metadata cache, NOT_LEADER_OR_FOLLOWER for
// client requests on partitions this broker does not lead; ControlledShutdown
// and ElectLeaders on a broker that is not the active controller;
// controller_mutation_rate on topics written to ZooKeeper.
#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <thread>

#include "broker/admin/admin_worker.h"
#include "broker/broker.h"
#include "broker/quotas/client_quotas.h"
#include "broker/replica/leader_replicas.h"
#include "protocol/generated/alter_client_quotas.h"
#include "protocol/generated/controlled_shutdown.h"
#include "protocol/generated/create_partitions.h"
#include "protocol/generated/create_topics.h"
#include "protocol/generated/delete_topics.h"
#include "protocol/generated/delete_records.h"
#include "protocol/generated/describe_cluster.h"
#include "protocol/generated/elect_leaders.h"
#include "protocol/generated/fetch.h"
#include "protocol/generated/list_offsets.h"
#include "protocol/generated/metadata.h"
#include "tests/unit/handlers/cluster/cluster_fixture.h"
#include "tests/unit/handlers/produce/produce_helpers.h"

namespace ciuickafka::broker::test {
namespace {

using protocol::ErrorCode;
using protocol::MetadataRequest;
using protocol::MetadataResponse;
using protocol::to_wire;

MetadataRequest metadata_for(std::vector<std::string> names, bool auto_create = false) {
  MetadataRequest r;
  std::vector<MetadataRequest::MetadataRequestTopic> topics;
  for (auto& n : names) {
    MetadataRequest::MetadataRequestTopic t;
    t.name = n;
    topics.push_back(t);
  }
  r.topics = topics;
  r.allow_auto_topic_creation = auto_create;
  return r;
}

const MetadataResponse::MetadataResponseTopic& topic_named(const MetadataResponse& r, const std::string& n) {
  for (const auto& t : r.topics)
    if (t.name == n) return t;
  throw std::runtime_error("topic not in the response: " + n);
}

TEST_CASE("Metadata in cluster mode answers from the metadata cache") {
  ClusterFixture c;
  auto um = update_metadata({{"m", 0, 1, 4, {1, 2}, {1, 2}}, {"m", 1, 3, 2, {3}, {3, 1}}, {"gone", 0, 2, 1, {2}, {2}}},
                            {1, 2});
  REQUIRE(c.f().call<protocol::UpdateMetadataResponse>(um, 8).error_code == 0);
  um = update_metadata({{"gone", 0, kLeaderDuringDelete, 1, {2}, {2}}}, {1, 2});
  REQUIRE(c.f().call<protocol::UpdateMetadataResponse>(um, 8).error_code == 0);

  auto resp = c.f().call<MetadataResponse>(metadata_for({"m", "gone", "nope"}), 12);
  CHECK(resp.controller_id == 9);
  REQUIRE(resp.brokers.size() == 2);
  CHECK(resp.brokers[1].node_id == 2);
  CHECK(resp.brokers[1].host == "host2");
  CHECK(resp.brokers[1].port == 9002);
  const auto& m = topic_named(resp, "m");
  CHECK(m.error_code == 0);
  CHECK(m.topic_id == uuid(7));
  REQUIRE(m.partitions.size() == 2);
  CHECK(m.partitions[0].error_code == 0);
  CHECK(m.partitions[0].leader_id == 1);
  CHECK(m.partitions[0].leader_epoch == 4);
  CHECK(m.partitions[0].replica_nodes == std::vector<int32_t>{1, 2});
  CHECK(m.partitions[0].isr_nodes == std::vector<int32_t>{1, 2});
  // Leader 3 is not live.
  CHECK(m.partitions[1].error_code == to_wire(ErrorCode::LEADER_NOT_AVAILABLE));
  CHECK(m.partitions[1].leader_id == -1);
  CHECK(m.partitions[1].offline_replicas == std::vector<int32_t>{3});
  // Being deleted: gone from the cache, as in Kafka.
  CHECK(topic_named(resp, "gone").error_code == to_wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  CHECK(topic_named(resp, "nope").error_code == to_wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));

  // All topics: the cache's.
  MetadataRequest all;
  all.topics = std::nullopt;
  auto every = c.f().call<MetadataResponse>(all, 12);
  REQUIRE(every.topics.size() == 1);
  CHECK(every.topics[0].name == "m");

  // v0: only live replicas, REPLICA_NOT_AVAILABLE when some were left out.
  auto v0 = c.f().call<MetadataResponse>(metadata_for({"m"}, /*auto_create=*/true), 0);  // v0 has no flag
  const auto& m0 = topic_named(v0, "m");
  CHECK(m0.partitions[1].replica_nodes == std::vector<int32_t>{1});

  auto dc = c.f().call<protocol::DescribeClusterResponse>(protocol::DescribeClusterRequest{}, 0);
  CHECK(dc.controller_id == 9);
  CHECK(dc.brokers.size() == 2);
}

TEST_CASE("Metadata in cluster mode before the first UpdateMetadata: named topics are LEADER_NOT_AVAILABLE") {
  // A broker just started knows no topic yet; UNKNOWN_TOPIC_OR_PARTITION
  // would make librdkafka set the topic's partition count to 0.
  ClusterFixture c;
  MetadataRequest by_id;
  MetadataRequest::MetadataRequestTopic idt;
  idt.name = std::nullopt;
  idt.topic_id = uuid(7);
  by_id.topics = std::vector<MetadataRequest::MetadataRequestTopic>{idt};
  auto early = c.f().call<MetadataResponse>(metadata_for({"m", "bad name!"}), 12);
  CHECK(topic_named(early, "m").error_code == to_wire(ErrorCode::LEADER_NOT_AVAILABLE));
  CHECK(topic_named(early, "m").partitions.empty());
  CHECK(topic_named(early, "bad name!").error_code == to_wire(ErrorCode::INVALID_TOPIC_EXCEPTION));
  auto early_id = c.f().call<MetadataResponse>(by_id, 12);
  REQUIRE(early_id.topics.size() == 1);
  CHECK(early_id.topics[0].error_code == to_wire(ErrorCode::LEADER_NOT_AVAILABLE));

  // Once the controller has spoken, an unknown topic is unknown.
  auto um = update_metadata({{"m", 0, 1, 4, {1, 2}, {1, 2}}}, {1, 2});
  REQUIRE(c.f().call<protocol::UpdateMetadataResponse>(um, 8).error_code == 0);
  auto later = c.f().call<MetadataResponse>(metadata_for({"m", "nope"}), 12);
  CHECK(topic_named(later, "m").error_code == 0);
  CHECK(topic_named(later, "m").partitions.size() == 1);
  CHECK(topic_named(later, "nope").error_code == to_wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  by_id.topics->front().topic_id = uuid(99);
  auto later_id = c.f().call<MetadataResponse>(by_id, 12);
  REQUIRE(later_id.topics.size() == 1);
  CHECK(later_id.topics[0].error_code == to_wire(ErrorCode::UNKNOWN_TOPIC_ID));
}

TEST_CASE("cluster mode: Produce, Fetch v0-10, ListOffsets, DeleteRecords on a follower are NOT_LEADER_OR_FOLLOWER") {
  ClusterFixture c;
  auto lai = leader_and_isr({{"p", 0, 1, 1, {1, 2}, {1, 2}}, {"p", 1, 2, 1, {2, 1}, {2, 1}}});
  auto r = c.f().call<protocol::LeaderAndIsrResponse>(lai, 7);
  REQUIRE(r.topics.at(0).partition_errors.at(1).error_code == 0);
  REQUIRE(c.f().call<protocol::UpdateMetadataResponse>(
              update_metadata({{"p", 0, 1, 1, {1, 2}, {1, 2}}, {"p", 1, 2, 1, {2, 1}, {2, 1}}}, {1, 2}), 8)
              .error_code == 0);

  auto batch = make_batch({});
  auto to_leader = only_partition(c.f().call<protocol::ProduceResponse>(produce_request("p", 0, batch), 9));
  CHECK(to_leader.error_code == 0);
  auto to_follower = only_partition(c.f().call<protocol::ProduceResponse>(produce_request("p", 1, batch), 9));
  CHECK(to_follower.error_code == to_wire(ErrorCode::NOT_LEADER_OR_FOLLOWER));
  // Known to the cluster but not hosted here: NOT_LEADER_OR_FOLLOWER; unknown: UNKNOWN_TOPIC_OR_PARTITION.
  REQUIRE(c.f().call<protocol::UpdateMetadataResponse>(update_metadata({{"elsewhere", 0, 2, 0, {2}, {2}}}, {1, 2}), 8)
              .error_code == 0);
  CHECK(only_partition(c.f().call<protocol::ProduceResponse>(produce_request("elsewhere", 0, batch), 9)).error_code ==
        to_wire(ErrorCode::NOT_LEADER_OR_FOLLOWER));
  CHECK(only_partition(c.f().call<protocol::ProduceResponse>(produce_request("unknown", 0, batch), 9)).error_code ==
        to_wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));

  // A consumer fetch of the follower partition.
  protocol::FetchRequest fr;
  fr.replica_id = -1;
  fr.max_wait_ms = 0;
  fr.min_bytes = 0;
  fr.max_bytes = 1 << 20;
  protocol::FetchRequest::FetchTopic ft;
  ft.topic = "p";
  for (int32_t i : {0, 1}) {
    protocol::FetchRequest::FetchPartition fp;
    fp.partition = i;
    fp.partition_max_bytes = 1 << 20;
    ft.partitions.push_back(fp);
  }
  fr.topics.push_back(ft);
  // v10 carries no client metadata: consumers read from leaders only.
  auto fetched = c.f().call<protocol::FetchResponse>(fr, 10);
  REQUIRE(fetched.responses.size() == 1);
  REQUIRE(fetched.responses[0].partitions.size() == 2);
  CHECK(fetched.responses[0].partitions[0].error_code == 0);
  CHECK(fetched.responses[0].partitions[1].error_code == to_wire(ErrorCode::NOT_LEADER_OR_FOLLOWER));
  // v11+ (KIP-392): a follower serves consumers too, up to its HW.
  fetched = c.f().call<protocol::FetchResponse>(fr, 11);
  REQUIRE(fetched.responses[0].partitions.size() == 2);
  CHECK(fetched.responses[0].partitions[1].error_code == 0);
  CHECK(fetched.responses[0].partitions[1].high_watermark == 0);
  CHECK(fetched.responses[0].partitions[1].preferred_read_replica == -1);

  protocol::ListOffsetsRequest lo;
  lo.replica_id = -1;
  protocol::ListOffsetsRequest::ListOffsetsTopic lt;
  lt.name = "p";
  protocol::ListOffsetsRequest::ListOffsetsPartition lp;
  lp.partition_index = 1;
  lp.timestamp = -1;
  lt.partitions.push_back(lp);
  lo.topics.push_back(lt);
  auto listed = c.f().call<protocol::ListOffsetsResponse>(lo, 7);
  CHECK(listed.topics.at(0).partitions.at(0).error_code == to_wire(ErrorCode::NOT_LEADER_OR_FOLLOWER));

  protocol::DeleteRecordsRequest dr;
  protocol::DeleteRecordsRequest::DeleteRecordsTopic dt;
  dt.name = "p";
  protocol::DeleteRecordsRequest::DeleteRecordsPartition dp;
  dp.partition_index = 1;
  dp.offset = -1;
  dt.partitions.push_back(dp);
  dr.topics.push_back(dt);
  auto del = c.f().call<protocol::DeleteRecordsResponse>(dr, 2);
  CHECK(del.topics.at(0).partitions.at(0).error_code == to_wire(ErrorCode::NOT_LEADER_OR_FOLLOWER));
}


// Broker 2's Fetch (v11) of p-0 at offset, at the leader epoch it knows; the partition's error code.
int16_t follower_fetch(ClusterFixture& c, int64_t offset, int32_t epoch) {
  protocol::FetchRequest follower;
  follower.replica_id = 2;
  follower.max_wait_ms = 0;
  follower.max_bytes = 1 << 20;
  protocol::FetchRequest::FetchTopic ft;
  ft.topic = "p";
  protocol::FetchRequest::FetchPartition fp;
  fp.partition = 0;
  fp.fetch_offset = offset;
  fp.current_leader_epoch = epoch;
  fp.partition_max_bytes = 1 << 20;
  ft.partitions.push_back(fp);
  follower.topics.push_back(ft);
  return c.f().call<protocol::FetchResponse>(follower, 11).responses.at(0).partitions.at(0).error_code;
}

// A consumer Fetch of p-0 (led here, replicas [1,2]) at offset 0, version v, from rack.
protocol::FetchResponse::PartitionData consumer_fetch(ClusterFixture& c, int16_t v, const std::string& rack) {
  protocol::FetchRequest fr;
  fr.replica_id = -1;
  fr.max_wait_ms = 0;
  fr.min_bytes = 0;
  fr.max_bytes = 1 << 20;
  if (v >= 11) fr.rack_id = rack;
  protocol::FetchRequest::FetchTopic ft;
  ft.topic = "p";
  protocol::FetchRequest::FetchPartition fp;
  fp.partition = 0;
  fp.partition_max_bytes = 1 << 20;
  ft.partitions.push_back(fp);
  fr.topics.push_back(ft);
  auto resp = c.f().call<protocol::FetchResponse>(fr, v);
  REQUIRE(resp.responses.size() == 1);
  REQUIRE(resp.responses[0].partitions.size() == 1);
  return resp.responses[0].partitions[0];
}

TEST_CASE("cluster mode, KIP-392: the leader names its in-sync follower of the client's rack") {
  ClusterFixture c({"broker.rack=r1", "replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector"});
  c.rm().add_role_listener(&c.broker().service<replica::LeaderReplicas>());  // as Broker::start_cluster does
  REQUIRE(c.f().call<protocol::LeaderAndIsrResponse>(leader_and_isr({{"p", 0, 1, 1, {1, 2}, {1, 2}}}), 7)
              .topics.at(0)
              .partition_errors.at(0)
              .error_code == 0);
  auto um = update_metadata({{"p", 0, 1, 1, {1, 2}, {1, 2}}}, {1, 2});
  um.live_brokers[0].rack = "r1";
  um.live_brokers[1].rack = "r2";
  REQUIRE(c.f().call<protocol::UpdateMetadataResponse>(um, 8).error_code == 0);
  auto to_leader = only_partition(c.f().call<protocol::ProduceResponse>(produce_request("p", 0, make_batch({})), 9));
  REQUIRE(to_leader.error_code == 0);

  // Broker 2 has not fetched yet: its position is unknown, so the leader
  // serves (nothing yet: the HW waits for broker 2).
  auto d = consumer_fetch(c, 11, "r2");
  CHECK(d.error_code == 0);
  CHECK(d.preferred_read_replica == -1);
  CHECK(d.high_watermark == 0);

  // Broker 2 fetches at the leader's LEO (3: the batch holds three records):
  // now it holds offset 0, and the HW moves to 3.
  REQUIRE(follower_fetch(c, 3, 1) == 0);

  d = consumer_fetch(c, 11, "r2");
  CHECK(d.error_code == 0);
  CHECK(d.preferred_read_replica == 2);
  CHECK(d.records.size() == 0);
  CHECK(d.high_watermark == 3);
  // The leader's own rack, no rack, a rack nobody is in, and Fetch v10: the leader serves.
  for (const char* rack : {"r1", "", "r9"}) {
    INFO(rack);
    d = consumer_fetch(c, 11, rack);
    CHECK(d.error_code == 0);
    CHECK(d.high_watermark == 3);
    CHECK(d.preferred_read_replica == -1);
    CHECK(d.records.size() > 0);
  }
  d = consumer_fetch(c, 10, "");
  CHECK(d.records.size() > 0);
}

TEST_CASE("cluster mode, KIP-392: without replica.selector.class the leader names nobody") {
  ClusterFixture c({"broker.rack=r1"});
  c.rm().add_role_listener(&c.broker().service<replica::LeaderReplicas>());
  REQUIRE(c.f().call<protocol::LeaderAndIsrResponse>(leader_and_isr({{"p", 0, 1, 1, {1, 2}, {1, 2}}}), 7)
              .topics.at(0)
              .partition_errors.at(0)
              .error_code == 0);
  auto um = update_metadata({{"p", 0, 1, 1, {1, 2}, {1, 2}}}, {1, 2});
  um.live_brokers[1].rack = "r2";
  REQUIRE(c.f().call<protocol::UpdateMetadataResponse>(um, 8).error_code == 0);
  auto d = consumer_fetch(c, 11, "r2");
  CHECK(d.error_code == 0);
  CHECK(d.preferred_read_replica == -1);
}

// A client's ListOffsets of p-0 at `timestamp` (v7, read_uncommitted).
protocol::ListOffsetsResponse::ListOffsetsPartitionResponse list_offset(ClusterFixture& c, int64_t timestamp,
                                                                       int32_t replica_id = -1) {
  protocol::ListOffsetsRequest lo;
  lo.replica_id = replica_id;
  protocol::ListOffsetsRequest::ListOffsetsTopic lt;
  lt.name = "p";
  protocol::ListOffsetsRequest::ListOffsetsPartition lp;
  lp.partition_index = 0;
  lp.timestamp = timestamp;
  lt.partitions.push_back(lp);
  lo.topics.push_back(lt);
  return c.f().call<protocol::ListOffsetsResponse>(lo, 7).topics.at(0).partitions.at(0);
}

TEST_CASE("cluster mode, KIP-207: a new leader whose HW is below its epoch's start answers OFFSET_NOT_AVAILABLE") {
  ClusterFixture c;
  c.rm().add_role_listener(&c.broker().service<replica::LeaderReplicas>());  // as Broker::start_cluster does
  REQUIRE(c.f().call<protocol::LeaderAndIsrResponse>(leader_and_isr({{"p", 0, 1, 1, {1, 2}, {1, 2}}}), 7)
              .topics.at(0).partition_errors.at(0).error_code == 0);
  REQUIRE(only_partition(c.f().call<protocol::ProduceResponse>(produce_request("p", 0, make_batch({})), 9))
              .error_code == 0);
  // Epoch 1 began at offset 0: the HW (0, broker 2 has not fetched) is not
  // below it, so the end is the HW, as before.
  auto latest = list_offset(c, -1);
  CHECK(latest.error_code == 0);
  CHECK(latest.offset == 0);

  // Leader again at epoch 2 (a restart, or a re-election): the epoch starts
  // at the LEO, 3, and the HW is 0.
  REQUIRE(c.f().call<protocol::LeaderAndIsrResponse>(leader_and_isr({{"p", 0, 1, 2, {1, 2}, {1, 2}}}), 7)
              .topics.at(0).partition_errors.at(0).error_code == 0);
  latest = list_offset(c, -1);
  CHECK(latest.error_code == to_wire(ErrorCode::OFFSET_NOT_AVAILABLE));
  CHECK(latest.offset == -1);
  // A time whose record is not below the HW: the same; the log start still answers.
  CHECK(list_offset(c, 0).error_code == to_wire(ErrorCode::OFFSET_NOT_AVAILABLE));
  CHECK(list_offset(c, -3).error_code == to_wire(ErrorCode::OFFSET_NOT_AVAILABLE));
  auto earliest = list_offset(c, -2);
  CHECK(earliest.error_code == 0);
  CHECK(earliest.offset == 0);
  // A replica (and the debug id) is not a client: it gets the log end offset / HW.
  auto replica = list_offset(c, -1, 2);
  CHECK(replica.error_code == 0);
  CHECK(replica.offset == 3);
  CHECK(list_offset(c, -1, -2).error_code == 0);

  // Broker 2 fetches at the LEO: the HW reaches the epoch's start, and the
  // end is known again.
  REQUIRE(follower_fetch(c, 3, 2) == 0);
  latest = list_offset(c, -1);
  CHECK(latest.error_code == 0);
  CHECK(latest.offset == 3);
  auto by_time = list_offset(c, 0);
  CHECK(by_time.error_code == 0);
  CHECK(by_time.offset == 0);
}

TEST_CASE("cluster mode: CreateTopics places replicas on the brokers Metadata names (the controller's list)") {
  // This broker never registered, so its own view of /brokers/ids is empty;
  // the controller's UpdateMetadata says 1, 2 and 3 are alive. Kafka's
  // ZkAdminManager takes the metadata cache's list, so CreateTopics and
  // Metadata agree about who is alive.
  ClusterFixture c;
  REQUIRE(c.f().call<protocol::UpdateMetadataResponse>(update_metadata({}, {1, 2, 3}), 8).error_code == 0);
  protocol::CreateTopicsRequest req;
  protocol::CreateTopicsRequest::CreatableTopic t;
  t.name = "rf3";
  t.num_partitions = 2;
  t.replication_factor = 3;
  req.topics.push_back(t);
  req.validate_only = true;
  req.timeout_ms = 0;
  auto resp = c.f().call<protocol::CreateTopicsResponse>(req, 7);
  REQUIRE(resp.topics.size() == 1);
  INFO(resp.topics[0].error_message.value_or(""));
  CHECK(resp.topics[0].error_code == 0);
  // Four is more than the controller says are alive.
  req.topics[0].replication_factor = 4;
  resp = c.f().call<protocol::CreateTopicsResponse>(req, 7);
  CHECK(resp.topics.at(0).error_code == to_wire(ErrorCode::INVALID_REPLICATION_FACTOR));
}

protocol::CreateTopicsRequest create_one_topic(const std::string& name, int32_t timeout_ms) {
  protocol::CreateTopicsRequest req;
  auto& t = req.topics.emplace_back();
  t.name = name;
  t.num_partitions = 1;
  t.replication_factor = 1;
  req.timeout_ms = timeout_ms;
  return req;
}

TEST_CASE("cluster mode: CreateTopics waits for its leaders without holding the admin worker") {
  // No controller runs here: the test plays it. The answer must wait until
  // an UpdateMetadata names the new partition's leader (Kafka's
  // DelayedCreatePartitions), and meanwhile the admin worker serves other
  // work: a task posted to it runs before that UpdateMetadata is sent.
  ClusterFixture c;
  REQUIRE(c.f().call<protocol::UpdateMetadataResponse>(update_metadata({}, {1, 2, 3}), 8).error_code == 0);
  replication::zk::Session& zk = c.tool_session();
  std::atomic<bool> worker_was_free{false};
  std::atomic<bool> znode_seen{false};
  // The znode's creation, by a ZooKeeper watch.
  std::promise<void> created;
  auto created_f = created.get_future();
  std::atomic<bool> fired{false};
  auto on_create = [&](replication::zk::EventType, const std::string&) {
    if (!fired.exchange(true)) created.set_value();
  };
  if (zk.exists("/brokers/topics/late", nullptr, on_create) == replication::zk::Code::kOk) on_create({}, {});
  std::thread controller([&] {
    if (created_f.wait_for(std::chrono::seconds(20)) != std::future_status::ready) return;
    znode_seen = true;
    std::promise<void> ran;
    auto done = ran.get_future();
    if (c.broker().service<admin::AdminWorker>().post([&ran] { ran.set_value(); }))
      worker_was_free = done.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
    c.rm().update_metadata(update_metadata({{"late", 0, 2}}, {1, 2, 3}), 8);
    if (!worker_was_free) done.wait();  // the task refers to this frame
  });
  auto resp = c.f().call<protocol::CreateTopicsResponse>(create_one_topic("late", 15000), 7);
  controller.join();
  CHECK(znode_seen);
  CHECK(worker_was_free);
  REQUIRE(resp.topics.size() == 1);
  INFO(resp.topics[0].error_message.value_or(""));
  CHECK(resp.topics[0].error_code == 0);
  CHECK(c.rm().metadata_cache().waiters() == 0);
}

TEST_CASE("cluster mode: CreateTopics still without leaders at timeout_ms is REQUEST_TIMED_OUT, its wait not counted as work") {
  // request_percentage 5 (% of one thread): the 1.5 s wait, counted, would
  // put this client over it (15 % of a 10 s window); the work itself (a few
  // znodes in the in-memory ZooKeeper) is far below. Kafka counts a
  // request's handler time, not its time in purgatory.
  ClusterFixture c;
  REQUIRE(c.f().call<protocol::UpdateMetadataResponse>(update_metadata({}, {1, 2, 3}), 8).error_code == 0);
  c.set_client_quota("request_percentage", 5.0);
  auto& quotas = c.broker().client_quotas();
  const uint64_t throttled_before = quotas.throttled(quotas::Kind::kRequest);
  const auto start = std::chrono::steady_clock::now();
  auto resp = c.f().call<protocol::CreateTopicsResponse>(create_one_topic("never-led", 1500), 7);
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(1500));
  REQUIRE(resp.topics.size() == 1);
  CHECK(resp.topics[0].error_code == to_wire(ErrorCode::REQUEST_TIMED_OUT));
  CHECK(resp.topics[0].error_message.value_or("").find("not elected within 1500 ms") != std::string::npos);
  CHECK(resp.throttle_time_ms == 0);
  CHECK(quotas.throttled(quotas::Kind::kRequest) == throttled_before);
  CHECK(c.rm().metadata_cache().waiters() == 0);
}

TEST_CASE("cluster mode: controller_mutation_rate limits CreateTopics, CreatePartitions and DeleteTopics in ZooKeeper") {
  // 1 partition per second, a bucket of 20 (2 windows of 10 s).
  ClusterFixture c({"controller.quota.window.num=2", "controller.quota.window.size.seconds=10"});
  REQUIRE(c.f().call<protocol::UpdateMetadataResponse>(update_metadata({}, {1, 2, 3}), 8).error_code == 0);
  c.set_client_quota("controller_mutation_rate", 1.0);
  replication::zk::Session* zk = &c.tool_session();
  auto exists = [&](const std::string& path) { return zk->exists(path) == replication::zk::Code::kOk; };
  const auto throttled = to_wire(ErrorCode::THROTTLING_QUOTA_EXCEEDED);

  protocol::CreateTopicsRequest req;
  req.timeout_ms = 0;  // answered once the znodes are written
  for (auto [name, parts] : {std::pair{"q1", 15}, std::pair{"q2", 30}, std::pair{"q3", 1}}) {
    auto& t = req.topics.emplace_back();
    t.name = name;
    t.num_partitions = parts;
    t.replication_factor = 1;
  }
  auto created = c.f().call<protocol::CreateTopicsResponse>(req, 7);
  REQUIRE(created.topics.size() == 3);
  CHECK(created.topics[0].error_code == 0);
  CHECK(created.topics[1].error_code == 0);  // the bucket had 5: not below zero (-25 after)
  CHECK(created.topics[2].error_code == throttled);
  CHECK(created.throttle_time_ms > 0);
  CHECK(exists("/brokers/topics/q1"));
  CHECK(exists("/brokers/topics/q2"));
  CHECK_FALSE(exists("/brokers/topics/q3"));

  protocol::CreatePartitionsRequest grow;
  grow.timeout_ms = 0;
  auto& g = grow.topics.emplace_back();
  g.name = "q1";
  g.count = 16;
  g.assignments = std::nullopt;
  CHECK(c.f().call<protocol::CreatePartitionsResponse>(grow, 3).results.at(0).error_code == throttled);
  std::string data;
  REQUIRE(zk->get("/brokers/topics/q1", &data) == replication::zk::Code::kOk);
  CHECK(replication::decode_topic_assignment(data).value().partitions.size() == 15);
  auto grown = c.f().call<protocol::CreatePartitionsResponse>(grow, 2);  // permissive: added, throttled
  CHECK(grown.results.at(0).error_code == 0);
  CHECK(grown.throttle_time_ms > 0);
  REQUIRE(zk->get("/brokers/topics/q1", &data) == replication::zk::Code::kOk);
  CHECK(replication::decode_topic_assignment(data).value().partitions.size() == 16);

  // DeleteTopics counts the partitions this broker's metadata knows.
  std::vector<PartitionSpec> q2;
  for (int32_t p = 0; p < 30; ++p) q2.push_back(PartitionSpec{"q2", p});
  REQUIRE(c.f().call<protocol::UpdateMetadataResponse>(update_metadata(q2, {1, 2, 3}), 8).error_code == 0);
  protocol::DeleteTopicsRequest del;
  del.timeout_ms = 0;
  del.topic_names = {"q2"};
  CHECK(c.f().call<protocol::DeleteTopicsResponse>(del, 5).responses.at(0).error_code == throttled);
  CHECK_FALSE(exists("/admin/delete_topics/q2"));
  CHECK(c.f().call<protocol::DeleteTopicsResponse>(del, 4).responses.at(0).error_code == 0);
  CHECK(exists("/admin/delete_topics/q2"));
}

TEST_CASE("cluster mode, not the active controller: ControlledShutdown and ElectLeaders answer NOT_CONTROLLER") {
  ClusterFixture c;
  protocol::ControlledShutdownRequest cs;
  cs.broker_id = 2;
  cs.broker_epoch = 10;
  CHECK(c.f().call<protocol::ControlledShutdownResponse>(cs, 3).error_code ==
        protocol::to_wire(protocol::ErrorCode::NOT_CONTROLLER));
  protocol::ElectLeadersRequest el;
  protocol::ElectLeadersRequest::TopicPartitions tp;
  tp.topic = "t";
  tp.partitions = {0, 1};
  el.topic_partitions = std::vector<protocol::ElectLeadersRequest::TopicPartitions>{tp};
  auto resp = c.f().call<protocol::ElectLeadersResponse>(el, 2);
  CHECK(resp.error_code == 0);
  REQUIRE(resp.replica_election_results.size() == 1);
  REQUIRE(resp.replica_election_results[0].partition_result.size() == 2);
  for (const auto& p : resp.replica_election_results[0].partition_result)
    CHECK(p.error_code == protocol::to_wire(protocol::ErrorCode::NOT_CONTROLLER));
  // A null list (every partition): the top-level code says it (v1+).
  el.topic_partitions = std::nullopt;
  CHECK(c.f().call<protocol::ElectLeadersResponse>(el, 1).error_code ==
        protocol::to_wire(protocol::ErrorCode::NOT_CONTROLLER));
}

}  // namespace
}  // namespace ciuickafka::broker::test
