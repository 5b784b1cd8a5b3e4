// storage/log_manager.h: every partition's log under the `log.dirs` list.
//
// Layout (Kafka's): each log dir holds `<topic>-<partition>/` directories
// (each with partition.metadata naming the topic id), the offset checkpoints
// `recovery-point-offset-checkpoint` and `log-start-offset-checkpoint`, and,
// after a clean shutdown, the empty marker `.kafka_cleanshutdown`.
//
// open() scans every dir: `*-delete` directories (a topic deletion that a
// restart interrupted) are removed, names that are not partition
// directories are ignored, and every log is opened in parallel on a small
// pool (min(partitions, hardware threads)): with the clean-shutdown marker
// the logs skip recovery, otherwise only segments past each log's recovery
// point are scanned (Log's recovery). The marker is removed (durably) before
// open() returns, so a crash from then on is seen as one.
//
// Periodic work is driven by the caller: tick(now_ms) (the broker calls it
// from a timer every few seconds) applies flush.ms, retention (every
// retention_check_interval_ms), unlinks `.deleted` files and `-delete`
// directories whose file.delete.delay.ms has passed, and writes the
// checkpoints every checkpoint_interval_ms. With cleaner_enable
// (log.cleaner.enable), tick() also starts a cleaner pass every
// cleaner_backoff_ms (log.cleaner.backoff.ms, changeable with
// set_cleaner_settings): storage/cleaner.h over every log whose
// cleanup.policy includes compact. The pass is shared by cleaner.threads
// threads (log.cleaner.threads), each taking the next log in turn, so
// several logs are cleaned at once and each log by one thread; each thread's
// offset map gets dedupe_buffer_bytes / threads, as in Kafka. The number of
// threads changes live (set_cleaner_settings): new ones join the pass at
// once, and one that leaves finishes the log it is cleaning first (Kafka
// aborts and restarts its cleaning instead).
// Every pass's reads and writes go through one Throttler at
// log.cleaner.io.max.bytes.per.second (CleanerConfig); stopping the cleaner
// cancels it, so shutdown never waits out a throttle delay.
// Its progress (each log's first dirty offset) is written to
// `cleaner-offset-checkpoint` with the other checkpoints and read back at
// open. The manager owns group commit's flusher thread (sync_to) and the
// cleaner threads.
//
// Thread-safety: every method may be called from any thread. The partition
// map is guarded by one mutex held only for map operations and file-system
// metadata work of create/remove (never for appends or reads: callers hold
// the shared_ptr<Log> and use it directly).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "protocol/wire/types.h"
#include "storage/cleaner.h"
#include "storage/file_names.h"
#include "storage/group_commit.h"
#include "storage/io/file.h"
#include "storage/log.h"
#include "storage/status.h"

namespace ciuickafka::storage {

inline constexpr std::string_view kCleanShutdownFile = ".kafka_cleanshutdown";
inline constexpr std::string_view kCleanerOffsetCheckpointFile = "cleaner-offset-checkpoint";

struct LogManagerConfig {
  LogConfig default_config;
  // The config of a log found on disk at open (topic overrides); the
  // default config when unset.
  std::function<LogConfig(const TopicPartition&)> config_for;
  // Threads that open logs; 0: min(partitions, hardware threads).
  unsigned recovery_threads = 0;
  int64_t retention_check_interval_ms = 300'000;  // log.retention.check.interval.ms
  int64_t checkpoint_interval_ms = 60'000;        // log.flush.offset.checkpoint.interval.ms
  int64_t file_delete_delay_ms = 60'000;          // for removed partitions (log.segment.delete.delay.ms)
  bool cleaner_enable = false;                    // log.cleaner.enable (the broker's default is true)
  int64_t cleaner_backoff_ms = 15'000;            // log.cleaner.backoff.ms
  CleanerConfig cleaner;                          // log.cleaner.dedupe.buffer.size, ...
};

struct CleanerManagerStats {
  uint64_t passes = 0;        // passes over all logs completed
  uint64_t logs_cleaned = 0;  // log passes that rewrote something
  uint64_t segments_rewritten = 0;
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t aborted_batches_removed = 0;  // batches of aborted transactions
  uint64_t errors = 0;
  std::string last_error;
  unsigned threads = 0;       // cleaner threads now (log.cleaner.threads; 0: the cleaner is off)
  unsigned last_pass_parallel = 0;  // the most logs cleaned at once in the last pass
  // log.cleaner.io.max.bytes.per.second at work (storage/throttler.h):
  // bytes counted, and the sleeps it imposed on the passes.
  Throttler::Stats throttle;
};

struct LogManagerStats {
  size_t logs_opened = 0;
  size_t dirs_clean = 0;           // log dirs that had the clean-shutdown marker
  uint64_t segments_recovered = 0; // segments scanned batch by batch at open
  uint64_t bytes_truncated = 0;    // torn tails cut at open
  size_t delete_dirs_removed = 0;  // `-delete` directories removed at open
  unsigned recovery_threads = 0;   // threads that opened the logs (at most one per log)
};

class LogManager {
 public:
  static Result<std::unique_ptr<LogManager>> open(io::FileSystem& fs, std::vector<std::string> log_dirs,
                                                  LogManagerConfig config, int64_t now_ms);
  ~LogManager();  // shutdown() if not yet done
  LogManager(const LogManager&) = delete;
  LogManager& operator=(const LogManager&) = delete;

  // The log of tp; nullptr when there is none.
  std::shared_ptr<Log> get(const TopicPartition& tp) const;
  // Creates the log of tp in the log dir holding fewest partitions and
  // writes its partition.metadata. Returns the existing log when tp has one
  // with the same topic id; kInvalidArgument when its topic id differs.
  Result<std::shared_ptr<Log>> create(const TopicPartition& tp, const protocol::Uuid& topic_id,
                                      const LogConfig& config, int64_t now_ms = 0);
  // Kafka-style deletion: the log leaves the map, its directory is renamed
  // to `<topic>-<partition>.<unique id>-delete` and removed by tick() once
  // file.delete.delay.ms has passed. Readers holding slices keep reading.
  // kNotFound when tp has no log.
  Status remove(const TopicPartition& tp);
  std::vector<std::pair<TopicPartition, std::shared_ptr<Log>>> all() const;
  // The topic id read from or written to partition.metadata.
  std::optional<protocol::Uuid> topic_id(const TopicPartition& tp) const;
  Status update_config(const TopicPartition& tp, const LogConfig& config);

  // Replica truncation (Kafka's LogManager.truncateTo and
  // truncateFullyAndStartAt): Log::truncate_to / truncate_fully_and_start_at,
  // then the checkpoints are written at once, so a restart never trusts a
  // recovery point above the truncated end (recovery would skip segments
  // written after the truncation). Use these rather than the Log's own
  // calls. kNotFound when tp has no log; the Log's errors otherwise.
  Result<int64_t> truncate_to(const TopicPartition& tp, int64_t offset, int64_t now_ms);
  Status truncate_fully_and_start_at(const TopicPartition& tp, int64_t offset, int64_t now_ms);

  // Group commit (storage/group_commit.h): done(ok) once every record of
  // log below offset is fdatasync'd; concurrent requests share syncs.
  void sync_to(std::shared_ptr<Log> log, int64_t offset, GroupCommitter::Callback done);
  GroupCommitter::Stats group_commit_stats() const { return committer_.stats(); }
  void set_group_commit_observer(GroupCommitter::RoundObserver fn) { committer_.set_round_observer(std::move(fn)); }

  // Writes recovery-point and log-start-offset checkpoints of every log dir
  // (each atomically: temp file, fdatasync, rename, fsync of the dir).
  Status checkpoint();
  // Periodic work (see the file comment). Returns the first error met; the
  // rest of the work is still done. Errors of the cleaner thread's passes
  // are returned by the next tick (once each).
  Status tick(int64_t now_ms);
  // Stops group commit (answering what is queued), flushes and closes every
  // log, writes the checkpoints and then the clean-shutdown marker of every
  // dir whose logs all flushed. Later calls are no-ops.
  Status shutdown();

  // One cleaner pass over every compacted log, on the calling thread
  // (serialised with the cleaner threads' passes, with the whole offset map).
  // Returns the first error; the other logs are still cleaned.
  Status clean_now(int64_t now_ms);
  CleanerManagerStats cleaner_stats() const;
  // The cleaner cleans nothing of a log at or past bound(tp, log): the
  // owner of the partitions answers their HW (a log it does not know yet:
  // its log start, so nothing). Unset (storage tests): no bound but the
  // log's own transactions. Takes effect from the next pass.
  using StableBound = std::function<int64_t(const TopicPartition&, const Log&)>;
  void set_stable_bound(StableBound bound);
  // Retention deletes no segment of a log that ends past bound(tp, log),
  // asked only when some segment is due (Log::apply_retention): the owner
  // answers the partition's last stable offset (the HW, or an open
  // transaction's first offset). Unset (storage tests): no bound. Set it
  // before the first tick.
  void set_retention_bound(StableBound bound) { retention_bound_ = std::move(bound); }
  // Called after a log rolls (under that log's append lock: it must only
  // queue work) with its partition and the new segment's base offset: the
  // broker snapshots the producer state there, as Kafka does at each roll.
  // Unset: nothing. Set before the first append, then read-only.
  using RollListener = std::function<void(const TopicPartition&, int64_t new_base_offset)>;
  void set_roll_listener(RollListener fn) { roll_listener_ = std::move(fn); }
  // New cleaner settings (the dynamic log.cleaner.backoff.ms,
  // log.cleaner.dedupe.buffer.size, log.cleaner.io.max.bytes.per.second and
  // log.cleaner.threads, as Kafka's LogCleaner reconfigures): the backoff
  // applies at the next tick, counted from the last pass; the buffer from
  // the next pass (a pass in progress keeps its own); the throttle's new
  // rate and the number of threads at once (with the cleaner on).
  void set_cleaner_settings(int64_t backoff_ms, const CleanerConfig& cleaner);
  // The backoff and the config the next pass uses (its I/O rate: the
  // throttle's own).
  std::pair<int64_t, CleanerConfig> cleaner_settings() const;

  const std::vector<std::string>& log_dirs() const { return dirs_; }
  const LogManagerStats& open_stats() const { return stats_; }

 private:
  // Every log the manager opens or creates rolls without blocking: see
  // Log::set_roll_sync.
  // It also tells the roll listener of the log's rolls.
  void defer_rolls(Log& log, const TopicPartition& tp);
  struct Entry {
    std::shared_ptr<Log> log;
    size_t dir = 0;  // index into dirs_
    protocol::Uuid topic_id{};
  };
  struct PendingDelete {
    std::string path;
    std::optional<int64_t> seen_ms;
  };

  LogManager(io::FileSystem& fs, std::vector<std::string> dirs, LogManagerConfig config);
  Status load(int64_t now_ms);
  Status checkpoint_dir(size_t dir, const std::vector<std::pair<TopicPartition, std::shared_ptr<Log>>>& logs);
  // One pass shared by the cleaner threads (under cleaner_mu_).
  struct CleanerPass {
    int64_t now_ms = 0;
    std::vector<std::pair<TopicPartition, std::shared_ptr<Log>>> logs;  // the compacted ones
    size_t next = 0;  // the next log to take
    size_t busy = 0;  // logs being cleaned now
    unsigned max_busy = 0;
    CleanerConfig settings;
    StableBound bound;
    CleanerManagerStats delta;
    Status first;
  };
  void cleaner_loop(unsigned index);
  // Takes the request and makes pass_ (drops the lock meanwhile).
  void start_pass(std::unique_lock<std::mutex>& lock);
  void finish_pass_locked(const CleanerManagerStats& delta, unsigned parallel);
  // Starts or lets go threads so that n run (under cleaner_mu_).
  void resize_cleaner_locked(unsigned n);
  // One log with that cleaner, counted into delta (and *first on an error).
  static void clean_one(const Cleaner& cleaner, const TopicPartition& tp, Log& log, int64_t now_ms,
                        const StableBound& bound, CleanerManagerStats& delta, Status* first);
  void stop_cleaner();

  io::FileSystem& fs_;
  const std::vector<std::string> dirs_;
  // Constant after open, but for cleaner_backoff_ms and cleaner (under
  // cleaner_mu_: set_cleaner_settings).
  LogManagerConfig config_;
  GroupCommitter committer_;
  LogManagerStats stats_;

  mutable std::mutex mu_;
  std::map<TopicPartition, Entry> logs_;       // under mu_
  std::vector<PendingDelete> pending_dirs_;    // under mu_
  int64_t last_retention_ms_ = 0;              // under mu_
  int64_t last_checkpoint_ms_ = 0;             // under mu_
  bool shut_down_ = false;                     // under mu_
  std::mutex checkpoint_mu_;                   // one checkpoint writer at a time

  // The cleaner threads: tick() sets cleaner_request_ and notifies; the
  // first thread free makes the pass, all of them take its logs.
  StableBound retention_bound_;                // set before the first tick, then read-only
  RollListener roll_listener_;                 // set before the first append, then read-only
  mutable std::mutex cleaner_mu_;
  std::condition_variable cleaner_cv_;
  StableBound stable_bound_;                   // under cleaner_mu_
  std::optional<int64_t> cleaner_request_;     // under cleaner_mu_
  std::optional<CleanerPass> pass_;            // under cleaner_mu_: the pass in progress
  bool pass_starting_ = false;                 // under cleaner_mu_: a thread is listing its logs
  bool manual_pass_ = false;                   // under cleaner_mu_: clean_now() is running
  bool cleaner_stop_ = false;                  // under cleaner_mu_
  int64_t last_clean_ms_ = 0;                  // under cleaner_mu_
  CleanerManagerStats cleaner_stats_;          // under cleaner_mu_
  uint64_t cleaner_errors_reported_ = 0;       // under cleaner_mu_: errors tick() has returned
  // Under cleaner_mu_: thread i runs while i < cleaner_target_; one at or
  // past it leaves after its log and sets cleaner_exited_[i] (joined by the
  // next resize or at stop).
  unsigned cleaner_target_ = 0;
  std::vector<std::thread> cleaner_threads_;
  std::vector<bool> cleaner_exited_;
  // Every pass's reads and writes, one rate for all (cancelled at stop).
  Throttler cleaner_throttle_;
};

}  // namespace ciuickafka::storage
