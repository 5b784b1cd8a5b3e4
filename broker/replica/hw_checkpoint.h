// broker/replica/hw_checkpoint.h: replication-offset-checkpoint, Kafka's
// per-log-dir file of high watermarks (storage/checkpoint.h has the format:
// "0", a count, then "topic partition hw" lines, replaced atomically).
//
// The service starts with the first role change (the replica fetchers and
// the leader side call restore() from became_leader / became_follower), so a
// single node never writes the file. From then on it writes the file in
// every log dir every replica.high.watermark.checkpoint.interval.ms (a timer
// on the broker's maintenance pool, background.threads) and once more at stop() (clean
// shutdown, before the logs close), with the HW of every partition whose log
// lives in that dir.
//
// restore(p): the first time a Partition object gets a role, its HW starts
// from the checkpoint (capped at the LEO, as Kafka's load does), replacing
// the LEO that opening the log gave it; a partition the file does not name
// keeps its HW. Later role changes leave the HW alone.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>

#include "broker/cluster/partition.h"
#include "broker/net/asio.h"
#include "storage/status.h"

namespace ciuickafka::broker {

class Broker;

namespace replica {

class HwCheckpoints {
 public:
  explicit HwCheckpoints(Broker& broker);
  ~HwCheckpoints();
  HwCheckpoints(const HwCheckpoints&) = delete;
  HwCheckpoints& operator=(const HwCheckpoints&) = delete;

  void restore(Partition& p);
  // The HW the files held at start for tp.
  std::optional<int64_t> checkpointed(const storage::TopicPartition& tp) const;
  // Writes every log dir's file now; the first error, if any.
  storage::Status write_all();
  void stop();

 private:
  void schedule();

  Broker& broker_;
  const int64_t interval_ms_;
  mutable std::mutex mu_;  // loaded_, restored_, stopped_, timer_
  std::mutex write_mu_;
  std::map<storage::TopicPartition, int64_t> loaded_;
  std::set<const Partition*> restored_;
  bool stopped_ = false;
  std::unique_ptr<asio::steady_timer> timer_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace replica
}  // namespace ciuickafka::broker
