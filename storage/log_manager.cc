// storage/log_manager.cc: opening, creating, removing and checkpointing the
// logs of every log dir.
#include "storage/log_manager.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <random>
#include <thread>

#include "metrics/log/log.h"
#include "storage/checkpoint.h"

namespace ciuickafka::storage {

namespace {

constexpr std::string_view kDeleteSuffix = "-delete";

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

std::string join(const std::string& dir, std::string_view name) { return dir + "/" + std::string(name); }

// An offset checkpoint as a map; missing or corrupt: empty (full recovery
// and the segments' own start are the safe answers).
std::map<TopicPartition, int64_t> read_checkpoint_map(io::FileSystem& fs, const std::string& path) {
  std::map<TopicPartition, int64_t> out;
  auto entries = read_offset_checkpoint(fs, path);
  if (!entries) return out;
  for (const auto& e : *entries) out[e.tp] = e.offset;
  return out;
}

std::string unique_id() {
  static std::atomic<uint64_t> counter{0};
  std::random_device rd;
  char buf[33];
  std::snprintf(buf, sizeof buf, "%08x%08x%016llx", rd(), rd(),
                static_cast<unsigned long long>(counter.fetch_add(1)));
  return buf;
}

// Adds a log's or a pass's counts to a larger total.
void add_counts(CleanerManagerStats& into, const CleanerManagerStats& d) {
  into.logs_cleaned += d.logs_cleaned;
  into.segments_rewritten += d.segments_rewritten;
  into.bytes_read += d.bytes_read;
  into.bytes_written += d.bytes_written;
  into.aborted_batches_removed += d.aborted_batches_removed;
  into.errors += d.errors;
  if (!d.last_error.empty()) into.last_error = d.last_error;
}

}  // namespace

LogManager::LogManager(io::FileSystem& fs, std::vector<std::string> dirs, LogManagerConfig config)
    : fs_(fs),
      dirs_(std::move(dirs)),
      config_(std::move(config)),
      cleaner_throttle_(config_.cleaner.io_max_bytes_per_second) {}

LogManager::~LogManager() {
  // Not a clean shutdown unless shutdown() ran: no marker is written here.
  stop_cleaner();
  committer_.stop();
  std::lock_guard lock(mu_);
  for (auto& [tp, e] : logs_) (void)e.log->close();
}

Result<std::unique_ptr<LogManager>> LogManager::open(io::FileSystem& fs, std::vector<std::string> log_dirs,
                                                     LogManagerConfig config, int64_t now_ms) {
  if (log_dirs.empty()) return Status::invalid_argument("log.dirs is empty");
  std::unique_ptr<LogManager> m(new LogManager(fs, std::move(log_dirs), std::move(config)));
  CK_RETURN_IF_ERROR(m->load(now_ms));
  if (m->config_.cleaner_enable) {
    std::lock_guard lock(m->cleaner_mu_);
    m->last_clean_ms_ = now_ms;
    m->resize_cleaner_locked(std::max(1u, m->config_.cleaner.threads));
  }
  return m;
}

Status LogManager::load(int64_t now_ms) {
  struct Job {
    TopicPartition tp;
    size_t dir;
    LogOpenOptions options;
    std::unique_ptr<Log> log;
    Status status;
  };
  std::vector<Job> jobs;
  std::vector<bool> clean(dirs_.size(), false);
  for (size_t d = 0; d < dirs_.size(); ++d) {
    const std::string& dir = dirs_[d];
    CK_RETURN_IF_ERROR(fs_.create_dir(dir));
    auto marker = fs_.file_type(join(dir, kCleanShutdownFile));
    if (!marker) return marker.status();
    clean[d] = *marker == io::FileType::kFile;
    if (clean[d]) ++stats_.dirs_clean;
    const auto recovery = read_checkpoint_map(fs_, join(dir, kRecoveryPointCheckpointFile));
    const auto starts = read_checkpoint_map(fs_, join(dir, kLogStartOffsetCheckpointFile));
    const auto cleaned = read_checkpoint_map(fs_, join(dir, kCleanerOffsetCheckpointFile));
    auto names = fs_.list_dir(dir);
    if (!names) return names.status();
    for (const auto& name : *names) {
      const std::string path = join(dir, name);
      auto type = fs_.file_type(path);
      if (!type) return type.status();
      if (*type != io::FileType::kDirectory) continue;
      if (ends_with(name, kDeleteSuffix)) {  // a deletion a restart interrupted
        CK_RETURN_IF_ERROR(io::remove_tree(fs_, path));
        ++stats_.delete_dirs_removed;
        continue;
      }
      auto tp = parse_partition_dir_name(name);
      if (!tp) continue;  // not a partition directory (e.g. "-future", stray dirs)
      Job job{*tp, d, {}, nullptr, Status::ok()};
      job.options.clean_shutdown = clean[d];
      if (auto it = recovery.find(*tp); it != recovery.end()) job.options.recovery_point = it->second;
      if (auto it = starts.find(*tp); it != starts.end()) job.options.log_start_offset = it->second;
      if (auto it = cleaned.find(*tp); it != cleaned.end()) job.options.cleaner_checkpoint = it->second;
      jobs.push_back(std::move(job));
    }
  }
  // Duplicates across dirs are a broken installation: refuse.
  for (size_t i = 0; i < jobs.size(); ++i)
    for (size_t j = i + 1; j < jobs.size(); ++j)
      if (jobs[i].tp == jobs[j].tp)
        return Status::corruption(partition_dir_name(jobs[i].tp) + " exists in both " + dirs_[jobs[i].dir] +
                                  " and " + dirs_[jobs[j].dir]);

  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < jobs.size();) {
      Job& job = jobs[i];
      const LogConfig cfg = config_.config_for ? config_.config_for(job.tp) : config_.default_config;
      auto log = Log::open(fs_, join(dirs_[job.dir], partition_dir_name(job.tp)), cfg, now_ms, job.options);
      if (log) {
        job.log = std::move(log).value();
      } else {
        job.status = log.status();
      }
    }
  };
  unsigned threads = config_.recovery_threads != 0 ? config_.recovery_threads
                                                    : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<size_t>(threads, jobs.size()));
  stats_.recovery_threads = threads;
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();

  for (auto& job : jobs) {
    if (!job.status.is_ok()) return job.status;
    const std::string dir = join(dirs_[job.dir], partition_dir_name(job.tp));
    Entry e{std::shared_ptr<Log>(std::move(job.log)), job.dir, {}};
    defer_rolls(*e.log, job.tp);
    auto id = read_partition_metadata(fs_, join(dir, kPartitionMetadataFile));
    if (id) {
      e.topic_id = *id;
    } else if (id.status().code() != StatusCode::kNotFound) {
      return id.status();
    }
    ++stats_.logs_opened;
    // Recovery scanned this log's unflushed segments: one line per log.
    if (e.log->recovered_segments() > 0 || e.log->recovered_truncated_bytes() > 0)
      CK_LOG_INFO("storage", "log %s recovered: %llu segment(s) scanned, %llu bytes truncated, log end offset %lld",
                  dir.c_str(), static_cast<unsigned long long>(e.log->recovered_segments()),
                  static_cast<unsigned long long>(e.log->recovered_truncated_bytes()),
                  static_cast<long long>(e.log->log_end_offset()));
    stats_.segments_recovered += e.log->recovered_segments();
    stats_.bytes_truncated += e.log->recovered_truncated_bytes();
    logs_.emplace(job.tp, std::move(e));
  }
  // From here on a crash is a crash.
  for (size_t d = 0; d < dirs_.size(); ++d) {
    if (!clean[d]) continue;
    CK_RETURN_IF_ERROR(fs_.remove_file(join(dirs_[d], kCleanShutdownFile)));
    CK_RETURN_IF_ERROR(fs_.sync_dir(dirs_[d]));
  }
  last_retention_ms_ = now_ms;
  last_checkpoint_ms_ = now_ms;
  return Status::ok();
}

std::shared_ptr<Log> LogManager::get(const TopicPartition& tp) const {
  std::lock_guard lock(mu_);
  auto it = logs_.find(tp);
  return it == logs_.end() ? nullptr : it->second.log;
}

std::optional<protocol::Uuid> LogManager::topic_id(const TopicPartition& tp) const {
  std::lock_guard lock(mu_);
  auto it = logs_.find(tp);
  if (it == logs_.end()) return std::nullopt;
  return it->second.topic_id;
}

Result<std::shared_ptr<Log>> LogManager::create(const TopicPartition& tp, const protocol::Uuid& topic_id,
                                                const LogConfig& config, int64_t now_ms) {
  if (!is_valid_topic_name(tp.topic) || tp.partition < 0)
    return Status::invalid_argument("create: bad topic partition " + tp.topic + "-" +
                                    std::to_string(tp.partition));
  std::lock_guard lock(mu_);
  if (shut_down_) return Status::invalid_argument("create after shutdown");
  if (auto it = logs_.find(tp); it != logs_.end()) {
    if (it->second.topic_id != topic_id)
      return Status::invalid_argument(partition_dir_name(tp) + " exists with another topic id " +
                                      uuid_to_string(it->second.topic_id));
    return it->second.log;
  }
  std::vector<size_t> counts(dirs_.size(), 0);
  for (const auto& [k, e] : logs_) ++counts[e.dir];
  const size_t d = static_cast<size_t>(std::min_element(counts.begin(), counts.end()) - counts.begin());
  const std::string dir = join(dirs_[d], partition_dir_name(tp));
  CK_RETURN_IF_ERROR(fs_.create_dir(dir));
  CK_RETURN_IF_ERROR(fs_.sync_dir(dirs_[d]));
  CK_RETURN_IF_ERROR(write_partition_metadata(fs_, join(dir, kPartitionMetadataFile), topic_id));
  auto log = Log::open(fs_, dir, config, now_ms);
  if (!log) return log.status();
  Entry e{std::shared_ptr<Log>(std::move(log).value()), d, topic_id};
  defer_rolls(*e.log, tp);
  auto out = e.log;
  logs_.emplace(tp, std::move(e));
  return out;
}

Status LogManager::remove(const TopicPartition& tp) {
  {
    std::lock_guard lock(mu_);
    auto it = logs_.find(tp);
    if (it == logs_.end()) return Status::not_found("remove: no log for " + partition_dir_name(tp));
    Entry e = std::move(it->second);
    logs_.erase(it);
    (void)e.log->close();  // appends fail from now on; readers keep their slices
    const std::string from = join(dirs_[e.dir], partition_dir_name(tp));
    const std::string to = from + "." + unique_id() + std::string(kDeleteSuffix);
    CK_RETURN_IF_ERROR(fs_.rename(from, to));
    CK_RETURN_IF_ERROR(fs_.sync_dir(dirs_[e.dir]));
    pending_dirs_.push_back(PendingDelete{to, std::nullopt});
  }
  return checkpoint();  // the removed partition leaves the checkpoints
}

std::vector<std::pair<TopicPartition, std::shared_ptr<Log>>> LogManager::all() const {
  std::lock_guard lock(mu_);
  std::vector<std::pair<TopicPartition, std::shared_ptr<Log>>> out;
  out.reserve(logs_.size());
  for (const auto& [tp, e] : logs_) out.emplace_back(tp, e.log);
  return out;
}

Status LogManager::update_config(const TopicPartition& tp, const LogConfig& config) {
  auto log = get(tp);
  if (!log) return Status::not_found("update_config: no log for " + partition_dir_name(tp));
  log->update_config(config);
  return Status::ok();
}

Result<int64_t> LogManager::truncate_to(const TopicPartition& tp, int64_t offset, int64_t now_ms) {
  auto log = get(tp);
  if (!log) return Status::not_found("truncate_to: no log for " + partition_dir_name(tp));
  auto end = log->truncate_to(offset, now_ms);
  if (!end) return end.status();
  CK_RETURN_IF_ERROR(checkpoint());
  return end;
}

Status LogManager::truncate_fully_and_start_at(const TopicPartition& tp, int64_t offset, int64_t now_ms) {
  auto log = get(tp);
  if (!log) return Status::not_found("truncate_fully_and_start_at: no log for " + partition_dir_name(tp));
  CK_RETURN_IF_ERROR(log->truncate_fully_and_start_at(offset, now_ms));
  return checkpoint();
}

void LogManager::defer_rolls(Log& log, const TopicPartition& tp) {
  // A roll's fsyncs run on group commit's thread, never on the appending
  // (network) thread; its outcome reaches whoever syncs the log next.
  log.set_roll_sync([this](std::shared_ptr<Log> l, int64_t offset) {
    committer_.sync_to(std::move(l), offset, [](Status) {});
  });
  log.set_on_roll([this, tp](int64_t base) {
    if (roll_listener_) roll_listener_(tp, base);
  });
}

void LogManager::sync_to(std::shared_ptr<Log> log, int64_t offset, GroupCommitter::Callback done) {
  committer_.sync_to(std::move(log), offset, std::move(done));
}

Status LogManager::checkpoint_dir(size_t dir,
                                  const std::vector<std::pair<TopicPartition, std::shared_ptr<Log>>>& logs) {
  std::vector<PartitionOffset> recovery, starts, cleaned;
  for (const auto& [tp, log] : logs) {
    recovery.push_back({tp, log->recovery_point()});
    starts.push_back({tp, log->log_start_offset()});
    if (log->config().cleanup_compact) cleaned.push_back({tp, log->first_dirty_offset()});
  }
  CK_RETURN_IF_ERROR(write_offset_checkpoint(fs_, join(dirs_[dir], kRecoveryPointCheckpointFile), recovery));
  if (config_.cleaner_enable || !cleaned.empty())
    CK_RETURN_IF_ERROR(write_offset_checkpoint(fs_, join(dirs_[dir], kCleanerOffsetCheckpointFile), cleaned));
  return write_offset_checkpoint(fs_, join(dirs_[dir], kLogStartOffsetCheckpointFile), starts);
}

Status LogManager::checkpoint() {
  std::vector<std::vector<std::pair<TopicPartition, std::shared_ptr<Log>>>> per_dir(dirs_.size());
  {
    std::lock_guard lock(mu_);
    for (const auto& [tp, e] : logs_) per_dir[e.dir].emplace_back(tp, e.log);
  }
  std::lock_guard lock(checkpoint_mu_);
  Status first;
  for (size_t d = 0; d < dirs_.size(); ++d) {
    Status s = checkpoint_dir(d, per_dir[d]);
    if (first.is_ok() && !s.is_ok()) first = s;
  }
  return first;
}

Status LogManager::tick(int64_t now_ms) {
  bool retention = false, checkpoints = false;
  std::vector<std::string> expired;
  {
    std::lock_guard lock(mu_);
    if (shut_down_) return Status::ok();
    if (now_ms - last_retention_ms_ >= config_.retention_check_interval_ms) {
      retention = true;
      last_retention_ms_ = now_ms;
    }
    if (now_ms - last_checkpoint_ms_ >= config_.checkpoint_interval_ms) {
      checkpoints = true;
      last_checkpoint_ms_ = now_ms;
    }
    for (auto it = pending_dirs_.begin(); it != pending_dirs_.end();) {
      if (!it->seen_ms) it->seen_ms = now_ms;
      if (now_ms - *it->seen_ms >= config_.file_delete_delay_ms) {
        expired.push_back(it->path);
        it = pending_dirs_.erase(it);
      } else {
        ++it;
      }
    }
  }
  Status first;
  auto note = [&](Status s) {
    if (first.is_ok() && !s.is_ok()) first = std::move(s);
  };
  for (const auto& path : expired) note(io::remove_tree(fs_, path));
  if (config_.cleaner_enable) {
    std::lock_guard lock(cleaner_mu_);
    if (cleaner_stats_.errors > cleaner_errors_reported_) {  // surface the thread's errors once each
      cleaner_errors_reported_ = cleaner_stats_.errors;
      note(Status::corruption("log cleaner: " + cleaner_stats_.last_error));
    }
    if (now_ms - last_clean_ms_ >= config_.cleaner_backoff_ms) {
      last_clean_ms_ = now_ms;
      cleaner_request_ = now_ms;
      cleaner_cv_.notify_all();
    }
  }
  for (const auto& [tp, log] : all()) {
    note(log->maybe_flush(now_ms));
    if (retention) {
      std::function<int64_t()> bound;
      if (retention_bound_) bound = [this, &tp = tp, &log = *log] { return retention_bound_(tp, log); };
      auto n = log->apply_retention(now_ms, bound);
      if (!n) note(n.status());
    }
    log->remove_deleted_files(now_ms);
  }
  if (checkpoints) note(checkpoint());
  return first;
}

Status LogManager::shutdown() {
  {
    std::lock_guard lock(mu_);
    if (shut_down_) return Status::ok();
    shut_down_ = true;
  }
  stop_cleaner();  // a pass in progress finishes its segment's swap first
  committer_.stop();
  std::vector<bool> clean(dirs_.size(), true);
  Status first;
  {
    std::lock_guard lock(mu_);
    for (auto& [tp, e] : logs_) {
      Status s = e.log->close();
      if (!s.is_ok()) {
        clean[e.dir] = false;
        if (first.is_ok()) first = s;
      }
    }
  }
  Status c = checkpoint();
  if (!c.is_ok()) return first.is_ok() ? c : first;
  for (size_t d = 0; d < dirs_.size(); ++d) {
    if (!clean[d]) continue;
    const std::string marker = join(dirs_[d], kCleanShutdownFile);
    auto f = fs_.open(marker, io::OpenMode::kCreateTruncate);
    if (!f) return f.status();
    CK_RETURN_IF_ERROR((*f)->sync());
    CK_RETURN_IF_ERROR((*f)->close());
    CK_RETURN_IF_ERROR(fs_.sync_dir(dirs_[d]));
  }
  return first;
}

void LogManager::clean_one(const Cleaner& cleaner, const TopicPartition& tp, Log& log, int64_t now_ms,
                           const StableBound& bound, CleanerManagerStats& delta, Status* first) {
  const int64_t b = bound ? bound(tp, log) : Cleaner::kNoBound;
  auto r = cleaner.clean(log, now_ms, {}, b);
  if (!r) {
    ++delta.errors;
    delta.last_error = r.status().to_string();
    if (first->is_ok()) *first = r.status();
    return;
  }
  if (r->cleaned && r->segments_rewritten > 0) ++delta.logs_cleaned;
  delta.segments_rewritten += r->segments_rewritten;
  delta.bytes_read += r->bytes_read;
  delta.bytes_written += r->bytes_written;
  delta.aborted_batches_removed += r->aborted_batches_removed;
}

void LogManager::finish_pass_locked(const CleanerManagerStats& delta, unsigned parallel) {
  auto& s = cleaner_stats_;
  ++s.passes;
  s.last_pass_parallel = parallel;
  add_counts(s, delta);
  cleaner_cv_.notify_all();  // clean_now() waits for no pass in progress
}

Status LogManager::clean_now(int64_t now_ms) {
  std::unique_lock lock(cleaner_mu_);
  cleaner_cv_.wait(lock, [&] { return cleaner_stop_ || (!pass_ && !pass_starting_ && !manual_pass_); });
  if (cleaner_stop_) return Status::ok();
  manual_pass_ = true;
  const Cleaner cleaner(config_.cleaner, &cleaner_throttle_);
  const StableBound bound = stable_bound_;
  lock.unlock();
  Status first;
  CleanerManagerStats delta;
  for (const auto& [tp, log] : all()) {
    {
      std::lock_guard stop(cleaner_mu_);
      if (cleaner_stop_) break;
    }
    if (log->config().cleanup_compact) clean_one(cleaner, tp, *log, now_ms, bound, delta, &first);
  }
  lock.lock();
  manual_pass_ = false;
  finish_pass_locked(delta, 1);
  return first;
}

void LogManager::start_pass(std::unique_lock<std::mutex>& lock) {
  CleanerPass pass;
  pass.now_ms = *cleaner_request_;
  cleaner_request_.reset();
  pass.settings = config_.cleaner;
  pass.settings.dedupe_buffer_bytes =
      std::max<size_t>(1u << 20, config_.cleaner.dedupe_buffer_bytes / std::max(1u, cleaner_target_));
  pass.settings.read_chunk_bytes = read_chunk_for(config_.cleaner.io_buffer_bytes, cleaner_target_);
  pass.bound = stable_bound_;
  pass_starting_ = true;
  lock.unlock();
  for (auto& [tp, log] : all())
    if (log->config().cleanup_compact) pass.logs.emplace_back(tp, std::move(log));
  lock.lock();
  pass_starting_ = false;
  if (pass.logs.empty()) {
    finish_pass_locked(pass.delta, 0);
    return;
  }
  pass_ = std::move(pass);
  cleaner_cv_.notify_all();
}

void LogManager::set_stable_bound(StableBound bound) {
  std::lock_guard lock(cleaner_mu_);
  stable_bound_ = std::move(bound);
}

void LogManager::set_cleaner_settings(int64_t backoff_ms, const CleanerConfig& cleaner) {
  {
    std::lock_guard lock(cleaner_mu_);
    config_.cleaner_backoff_ms = backoff_ms;
    config_.cleaner = cleaner;
    const unsigned threads = std::max(1u, cleaner.threads);
    if (config_.cleaner_enable && !cleaner_stop_ && threads != cleaner_target_) resize_cleaner_locked(threads);
  }
  cleaner_throttle_.set_rate(cleaner.io_max_bytes_per_second);
}

std::pair<int64_t, CleanerConfig> LogManager::cleaner_settings() const {
  std::pair<int64_t, CleanerConfig> out;
  {
    std::lock_guard lock(cleaner_mu_);
    out = {config_.cleaner_backoff_ms, config_.cleaner};
  }
  out.second.io_max_bytes_per_second = cleaner_throttle_.rate();
  return out;
}

CleanerManagerStats LogManager::cleaner_stats() const {
  CleanerManagerStats s;
  {
    std::lock_guard lock(cleaner_mu_);
    s = cleaner_stats_;
    s.threads = cleaner_target_;
  }
  s.throttle = cleaner_throttle_.stats();
  return s;
}

void LogManager::resize_cleaner_locked(unsigned n) {
  cleaner_target_ = n;
  for (unsigned i = 0; i < n; ++i) {
    if (i < cleaner_threads_.size()) {
      if (!cleaner_exited_[i]) continue;  // still running (perhaps finishing a log): it stays
      cleaner_threads_[i].join();         // it has left and released the lock
    } else {
      cleaner_threads_.emplace_back();
      cleaner_exited_.push_back(false);
    }
    cleaner_exited_[i] = false;
    cleaner_threads_[i] = std::thread([this, i] { cleaner_loop(i); });
  }
  cleaner_cv_.notify_all();  // threads at or past n leave
}

void LogManager::cleaner_loop(unsigned index) {
  std::unique_lock lock(cleaner_mu_);
  for (;;) {
    cleaner_cv_.wait(lock, [&] {
      return cleaner_stop_ || index >= cleaner_target_ || (pass_ && pass_->next < pass_->logs.size()) ||
             (!pass_ && !pass_starting_ && !manual_pass_ && cleaner_request_.has_value());
    });
    if (cleaner_stop_ || index >= cleaner_target_) {
      if (index < cleaner_exited_.size()) cleaner_exited_[index] = true;  // stop_cleaner() cleared them
      return;
    }
    if (!pass_) {
      start_pass(lock);
      continue;
    }
    CleanerPass& pass = *pass_;
    const auto [tp, log] = pass.logs[pass.next++];
    ++pass.busy;
    pass.max_busy = std::max(pass.max_busy, static_cast<unsigned>(pass.busy));
    const Cleaner cleaner(pass.settings, &cleaner_throttle_);
    const StableBound bound = pass.bound;
    const int64_t now_ms = pass.now_ms;
    lock.unlock();
    CleanerManagerStats delta;
    Status first;
    clean_one(cleaner, tp, *log, now_ms, bound, delta, &first);  // errors are counted in cleaner_stats()
    lock.lock();
    add_counts(pass_->delta, delta);  // the same pass: it ends only when busy is 0
    if (--pass_->busy == 0 && pass_->next == pass_->logs.size()) {
      finish_pass_locked(pass_->delta, pass_->max_busy);
      pass_.reset();
    }
  }
}

void LogManager::stop_cleaner() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(cleaner_mu_);
    cleaner_stop_ = true;
    cleaner_cv_.notify_all();
    threads = std::move(cleaner_threads_);
    cleaner_threads_.clear();
    cleaner_exited_.clear();
  }
  cleaner_throttle_.cancel();  // a pass asleep in the throttle finishes at once
  for (std::thread& t : threads)
    if (t.joinable()) t.join();
}

}  // namespace ciuickafka::storage
