// broker/replica/fetcher_manager.h: follower fetchers (Kafka's
// ReplicaFetcherManager / ReplicaFetcherThread / AbstractFetcherThread).
//
// A ReplicaRoleListener: became_follower(p, leader) puts p on a fetcher
// thread for that leader (num.replica.fetchers threads per leader, keyed by
// broker id + host + port, the partition hashed onto one of them);
// became_leader and stopped take it off. A thread with no partitions left
// ends.
//
// Each thread loops one Fetch at a time to its leader over a
// ReconnectingClient: the highest version both offer, at least 12 (diverging
// epochs); v15+ names this broker in ReplicaState{replica_id, replica_epoch
// = our broker epoch}, older versions in replica_id. Versions 13+ name
// topics by id (the local partition's topic id, which LeaderAndIsr set).
// Per partition: fetch_offset = the local LEO, current_leader_epoch,
// last_fetched_epoch = the local log's latest epoch, log_start_offset;
// replica.fetch.{max.bytes, response.max.bytes, wait.max.ms, min.bytes}.
// The answer, per partition:
//   records          -> Log::append_as_follower (the leader's offsets and
//                       epochs kept, CRCs checked; when our log is empty
//                       and the first batch straddles its start, the log
//                       restarts at that batch's base, as Kafka does after
//                       DeleteRecords), then HW = min(leader HW,
//                       LEO) and the log start raised to the leader's
//                       (bounded by the HW);
//   diverging_epoch  -> truncate (LogManager::truncate_to) to
//                       min(leader's end offset, our end offset for that
//                       epoch), or, when our epoch for it differs, to our
//                       end offset for it and fetch again (Kafka's
//                       getOffsetTruncationState);
//   OFFSET_OUT_OF_RANGE -> ListOffsets (replica id set) for the leader's
//                       LEO and log start: a leader LEO below ours
//                       truncates to it; a local LEO below the leader's log
//                       start truncates fully and starts there;
//   UNKNOWN_LEADER_EPOCH -> (the leader has not applied our epoch's
//                       LeaderAndIsr yet) the partition waits 25 ms,
//                       doubling per repeat up to replica.fetch.backoff.ms;
//   FENCED_LEADER_EPOCH / NOT_LEADER_OR_FOLLOWER and other errors -> the
//                       partition waits replica.fetch.backoff.ms (it stays
//                       until the next LeaderAndIsr moves it);
//   connection errors -> the thread backs off and reconnects.
// Memory is bounded: one response in flight per thread, its frame bounded by
// replica.fetch.response.max.bytes plus one partition's max and slack.
//
// num.replica.fetchers is a dynamic broker config, as in Kafka: resize(n)
// re-hashes every fetched partition onto n threads per leader (a partition
// whose thread index changes moves, losing nothing but its backoff), and
// threads left empty end.
//
// Stopping: removing a partition takes effect at the next response; it
// waits at most for one local append or truncation of that thread (never for
// network I/O, which runs outside that lock); stop() closes every
// thread's client (BrokerClient::close from this thread), so a long poll
// ends at once, and joins them.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "broker/cluster/partition.h"
#include "broker/cluster/replica_roles.h"

namespace ciuickafka::broker {

class Broker;

namespace replica {

class FetcherThread;
struct FetcherCounters;

struct FetcherOptions {
  int16_t max_fetch_version = 17;  // tests cap it at 12 (topics by name) when the two brokers' topic ids differ
};

class ReplicaFetcherManager : public ReplicaRoleListener {
 public:
  explicit ReplicaFetcherManager(Broker& broker);
  ~ReplicaFetcherManager() override;
  ReplicaFetcherManager(const ReplicaFetcherManager&) = delete;
  ReplicaFetcherManager& operator=(const ReplicaFetcherManager&) = delete;

  void became_leader(const std::shared_ptr<Partition>& p) override;
  void became_follower(const std::shared_ptr<Partition>& p, const LeaderEndpoint& leader) override;
  void stopped(const storage::TopicPartition& tp, bool deleted) override;

  void set_options(FetcherOptions o);
  // num.replica.fetchers changed (at least 1): see above.
  void resize(int32_t threads_per_leader);
  int32_t threads_per_leader() const;
  // Fetcher threads running, and partitions being fetched.
  size_t thread_count() const;
  size_t partition_count() const;
  // Fetches answered so far (all threads, any outcome), for tests.
  uint64_t fetches() const;
  // Kafka's kafka.server:type=ReplicaFetcherManager,name=MaxLag (exported
  // as kafka_server_replicafetchermanager_maxlag): the largest (leader HW -
  // local LEO) of the running threads' last responses.
  int64_t max_lag() const;

  void stop();

 private:
  using Key = std::tuple<int32_t, std::string, int32_t, int32_t>;  // broker id, host, port, thread index
  void remove_locked(const storage::TopicPartition& tp);
  Key key_locked(const Partition& p, const LeaderEndpoint& leader) const;
  void add_locked(const std::shared_ptr<Partition>& p, const LeaderEndpoint& leader);

  Broker& broker_;
  int32_t threads_per_leader_;  // under mu_
  mutable std::mutex mu_;
  bool stopped_ = false;
  FetcherOptions options_;
  std::map<Key, std::shared_ptr<FetcherThread>> threads_;
  std::map<storage::TopicPartition, Key> where_;
  std::shared_ptr<FetcherCounters> counters_;
  uint64_t collector_id_ = 0;
  std::vector<std::shared_ptr<FetcherThread>> retired_;  // emptied threads, joined at stop or on the next change
};

}  // namespace replica
}  // namespace ciuickafka::broker
