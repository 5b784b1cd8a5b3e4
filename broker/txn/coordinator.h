// broker/txn/coordinator.h: the transaction coordinator, a broker service
// (`txn::coordinator(broker)`), with Kafka 3.9's state machine
// (TransactionMetadata / TransactionCoordinator) and its log,
// __transaction_state, in Kafka's record format (txn_records.h).
//
// Where it runs. Single node: this broker coordinates every transactional
// id. __transaction_state is created on demand (FindCoordinator for a
// transaction key, InitProducerId) with transaction.state.log.num.partitions
// partitions, replication factor 1, cleanup.policy=compact and
// transaction.state.log.segment.bytes. When the topic exists at start-up
// (main.cc creates the service then) every partition is loaded on the
// broker's background thread, last value per id winning, tombstones
// removing; until then requests get COORDINATOR_LOAD_IN_PROGRESS. After
// the load, transactions found in PrepareCommit/PrepareAbort get their
// markers again and complete; Ongoing ones stay open until the timeout
// sweep aborts them.
//
// Cluster mode (ZooKeeper), as Kafka's TransactionStateManager: the topic is
// created in ZooKeeper on demand (FindCoordinator for a transaction key) with
// transaction.state.log.replication.factor replicas and min.insync.replicas
// = transaction.state.log.min.isr. The coordinator of an id is the leader of
// its partition: becoming leader loads that partition (up to its log end,
// on the background thread; meanwhile COORDINATOR_LOAD_IN_PROGRESS), losing
// it unloads its ids (NOT_COORDINATOR; a write in flight fails the same
// way). The coordinator epoch is the partition's leader epoch at the load.
// Every write waits as acks=all does (replicated to the ISR, then fsynced
// with ciuic.acks.all.fsync; refused below min ISR). Markers go to each
// partition's leader: appended here when this broker leads it (and awaited
// as acks=all), else sent with WriteTxnMarkers (marker_channel.h); failures
// are retried by the tick with the leader looked up again. Producer ids come
// from ZooKeeper's blocks (ZkProducerIds). KIP-890 verification happens
// in-process where the coordinator is local (verifies()), else by asking the
// id's coordinator with AddPartitionsToTxn v4 (verify_remote), as Kafka 3.9
// does.
//
// Transitions (only one pending per id: a request meeting a pending one gets
// CONCURRENT_TRANSACTIONS). The new state is appended to the id's
// partition (the write queued on the calling network thread's io_uring,
// never a blocking write there: cluster/coordinator_write.h), and
// installed in memory only once the append is durable (fsynced when
// ciuic.acks.all.fsync is true), or at least written: then the request is
// answered. Append errors map as Kafka's: storage -> NOT_COORDINATOR or
// COORDINATOR_NOT_AVAILABLE.
//   InitProducerId: a new id gets a new producer id at epoch 0 (Empty). A
//     known one in Empty/Complete* gets epoch + 1 (a new producer id when
//     the epoch is exhausted), with KIP-360's expected pid/epoch checks
//     (PRODUCER_FENCED, a retry answered with the current epoch). Ongoing:
//     the old producer is fenced (epoch + 1, its transaction aborted with
//     that epoch) and the caller gets CONCURRENT_TRANSACTIONS, to retry.
//     Prepare*: CONCURRENT_TRANSACTIONS.
//   AddPartitionsToTxn / AddOffsetsToTxn: Ongoing with the union of the
//     partitions (no write when they are all in already).
//   EndTxn: PrepareCommit/PrepareAbort, answered once durable; then the
//     markers (ProduceService::append_marker, on the background thread;
//     for __consumer_offsets partitions the group coordinator applies or
//     drops the pending transactional offsets), then, once every marker is
//     durable, CompleteCommit/CompleteAbort (installed without waiting for
//     its own fsync: the next transition's fsync covers it, and losing it
//     only means the markers are written again at the next start). A marker that fails with a
//     retriable error is retried by the tick (every second).
//   Timeout sweep (every transaction.abort.timed.out.transaction.cleanup.
//     interval.ms): Ongoing transactions older than their timeout are
//     aborted with epoch + 1 (the producer is fenced).
//   Expiry (once a minute): ids idle in Empty/Complete* for longer than
//     transactional.id.expiration.ms get a tombstone and are forgotten.
// The coordinator epoch in markers is the __transaction_state partition's
// leader epoch.
//
// Metrics (a collector, single node; main.cc creates the service at start
// so the families are always there): transactional ids by state, markers
// written, transactions committed / aborted / aborted by timeout, the last
// load's duration, and per partition the LSO lag (HW - LSO).
//
// Thread-safety: every method may be called from any thread. One mutex
// (mu_) guards the id map and every TxnMeta; it is never held across an
// append or a callback, and never taken under a partition's producer-state
// lock... except by verify_partition(), which the produce path calls with
// that lock held: verify_partition() only reads the map.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "broker/cluster/replica_roles.h"
#include "broker/groups/ownership.h"
#include "broker/net/asio.h"
#include "broker/txn/txn_records.h"
#include "protocol/error_code.h"

namespace ciuickafka::broker {
class Broker;
class CoordinatorWrite;
class Partition;
}  // namespace ciuickafka::broker

namespace ciuickafka::broker::txn {

class MarkerChannel;

inline constexpr int16_t kMaxProducerEpoch = 32767;  // Short.MAX_VALUE

// One transactional id's state (all fields under TxnCoordinator::mu_).
struct TxnMeta {
  std::string id;
  TxnRecord rec;                 // what the log says (installed after each durable write)
  int64_t last_producer_id = -1; // KIP-360: the previous producer id/epoch (memory only, as Kafka 3.9)
  int16_t last_epoch = -1;
  bool pending = false;          // a transition is being written
  std::set<TxnPartition> awaiting_markers;  // Prepare*: partitions whose marker is not written yet
  bool markers_started = false;  // Prepare*: awaiting_markers was filled from rec.partitions
  bool markers_running = false;  // a marker round is queued or running
};

class TxnCoordinator : public ReplicaRoleListener {
 public:
  explicit TxnCoordinator(Broker& broker);
  ~TxnCoordinator() override;
  TxnCoordinator(const TxnCoordinator&) = delete;
  TxnCoordinator& operator=(const TxnCoordinator&) = delete;
  void stop();

  // NONE when this broker coordinates transactional_id (creating the topic
  // first when needed); COORDINATOR_LOAD_IN_PROGRESS while loading;
  // NOT_COORDINATOR when another broker leads its partition (cluster);
  // COORDINATOR_NOT_AVAILABLE when it cannot (the topic does not exist yet
  // or its creation failed).
  protocol::ErrorCode coordinator_error(const std::string& transactional_id);
  // Single node: FindCoordinator's answer: NONE when this broker coordinates
  // (the topic exists, created now if needed), whether or not it is still
  // loading (as Kafka's: the requests that follow get
  // COORDINATOR_LOAD_IN_PROGRESS); COORDINATOR_NOT_AVAILABLE otherwise.
  protocol::ErrorCode find_error();
  bool cluster_mode() const { return cluster_; }
  // True when the topic exists (single node: created now if missing;
  // cluster: the metadata cache knows it, else its creation is queued).
  bool ensure_topic();
  // The id's __transaction_state partition.
  int32_t partition_of(const std::string& transactional_id);
  // Whether KIP-890 verification of the id's partitions can be answered
  // here: always on a single node; in cluster mode when this broker owns
  // (loads or has loaded) the id's partition.
  bool verifies(const std::string& transactional_id);
  // Cluster mode: the state of __transaction_state partition p here.
  groups::OwnState partition_state(int32_t p);
  bool wait_partition_state(int32_t p, groups::OwnState want, int64_t timeout_ms);

  // --- ReplicaRoleListener (cluster mode: load / unload on leadership)
  void became_leader(const std::shared_ptr<Partition>& p) override;
  void became_follower(const std::shared_ptr<Partition>& p, const LeaderEndpoint& leader) override;
  void stopped(const storage::TopicPartition& tp, bool deleted) override;

  bool wait_loaded(int64_t timeout_ms);
  // NONE once loaded, COORDINATOR_LOAD_IN_PROGRESS before (creates nothing).
  protocol::ErrorCode load_state() const {
    return loaded_.load(std::memory_order_acquire) ? protocol::ErrorCode::NONE
                                                   : protocol::ErrorCode::COORDINATOR_LOAD_IN_PROGRESS;
  }

  using InitDone = std::function<void(protocol::ErrorCode, int64_t producer_id, int16_t epoch)>;
  void init_producer_id(const std::string& id, int32_t timeout_ms, int64_t expected_pid, int16_t expected_epoch,
                        InitDone done);

  using Done = std::function<void(protocol::ErrorCode)>;
  // The partitions must exist (the handler checks).
  void add_partitions(const std::string& id, int64_t producer_id, int16_t epoch, std::vector<TxnPartition> partitions,
                      Done done);
  // KIP-890 verification: NONE when (pid, epoch) has tp in its ongoing
  // transaction; INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED,
  // CONCURRENT_TRANSACTIONS or INVALID_TXN_STATE otherwise. No write.
  protocol::ErrorCode verify_partition(const std::string& id, int64_t producer_id, int16_t epoch,
                                       const std::string& topic, int32_t partition);
  // KIP-890 verification by the id's coordinator on another broker (cluster
  // mode, where verifies() is false), as Kafka's AddPartitionsToTxnManager
  // asks it: one AddPartitionsToTxn v4 verify-only request to the leader of
  // the id's __transaction_state partition, over a channel of its own. done
  // runs on that channel's thread with one error per partition: NONE when
  // the partition is in (pid, epoch)'s ongoing transaction, else the
  // coordinator's answer, or COORDINATOR_NOT_AVAILABLE / NETWORK_EXCEPTION
  // when it could not be asked.
  using VerifyDone = std::function<void(std::map<TxnPartition, protocol::ErrorCode>)>;
  void verify_remote(const std::string& id, int64_t producer_id, int16_t epoch, std::vector<TxnPartition> partitions,
                     VerifyDone done);
  void end_txn(const std::string& id, int64_t producer_id, int16_t epoch, bool commit, Done done);

  // DescribeTransactions / ListTransactions views.
  struct View {
    protocol::ErrorCode error = protocol::ErrorCode::NONE;
    std::string id;
    TxnState state = TxnState::kEmpty;
    int64_t producer_id = -1;
    int16_t epoch = -1;
    int32_t timeout_ms = 0;
    int64_t start_ms = -1;
    std::set<TxnPartition> partitions;  // Ongoing: all; Prepare*: those still lacking markers
  };
  View describe(const std::string& id);
  std::vector<View> list();

  // Aborts Ongoing transactions older than their timeout as of now_ms
  // (the sweep; tests call it directly). Returns how many were started.
  size_t abort_timed_out(int64_t now_ms);
  // Tombstones transactional ids idle (Empty / Complete*) for longer than
  // transactional.id.expiration.ms as of now_ms (the tick, once a minute;
  // tests call it). Returns how many.
  size_t expire_ids(int64_t now_ms);
  // Open (Ongoing or Prepare*) transactions, for metrics and tests.
  size_t open_transactions();

 private:
  // Whether abort_timed_out and expire_ids may run now: not stopped; on a single node,
  // loaded and with the topic present (they never create it).
  bool sweepable();
  using MetaPtr = std::shared_ptr<TxnMeta>;
  struct Appended {
    protocol::ErrorCode error = protocol::ErrorCode::NONE;
    std::shared_ptr<Partition> partition;
    int64_t end_offset = 0;
    // The write, queued on the network thread's io_uring (or done, where
    // the thread has none): cluster/coordinator_write.h.
    std::shared_ptr<CoordinatorWrite> write;
  };
  // done(error) once a's write has completed (its append error, or
  // KAFKA_STORAGE_ERROR mapped as append errors are, when the write failed).
  void when_written(const Appended& a, std::function<void(protocol::ErrorCode)> done);

  std::shared_ptr<Partition> local_partition(const std::string& id);
  protocol::ErrorCode new_producer_id(int64_t* id);
  int32_t coordinator_epoch(const std::string& id);
  // Appends next for m (not under mu_), then, once durable (at once when
  // durable is false), installs it (under mu_), clears pending and calls
  // then(error).
  void write(const MetaPtr& m, TxnRecord next, std::function<void(protocol::ErrorCode)> then, bool durable = true);
  Appended append(const std::string& id, const TxnRecord& rec);
  void when_durable(const Appended& a, std::function<void(protocol::ErrorCode)> done);
  // Under mu_: the abort with epoch + 1 of m's ongoing transaction (fencing).
  // Writes PrepareAbort, then runs the markers; then(error) after the write.
  void fence_and_abort(const MetaPtr& m, std::function<void(protocol::ErrorCode)> then);
  // Queues a marker round for m (a Prepare* state) on the background thread.
  void schedule_markers(const MetaPtr& m);
  void run_markers(const MetaPtr& m);
  void load();
  // The last record per id in p's log below end (tombstones erase).
  static void read_partition(Partition& p, int64_t end, std::map<std::string, TxnRecord>& found);
  // Under mu_: found's ids become metas (replacing any); those in Prepare*
  // are added to to_complete (their markers are written again).
  void install_locked(std::map<std::string, TxnRecord>& found, std::vector<MetaPtr>& to_complete);
  // Cluster mode.
  void load_owned(const std::shared_ptr<Partition>& p, uint64_t token);
  void unload(int32_t index);
  int32_t partition_count();
  void arm_timer();
  void tick();

  Broker& broker_;
  const bool cluster_;
  std::atomic<bool> loaded_{false};
  std::atomic<bool> stopped_{false};
  std::mutex load_mu_;
  std::condition_variable load_cv_;

  std::mutex mu_;
  std::map<std::string, MetaPtr> txns_;

  // Cluster mode: which partitions are loaded here (mu_, then own_mu_).
  std::mutex own_mu_;
  std::condition_variable own_cv_;
  groups::OffsetsOwnership ownership_;
  std::unique_ptr<MarkerChannel> markers_;
  std::unique_ptr<MarkerChannel> verifications_;  // KIP-890 requests to other coordinators

  // Metrics (txn_metrics.cc): counters, and the collector's registration.
  void register_metrics();
  std::atomic<uint64_t> markers_written_{0};
  std::atomic<uint64_t> committed_{0};
  std::atomic<uint64_t> aborted_{0};
  std::atomic<uint64_t> timed_out_{0};
  std::atomic<int64_t> load_ms_{0};
  uint64_t metrics_id_ = 0;

  int64_t next_sweep_ms_ = 0;   // timer thread only
  int64_t next_expiry_ms_ = 0;  // timer thread only
  std::mutex timer_mu_;
  std::unique_ptr<asio::steady_timer> timer_;
  std::shared_ptr<std::atomic<bool>> alive_ = std::make_shared<std::atomic<bool>>(true);
};

// The coordinator, created after the services it uses (ProduceService, the
// group coordinator) so that it stops before them. Use this, not
// broker.service<TxnCoordinator>().
TxnCoordinator& coordinator(Broker& broker);

}  // namespace ciuickafka::broker::txn
