// tests/unit/handlers/cluster/zk_producer_ids_test.cc: producer ids in
// cluster mode (broker/cluster/zk_producer_ids.h): no id before a block is
// claimed (COORDINATOR_LOAD_IN_PROGRESS), ids in block order, the next block
// prefetched at 90 % and taken over without a gap in service, a failed claim
// retried after the backoff; and InitProducerId on a ZooKeeper-mode broker
// handing out ids from the block it wrote to /latest_producer_id_block.
#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>
#include <vector>

#include "broker/broker.h"
#include "broker/cluster/zk_producer_ids.h"
#include "protocol/generated/init_producer_id.h"
#include "tests/unit/handlers/cluster/cluster_fixture.h"

namespace ciuickafka::broker::test {
namespace {

using protocol::ErrorCode;
using replication::ProducerIdBlock;

// A claim that hands out blocks of `size` from 0 (or fails while told to).
struct FakeClaims {
  std::mutex mu;
  int64_t next_start = 0;
  int64_t size = 10;
  bool fail = false;
  int calls = 0;
  ZkProducerIds::Claim claim() {
    return [this]() -> replication::Result<ProducerIdBlock> {
      std::lock_guard<std::mutex> lock(mu);
      ++calls;
      if (fail) return replication::Error{"zookeeper unreachable"};
      ProducerIdBlock b{5, next_start, next_start + size - 1};
      next_start += size;
      return b;
    };
  }
};

int64_t take(ZkProducerIds& ids) {
  int64_t id = -1;
  for (int i = 0; i < 3; ++i) {
    if (ids.next(&id) == ErrorCode::NONE) return id;
    REQUIRE(ids.wait_idle(5000));
  }
  FAIL("no producer id after three claims");
  return -1;
}

}  // namespace

TEST_CASE("ZkProducerIds: no id until a block is claimed, then ids in order across blocks") {
  FakeClaims claims;
  std::atomic<int64_t> now{1000};
  ZkProducerIds ids(claims.claim(), [&] { return now.load(); });
  int64_t id = -1;
  CHECK(ids.next(&id) == ErrorCode::COORDINATOR_LOAD_IN_PROGRESS);
  REQUIRE(ids.wait_idle(5000));
  std::vector<int64_t> got;
  for (int i = 0; i < 9; ++i) {
    REQUIRE(ids.next(&id) == ErrorCode::NONE);
    got.push_back(id);
  }
  // The ninth id of ten reached 90 %: the next block is being prefetched.
  REQUIRE(ids.wait_idle(5000));
  for (int i = 0; i < 11; ++i) {
    REQUIRE(ids.next(&id) == ErrorCode::NONE);  // no gap in service at the block boundary
    got.push_back(id);
  }
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == static_cast<int64_t>(i));
  ids.stop();
}

TEST_CASE("ZkProducerIds: a failed claim is retried after the backoff") {
  FakeClaims claims;
  claims.fail = true;
  std::atomic<int64_t> now{1000};
  ZkProducerIds ids(claims.claim(), [&] { return now.load(); });
  int64_t id = -1;
  CHECK(ids.next(&id) == ErrorCode::COORDINATOR_LOAD_IN_PROGRESS);
  REQUIRE(ids.wait_idle(5000));
  CHECK(ids.last_error() == "zookeeper unreachable");
  {
    std::lock_guard<std::mutex> lock(claims.mu);
    claims.fail = false;
  }
  // Within the backoff no new claim starts.
  CHECK(ids.next(&id) == ErrorCode::COORDINATOR_LOAD_IN_PROGRESS);
  REQUIRE(ids.wait_idle(5000));
  {
    std::lock_guard<std::mutex> lock(claims.mu);
    CHECK(claims.calls == 1);
  }
  now += ZkProducerIds::kRetryBackoffMs;
  CHECK(take(ids) == 0);
  CHECK(ids.last_error().empty());
  std::lock_guard<std::mutex> lock(claims.mu);
  CHECK(claims.calls == 2);
}

TEST_CASE("InitProducerId in cluster mode hands out ids of a block claimed in ZooKeeper") {
  ClusterFixture c;
  protocol::InitProducerIdRequest req;
  req.transactional_id = std::nullopt;
  req.transaction_timeout_ms = 60000;
  auto first = c.f().call<protocol::InitProducerIdResponse>(req, 4);
  CHECK(first.error_code == protocol::to_wire(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS));
  REQUIRE(c.broker().service<ZkProducerIds>().wait_idle(10000));
  INFO(c.broker().service<ZkProducerIds>().last_error());
  auto a = c.f().call<protocol::InitProducerIdResponse>(req, 4);
  auto b = c.f().call<protocol::InitProducerIdResponse>(req, 4);
  REQUIRE(a.error_code == 0);
  REQUIRE(b.error_code == 0);
  CHECK(a.producer_id == 0);
  CHECK(b.producer_id == 1);
  CHECK(a.producer_epoch == 0);
  // The znode names this broker's block, as Kafka's brokers write it.
  std::string error;
  replication::zk::ConnectOptions o;
  o.connect = "fake:2181";
  auto client = c.zk().client();
  auto s = client->connect(o, {}, &error);
  REQUIRE(s);
  std::string data;
  REQUIRE(s->get(std::string(replication::kLatestProducerIdBlockPath), &data) == replication::zk::Code::kOk);
  CHECK(data == R"({"version":1,"broker":1,"block_start":"0","block_end":"999"})");
}

}  // namespace ciuickafka::broker::test
