// tests/unit/replica/replication_test.cc: two in-process brokers on
// 127.0.0.1 ephemeral ports, roles set directly (Partition::set_role plus the
// listener hooks, as the replica manager will call them): the follower
// fetcher copies the leader byte for byte, the leader's HW follows the
// follower, acks=all waits for it, a diverged follower truncates, fetchers
// stop promptly, and ISR shrinks go to a fake controller as AlterPartition.
//
// The two brokers create the topic independently, so their topic ids
// differ: the fetchers are capped at Fetch v12 (topics by name). Cluster
// mode creates the logs with the controller's topic id and uses v17.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "broker/broker.h"
#include "broker/cluster/replica_manager.h"
#include "broker/produce/produce_service.h"
#include "broker/replica/fetcher_manager.h"
#include "broker/replica/hw_checkpoint.h"
#include "broker/replica/leader_replicas.h"
#include "broker/replica/replica_roles_listener.h"
#include "storage/io/ring.h"
#include "protocol/generated/alter_partition.h"
#include "protocol/generated/fetch.h"
#include "protocol/generated/produce.h"
#include "protocol/records/batch_builder.h"
#include "replication/net/broker_client.h"
#include "storage/checkpoint.h"
#include "tests/unit/replication/fake_kafka_server.h"
#include "tests/unit/server/server_test_util.h"

namespace ciuickafka::broker::test {
namespace {

using protocol::ErrorCode;
using replica::LeaderReplicas;
using replica::ReplicaFetcherManager;

bool eventually(const std::function<bool()>& cond, int timeout_ms = 10000) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return cond();
}

std::vector<uint8_t> batch(int n, const std::string& prefix) {
  protocol::BatchBuilder b(protocol::BatchOptions{});
  for (int i = 0; i < n; ++i) {
    std::string k = "k" + std::to_string(i);
    std::string v = prefix + std::to_string(i);
    b.add(1000 + i, protocol::as_bytes(k), protocol::as_bytes(v));
  }
  auto r = b.build();
  if (!r.ok()) throw std::runtime_error("batch does not build");
  return r.value();
}

bool append_to(Partition& p, std::vector<uint8_t> records) { return p.append(records, Broker::now_ms()).is_ok(); }

// Every byte of the log from its start to the LEO.
std::vector<uint8_t> all_bytes(Partition& p) {
  auto r = p.log().read(p.log_start_offset(), 1u << 30);
  if (!r.is_ok()) throw std::runtime_error("read failed");
  auto b = storage::read_slices(r.value());
  if (!b.is_ok()) throw std::runtime_error("read_slices failed");
  return b.value();
}

PartitionRoleState role(ReplicaRole r, int32_t leader, int32_t epoch, std::vector<int32_t> isr,
                        std::vector<int32_t> replicas = {1, 2}, int32_t partition_epoch = 0) {
  PartitionRoleState s;
  s.role = r;
  s.leader_id = leader;
  s.leader_epoch = epoch;
  s.partition_epoch = partition_epoch;
  s.replicas = std::move(replicas);
  s.isr = std::move(isr);
  return s;
}

std::unique_ptr<replication::net::BrokerClient> connect(uint16_t port) {
  replication::net::ClientOptions o;
  o.client_id = "replication-test";
  auto c = replication::net::BrokerClient::connect("127.0.0.1", port, o);
  if (!c) throw std::runtime_error("connect failed: " + c.error().message);
  return std::move(c.value());
}

// Leader = broker 1, follower = broker 2, topic "t" (1 partition) on both.
struct Pair {
  explicit Pair(std::vector<std::string> extra = {}, std::vector<std::string> follower_extra = {})
      : leader(with({"node.id=1", "replica.fetch.wait.max.ms=100", "replica.fetch.backoff.ms=20"}, extra)),
        follower(with(with({"node.id=2", "replica.fetch.wait.max.ms=100", "replica.fetch.backoff.ms=20"}, extra),
                      follower_extra)) {
    lp = create(leader);
    fp = create(follower);
    follower.broker().service<ReplicaFetcherManager>().set_options({12});
  }
  static std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  static std::shared_ptr<Partition> create(ServerFixture& f) {
    auto c = f.broker().topics().create("t", 1, 1, {}, false, Broker::now_ms());
    if (!c.error.ok()) throw std::runtime_error(c.error.message);
    return c.topic->partition(0);
  }
  LeaderReplicas& leaders() { return leader.broker().service<LeaderReplicas>(); }
  ReplicaFetcherManager& fetchers() { return follower.broker().service<ReplicaFetcherManager>(); }

  // As the replica manager will: set_role, then the listener.
  void make_leader(int32_t epoch, std::vector<int32_t> isr = {1, 2}) {
    lp->set_role(role(ReplicaRole::kLeader, 1, epoch, std::move(isr)), /*starts_epoch=*/true);
    leader.broker().service<replica::ReplicaRolesListener>().became_leader(lp);
  }
  void make_follower(int32_t epoch) {
    fp->set_role(role(ReplicaRole::kFollower, 1, epoch, {1, 2}));
    LeaderEndpoint ep{1, "127.0.0.1", leader.port()};
    follower.broker().service<replica::ReplicaRolesListener>().became_follower(fp, ep);
  }

  protocol::ProduceResponse::PartitionProduceResponse produce(const std::vector<uint8_t>& records, int16_t acks,
                                                              int32_t timeout_ms = 10000) {
    if (!producer) producer = connect(leader.port());
    protocol::ProduceRequest req;
    req.transactional_id = std::nullopt;
    req.acks = acks;
    req.timeout_ms = timeout_ms;
    auto& td = req.topic_data.emplace_back();
    td.name = "t";
    auto& pd = td.partition_data.emplace_back();
    pd.index = 0;
    pd.records = protocol::Records(std::span<const uint8_t>(records));
    protocol::ProduceResponse resp;
    auto st = producer->call(req, 9, &resp);
    if (!st.ok()) throw std::runtime_error("produce failed: " + st.message());
    return resp.responses.at(0).partition_responses.at(0);
  }

  ServerFixture leader;
  ServerFixture follower;
  std::shared_ptr<Partition> lp, fp;
  std::unique_ptr<replication::net::BrokerClient> producer;
};

// A follower fetch (Fetch v12, replica_id) of t-0 at offset.
protocol::FetchResponse::PartitionData replica_fetch(replication::net::BrokerClient& c, int32_t replica_id,
                                                     int64_t offset, int32_t epoch, int32_t last_fetched_epoch = -1) {
  protocol::FetchRequest req;
  req.replica_id = replica_id;
  req.max_wait_ms = 0;
  req.min_bytes = 0;
  req.max_bytes = 1 << 20;
  req.session_epoch = -1;
  auto& t = req.topics.emplace_back();
  t.topic = "t";
  auto& p = t.partitions.emplace_back();
  p.partition = 0;
  p.fetch_offset = offset;
  p.current_leader_epoch = epoch;
  p.last_fetched_epoch = last_fetched_epoch;
  p.partition_max_bytes = 1 << 20;
  protocol::FetchResponse resp;
  auto st = c.call(req, 12, &resp);
  if (!st.ok()) throw std::runtime_error("fetch failed: " + st.message());
  return resp.responses.at(0).partitions.at(0);
}

TEST_CASE("a follower fetcher copies the leader's batches with their offsets and epochs", "[replica]") {
  Pair pr;
  pr.make_leader(3);
  pr.make_follower(3);
  REQUIRE(pr.produce(batch(3, "a"), 1).error_code == 0);
  REQUIRE(pr.produce(batch(2, "b"), 1).error_code == 0);
  REQUIRE(pr.lp->log_end_offset() == 5);
  REQUIRE(eventually([&] { return pr.fp->log_end_offset() == 5 && pr.fp->high_watermark() == 5; }));
  CHECK(all_bytes(*pr.fp) == all_bytes(*pr.lp));  // offsets, epochs and CRCs as the leader wrote them
  CHECK(pr.fp->log().leader_epochs().latest_epoch() == std::optional<int32_t>(3));
  CHECK(pr.lp->high_watermark() == 5);
  CHECK(pr.fetchers().thread_count() == 1);
  CHECK(pr.fetchers().partition_count() == 1);
  CHECK(eventually([&] { return pr.fetchers().max_lag() == 0; }));
  CHECK(pr.follower.broker().metrics_registry().text().find("kafka_server_replicafetchermanager_maxlag 0") !=
        std::string::npos);
}

TEST_CASE("the leader's HW moves only once the follower fetched past it", "[replica]") {
  Pair pr;
  pr.make_leader(1);
  REQUIRE_FALSE(pr.lp->hw_follows_leo());
  REQUIRE(pr.produce(batch(3, "a"), 1).error_code == 0);
  CHECK(pr.lp->log_end_offset() == 3);
  CHECK(pr.lp->high_watermark() == 0);
  auto c = connect(pr.leader.port());
  auto d = replica_fetch(*c, 2, 0, 1);
  CHECK(d.error_code == 0);
  CHECK(d.records.size() > 0);        // followers read up to the LEO
  CHECK(d.high_watermark == 0);       // the follower has nothing yet
  CHECK(pr.lp->high_watermark() == 0);
  d = replica_fetch(*c, 2, 3, 1);
  CHECK(d.error_code == 0);
  CHECK(d.high_watermark == 3);
  CHECK(pr.lp->high_watermark() == 3);

  SECTION("an unknown replica is refused") {
    auto e = replica_fetch(*c, 7, 3, 1);
    CHECK(e.error_code == protocol::to_wire(ErrorCode::UNKNOWN_LEADER_EPOCH));
  }
  SECTION("a fenced epoch is refused") {
    auto e = replica_fetch(*c, 2, 3, 0);
    CHECK(e.error_code == protocol::to_wire(ErrorCode::FENCED_LEADER_EPOCH));
  }
}

TEST_CASE("a Fetch v15+ follower names itself in ReplicaState and topics by id", "[replica]") {
  Pair pr;
  pr.make_leader(1);
  REQUIRE(pr.produce(batch(2, "a"), 1).error_code == 0);
  auto c = connect(pr.leader.port());
  protocol::FetchRequest req;
  req.replica_id = -1;
  req.replica_state.replica_id = 2;
  req.replica_state.replica_epoch = 5;
  req.max_wait_ms = 0;
  req.min_bytes = 0;
  req.session_epoch = -1;
  auto& t = req.topics.emplace_back();
  t.topic_id = pr.lp->topic_id();
  auto& p = t.partitions.emplace_back();
  p.partition = 0;
  p.fetch_offset = 2;
  p.current_leader_epoch = 1;
  p.last_fetched_epoch = 1;
  p.partition_max_bytes = 1 << 20;
  protocol::FetchResponse resp;
  REQUIRE(c->call(req, 17, &resp).ok());
  const auto& d = resp.responses.at(0).partitions.at(0);
  CHECK(d.error_code == 0);
  CHECK(d.diverging_epoch.epoch == -1);
  CHECK(d.high_watermark == 2);
  auto st = pr.leaders().state(pr.lp->tp());
  REQUIRE(st);
  REQUIRE(st->follower(2) != nullptr);
  CHECK(st->follower(2)->log_end_offset == 2);
}

TEST_CASE("a follower fetch to a non-leader gets NOT_LEADER_OR_FOLLOWER", "[replica]") {
  Pair pr;
  pr.make_leader(1);
  pr.fp->set_role(role(ReplicaRole::kFollower, 1, 1, {1, 2}));  // follows, fetcher not started
  auto c = connect(pr.follower.port());
  CHECK(replica_fetch(*c, 1, 0, 1).error_code == protocol::to_wire(ErrorCode::NOT_LEADER_OR_FOLLOWER));
  // A leader without replication state (single node) has no followers either.
  pr.fp->set_role(role(ReplicaRole::kLeader, 2, 1, {2}, {2}));
  CHECK(replica_fetch(*c, 1, 0, 1).error_code == protocol::to_wire(ErrorCode::NOT_LEADER_OR_FOLLOWER));
}

TEST_CASE("leader appends are fenced by the role: a follower or stopped replica writes nothing", "[replica]") {
  Pair pr;
  auto one = batch(2, "x");
  pr.fp->set_role(role(ReplicaRole::kFollower, 1, 1, {1, 2}));  // fetcher not started
  auto r = pr.fp->append(std::span<uint8_t>(one), Broker::now_ms());
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == storage::StatusCode::kFenced);
  bool called = false;
  auto q = pr.fp->append_async(std::span<uint8_t>(one), Broker::now_ms(), nullptr,
                               [&](storage::Status) { called = true; }, false);
  CHECK(q.status().code() == storage::StatusCode::kFenced);
  CHECK_FALSE(called);  // never queued: no callback
  CHECK(pr.fp->log_end_offset() == 0);
  pr.fp->set_role(role(ReplicaRole::kOffline, 1, 1, {1, 2}));
  CHECK(pr.fp->append(std::span<uint8_t>(one), Broker::now_ms()).status().code() == storage::StatusCode::kFenced);
  // Leader again (a new epoch): appends go through, under that epoch.
  pr.fp->set_role(role(ReplicaRole::kLeader, 2, 2, {2}, {2}));
  REQUIRE(pr.fp->append(std::span<uint8_t>(one), Broker::now_ms()).is_ok());
  auto two = batch(1, "y");
  storage::Status got = storage::Status::fenced("not called");
  REQUIRE(pr.fp->append_async(std::span<uint8_t>(two), Broker::now_ms(), nullptr,
                              [&](storage::Status s) { got = std::move(s); }, false)
              .is_ok());
  CHECK(got.is_ok());  // completed inline (no ring), after the role lock was released
  CHECK(pr.fp->log_end_offset() == 3);
  CHECK(pr.fp->log().end_offset_for_epoch(2).epoch == 2);
  // Produce to the replica while it follows: NOT_LEADER_OR_FOLLOWER, nothing written.
  pr.fp->set_role(role(ReplicaRole::kFollower, 1, 3, {1, 2}));
  CHECK(pr.fp->append(std::span<uint8_t>(two), Broker::now_ms()).status().code() == storage::StatusCode::kFenced);
  CHECK(pr.fp->log_end_offset() == 3);
}

TEST_CASE("acks=all completes after the follower caught up, times out without it", "[replica]") {
  Pair pr;
  pr.make_leader(1);
  pr.make_follower(1);
  auto r = pr.produce(batch(4, "x"), -1);
  CHECK(r.error_code == 0);
  CHECK(r.base_offset == 0);
  CHECK(pr.lp->high_watermark() >= 4);
  CHECK(pr.fp->log_end_offset() >= 4);

  pr.fetchers().stopped(pr.fp->tp(), false);
  CHECK(pr.fetchers().partition_count() == 0);
  const auto t0 = std::chrono::steady_clock::now();
  auto late = pr.produce(batch(1, "y"), -1, 300);
  CHECK(late.error_code == protocol::to_wire(ErrorCode::REQUEST_TIMED_OUT));
  CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(250));
  CHECK(pr.lp->high_watermark() == 4);  // the record is in the leader's log, not committed
  CHECK(pr.lp->log_end_offset() == 5);
  // acks=1 is unaffected.
  CHECK(pr.produce(batch(1, "z"), 1).error_code == 0);
}

// The controller moved every replicated leadership away (ControlledShutdown
// answered nothing remaining) but its LeaderAndIsr never reached this broker
// (its own controller channel cut by the stop): the partitions step down
// here, so an acks=all produce waiting for a follower that follows someone
// else now is answered at once, not when the shutdown's grace runs out.
TEST_CASE("after a controlled shutdown replicated leaderships step down: waiting acks=all answered NOT_LEADER",
          "[replica]") {
  Pair pr;
  auto& rm = pr.leader.broker().service<ReplicaManager>();
  rm.add_role_listener(&pr.leader.broker().service<replica::ReplicaRolesListener>());
  pr.make_leader(1);  // ISR [1, 2]; the follower never fetches
  auto c = pr.leader.broker().topics().create("solo", 1, 1, {}, false, Broker::now_ms());
  REQUIRE(c.error.ok());
  auto solo = c.topic->partition(0);
  solo->set_role(role(ReplicaRole::kLeader, 1, 1, {1}, {1}), /*starts_epoch=*/true);
  pr.leaders().became_leader(solo);

  auto waiting = std::async(std::launch::async, [&] { return pr.produce(batch(1, "x"), -1, 60000); });
  REQUIRE(eventually([&] { return pr.lp->log_end_offset() == 1; }));  // appended, waiting for the follower
  CHECK(waiting.wait_for(std::chrono::milliseconds(0)) == std::future_status::timeout);

  CHECK(rm.step_down_after_controlled_shutdown() == 1);  // t-0; solo has nowhere to go
  auto r = waiting.get();
  CHECK(r.error_code == protocol::to_wire(ErrorCode::NOT_LEADER_OR_FOLLOWER));
  CHECK_FALSE(pr.lp->is_leader());
  CHECK(pr.lp->role_state()->leader_epoch == 1);
  CHECK_FALSE(pr.leaders().state(pr.lp->tp()).has_value());
  CHECK(solo->is_leader());
  // New produces go elsewhere too; nothing more is written here.
  CHECK(pr.produce(batch(1, "y"), -1).error_code == protocol::to_wire(ErrorCode::NOT_LEADER_OR_FOLLOWER));
  CHECK(pr.lp->log_end_offset() == 1);
  CHECK(rm.step_down_after_controlled_shutdown() == 0);
}

// ciuic.acks.all.fsync on a replicated partition: the answer comes only once
// the leader synced its copy and the follower synced its own before
// reporting it (the recovery point is the durable offset of each log).
TEST_CASE("acks=all with ciuic.acks.all.fsync: leader and follower synced the records before the answer",
          "[replica]") {
  const bool fsync = GENERATE(true, false);
  Pair pr({std::string("ciuic.acks.all.fsync=") + (fsync ? "true" : "false")});
  pr.make_leader(1);
  pr.make_follower(1);
  CHECK(pr.lp->log().recovery_point() == 0);
  auto r = pr.produce(batch(4, "x"), -1);
  REQUIRE(r.error_code == 0);
  CHECK(pr.lp->high_watermark() >= 4);
  if (fsync) {
    CHECK(pr.lp->log().recovery_point() >= 4);
    CHECK(pr.fp->log().recovery_point() >= 4);
    // And again, the follower syncing each fetched batch before it reports it.
    REQUIRE(pr.produce(batch(3, "y"), -1).error_code == 0);
    CHECK(pr.lp->log().recovery_point() >= 7);
    CHECK(pr.fp->log().recovery_point() >= 7);
  } else {  // nothing asked for a sync: what the on case proves is not a side effect
    CHECK(pr.lp->log().recovery_point() == 0);
    CHECK(pr.fp->log().recovery_point() == 0);
  }
}

TEST_CASE("acks=all below min.insync.replicas gets NOT_ENOUGH_REPLICAS before the append", "[replica]") {
  Pair pr({"min.insync.replicas=2"});
  pr.make_leader(1, {1});  // ISR shrank to the leader
  auto r = pr.produce(batch(2, "x"), -1);
  CHECK(r.error_code == protocol::to_wire(ErrorCode::NOT_ENOUGH_REPLICAS));
  CHECK(pr.lp->log_end_offset() == 0);
  CHECK(pr.produce(batch(2, "x"), 1).error_code == 0);  // acks=1 still writes
  CHECK(pr.lp->high_watermark() == 0);                  // strict min ISR: nothing committed
}

TEST_CASE("a diverged follower truncates to the leader's epoch end offset, then matches it", "[replica]") {
  Pair pr;
  // Both logs hold batch A from epoch 1.
  pr.lp->set_role(role(ReplicaRole::kLeader, 1, 1, {1}));
  REQUIRE(append_to(*pr.lp, batch(3, "a")));
  auto a = all_bytes(*pr.lp);
  REQUIRE(pr.fp->log().append_as_follower(a, Broker::now_ms()).is_ok());
  // The follower, briefly leader of epoch 1 too, wrote B that nobody has.
  pr.fp->set_role(role(ReplicaRole::kLeader, 2, 1, {2}));
  REQUIRE(append_to(*pr.fp, batch(2, "b")));
  REQUIRE(pr.fp->log_end_offset() == 5);
  // Broker 1 leads epoch 2 and writes C.
  pr.make_leader(2);
  REQUIRE(append_to(*pr.lp, batch(4, "c")));
  REQUIRE(pr.lp->log_end_offset() == 7);

  auto c = connect(pr.leader.port());
  auto d = replica_fetch(*c, 2, 5, 2, 1);
  CHECK(d.diverging_epoch.epoch == 1);
  CHECK(d.diverging_epoch.end_offset == 3);
  CHECK(d.records.size() == 0);

  pr.make_follower(2);
  REQUIRE(eventually([&] { return pr.fp->log_end_offset() == 7 && pr.fp->high_watermark() == 7; }));
  CHECK(all_bytes(*pr.fp) == all_bytes(*pr.lp));
  CHECK(pr.lp->high_watermark() == 7);
}

TEST_CASE("a follower behind the leader's log start restarts its log there", "[replica]") {
  Pair pr;
  // Written while broker 1 was a single node: HW = LEO = 8; then DeleteRecords up to 5.
  REQUIRE(append_to(*pr.lp, batch(3, "a")));
  REQUIRE(append_to(*pr.lp, batch(5, "b")));  // offsets 3-7
  REQUIRE(pr.lp->high_watermark() == 8);
  REQUIRE(pr.lp->log().advance_log_start_offset(5).is_ok());
  pr.make_leader(1);
  pr.make_follower(1);  // LEO 0 < leader log start 5: OFFSET_OUT_OF_RANGE, ListOffsets, restart
  // The fetch at 5 gets batch b (3-7): the log restarts at its base, 3, then
  // the response's log start raises it to the leader's 5. The fetcher sets
  // the HW before it raises the log start (Kafka's order too), so the wait
  // covers all three.
  REQUIRE(eventually([&] {
    return pr.fp->log_end_offset() == 8 && pr.fp->high_watermark() == 8 && pr.fp->log_start_offset() == 5;
  }));
  CHECK(all_bytes(*pr.fp) == all_bytes(*pr.lp));
  CHECK(pr.lp->high_watermark() == 8);
}

TEST_CASE("stopping the fetchers is prompt even during a long poll", "[replica]") {
  Pair pr({}, {"replica.fetch.wait.max.ms=20000"});
  pr.make_leader(1);
  pr.make_follower(1);
  // The leader has recorded the first fetch, which now waits there for up to 20 s.
  REQUIRE(eventually([&] {
    auto st = pr.leaders().state(pr.lp->tp());
    return st && st->follower(2) != nullptr && st->follower(2)->last_fetch_time_ms > 0;
  }));
  const auto t0 = std::chrono::steady_clock::now();
  pr.fetchers().stop();
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
  CHECK(pr.fetchers().thread_count() == 0);
}

TEST_CASE("a follower that learns its epoch before the leader does retries within ms and not after the backoff",
          "[replica]") {
  // The controller sends LeaderAndIsr to every replica at once, so a
  // follower may fetch at the new epoch before the leader applied it: the
  // answer is UNKNOWN_LEADER_EPOCH. With a 60 s replica.fetch.backoff.ms only
  // the early retry brings the leader's next write to the follower within
  // the wait below (Kafka's fetcher would wait the whole backoff).
  Pair pr({}, {"replica.fetch.backoff.ms=60000"});
  pr.make_leader(1);
  const uint64_t before = pr.fetchers().fetches();
  pr.make_follower(2);
  REQUIRE(eventually([&] { return pr.fetchers().fetches() > before; }));  // answered UNKNOWN_LEADER_EPOCH
  CHECK(pr.fp->log_end_offset() == 0);
  pr.make_leader(2);
  REQUIRE(pr.produce(batch(3, "a"), 1).error_code == 0);
  CHECK(eventually([&] { return pr.fp->log_end_offset() == 3; }, 15000));
}

TEST_CASE("num.replica.fetchers resized: partitions move between fetcher threads and replication goes on",
          "[replica]") {
  Pair pr;
  // Eight more partitions, led by broker 1 and followed by broker 2.
  std::vector<std::shared_ptr<Partition>> lead, follow;
  for (ServerFixture* f : {&pr.leader, &pr.follower}) {
    auto c = f->broker().topics().create("u", 8, 1, {}, false, Broker::now_ms());
    REQUIRE(c.error.ok());
    for (int32_t i = 0; i < 8; ++i) (f == &pr.leader ? lead : follow).push_back(c.topic->partition(i));
  }
  for (auto& p : lead) {
    p->set_role(role(ReplicaRole::kLeader, 1, 1, {1, 2}), /*starts_epoch=*/true);
    pr.leader.broker().service<replica::ReplicaRolesListener>().became_leader(p);
  }
  for (auto& p : follow) {
    p->set_role(role(ReplicaRole::kFollower, 1, 1, {1, 2}));
    pr.follower.broker().service<replica::ReplicaRolesListener>().became_follower(
        p, LeaderEndpoint{1, "127.0.0.1", pr.leader.port()});
  }
  auto& fetchers = pr.fetchers();
  CHECK(fetchers.threads_per_leader() == 1);
  CHECK(fetchers.thread_count() == 1);
  CHECK(fetchers.partition_count() == 8);
  // Every partition gets a record and the follower has them all.
  auto write_all = [&](const std::string& prefix) {
    for (auto& p : lead) REQUIRE(append_to(*p, batch(1, prefix)));
  };
  auto followed = [&](int64_t leo) {
    return eventually([&] {
      for (auto& p : follow)
        if (p->log_end_offset() != leo) return false;
      return true;
    });
  };
  write_all("a");
  REQUIRE(followed(1));

  // Eight partitions over four threads: the hash puts two on each.
  fetchers.resize(4);
  CHECK(fetchers.threads_per_leader() == 4);
  CHECK(fetchers.thread_count() == 4);
  CHECK(fetchers.partition_count() == 8);
  write_all("b");
  CHECK(followed(2));
  for (int32_t i = 0; i < 8; ++i) CHECK(all_bytes(*follow[i]) == all_bytes(*lead[i]));

  fetchers.resize(1);
  CHECK(fetchers.thread_count() == 1);
  CHECK(fetchers.partition_count() == 8);
  write_all("c");
  CHECK(followed(3));
  fetchers.resize(0);  // below 1: taken as 1
  CHECK(fetchers.threads_per_leader() == 1);
}

// A fake controller's connection: ApiVersions (AlterPartition 0-3), then one
// AlterPartition, recorded in *seen and answered as committed with `isr` and
// partition epoch `partition_epoch`.
void serve_alter_partition(int fd, std::vector<int32_t> isr, int32_t partition_epoch,
                           protocol::AlterPartitionRequest* seen, std::atomic<int>* seen_version) {
  using namespace replication::net::test;
  auto av = read_request(fd);
  if (!av) return;
  protocol::ApiVersionsResponse versions;
  versions.api_keys = {{18, 0, 4, {}}, {56, 0, 3, {}}};
  const int16_t v = av->header.header.request_api_version;
  write_all(fd, response_frame(18, v, av->header.header.correlation_id, encode_body(versions, v)));
  auto req = read_request(fd);
  if (!req || req->header.header.request_api_key != 56) return;
  const int16_t version = req->header.header.request_api_version;
  protocol::Reader r(std::span<const uint8_t>(req->frame).subspan(req->header.body_offset));
  seen->decode(r, version);
  protocol::AlterPartitionResponse resp;
  auto& t = resp.topics.emplace_back();
  t.topic_name = "t";
  t.topic_id = seen->topics.at(0).topic_id;
  auto& p = t.partitions.emplace_back();
  p.partition_index = 0;
  p.leader_id = 1;
  p.leader_epoch = seen->topics.at(0).partitions.at(0).leader_epoch;
  p.isr = std::move(isr);
  p.partition_epoch = partition_epoch;
  write_all(fd, response_frame(56, version, req->header.header.correlation_id, encode_body(resp, version)));
  seen_version->store(version);
  wait_for_eof(fd);
}

TEST_CASE("an ISR shrink goes to the controller as AlterPartition and a committed answer updates the ISR",
          "[replica]") {
  using namespace replication::net::test;
  protocol::AlterPartitionRequest seen;
  std::atomic<int> seen_version{-1};
  FakeKafkaServer controller([&](int fd, int) { serve_alter_partition(fd, {1}, 8, &seen, &seen_version); });
  Pair pr({"replica.lag.time.max.ms=200"});
  pr.leaders().set_controller_endpoint(replica::ControllerEndpoint{9, "127.0.0.1", controller.port()});
  pr.lp->set_role(role(ReplicaRole::kLeader, 1, 4, {1, 2}, {1, 2}, 7), /*starts_epoch=*/true);
  pr.leaders().became_leader(pr.lp);
  REQUIRE(pr.produce(batch(1, "x"), 1).error_code == 0);  // the follower (never fetching) falls behind
  REQUIRE(eventually([&] { return pr.lp->role_state()->isr == std::vector<int32_t>{1}; }));
  REQUIRE(eventually([&] { return seen_version.load() == 3; }));
  CHECK(seen.broker_id == 1);
  REQUIRE(seen.topics.size() == 1);
  CHECK(seen.topics[0].topic_id == pr.lp->topic_id());
  const auto& sp = seen.topics[0].partitions.at(0);
  CHECK(sp.leader_epoch == 4);
  CHECK(sp.partition_epoch == 7);
  REQUIRE(sp.new_isr_with_epochs.size() == 1);
  CHECK(sp.new_isr_with_epochs[0].broker_id == 1);
  auto rs = pr.lp->role_state();
  CHECK(rs->partition_epoch == 8);
  CHECK(rs->leader_epoch == 4);
  CHECK(pr.lp->is_leader());
  auto st = pr.leaders().state(pr.lp->tp());
  REQUIRE(st);
  CHECK(st->isr() == std::vector<int32_t>{1});
  CHECK_FALSE(st->pending());
  // With the ISR at the leader alone (min ISR 1), the HW follows the leader.
  CHECK(eventually([&] { return pr.lp->high_watermark() == 1; }));
}

TEST_CASE("replication-offset-checkpoint holds the HWs and a new role starts from it", "[replica]") {
  Pair pr;
  pr.make_leader(1);
  REQUIRE(pr.produce(batch(5, "a"), 1).error_code == 0);
  auto c = connect(pr.leader.port());
  REQUIRE(replica_fetch(*c, 2, 3, 1).error_code == 0);
  REQUIRE(pr.lp->high_watermark() == 3);
  auto& checkpoints = pr.leader.broker().service<replica::HwCheckpoints>();
  REQUIRE(checkpoints.write_all().is_ok());
  const std::string dir = pr.leader.broker().logs().log_dirs().at(0);
  auto file = storage::read_offset_checkpoint(pr.leader.broker().fs(),
                                              dir + "/" + std::string(storage::kReplicationOffsetCheckpointFile));
  REQUIRE(file.is_ok());
  REQUIRE(file.value().size() == 1);
  CHECK(file.value()[0].tp == pr.lp->tp());
  CHECK(file.value()[0].offset == 3);

  // As after a restart: the log's open set the HW to the LEO; the first role restores it.
  pr.lp->refresh_high_watermark();
  REQUIRE(pr.lp->high_watermark() == 5);
  replica::HwCheckpoints reloaded(pr.leader.broker());
  CHECK(reloaded.checkpointed(pr.lp->tp()) == std::optional<int64_t>(3));
  reloaded.restore(*pr.lp);
  CHECK(pr.lp->high_watermark() == 3);
  pr.lp->set_high_watermark(4);
  reloaded.restore(*pr.lp);  // only the first role change restores
  CHECK(pr.lp->high_watermark() == 4);
}

TEST_CASE("a follower that caught up is proposed back into the ISR", "[replica]") {
  using namespace replication::net::test;
  protocol::AlterPartitionRequest seen;
  std::atomic<int> seen_version{-1};
  FakeKafkaServer controller([&](int fd, int) { serve_alter_partition(fd, {1, 2}, 3, &seen, &seen_version); });
  Pair pr;
  pr.leaders().set_controller_endpoint(replica::ControllerEndpoint{9, "127.0.0.1", controller.port()});
  pr.make_leader(1, {1});  // ISR = the leader alone, min ISR 1: the HW follows the leader
  REQUIRE(pr.produce(batch(2, "a"), 1).error_code == 0);
  REQUIRE(eventually([&] { return pr.lp->high_watermark() == 2; }));
  pr.make_follower(1);
  REQUIRE(eventually([&] { return pr.lp->role_state()->isr == std::vector<int32_t>{1, 2}; }));
  REQUIRE(eventually([&] { return seen_version.load() == 3; }));
  const auto& sp = seen.topics.at(0).partitions.at(0);
  REQUIRE(sp.new_isr_with_epochs.size() == 2);
  CHECK(sp.new_isr_with_epochs[1].broker_id == 2);
  CHECK(pr.lp->role_state()->partition_epoch == 3);
  // Now acks=all needs the follower, which is fetching.
  CHECK(pr.produce(batch(1, "b"), -1).error_code == 0);
  CHECK(pr.fp->log_end_offset() >= 3);
}

}  // namespace
}  // namespace ciuickafka::broker::test

namespace ciuickafka::broker::test {
namespace {

std::vector<uint8_t> idempotent_batch(int64_t pid, int32_t seq, const std::string& value, int64_t base_offset = 0,
                                      int32_t leader_epoch = -1) {
  protocol::BatchOptions o;
  o.producer_id = pid;
  o.producer_epoch = 0;
  o.base_sequence = seq;
  o.base_offset = base_offset;
  if (leader_epoch >= 0) o.partition_leader_epoch = leader_epoch;
  protocol::BatchBuilder b(o);
  b.add(1000, protocol::as_bytes(std::string("k")), protocol::as_bytes(value));
  auto r = b.build();
  if (!r.ok()) throw std::runtime_error("batch does not build");
  return r.value();
}

}  // namespace

// A broker led the partition (its producer state loaded), followed while
// another leader appended the producer's next batch, and leads again: the
// producer's retry of that batch is deduplicated (same offset, nothing
// written twice) and its next sequence is accepted. Without the rebuild on
// the role change the table still ended at sequence 0, so the retry was
// appended a second time.
TEST_CASE("after leading, following and leading again, idempotent producer state includes the follower's appends",
          "[replica]") {
  Pair pair;
  auto& produce = pair.leader.broker().service<produce::ProduceService>();
  produce.will_lead(pair.lp);
  pair.make_leader(1, {1});
  const int64_t pid = 4242;
  auto first = pair.produce(idempotent_batch(pid, 0, "v0"), 1);
  REQUIRE(first.error_code == 0);
  CHECK(first.base_offset == 0);

  // Broker 1 follows (epoch 2); the new leader's batch with sequence 1
  // arrives as a follower append.
  pair.lp->set_role(role(ReplicaRole::kFollower, 2, 2, {1, 2}));
  produce.became_follower(pair.lp, LeaderEndpoint{2, "127.0.0.1", 1});
  auto copied = idempotent_batch(pid, 1, "v1", 1, 2);
  REQUIRE(pair.lp->log().append_as_follower(copied, Broker::now_ms()).is_ok());
  REQUIRE(pair.lp->log_end_offset() == 2);

  // Broker 1 leads again (epoch 3): the retry of sequence 1 is a duplicate.
  produce.will_lead(pair.lp);  // as the replica manager calls it: before set_role
  pair.make_leader(3, {1});
  auto retry = pair.produce(idempotent_batch(pid, 1, "v1"), 1);
  CHECK(retry.error_code == 0);
  CHECK(retry.base_offset == 1);
  CHECK(pair.lp->log_end_offset() == 2);
  auto next = pair.produce(idempotent_batch(pid, 2, "v2"), 1);
  CHECK(next.error_code == 0);
  CHECK(next.base_offset == 2);
  CHECK(pair.lp->log_end_offset() == 3);
}

}  // namespace ciuickafka::broker::test

namespace ciuickafka::broker::test {

// The chaos run's duplicates (372 acknowledged records written twice): the
// controller changed the ISR, so the leader stayed leader at a new epoch
// while idempotent writes were in flight. will_lead dropped the producer
// table, the rebuild scanned only the readable log, and the producer's
// retries of the in-flight batches were appended again. Now a leader that
// stays leader keeps its table, and a rebuild waits for in-flight writes.
TEST_CASE("idempotent producer state survives an epoch change with writes in flight", "[replica]") {
  auto ring = storage::io::Ring::create(64);
  REQUIRE(ring.is_ok());  // the broker's produce path needs io_uring too
  Pair pair;
  auto& produce = pair.leader.broker().service<produce::ProduceService>();
  produce.will_lead(pair.lp);
  pair.make_leader(1, {1});
  const int64_t pid = 777;
  REQUIRE(pair.produce(idempotent_batch(pid, 0, "v0"), 1).error_code == 0);
  auto st = produce.partition_state(*pair.lp);
  {
    std::lock_guard<std::mutex> lock(st->mu);
    REQUIRE(st->loaded);
  }

  // A write assigned but not yet readable, as a network thread leaves it.
  auto inflight = idempotent_batch(pid, 1, "v1");
  auto r = pair.lp->log().append_async(inflight, 1, Broker::now_ms(), ring.value().get(), [](storage::Status) {},
                                       /*validated=*/true);
  REQUIRE(r.is_ok());
  {
    std::lock_guard<std::mutex> lock(st->mu);
    produce::IncomingBatch in;
    in.producer_id = pid;
    in.epoch = 0;
    in.base_seq = 1;
    st->table.record(in, r.value().base_offset, r.value().last_offset, Broker::now_ms());
  }
  REQUIRE(pair.lp->log().next_offset() == 2);
  REQUIRE(pair.lp->log_end_offset() == 1);

  // The leader stays leader at epoch 2: the table (with the in-flight batch) stays.
  produce.will_lead(pair.lp);
  {
    std::lock_guard<std::mutex> lock(st->mu);
    CHECK(st->loaded);
  }
  // A role change that does drop it cannot rebuild while the write is in flight.
  produce.reset_for_role_change(*pair.lp);
  {
    std::lock_guard<std::mutex> lock(st->mu);
    CHECK_FALSE(produce.ensure_loaded(*st, pair.lp->log()));
    CHECK_FALSE(st->loaded);
  }
  while (ring.value()->in_flight() > 0) REQUIRE(ring.value()->wait_completions(1).is_ok());
  REQUIRE(pair.lp->log_end_offset() == 2);
  {
    std::lock_guard<std::mutex> lock(st->mu);
    REQUIRE(produce.ensure_loaded(*st, pair.lp->log()));
    produce::IncomingBatch retry;
    retry.producer_id = pid;
    retry.epoch = 0;
    retry.base_seq = 1;
    const produce::SeqCheck c = st->table.check(retry);
    CHECK(c.verdict == produce::SeqVerdict::kDuplicate);
    CHECK(c.duplicate.first_offset == 1);
  }
}

TEST_CASE("a new leader epoch starts past the previous epoch's writes in flight, so the follower keeps them",
          "[replica]") {
  auto ring = storage::io::Ring::create(64);
  REQUIRE(ring.is_ok());
  Pair pair;
  pair.make_leader(1);
  pair.make_follower(1);
  REQUIRE(append_to(*pair.lp, batch(3, "a")));
  REQUIRE(eventually([&] { return pair.lp->high_watermark() == 3; }));

  // A produce of epoch 1 has its offsets but is not readable yet when the
  // controller's next epoch arrives (in ZooKeeper mode an ISR change made by
  // the controller, as in a controlled shutdown, bumps the leader epoch).
  auto inflight = batch(2, "b");
  auto r = pair.lp->append_async(inflight, Broker::now_ms(), ring.value().get(), [](storage::Status) {},
                                 /*validated=*/false);
  REQUIRE(r.is_ok());
  REQUIRE(pair.lp->log().next_offset() == 5);
  REQUIRE(pair.lp->log_end_offset() == 3);

  pair.make_leader(2);
  // Epoch 2 starts after the in-flight batch of epoch 1, not at the readable
  // LEO (3): there the batch at 3 would be epoch 1's data past epoch 1's end,
  // which the follower truncates and fetches back for ever.
  auto latest = pair.lp->log().leader_epochs().latest_entry();
  REQUIRE(latest.has_value());
  CHECK(latest->epoch == 2);
  CHECK(latest->start_offset == 5);
  CHECK(pair.lp->role_state()->leader_epoch_start_offset == 5);
  auto st = pair.leaders().state(pair.lp->tp());
  REQUIRE(st.has_value());
  CHECK(st->leader_epoch_start_offset() == 5);

  pair.make_follower(2);
  while (ring.value()->in_flight() > 0) REQUIRE(ring.value()->wait_completions(1).is_ok());
  REQUIRE(pair.lp->log_end_offset() == 5);
  CHECK(pair.lp->log().end_offset_for_epoch(1).end_offset == 5);
  REQUIRE(append_to(*pair.lp, batch(1, "c")));  // epoch 2, at 5
  REQUIRE(eventually([&] { return pair.fp->log_end_offset() == 6 && pair.lp->high_watermark() == 6; }));
  CHECK(all_bytes(*pair.fp) == all_bytes(*pair.lp));
  auto follower_latest = pair.fp->log().leader_epochs().latest_entry();
  REQUIRE(follower_latest.has_value());
  CHECK(follower_latest->epoch == 2);
  CHECK(follower_latest->start_offset == 5);
}

}  // namespace ciuickafka::broker::test
