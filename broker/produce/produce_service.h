// broker/produce/produce_service.h: the produce area's shared state, one
// per broker (broker.service<ProduceService>()): idempotent-producer state
// per partition, its snapshots, and the producer id allocator.
//
// Per partition (PartitionState) there is a mutex that makes the sequence
// check, the append and the state update one step for idempotent batches;
// batches without a producer id do not take it (the log serialises them).
// The state is loaded on the first idempotent batch (on the I/O pool:
// handlers/produce.cc asks loaded_for_writes() first; or DescribeProducers,
// or a read_committed fetch): the newest producer snapshot
// `<offset>.snapshot` in the partition directory (Kafka's format, see
// producer_state.h), the aborted transactions below its offset from the
// segments' `.txnindex` files (storage/txn_index.h), then every batch from
// the snapshot's offset to the log end read back from the log (producer id,
// epoch and sequence are in the v2 batch headers; ABORT markers found there
// are added to the .txnindex after the entries past the snapshot are cut,
// so each is written once). Without a usable snapshot the whole log is
// scanned (once, per partition, after an unclean shutdown that lost it)
// and the .txnindex files rebuilt. Snapshots are written at stop() (clean
// shutdown), at most once a minute per partition with new idempotent
// appends, and, as Kafka does, at every roll of a leader's log (after_roll:
// a table not loaded yet is loaded first, on the I/O pool, one partition
// at a time; so a partition only plain producers write gets one too, and a
// load after a crash scans about one segment, not the whole log). They are
// written from the maintenance pool (or the I/O pool after its load); the
// .txnindex files are fsynced first, and after a new snapshot only it and
// the newest older one are kept (a crash that cuts the log below the newer
// one leaves the older one usable). The pre-Kafka file
// `ciuic-producer-state` is read when no `.snapshot` exists (an upgrade),
// its aborted list written to the .txnindex files, and removed by the next
// snapshot. A snapshot whose offset is beyond the log end (a crash cut the
// log below it) is deleted when the service starts, before any append
// could make the log grow past it again; a truncation (storage) deletes
// those past its cut. Producers idle for producer.id.expiration.ms
// (Kafka's key, dynamic; a day by default) are dropped when a snapshot is
// written and by tick() every producer.id.expiration.check.interval.ms, as
// Kafka's periodic check does; those rebuilt from the log count as written
// at the load.
//
// In cluster mode the service is a ReplicaRoleListener: a follower's
// appends (the leader's batches, copied as they are) do not go through this
// table, and a follower may truncate a divergent tail that a snapshot still
// covers, so every role change (leader or follower) drops the partition's
// table and marks its snapshot unusable; the next idempotent batch on a
// leader rebuilds the table from the whole log, which then holds every
// batch the previous leaders wrote: a producer retrying across a failover
// is deduplicated and its next sequence accepted, as on Kafka.
//
// Transactions (the partition side; the coordinator is txn/coordinator.h):
// the same table holds each producer's open transaction on the partition,
// the aborted transactions and the undecided ones (producer_state.h). A
// transactional batch opens a transaction after the coordinator confirmed
// the partition is in it (handlers/produce.cc); append_marker() writes the
// COMMIT/ABORT control batch and closes it; last_stable_offset() is
// min(HW, first undecided offset) and aborted_transactions() what a
// read_committed fetch lists. Both take the fast path (no lock) while the
// table is loaded and holds nothing transactional (txn_free). The first
// read_committed fetch of a partition loads the table; a table never
// loaded has no producer-id writes in flight, so that load does not wait
// for plain writes in flight (only a table dropped by a role change or a
// failed write does).
//
// Producer ids (InitProducerId) come from blocks of 1000 reserved in
// `ciuic-producer-ids` in the first log dir (a decimal number: the end of
// the last reserved block, replaced atomically before any id of a new block
// is handed out), so an id is never handed out twice, across restarts too.
// The ids left in a block at shutdown are skipped.
//
// Thread-safety: every method may be called from any thread; members of a
// PartitionState marked "under mu" need its mu held.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "broker/cluster/partition.h"
#include "broker/cluster/replica_roles.h"
#include "broker/produce/producer_state.h"
#include "metrics/topic_metrics.h"
#include "protocol/error_code.h"
#include "storage/log.h"
#include "storage/status.h"

namespace ciuickafka::broker {
class Broker;
}

namespace ciuickafka::broker::produce {

inline constexpr std::string_view kLegacySnapshotFile = "ciuic-producer-state";  // before Kafka's format; read once
inline constexpr std::string_view kProducerIdFile = "ciuic-producer-ids";
inline constexpr int64_t kProducerIdBlock = 1000;
inline constexpr int64_t kSnapshotIntervalMs = 60'000;

struct PartitionState {
  std::mutex mu;
  std::weak_ptr<storage::Log> log;
  // Written under mu, set once a load has finished; read without mu by
  // loaded_for_writes() (a hint: the caller then takes mu).
  std::atomic<bool> loaded{false};
  ProducerStateTable table;         // under mu
  bool dirty = false;               // under mu: appends since the last snapshot written (or tried and failed)
  bool rescan = false;              // under mu: the next load ignores the snapshot (a role change)
  bool snapshot_queued = false;     // under mu
  // Under mu: the next load must wait for the writes in flight (a dropped
  // table may have recorded some).
  bool needs_quiet_load = false;
  // Loaded, and nothing transactional in the table: read_committed reads up
  // to the HW without taking mu. Cleared (under mu) before a transactional
  // write or marker is queued, so before it can be read.
  std::atomic<bool> txn_free{false};
  // Under mu: KIP-890 verifications asked of a remote coordinator, by
  // producer id: the guard the produce request holds. A marker for the
  // producer removes it, so the verification's answer cannot open a
  // transaction begun after it (handlers/produce.cc).
  std::unordered_map<int64_t, uint64_t> verify_guards;
  // Under mu: an aborted transaction could not be added to the .txnindex;
  // no snapshot is written until the next load rebuilds the index.
  bool index_incomplete = false;
  int64_t last_snapshot_ms = 0;     // under mu
  // Under mu: the offset of the last snapshot taken or loaded (-1: none
  // known); a roll snapshots a table that has not changed when its last
  // snapshot is below the new segment.
  int64_t snapshot_offset = -1;
  std::atomic<bool> load_queued{false};  // a load is queued for the I/O pool (load_on_pool)
  int64_t loaded_from = -1;  // under mu: where the last load's scan of the log began (its log line, tests)
  std::mutex file_mu;               // one snapshot write at a time
  int64_t written_offset = -1;      // under file_mu
  // Set at creation, then read-only.
  metrics::TopicMetrics topic_metrics;
};

// The result of a transaction marker's append.
struct MarkerResult {
  protocol::ErrorCode error = protocol::ErrorCode::NONE;
  std::string message;
  std::shared_ptr<storage::Log> log;  // on success
  int64_t end_offset = 0;             // one past the marker
};

class ProduceService : public ReplicaRoleListener {
 public:
  explicit ProduceService(Broker& broker);
  ~ProduceService();
  ProduceService(const ProduceService&) = delete;
  ProduceService& operator=(const ProduceService&) = delete;

  // Writes a snapshot of every loaded partition (synchronously).
  void stop();

  // The broker's tick (the maintenance pool, one at a time): every
  // producer.id.expiration.check.interval.ms, expire_producers(now_ms).
  void tick(int64_t now_ms);
  // Drops, in every loaded table, the producers idle for longer than
  // producer.id.expiration.ms without a transaction open (Kafka's
  // removeExpiredProducers); how many.
  size_t expire_producers(int64_t now_ms);

  std::shared_ptr<PartitionState> partition_state(const Partition& p);
  // p's state if it exists (creates nothing), else null.
  std::shared_ptr<PartitionState> existing_state(const Partition& p);
  // st.mu held: loads the table once (snapshot, then the log's tail).
  // False while writes assigned before the load are still in flight (the
  // scan cannot see them yet, and a retry of one of them would be taken for
  // a new batch): the caller answers a retriable error and nothing is loaded.
  [[nodiscard]] bool ensure_loaded(PartitionState& st, storage::Log& log);
  // st.mu held: after an idempotent append; queues a snapshot when due.
  void after_append(const std::shared_ptr<PartitionState>& st, int64_t now_ms);

  // The maintenance pool, after p's log rolled to a segment at base (the
  // LogManager's roll listener): on a leader, a snapshot (a table not
  // loaded yet is loaded on the I/O pool first, once: it may scan the
  // whole log). Followers keep no table.
  void after_roll(const std::shared_ptr<Partition>& p, int64_t base);

  // st.mu held: an idempotent append recorded in the table failed to
  // write. The table (and its snapshot, which may hold the failed batch)
  // are dropped; the next idempotent batch reloads them from the log.
  void forget_after_failed_write(PartitionState& st, const storage::Log& log);

  // --- transactions
  // p's last stable offset: min(HW, first unstable offset). nullopt while
  // the producer state cannot be loaded yet (writes of a dropped table in
  // flight): the caller serves nothing for now.
  // load false (read_uncommitted only reports it): a state not loaded yet
  // is not loaded for this, and the HW is answered.
  std::optional<int64_t> last_stable_offset(Partition& p, bool load = true);
  // For retention (the LogManager's tick, on the maintenance pool): p's
  // LSO once its state is loaded; without a producer snapshot, the HW.
  // With one and the state not loaded, nullopt (nothing is deleted yet)
  // and the load (the snapshot and the log's tail) is queued on the I/O
  // pool for a later check.
  std::optional<int64_t> retention_bound(Partition& p);
  // For metrics: the LSO when p's state exists and is loaded, else the HW
  // (creates nothing, loads nothing).
  int64_t known_last_stable_offset(const Partition& p);
  // Whether p's table is loaded and holds nothing transactional (creates
  // nothing, loads nothing: false when not known).
  bool known_txn_free(const Partition& p);
  // Whether a read_committed LSO of p needs no load (the table is loaded,
  // or known to hold nothing transactional): a load scans the log from the
  // newest snapshot, which a network thread must not wait for. Creates
  // nothing, loads nothing, never waits for a load in progress (false).
  bool loaded_for_reads(const Partition& p);
  // Whether an idempotent batch for p needs no load (the table is loaded):
  // a network thread hands a Produce that would load to the I/O pool
  // (handlers/produce.cc). Creates nothing, loads nothing, takes no lock.
  bool loaded_for_writes(const Partition& p);
  // Loads p's table now (a blocking scan: not for network threads); false
  // while it cannot be loaded yet (ensure_loaded).
  bool load_for_writes(const Partition& p);
  // Aborted transactions overlapping [from, upper) (read_committed fetch).
  std::vector<AbortedTxn> aborted_transactions(Partition& p, int64_t from, int64_t upper);
  // Appends a COMMIT/ABORT marker for producer_id to p (a blocking write:
  // not for network threads) after Kafka's marker checks.
  MarkerResult append_marker(Partition& p, int64_t producer_id, int16_t epoch, int32_t coordinator_epoch,
                             bool commit);

  // Appends a transactional batch written by the broker itself (the group
  // coordinator's TxnOffsetCommit records) for producer_id at epoch, which
  // opens (or continues) its transaction on p; INVALID_PRODUCER_EPOCH when
  // the producer's epoch here is newer. Blocking write, like append_marker.
  MarkerResult append_transactional(Partition& p, int64_t producer_id, int16_t epoch, std::vector<uint8_t> batch);

  // A guard for a KIP-890 verification (PartitionState::verify_guards), unique.
  uint64_t new_verification_guard() { return next_guard_.fetch_add(1, std::memory_order_relaxed) + 1; }

  // A new producer id, never handed out before.
  storage::Result<int64_t> allocate_producer_id();

  // ReplicaRoleListener (cluster mode; registered by Broker::start_cluster).
  // Before the partition leads (the fetcher has stopped): the first
  // idempotent batch then builds the table from the complete log. A leader
  // that stays leader at a new epoch (the controller changed the ISR) keeps
  // its table: every append since it was loaded went through it, including
  // the writes still in flight, which a rescan could not see.
  void will_lead(const std::shared_ptr<Partition>& p) override {
    if (!p->is_leader()) reset_for_role_change(*p);
  }
  void became_leader(const std::shared_ptr<Partition>&) override {}
  void became_follower(const std::shared_ptr<Partition>& p, const LeaderEndpoint&) override {
    reset_for_role_change(*p);
  }
  void stopped(const storage::TopicPartition&, bool) override {}
  // Drops p's table and marks its snapshot unusable (no disk access).
  void reset_for_role_change(const Partition& p);

  // Tests: writes the snapshot now.
  storage::Status snapshot_now(const std::shared_ptr<PartitionState>& st);

 private:
  std::string snapshot_path(const storage::Log& log, int64_t offset) const;
  std::string legacy_snapshot_path(const storage::Log& log) const;
  // The offsets of the partition's `<offset>.snapshot` files, ascending.
  std::vector<int64_t> snapshot_offsets(const storage::Log& log) const;
  // Removes every snapshot file but the one at keep and, with
  // keep_previous, the newest one below it (and the legacy file).
  void remove_snapshots(const storage::Log& log, int64_t keep, bool keep_previous = false);
  void remove_stale_snapshots();
  // st.mu held: writes the table's aborted transactions from index `from`
  // on to the log's .txnindex files.
  void index_aborted(PartitionState& st, storage::Log& log, size_t from);
  // Writes when the table changed since its last snapshot, or when that
  // snapshot is below at_least.
  storage::Status write_snapshot(PartitionState& st, const std::shared_ptr<storage::Log>& log, int64_t now_ms,
                                 int64_t at_least = -1);
  // st.load_queued set by the caller: queues st's load for the I/O pool
  // (one at a time, in order), then a snapshot (write_snapshot's at_least
  // = snapshot_at); the load clears the flag. Takes no PartitionState lock.
  void load_on_pool(const std::shared_ptr<PartitionState>& st, const std::shared_ptr<storage::Log>& log,
                    int64_t snapshot_at);
  void post_next_load();
  void run_next_load();

  Broker& broker_;
  std::mutex mu_;  // guards states_
  int64_t last_expiry_ms_ = -1;  // tick() only (serial: one timer)
  std::unordered_map<const storage::Log*, std::shared_ptr<PartitionState>> states_;

  // Snapshot tasks (the maintenance pool's, the I/O pool's) check this,
  // holding its lock shared, before touching the service, which stop()
  // marks gone holding it exclusively: writes of different partitions run
  // at once, and none is in progress after stop().
  struct Alive {
    std::shared_mutex mu;
    bool alive = true;
  };
  std::shared_ptr<Alive> alive_ = std::make_shared<Alive>();

  // The loads queued for the I/O pool (load_on_pool), and whether a task
  // that takes them is posted.
  struct BackgroundLoad {
    std::weak_ptr<PartitionState> state;
    std::weak_ptr<storage::Log> log;
    int64_t snapshot_at = -1;
  };
  std::mutex loads_mu_;
  std::deque<BackgroundLoad> loads_;  // under loads_mu_
  bool load_posted_ = false;          // under loads_mu_

  std::atomic<uint64_t> next_guard_{0};
  std::mutex pid_mu_;
  int64_t next_pid_ = 0;      // under pid_mu_
  int64_t reserved_end_ = 0;  // under pid_mu_
  bool pid_loaded_ = false;   // under pid_mu_
};

}  // namespace ciuickafka::broker::produce
