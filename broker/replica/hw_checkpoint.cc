// broker/replica/hw_checkpoint.cc: reading and writing
// replication-offset-checkpoint (see hw_checkpoint.h).
#include "broker/replica/hw_checkpoint.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "broker/broker.h"
#include "metrics/log/log.h"
#include "storage/checkpoint.h"

namespace ciuickafka::broker::replica {
namespace {

std::string normal(const std::string& dir) {
  std::string s = std::filesystem::path(dir).lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

std::string checkpoint_path(const std::string& log_dir) {
  return normal(log_dir) + "/" + std::string(storage::kReplicationOffsetCheckpointFile);
}

}  // namespace

HwCheckpoints::HwCheckpoints(Broker& broker)
    : broker_(broker),
      interval_ms_(std::max<int64_t>(1, broker.config().get_long("replica.high.watermark.checkpoint.interval.ms"))) {
  for (const std::string& dir : broker.logs().log_dirs()) {
    auto r = storage::read_offset_checkpoint(broker.fs(), checkpoint_path(dir));
    if (!r.is_ok()) {
      if (r.status().code() != storage::StatusCode::kNotFound)
        CK_LOG_WARN("replication", "%s: ignored: %s", checkpoint_path(dir).c_str(),
                    r.status().to_string().c_str());
      continue;
    }
    for (const auto& e : r.value()) loaded_[e.tp] = e.offset;
  }
  schedule();
}

HwCheckpoints::~HwCheckpoints() { stop(); }

void HwCheckpoints::schedule() {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) return;
  timer_ = std::make_unique<asio::steady_timer>(broker_.maintenance(), std::chrono::milliseconds(interval_ms_));
  timer_->async_wait([this, alive = std::weak_ptr<bool>(alive_)](const boost::system::error_code& ec) {
    if (ec || !alive.lock()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return;
    }
    if (auto s = write_all(); !s.is_ok())
      CK_LOG_ERROR("replication", "replication-offset-checkpoint: %s", s.to_string().c_str());
    schedule();
  });
}

void HwCheckpoints::restore(Partition& p) {
  std::optional<int64_t> hw;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!restored_.insert(&p).second) return;
    auto it = loaded_.find(p.tp());
    if (it != loaded_.end()) hw = it->second;
  }
  if (hw) p.set_high_watermark(std::min(*hw, p.log_end_offset()), /*allow_backwards=*/true);
}

std::optional<int64_t> HwCheckpoints::checkpointed(const storage::TopicPartition& tp) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = loaded_.find(tp);
  if (it == loaded_.end()) return std::nullopt;
  return it->second;
}

storage::Status HwCheckpoints::write_all() {
  std::lock_guard<std::mutex> writing(write_mu_);  // the timer's write and stop()'s never overlap
  std::map<std::string, std::vector<storage::PartitionOffset>> by_dir;
  for (const std::string& dir : broker_.logs().log_dirs()) by_dir[normal(dir)];
  for (const auto& topic : broker_.topics().list()) {
    for (const auto& p : topic->partitions) {
      if (!p) continue;
      const std::string parent = normal(std::filesystem::path(p->log().dir()).parent_path().string());
      auto it = by_dir.find(parent);
      if (it != by_dir.end()) it->second.push_back(storage::PartitionOffset{p->tp(), p->high_watermark()});
    }
  }
  storage::Status first = storage::Status::ok();
  for (const auto& [dir, entries] : by_dir) {
    storage::Status s = storage::write_offset_checkpoint(broker_.fs(), checkpoint_path(dir), entries);
    if (!s.is_ok() && first.is_ok()) first = s;
  }
  return first;
}

void HwCheckpoints::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;  // a timer still pending finds it and does nothing (the background thread owns the timer)
  }
  alive_.reset();
  if (auto s = write_all(); !s.is_ok())
    CK_LOG_ERROR("replication", "replication-offset-checkpoint at shutdown: %s", s.to_string().c_str());
}

}  // namespace ciuickafka::broker::replica
