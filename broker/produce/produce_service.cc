// broker/produce/produce_service.cc: producer state loading and snapshots,
// and the producer id allocator (design in the header).
#include "broker/produce/produce_service.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <string>
#include <vector>

#include "broker/broker.h"
#include "broker/server/io_pool.h"
#include "protocol/records/batch_builder.h"
#include "protocol/records/record_batch.h"
#include "protocol/wire/writer.h"
#include "storage/file_names.h"
#include "metrics/log/log.h"

namespace ciuickafka::broker::produce {
namespace {

constexpr uint64_t kScanChunkBytes = 1u << 20;
// What a scan reads at a batch start when the next header is not in hand:
// the headers of the small batches that follow come with it, and of a large
// batch only this much is read.
constexpr size_t kHeaderWindow = 16u << 10;

IncomingBatch incoming_of(const protocol::BatchHeader& b) {
  IncomingBatch in;
  in.producer_id = b.producer_id;
  in.epoch = b.producer_epoch;
  in.base_seq = b.base_sequence;
  in.last_offset_delta = b.last_offset_delta;
  in.max_timestamp = b.max_timestamp;
  in.transactional = b.is_transactional();
  return in;
}

// Replays the idempotent batches of log from offset to its end. Only batch
// headers are read (a control batch whole, for its marker): a load after a
// log of large batches reads a few KiB per batch, not every record.
void scan_log(storage::Log& log, int64_t offset, ProducerStateTable& table) {
  offset = std::max(offset, log.log_start_offset());
  std::vector<uint8_t> window(kHeaderWindow);
  std::vector<uint8_t> control;
  while (offset < log.log_end_offset()) {
    auto read = log.read(offset, kScanChunkBytes);
    if (!read.is_ok()) {
      if (read.status().code() != storage::StatusCode::kOffsetOutOfRange) return;
      offset = log.log_start_offset();  // retention moved the start meanwhile
      continue;
    }
    if (read.value().slices.empty()) return;
    const int64_t before = offset;
    for (const storage::LogSlice& s : read.value().slices) {
      const storage::FileSlice& f = s.slice;
      uint64_t pos = 0;                  // in the slice
      uint64_t win_at = 0, win_len = 0;  // window holds the slice's [win_at, win_at + win_len)
      while (pos + protocol::batch_v2::kHeaderSize <= f.length) {
        if (pos < win_at || pos + protocol::batch_v2::kHeaderSize > win_at + win_len) {
          const size_t want = static_cast<size_t>(std::min<uint64_t>(window.size(), f.length - pos));
          auto n = f.file->read_at(f.position + pos, std::span<uint8_t>(window.data(), want));
          if (!n.is_ok() || *n < protocol::batch_v2::kHeaderSize) return;
          win_at = pos;
          win_len = *n;
        }
        auto h = protocol::BatchHeader::read(
            std::span<const uint8_t>(window.data() + (pos - win_at), static_cast<size_t>(win_len - (pos - win_at))));
        if (!h.ok() || pos + h->size_bytes() > f.length) return;
        if (h->last_offset() >= offset) {
          if (h->producer_id >= 0 && !h->is_control()) {
            table.replay(incoming_of(*h), h->base_offset, h->last_offset());
          } else if (h->producer_id >= 0) {
            control.resize(static_cast<size_t>(h->size_bytes()));
            auto n = f.file->read_at(f.position + pos, control);
            if (!n.is_ok() || *n != control.size()) return;
            auto view = protocol::RecordBatchView::parse(control);
            if (!view.ok()) return;
            if (auto m = protocol::read_txn_marker(view.value()))
              table.complete_txn(h->producer_id, h->producer_epoch, m->coordinator_epoch, m->commit, h->base_offset,
                                 h->max_timestamp);
          }
          offset = h->next_offset();
        }
        pos += h->size_bytes();
      }
    }
    if (offset == before) return;  // no progress: stop rather than spin
  }
}

}  // namespace

ProduceService::ProduceService(Broker& broker) : broker_(broker) { remove_stale_snapshots(); }

ProduceService::~ProduceService() = default;

std::string ProduceService::snapshot_path(const storage::Log& log, int64_t offset) const {
  return log.dir() + "/" + storage::segment_file_name(offset, storage::SegmentFileKind::kProducerSnapshot);
}

std::string ProduceService::legacy_snapshot_path(const storage::Log& log) const {
  return log.dir() + "/" + std::string(kLegacySnapshotFile);
}

std::vector<int64_t> ProduceService::snapshot_offsets(const storage::Log& log) const {
  std::vector<int64_t> out;
  auto names = broker_.fs().list_dir(log.dir());
  if (!names) return out;
  for (const auto& n : *names) {
    auto f = storage::parse_segment_file_name(n);
    if (f && f->kind == storage::SegmentFileKind::kProducerSnapshot && f->suffix == storage::FileSuffix::kNone)
      out.push_back(f->base_offset);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void ProduceService::remove_snapshots(const storage::Log& log, int64_t keep, bool keep_previous) {
  const std::vector<int64_t> offsets = snapshot_offsets(log);  // ascending
  int64_t previous = -1;
  if (keep_previous)
    for (int64_t o : offsets)
      if (o < keep) previous = o;
  for (int64_t o : offsets)
    if (o != keep && o != previous) (void)broker_.fs().remove_file(snapshot_path(log, o));
  (void)broker_.fs().remove_file(legacy_snapshot_path(log));
}

void ProduceService::remove_stale_snapshots() {
  for (const auto& [tp, log] : broker_.logs().all()) {
    // A crash that cut the log below a snapshot: it describes writes that
    // are gone, and appends could make the log grow past it again.
    for (int64_t o : snapshot_offsets(*log))
      if (o > log->log_end_offset()) (void)broker_.fs().remove_file(snapshot_path(*log, o));
    const std::string legacy = legacy_snapshot_path(*log);
    auto type = broker_.fs().file_type(legacy);
    if (!type.is_ok() || type.value() != storage::io::FileType::kFile) continue;
    auto bytes = storage::io::read_file(broker_.fs(), legacy);
    std::optional<ProducerStateTable::Parsed> parsed;
    if (bytes.is_ok()) parsed = ProducerStateTable::parse_legacy(bytes.value());
    if (!parsed || parsed->snapshot_offset > log->log_end_offset()) (void)broker_.fs().remove_file(legacy);
  }
}

std::shared_ptr<PartitionState> ProduceService::partition_state(const Partition& p) {
  std::lock_guard<std::mutex> lock(mu_);
  const storage::Log* key = p.log_ptr().get();
  auto it = states_.find(key);
  if (it != states_.end() && it->second->log.lock() == p.log_ptr()) return it->second;
  // New, or a stale entry whose log was freed and whose address was reused.
  for (auto i = states_.begin(); i != states_.end();) i = i->second->log.expired() ? states_.erase(i) : std::next(i);
  auto st = std::make_shared<PartitionState>();
  st->log = p.log_ptr();
  st->topic_metrics = broker_.metrics().topic(p.topic());
  states_[key] = st;
  return st;
}

void ProduceService::index_aborted(PartitionState& st, storage::Log& log, size_t from) {
  const auto& aborted = st.table.aborted();
  for (size_t i = from; i < aborted.size(); ++i) {
    const AbortedTxn& a = aborted[i];
    storage::Status s = log.append_aborted_txn(a);
    if (!s.is_ok()) {
      // No snapshot may cover a missing entry: none is written until the
      // next load rebuilds the index (the table in memory is complete).
      st.index_incomplete = true;
      CK_LOG_WARN("produce", "%s: aborted transaction index: %s; no producer snapshot until the partition is reloaded",
                  log.dir().c_str(), s.to_string().c_str());
      return;
    }
  }
}

bool ProduceService::ensure_loaded(PartitionState& st, storage::Log& log) {
  if (st.loaded) return true;
  // Writes recorded in a dropped table may still be in flight (a role
  // change, a failed write): the scan could not see them, so wait. A table
  // never loaded has no such writes (every producer-id write loads it
  // first), so the writes in flight are plain ones the scan need not see.
  if (st.needs_quiet_load && log.next_offset() != log.log_end_offset()) return false;
  const auto started = std::chrono::steady_clock::now();
  st.needs_quiet_load = false;
  st.index_incomplete = false;
  const int64_t now = Broker::now_ms();
  int64_t from = log.log_start_offset();
  const bool use_snapshot = !st.rescan;
  st.rescan = false;
  st.table = ProducerStateTable{};
  st.snapshot_offset = -1;
  bool legacy = false;
  bool snapshot_used = false;
  if (use_snapshot) {
    // The newest usable snapshot; a corrupt one is removed (Kafka does the same).
    auto offsets = snapshot_offsets(log);
    for (auto it = offsets.rbegin(); it != offsets.rend(); ++it) {
      if (*it > log.log_end_offset()) continue;
      auto bytes = storage::io::read_file(broker_.fs(), snapshot_path(log, *it));
      std::optional<ProducerStateTable> parsed;
      if (bytes.is_ok()) parsed = ProducerStateTable::parse(bytes.value(), now);
      if (!parsed) {
        CK_LOG_WARN("produce", "%s: not a valid producer snapshot; removed", snapshot_path(log, *it).c_str());
        (void)broker_.fs().remove_file(snapshot_path(log, *it));
        continue;
      }
      st.table = std::move(*parsed);
      from = std::max(from, *it);
      st.snapshot_offset = *it;
      snapshot_used = true;
      break;
    }
    if (from == log.log_start_offset() && offsets.empty()) {
      // Upgrading from the format before Kafka's: read once (its aborted
      // list goes to the .txnindex files, the next snapshot replaces it).
      auto bytes = storage::io::read_file(broker_.fs(), legacy_snapshot_path(log));
      if (bytes.is_ok()) {
        auto parsed = ProducerStateTable::parse_legacy(bytes.value());
        if (parsed && parsed->snapshot_offset <= log.log_end_offset()) {
          st.table = std::move(parsed->table);
          from = std::max(from, parsed->snapshot_offset);
          legacy = true;
          snapshot_used = true;
        }
      }
    }
  }
  // Aborted transactions: below `from` from the .txnindex files (made
  // durable before the snapshot at `from` was written); at and past it the
  // scan rebuilds them, so entries there (unsynced, or from a history a
  // truncation cut) go first.
  if (!legacy) {
    auto indexed = log.aborted_txns_below(from);
    if (!indexed) {
      CK_LOG_WARN("produce", "%s: aborted transaction index unreadable (%s); rebuilding the producer state from the whole log",
                  log.dir().c_str(), indexed.status().to_string().c_str());
      st.table = ProducerStateTable{};
      from = log.log_start_offset();
      snapshot_used = false;
    } else {
      st.table.set_aborted(std::move(indexed).value());
    }
  }
  const int64_t keep_below = legacy ? 0 : from;
  if (auto s = log.truncate_aborted_txns(keep_below); !s.is_ok()) {
    CK_LOG_WARN("produce", "%s: aborted transaction index: %s", log.dir().c_str(), s.to_string().c_str());
    st.index_incomplete = true;
  }
  const size_t indexed_count = legacy ? 0 : st.table.aborted().size();
  scan_log(log, from, st.table);
  st.loaded_from = from;
  st.table.stamp_unknown_update_times(now);  // expired producer.id.expiration.ms from now unless they write
  if (!st.index_incomplete) index_aborted(st, log, indexed_count);
  // A scan past the snapshot is worth a new one (written at the next clean
  // shutdown at the latest), so the next start scans only the tail.
  if (from < log.log_end_offset() || legacy) st.dirty = true;
  st.table.trim_aborted(log.log_start_offset());
  st.txn_free.store(st.table.txn_free(), std::memory_order_release);
  st.loaded.store(true, std::memory_order_release);
  // Kafka logs each producer state load too: a long one (a whole log
  // without a snapshot) explains a slow first idempotent write or
  // read_committed read.
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  CK_LOG_INFO("produce", "%s: producer state loaded, offsets %lld to %lld scanned (%s) in %lld ms, %zu producer(s)",
              log.dir().c_str(), static_cast<long long>(from), static_cast<long long>(log.log_end_offset()),
              snapshot_used ? "after a snapshot" : "no snapshot",
              static_cast<long long>(ms.count()), st.table.size());
  return true;
}

std::optional<int64_t> ProduceService::last_stable_offset(Partition& p, bool load) {
  const int64_t hw = p.high_watermark();
  auto st = partition_state(p);
  if (st->txn_free.load(std::memory_order_acquire)) return hw;
  std::lock_guard<std::mutex> lock(st->mu);
  if (!st->loaded && !load) return hw;
  if (!ensure_loaded(*st, p.log())) return std::nullopt;
  const int64_t lso = std::min(hw, st->table.first_unstable_offset(hw));
  if (st->table.txn_free()) st->txn_free.store(true, std::memory_order_release);
  return lso;
}

std::optional<int64_t> ProduceService::retention_bound(Partition& p) {
  // Loaded only where a snapshot (or the pre-Kafka file) exists: every
  // partition that rolled since it was created has one, and one written
  // by producers with ids may have transactions open. The load scans the
  // log from the snapshot (up to a segment): not on the maintenance pool
  // that asks. It is queued for the I/O pool and nothing is deleted until
  // a later check finds the state loaded. Without a snapshot,
  // last_stable_offset answers the HW.
  auto st = partition_state(p);
  bool needs_load = false;
  {
    std::lock_guard<std::mutex> lock(st->mu);
    if (!st->loaded) {
      auto type = broker_.fs().file_type(legacy_snapshot_path(p.log()));
      needs_load = !snapshot_offsets(p.log()).empty() || (type.is_ok() && type.value() == storage::io::FileType::kFile);
    }
  }
  if (needs_load) {
    if (!st->load_queued.exchange(true)) load_on_pool(st, p.log_ptr(), -1);
    return std::nullopt;
  }
  return last_stable_offset(p, false);
}

std::shared_ptr<PartitionState> ProduceService::existing_state(const Partition& p) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = states_.find(p.log_ptr().get());
  if (it == states_.end() || it->second->log.lock() != p.log_ptr()) return nullptr;
  return it->second;
}

int64_t ProduceService::known_last_stable_offset(const Partition& p) {
  const int64_t hw = p.high_watermark();
  std::shared_ptr<PartitionState> st = existing_state(p);
  if (!st || st->txn_free.load(std::memory_order_acquire)) return hw;
  std::lock_guard<std::mutex> lock(st->mu);
  if (!st->loaded) return hw;
  return std::min(hw, st->table.first_unstable_offset(hw));
}

bool ProduceService::known_txn_free(const Partition& p) {
  std::shared_ptr<PartitionState> st = existing_state(p);
  return st && st->txn_free.load(std::memory_order_acquire);
}

bool ProduceService::loaded_for_reads(const Partition& p) {
  std::shared_ptr<PartitionState> st = existing_state(p);
  if (!st) return false;
  if (st->txn_free.load(std::memory_order_acquire)) return true;
  std::unique_lock<std::mutex> lock(st->mu, std::try_to_lock);
  return lock.owns_lock() && st->loaded;
}

bool ProduceService::loaded_for_writes(const Partition& p) {
  std::shared_ptr<PartitionState> st = existing_state(p);
  return st && st->loaded.load(std::memory_order_acquire);
}

bool ProduceService::load_for_writes(const Partition& p) {
  std::shared_ptr<storage::Log> log = p.log_ptr();
  if (!log) return false;
  auto st = partition_state(p);
  std::lock_guard<std::mutex> lock(st->mu);
  return ensure_loaded(*st, *log);
}

std::vector<AbortedTxn> ProduceService::aborted_transactions(Partition& p, int64_t from, int64_t upper) {
  auto st = partition_state(p);
  if (st->txn_free.load(std::memory_order_acquire)) return {};
  std::lock_guard<std::mutex> lock(st->mu);
  if (!st->loaded) return {};
  return st->table.aborted_between(from, upper);
}

MarkerResult ProduceService::append_marker(Partition& p, int64_t producer_id, int16_t epoch,
                                           int32_t coordinator_epoch, bool commit) {
  MarkerResult out;
  auto st = partition_state(p);
  std::lock_guard<std::mutex> lock(st->mu);
  if (!ensure_loaded(*st, p.log())) {
    out.error = protocol::ErrorCode::NOT_LEADER_OR_FOLLOWER;  // retried by the coordinator
    return out;
  }
  std::string message;
  switch (st->table.check_marker(producer_id, epoch, coordinator_epoch, &message)) {
    case MarkerVerdict::kInvalidEpoch:
      out.error = protocol::ErrorCode::INVALID_PRODUCER_EPOCH;
      out.message = message;
      return out;
    case MarkerVerdict::kCoordinatorFenced:
      out.error = protocol::ErrorCode::TRANSACTION_COORDINATOR_FENCED;
      out.message = message;
      return out;
    case MarkerVerdict::kAppend:
      break;
  }
  const int64_t marker_time = Broker::now_ms();
  auto batch = protocol::build_end_txn_marker_batch(
      commit ? protocol::ControlRecordType::kCommit : protocol::ControlRecordType::kAbort, producer_id, epoch,
      coordinator_epoch, marker_time);
  if (!batch.ok()) {
    out.error = protocol::ErrorCode::UNKNOWN_SERVER_ERROR;
    return out;
  }
  // Marked not txn-free before the marker is readable.
  st->txn_free.store(false, std::memory_order_release);
  auto r = p.append(std::span<uint8_t>(batch.value()), Broker::now_ms());
  if (!r.is_ok()) {
    out.error = r.status().code() == storage::StatusCode::kFenced ? protocol::ErrorCode::NOT_LEADER_OR_FOLLOWER
                                                                  : protocol::ErrorCode::KAFKA_STORAGE_ERROR;
    out.message = r.status().to_string();
    forget_after_failed_write(*st, p.log());
    return out;
  }
  const size_t aborted_before = st->table.aborted().size();
  st->table.complete_txn(producer_id, epoch, coordinator_epoch, commit, r.value().base_offset, marker_time);
  st->verify_guards.erase(producer_id);  // a verification asked before this marker opens nothing
  if (!st->index_incomplete) index_aborted(*st, p.log(), aborted_before);
  st->dirty = true;
  out.log = p.log_ptr();
  out.end_offset = r.value().last_offset + 1;
  return out;
}

MarkerResult ProduceService::append_transactional(Partition& p, int64_t producer_id, int16_t epoch,
                                                   std::vector<uint8_t> batch) {
  MarkerResult out;
  auto st = partition_state(p);
  std::lock_guard<std::mutex> lock(st->mu);
  if (!ensure_loaded(*st, p.log())) {
    out.error = protocol::ErrorCode::COORDINATOR_LOAD_IN_PROGRESS;
    return out;
  }
  if (const ProducerEntry* e = st->table.find(producer_id); e != nullptr && e->epoch > epoch) {
    out.error = protocol::ErrorCode::INVALID_PRODUCER_EPOCH;
    return out;
  }
  auto header = protocol::BatchHeader::read(batch);
  if (!protocol::RecordBatchView::parse(batch).ok() || !header.ok()) {
    out.error = protocol::ErrorCode::UNKNOWN_SERVER_ERROR;
    return out;
  }
  IncomingBatch in = incoming_of(header.value());
  st->txn_free.store(false, std::memory_order_release);
  auto r = p.append(std::span<uint8_t>(batch), Broker::now_ms());
  if (!r.is_ok()) {
    out.error = r.status().code() == storage::StatusCode::kFenced ? protocol::ErrorCode::NOT_LEADER_OR_FOLLOWER
                                                                  : protocol::ErrorCode::KAFKA_STORAGE_ERROR;
    out.message = r.status().to_string();
    forget_after_failed_write(*st, p.log());
    return out;
  }
  st->table.record(in, r.value().base_offset, r.value().last_offset, Broker::now_ms());
  st->dirty = true;
  out.log = p.log_ptr();
  out.end_offset = r.value().last_offset + 1;
  return out;
}


void ProduceService::reset_for_role_change(const Partition& p) {
  if (!p.log_ptr()) return;
  auto st = partition_state(p);
  std::lock_guard<std::mutex> lock(st->mu);
  st->loaded = false;
  st->table = ProducerStateTable{};
  st->dirty = false;
  st->rescan = true;
  st->needs_quiet_load = true;
  st->verify_guards.clear();
  st->txn_free.store(false, std::memory_order_release);
}

void ProduceService::forget_after_failed_write(PartitionState& st, const storage::Log& log) {
  st.loaded = false;
  st.table = ProducerStateTable{};
  st.dirty = false;
  st.needs_quiet_load = true;
  st.txn_free.store(false, std::memory_order_release);
  std::lock_guard<std::mutex> file_lock(st.file_mu);
  remove_snapshots(log, -1);
  st.written_offset = -1;
}

void ProduceService::after_append(const std::shared_ptr<PartitionState>& st, int64_t now_ms) {
  st->dirty = true;
  if (st->snapshot_queued) return;
  if (st->last_snapshot_ms == 0) st->last_snapshot_ms = now_ms;  // first append: start the clock
  if (now_ms - st->last_snapshot_ms < kSnapshotIntervalMs) return;
  st->snapshot_queued = true;
  std::weak_ptr<PartitionState> weak = st;
  asio::post(broker_.maintenance(), [this, weak, alive = alive_] {
    std::shared_lock<std::shared_mutex> guard(alive->mu);
    if (!alive->alive) return;
    auto s = weak.lock();
    if (!s) return;
    auto log = s->log.lock();
    if (log) (void)write_snapshot(*s, log, Broker::now_ms());
  });
}

void ProduceService::after_roll(const std::shared_ptr<Partition>& p, int64_t base) {
  std::shared_ptr<storage::Log> log = p->log_ptr();
  if (!log || !p->is_leader()) return;
  auto st = partition_state(*p);
  if (st->load_queued.load()) return;  // the queued load snapshots after it
  bool loaded = false;
  {
    std::lock_guard<std::mutex> lock(st->mu);
    loaded = st->loaded;
  }
  if (loaded) {
    std::shared_lock<std::shared_mutex> guard(alive_->mu);
    if (alive_->alive) (void)write_snapshot(*st, log, Broker::now_ms(), base);
    return;
  }
  if (!st->load_queued.exchange(true)) load_on_pool(st, log, base);
}

void ProduceService::load_on_pool(const std::shared_ptr<PartitionState>& st, const std::shared_ptr<storage::Log>& log,
                                  int64_t snapshot_at) {
  {
    std::lock_guard<std::mutex> lock(loads_mu_);
    loads_.push_back(BackgroundLoad{st, log, snapshot_at});
    if (load_posted_) return;  // the task on the pool takes it after the others
    load_posted_ = true;
  }
  post_next_load();
}

void ProduceService::post_next_load() {
  // One load at a time, one pool thread: after a failover every partition
  // a broker now leads may need one, and the pool also serves requests.
  // The pool is a newer service than this one (Broker::open creates this
  // one first), so it has stopped before stop() runs: a task never
  // outlives the service. Each task takes one load and posts the next, so
  // the pool's stop waits for one load at most.
  if (broker_.service<IoPool>().post([this] { run_next_load(); })) return;
  std::deque<BackgroundLoad> dropped;  // stopped: the loads are dropped
  {
    std::lock_guard<std::mutex> lock(loads_mu_);
    dropped.swap(loads_);
    load_posted_ = false;
  }
  for (const BackgroundLoad& l : dropped)
    if (auto s = l.state.lock()) s->load_queued.store(false);
}

void ProduceService::run_next_load() {
  BackgroundLoad job;
  {
    std::lock_guard<std::mutex> lock(loads_mu_);
    if (loads_.empty()) {
      load_posted_ = false;
      return;
    }
    job = std::move(loads_.front());
    loads_.pop_front();
  }
  auto s = job.state.lock();
  auto l = job.log.lock();
  if (s && l) {
    bool loaded = false;
    {
      std::lock_guard<std::mutex> lock(s->mu);
      s->load_queued.store(false);
      loaded = ensure_loaded(*s, *l);  // false: writes of a dropped table in flight; asked again later
    }
    if (loaded) {
      std::shared_lock<std::shared_mutex> guard(alive_->mu);
      if (alive_->alive) (void)write_snapshot(*s, l, Broker::now_ms(), job.snapshot_at);
    }
  }
  {
    std::lock_guard<std::mutex> lock(loads_mu_);
    if (loads_.empty()) {
      load_posted_ = false;
      return;
    }
  }
  post_next_load();
}

storage::Status ProduceService::write_snapshot(PartitionState& st, const std::shared_ptr<storage::Log>& log,
                                               int64_t now_ms, int64_t at_least) {
  std::vector<uint8_t> data;
  int64_t offset = 0;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    st.snapshot_queued = false;
    if (!st.loaded) return {};
    if (!st.dirty && st.snapshot_offset >= at_least) return {};
    if (st.index_incomplete) return storage::Status::corruption(log->dir() + ": aborted transaction index incomplete; no snapshot");
    st.table.expire(now_ms, broker_.config().get_int("producer.id.expiration.ms"));
    // The table already holds batches whose writes may still be in flight
    // (recorded when their offsets were assigned): the snapshot is taken at
    // the assigned end, and a load that finds the log shorter (the writes
    // were lost) ignores it and scans the log instead.
    offset = log->next_offset();
    data = st.table.serialize();
    st.snapshot_offset = offset;
    st.dirty = false;
    st.last_snapshot_ms = now_ms;
  }
  storage::Status s;
  {
    std::lock_guard<std::mutex> file_lock(st.file_mu);
    if (offset < st.written_offset) return {};  // a newer one is already there
    // The aborted transactions below offset are durable before a snapshot
    // says the log below it needs no scan.
    s = log->sync_aborted_txns();
    if (s.is_ok()) s = storage::io::write_file_atomically(broker_.fs(), snapshot_path(*log, offset), data);
    if (s.is_ok()) {
      st.written_offset = offset;
      remove_snapshots(*log, offset, true);  // all older ones but the newest (and the pre-Kafka file)
      return s;
    }
  }
  // Not written: the table is still owed a snapshot (the next roll, the
  // minute's, or the clean shutdown's writes it). file_mu is released
  // first: the order is mu, then file_mu.
  CK_LOG_WARN("produce", "%s: producer snapshot at %lld not written: %s", log->dir().c_str(),
              static_cast<long long>(offset), s.to_string().c_str());
  std::lock_guard<std::mutex> lock(st.mu);
  if (st.loaded) st.dirty = true;
  return s;
}

storage::Status ProduceService::snapshot_now(const std::shared_ptr<PartitionState>& st) {
  auto log = st->log.lock();
  if (!log) return {};
  return write_snapshot(*st, log, Broker::now_ms());
}

void ProduceService::tick(int64_t now_ms) {
  if (last_expiry_ms_ < 0) last_expiry_ms_ = now_ms;
  if (now_ms - last_expiry_ms_ < broker_.config().get_int("producer.id.expiration.check.interval.ms")) return;
  last_expiry_ms_ = now_ms;
  if (const size_t n = expire_producers(now_ms); n > 0)
    CK_LOG_INFO("produce", "%zu producer(s) idle longer than producer.id.expiration.ms forgotten", n);
}

size_t ProduceService::expire_producers(int64_t now_ms) {
  const int64_t max_age = broker_.config().get_int("producer.id.expiration.ms");
  std::vector<std::shared_ptr<PartitionState>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.reserve(states_.size());
    for (const auto& [log, st] : states_) all.push_back(st);
  }
  size_t total = 0;
  for (const auto& st : all) {
    std::lock_guard<std::mutex> lock(st->mu);
    if (!st->loaded) continue;
    const size_t n = st->table.expire(now_ms, max_age);
    if (n > 0) st->dirty = true;  // the next snapshot leaves them out
    total += n;
  }
  return total;
}

void ProduceService::stop() {
  {
    std::unique_lock<std::shared_mutex> guard(alive_->mu);  // waits for the snapshot writes in progress
    alive_->alive = false;
  }
  std::vector<std::shared_ptr<PartitionState>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [k, st] : states_) all.push_back(st);
  }
  for (auto& st : all) (void)snapshot_now(st);
}

storage::Result<int64_t> ProduceService::allocate_producer_id() {
  std::lock_guard<std::mutex> lock(pid_mu_);
  const std::string path = broker_.logs().log_dirs().front() + "/" + std::string(kProducerIdFile);
  if (!pid_loaded_) {
    auto bytes = storage::io::read_file(broker_.fs(), path);
    if (bytes.is_ok()) {
      const auto& b = bytes.value();
      int64_t end = 0;
      auto [p, ec] = std::from_chars(reinterpret_cast<const char*>(b.data()),
                                     reinterpret_cast<const char*>(b.data() + b.size()), end);
      if (ec != std::errc() || end < 0) return storage::Status::corruption(path + ": not a producer id block end");
      next_pid_ = end;
      reserved_end_ = end;
    } else if (bytes.status().code() != storage::StatusCode::kNotFound) {
      return bytes.status();
    }
    pid_loaded_ = true;
  }
  if (next_pid_ >= reserved_end_) {
    const int64_t end = next_pid_ + kProducerIdBlock;
    const std::string text = std::to_string(end) + "\n";
    storage::Status s = storage::io::write_file_atomically(
        broker_.fs(), path, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
    if (!s.is_ok()) return s;
    reserved_end_ = end;
  }
  return next_pid_++;
}

}  // namespace ciuickafka::broker::produce
