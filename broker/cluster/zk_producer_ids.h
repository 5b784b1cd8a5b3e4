// broker/cluster/zk_producer_ids.h: producer ids in cluster mode, unique
// across every broker of the cluster (issue #12, item 8).
//
// A single node hands out ids from its own persisted block file
// (produce/produce_service.h). In a cluster two brokers doing that would hand
// out the same ids, so here ids come from blocks of 1000 claimed in
// ZooKeeper's /latest_producer_id_block (replication/producer_id_blocks.h),
// the znode Kafka's ZooKeeper-mode brokers use. As Kafka's
// RPCProducerIdManager: the next block is fetched in the background once 90 %
// of the current one is handed out, and a request that finds no block ready
// gets COORDINATOR_LOAD_IN_PROGRESS (clients retry it); the ids left in a
// block when the broker stops are never handed out by anyone.
//
// ZooKeeper is called only on this service's own thread, never on a network
// thread; a failed claim is retried on the next request after
// kRetryBackoffMs.
//
// Thread-safety: next() may be called from any thread; stop() once, at
// shutdown (the destructor calls it).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "protocol/error_code.h"
#include "replication/result.h"
#include "replication/zk_data.h"

namespace ciuickafka::broker {

class Broker;

class ZkProducerIds {
 public:
  static constexpr int64_t kRetryBackoffMs = 500;

  // Claims a block (blocking); the default claims from the broker's
  // ZooKeeper session. Tests inject their own.
  using Claim = std::function<replication::Result<replication::ProducerIdBlock>()>;

  explicit ZkProducerIds(Broker& broker);
  ZkProducerIds(Claim claim, std::function<int64_t()> now_ms);  // tests
  ~ZkProducerIds();
  ZkProducerIds(const ZkProducerIds&) = delete;
  ZkProducerIds& operator=(const ZkProducerIds&) = delete;

  // The next id, or COORDINATOR_LOAD_IN_PROGRESS while no block is ready
  // (a claim is then under way).
  protocol::ErrorCode next(int64_t* id);
  // Starts claiming a block unless one is ready or being claimed (the broker
  // calls it once registered, so the first request finds ids).
  void prefetch();
  // Blocks until no claim is asked for or running (tests); false when one
  // still is after timeout_ms.
  bool wait_idle(int64_t timeout_ms);
  void stop();

  // The last claim's error ("" when it succeeded or none ran yet).
  std::string last_error() const;

 private:
  void request_claim_locked();
  void run();

  Claim claim_;
  std::function<int64_t()> now_ms_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::optional<replication::ProducerIdBlock> current_;  // ids next_..block_end left
  int64_t next_ = 0;
  std::optional<replication::ProducerIdBlock> prefetched_;
  bool wanted_ = false;    // a claim is asked for or running
  bool stopping_ = false;
  int64_t retry_after_ms_ = 0;  // no new claim before this (after a failure)
  std::string last_error_;
  std::thread thread_;
};

}  // namespace ciuickafka::broker
