// tests/unit/handlers/cluster/txn_coordinator_test.cc: the transaction
// coordinator in cluster mode (issue #13): FindCoordinator names the leader
// of the id's __transaction_state partition, ids of partitions led
// elsewhere get NOT_COORDINATOR, becoming leader loads the partition
// (an id's producer epoch is back after a follower/leader round trip),
// losing it unloads, KIP-890 verification is answered in-process only where
// the id's coordinator is, and a marker a leader cannot take stays pending
// (the markers-pending gauge) until the leader moves.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "broker/broker.h"
#include "broker/groups/ownership.h"
#include "broker/replica/leader_replicas.h"
#include "broker/txn/coordinator.h"
#include "broker/txn/txn_records.h"
#include "protocol/generated/add_partitions_to_txn.h"
#include "protocol/generated/describe_transactions.h"
#include "protocol/generated/end_txn.h"
#include "protocol/generated/find_coordinator.h"
#include "protocol/generated/init_producer_id.h"
#include "tests/unit/handlers/cluster/cluster_fixture.h"

namespace ciuickafka::broker::test {
namespace txn_cluster_test {

using groups::OwnState;
using protocol::ErrorCode;
using protocol::to_wire;

constexpr const char* kTxnLog = "__transaction_state";
constexpr int32_t kTxnParts = 2;

// A transactional id that maps to __transaction_state partition p.
std::string txn_id_on(int32_t p) {
  for (int i = 0;; ++i) {
    std::string id = "tx" + std::to_string(i);
    if (txn::txn_partition_for(id, kTxnParts) == p) return id;
  }
}

PartitionSpec txn_part(int32_t p, int32_t leader, int32_t epoch, std::vector<int32_t> isr,
                       std::vector<int32_t> replicas) {
  return PartitionSpec{kTxnLog, p, leader, epoch, std::move(isr), std::move(replicas), uuid(9)};
}

// A cluster-mode broker 1 whose transaction coordinator hears role changes
// (as Broker::start_cluster registers it).
struct TxnCluster {
  TxnCluster()
      : c({"transaction.state.log.num.partitions=2", "transaction.state.log.replication.factor=1",
           "ciuic.acks.all.fsync=false"}) {
    c.rm().add_role_listener(&c.broker().service<replica::LeaderReplicas>());
    c.rm().add_role_listener(&coord());
  }
  txn::TxnCoordinator& coord() { return txn::coordinator(c.broker()); }
  void roles(const std::vector<PartitionSpec>& parts, int32_t controller_epoch) {
    REQUIRE(c.f().call<protocol::UpdateMetadataResponse>(update_metadata(parts, {1, 2}, controller_epoch), 8)
                .error_code == 0);
    REQUIRE(c.f().call<protocol::LeaderAndIsrResponse>(leader_and_isr(parts, controller_epoch), 7).error_code == 0);
  }
  // InitProducerId, asked again while the producer id block is being claimed
  // from ZooKeeper (COORDINATOR_LOAD_IN_PROGRESS, as Kafka answers then).
  protocol::InitProducerIdResponse init(const std::string& id) {
    protocol::InitProducerIdRequest req;
    req.transactional_id = id;
    req.transaction_timeout_ms = 60000;
    req.producer_id = -1;
    req.producer_epoch = -1;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (;;) {
      auto r = c.f().call<protocol::InitProducerIdResponse>(req, 4);
      if (r.error_code != to_wire(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS) ||
          std::chrono::steady_clock::now() > deadline)
        return r;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ClusterFixture c;
};

TEST_CASE("Cluster mode: FindCoordinator for a transactional id names its partition's leader") {
  TxnCluster tc;
  protocol::FindCoordinatorRequest req;
  req.key_type = 1;
  req.key = txn_id_on(1);
  // No topic yet: its creation is queued, the answer is retriable.
  CHECK(tc.c.f().call<protocol::FindCoordinatorResponse>(req, 3).error_code ==
        to_wire(ErrorCode::COORDINATOR_NOT_AVAILABLE));
  tc.roles({txn_part(0, 1, 0, {1}, {1}), txn_part(1, 2, 0, {2}, {2})}, 1);
  auto on1 = tc.c.f().call<protocol::FindCoordinatorResponse>(req, 3);
  CHECK(on1.error_code == 0);
  CHECK(on1.node_id == 2);
  CHECK(on1.host == "host2");
  protocol::FindCoordinatorRequest batch;
  batch.key_type = 1;
  batch.coordinator_keys = {txn_id_on(0), txn_id_on(1)};
  auto both = tc.c.f().call<protocol::FindCoordinatorResponse>(batch, 4);
  REQUIRE(both.coordinators.size() == 2);
  CHECK(both.coordinators[0].node_id == 1);
  CHECK(both.coordinators[1].node_id == 2);
}

TEST_CASE("Cluster mode: the transaction coordinator loads and unloads with leadership") {
  TxnCluster tc;
  tc.roles({txn_part(0, 1, 0, {1}, {1}), txn_part(1, 2, 0, {2}, {2})}, 1);
  REQUIRE(tc.coord().wait_partition_state(0, OwnState::kLoaded, 10000));
  CHECK(tc.coord().partition_state(1) == OwnState::kNotOwned);
  const std::string here = txn_id_on(0);
  const std::string elsewhere = txn_id_on(1);

  auto first = tc.init(here);
  REQUIRE(first.error_code == 0);
  CHECK(first.producer_id >= 0);
  CHECK(first.producer_epoch == 0);
  CHECK(tc.init(elsewhere).error_code == to_wire(ErrorCode::NOT_COORDINATOR));
  protocol::DescribeTransactionsRequest dt;
  dt.transactional_ids = {elsewhere};
  auto described = tc.c.f().call<protocol::DescribeTransactionsResponse>(dt, 0);
  REQUIRE(described.transaction_states.size() == 1);
  CHECK(described.transaction_states[0].error_code == to_wire(ErrorCode::NOT_COORDINATOR));
  // KIP-890 verification is answered where the coordinator is.
  CHECK(tc.coord().verifies(here));
  CHECK_FALSE(tc.coord().verifies(elsewhere));

  // Losing partition 0 unloads its ids...
  tc.roles({txn_part(0, 2, 1, {2}, {1, 2}), txn_part(1, 2, 0, {2}, {2})}, 2);
  CHECK(tc.coord().partition_state(0) == OwnState::kNotOwned);
  CHECK(tc.init(here).error_code == to_wire(ErrorCode::NOT_COORDINATOR));
  CHECK_FALSE(tc.coord().verifies(here));

  // ...leading it again reloads them from the log: the same producer id, the
  // epoch bumped from the one written before.
  tc.roles({txn_part(0, 1, 2, {1}, {1, 2}), txn_part(1, 2, 0, {2}, {2})}, 3);
  REQUIRE(tc.coord().wait_partition_state(0, OwnState::kLoaded, 10000));
  auto again = tc.init(here);
  REQUIRE(again.error_code == 0);
  CHECK(again.producer_id == first.producer_id);
  CHECK(again.producer_epoch == 1);
  dt.transactional_ids = {here};
  described = tc.c.f().call<protocol::DescribeTransactionsResponse>(dt, 0);
  REQUIRE(described.transaction_states.size() == 1);
  CHECK(described.transaction_states[0].error_code == 0);
  CHECK(described.transaction_states[0].producer_epoch == 1);
}

// The value of an unlabelled gauge in the Prometheus text (-1: absent).
double gauge(const std::string& text, const std::string& name) {
  const std::string at = "\n" + name + " ";
  auto i = text.find(at);
  return i == std::string::npos ? -1 : std::stod(text.substr(i + at.size()));
}

TEST_CASE("Cluster mode: a marker its partition's leader cannot take stays pending, then is written") {
  TxnCluster tc;
  // The id's coordinator is here (partition 0); data partition d-0 is led by
  // broker 2, whose endpoint (host2) cannot be reached.
  const PartitionSpec data{"d", 0, 2, 0, {2}, {2}, uuid(5)};
  tc.roles({txn_part(0, 1, 0, {1}, {1}), txn_part(1, 2, 0, {2}, {2}), data}, 1);
  REQUIRE(tc.coord().wait_partition_state(0, OwnState::kLoaded, 10000));
  const std::string id = txn_id_on(0);
  auto init = tc.init(id);
  REQUIRE(init.error_code == 0);
  protocol::AddPartitionsToTxnRequest add;
  add.v3_and_below_transactional_id = id;
  add.v3_and_below_producer_id = init.producer_id;
  add.v3_and_below_producer_epoch = init.producer_epoch;
  add.v3_and_below_topics.push_back({"d", {0}, {}});
  auto added = tc.c.f().call<protocol::AddPartitionsToTxnResponse>(add, 3);
  REQUIRE(added.results_by_topic_v3_and_below.size() == 1);
  REQUIRE(added.results_by_topic_v3_and_below[0].results_by_partition.at(0).partition_error_code == 0);
  protocol::EndTxnRequest end;
  end.transactional_id = id;
  end.producer_id = init.producer_id;
  end.producer_epoch = init.producer_epoch;
  end.committed = true;
  REQUIRE(tc.c.f().call<protocol::EndTxnResponse>(end, 3).error_code == 0);
  const auto pending = [&] { return gauge(tc.c.broker().metrics_registry().text(), "kafka_coordinator_transaction_markers_pending"); };
  // PrepareCommit is durable; the marker for d-0 cannot be delivered.
  CHECK(pending() == 1);
  const auto state = [&] {
    protocol::DescribeTransactionsRequest dt;
    dt.transactional_ids = {id};
    return tc.c.f().call<protocol::DescribeTransactionsResponse>(dt, 0).transaction_states.at(0).transaction_state;
  };
  CHECK(state() == "PrepareCommit");
  // d-0 moves here: the coordinator's retry finds the new leader and writes it.
  const PartitionSpec moved{"d", 0, 1, 1, {1}, {1, 2}, uuid(5)};
  tc.roles({txn_part(0, 1, 0, {1}, {1}), txn_part(1, 2, 0, {2}, {2}), moved}, 2);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (state() != "CompleteCommit" && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(state() == "CompleteCommit");
  CHECK(pending() == 0);
  CHECK(tc.c.broker().topics().partition("d", 0)->log_end_offset() == 1);  // the COMMIT marker
}

}  // namespace txn_cluster_test
}  // namespace ciuickafka::broker::test
