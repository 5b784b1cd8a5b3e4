// broker/quotas/client_quotas.h: client quotas (KIP-13, KIP-55, KIP-546,
// KIP-612), a Broker service: `broker.service<quotas::ClientQuotas>()`.
//
// Holds the quotas (quota_table.h), persists them, and measures clients
// against them as Kafka's ClientQuotaManager does:
// - producer_byte_rate: a Produce request's size is recorded against the
//   rate its client shares (quota_table.h: find); over the quota the
//   response carries throttle_time_ms = (rate - quota) / quota * the span
//   the rate is taken over (quota.window.num samples of
//   quota.window.size.seconds), and the connection reads nothing more for
//   that long (KIP-219; server/connection.h).
// - consumer_byte_rate: a consumer Fetch's response size likewise; a
//   throttled fetch is answered with no records (its bytes are taken back
//   from the rate, Kafka's "unrecord"), and a fetch never asks for more than
//   quota * (quota.window.num - 1) * window seconds, the most one window may
//   take without a certain throttle. Fetches of follower replicas are not
//   limited.
// - connection_creation_rate ({ip} or {ip default}; an {ip} named by a
//   host name counts for the addresses it resolves to when the quotas are
//   applied, quota_table.h: resolve_ip_rates): the acceptor records
//   each new connection of an address; one over the rate is not served:
//   it is closed after the throttle time (at most one window), and not
//   counted (Kafka's delayed close of a throttled connection), beside
//   max.connection.creation.rate (server/server.h).
// - request_percentage: the time each request held a thread (from dispatch
//   until its handler returned, or answered if sooner, plus the time its
//   work then ran on the I/O pool or the admin worker: handlers/codec.h,
//   server/request_context.h's WorkerSpan), in Kafka's
//   unit (percent of one thread: nanoseconds * 100 / 1e9), recorded when
//   the request is answered; over the quota the answer's throttle_time_ms
//   is the larger of the byte-rate one and this one (at most one window, as
//   Kafka bounds it), and the connection is muted for it. A Fetch over it
//   is answered empty, as Kafka's. Exempt: followers' fetches and the
//   other cluster actions (handlers/codec.h), acks=0 produces (no answer).
// - controller_mutation_rate (KIP-599): CreateTopics, CreatePartitions and
//   DeleteTopics record the partitions each topic creates, adds or deletes
//   in a token bucket per rate (refilled at the quota per second, holding
//   at most quota * controller.quota.window.num *
//   controller.quota.window.size.seconds, full at first), after the topic
//   passed its checks and before it is written (validate_only records
//   nothing). From CreateTopics v6, CreatePartitions v3 and DeleteTopics v5
//   on (strict, as Kafka's StrictControllerMutationQuota): a topic met by
//   a bucket already below zero is not changed and answers
//   THROTTLING_QUOTA_EXCEEDED; the one that takes the bucket below zero
//   passes. Older versions (permissive): every topic passes; a bucket below
//   zero after the record throttles. The answer's throttle_time_ms is then
//   the time the bucket needs to reach zero again, less the time the
//   request took since (the larger of it and the request_percentage one),
//   and the connection is muted for it.
// Without SASL every client's user is ANONYMOUS (Kafka's principal for an
// unauthenticated connection), so {user=ANONYMOUS} and {user default}
// quotas apply to everyone.
//
// Nothing is measured until a quota has been set at least once (Kafka's
// quotasEnabled): until then the hot paths pay one relaxed atomic load.
// Rates idle for all their windows are forgotten, so client ids that come
// and go do not grow memory.
//
// Single node: `__ciuickafka_client_quotas.pb` in the first log dir
// (client_quotas.proto), written atomically before a change is answered
// (the handler runs on the I/O pool), read by Broker::open.
// Cluster mode: Kafka's ZooKeeper layout, /config/users/<u>,
// /config/users/<u>/clients/<c>, /config/clients/<c>, /config/ips/<ip>
// ({"version":1,"config":{...}}, names sanitized, `<default>`), each change
// with a /config/changes notification naming the entity path; every broker
// re-reads the whole tree on such a notification (cluster/config_changes.h)
// and at start. Keys another tool wrote there that are not quotas (SCRAM
// credentials) are ignored; a quota value that is not a number is skipped
// with a warning.
//
// Thread-safety: all methods may be called from any thread; ZooKeeper calls
// block (the admin worker or the config change listener call them).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "broker/quotas/quota_table.h"
#include "broker/server/connection_rate.h"
#include "storage/status.h"

namespace ciuickafka::broker {
class Broker;
}
namespace ciuickafka::replication::zk {
class Session;
}

namespace ciuickafka::broker::quotas {

inline constexpr const char* kClientQuotasFile = "__ciuickafka_client_quotas.pb";
inline constexpr const char* kAnonymousUser = "ANONYMOUS";

enum class Kind { kProduce = 0, kFetch = 1, kRequest = 2, kMutation = 3 };

class ClientQuotas;

// One request's controller_mutation_rate quota (Kafka's
// ControllerMutationQuota), from ClientQuotas::mutation_quota(); used by the
// one thread that answers the request. Default-constructed: unbounded.
class MutationQuota {
 public:
  MutationQuota() = default;
  // Whether a quota applies (else record() always passes and costs nothing).
  bool active() const { return owner_ != nullptr; }
  // Records permits (partitions) now. Strict: false, nothing recorded, when
  // the bucket is already below zero (the topic answers
  // THROTTLING_QUOTA_EXCEEDED); permissive: always true.
  bool record(double permits);
  // The throttle the answer carries: the last one a record met, less the
  // time since it.
  int64_t throttle_ms() const;
  // throttle_ms() for the answer, counted once in the throttle metrics.
  int64_t answer_throttle_ms();

 private:
  friend class ClientQuotas;
  ClientQuotas* owner_ = nullptr;
  double limit_ = 0;
  std::string user_tag_, client_tag_;
  bool strict_ = false;
  int64_t last_throttle_ms_ = 0;
  int64_t last_recorded_ms_ = 0;
  bool counted_ = false;
};

// The clock rates are measured on (monotonic milliseconds).
inline int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class ClientQuotas {
 public:
  explicit ClientQuotas(Broker& broker);

  // The quotas now.
  std::shared_ptr<const Table> table() const;
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }

  // Single node: validates and applies; unless validate_only, persists
  // before it applies (a write failure: KAFKA_STORAGE_ERROR for every
  // entity that would have changed, nothing applied).
  std::vector<AlterResult> alter(const std::vector<Alteration>& alterations, bool validate_only);
  // Reads the file in dir (none: no quotas); an error names the file.
  storage::Status load(const std::string& dir);

  // Cluster mode: the same against ZooKeeper's tree (read fresh first);
  // REQUEST_TIMED_OUT for the entities not written when ZooKeeper fails.
  std::vector<AlterResult> alter_in_zk(replication::zk::Session& zk, const std::vector<Alteration>& alterations,
                                       bool validate_only);
  // Reads the whole tree from ZooKeeper into *out; false (and *error) on
  // a ZooKeeper failure.
  static bool read_zk(replication::zk::Session& zk, Table* out, std::string* error);
  // Reads it and applies it here; false when ZooKeeper could not be read.
  bool apply_from_zk(replication::zk::Session& zk);
  // Whether a config change notification's entity path is a quota's.
  static bool is_quota_entity_path(const std::string& entity_path);

  // Measuring. user is kAnonymousUser until SASL exists. Each returns the
  // throttle time in ms (0: within the quota or no quota); kRequest's is
  // at most one window (Kafka's bound).
  int64_t record(Kind kind, const std::string& client_id, double value, int64_t now_ms);
  void unrecord(Kind kind, const std::string& client_id, double value, int64_t now_ms);
  // The most bytes one fetch may take (quota * (samples - 1) * window s),
  // or -1 without a consumer quota.
  int64_t max_value_in_window(Kind kind, const std::string& client_id) const;
  // Whether any produce, fetch, request or mutation quota applies to client_id: its
  // connection then has one request in flight at a time (server/dispatch.cc),
  // as every connection has in Kafka, so that a throttle's mute stops the
  // very next request (pipelined ones would pass before it otherwise).
  bool limits(std::string_view client_id) const;
  // The controller_mutation_rate quota of a request from client_id;
  // strict from the API's strict version on (see above).
  MutationQuota mutation_quota(const std::string& client_id, bool strict);
  // A new connection from ip: the time to hold it before closing it, 0 to
  // serve it.
  int64_t record_connection(const std::string& ip, int64_t now_ms);

  // Counters for metrics and tests: throttled responses and their total
  // throttle time by kind, and connections closed for an ip quota.
  uint64_t throttled(Kind kind) const { return throttled_[static_cast<int>(kind)].load(); }
  uint64_t throttled_ms(Kind kind) const { return throttled_ms_[static_cast<int>(kind)].load(); }
  uint64_t connections_throttled() const { return conn_throttled_.load(); }

 private:
  friend class MutationQuota;
  // The bucket of (user_tag, client_tag) after a record of permits at
  // now_ms (strict: none when it was below zero, *refused set): its tokens.
  double take_tokens(const MutationQuota& q, double permits, int64_t now_ms, bool* refused);
  void install(Table next, const char* why);
  // The quota of kind that applies to client_id (none: not enabled, no
  // quota of that kind, or none for this client).
  std::optional<Match> match(Kind kind, const std::string& client_id) const;
  ConnectionRate& rate_locked(const std::tuple<int, std::string, std::string>& key, int64_t now_ms);

  Broker& broker_;
  const int samples_;
  const int64_t window_ms_;
  const int mutation_samples_;      // controller.quota.window.num
  const int64_t mutation_window_ms_;  // controller.quota.window.size.seconds

  // change_mu_ serialises changes (held across their file or ZooKeeper
  // I/O); mu_ guards only the pointer swap, so the hot paths' table() never
  // waits for a disk or ZooKeeper.
  std::mutex change_mu_;
  mutable std::mutex mu_;
  std::shared_ptr<const Table> table_;  // under mu_
  std::shared_ptr<const IpRates> ip_rates_ = std::make_shared<const IpRates>();  // under mu_, resolved from table_
  std::atomic<bool> enabled_{false};
  // Bit k set when some entity sets kind k's key: a kind no quota uses
  // costs one load, not the precedence walk (every response asks kRequest).
  std::atomic<unsigned> kinds_set_{0};
  bool kind_set(Kind kind) const {
    return (kinds_set_.load(std::memory_order_relaxed) >> static_cast<unsigned>(kind)) & 1u;
  }

  std::mutex rates_mu_;
  std::map<std::tuple<int, std::string, std::string>, ConnectionRate> rates_;  // (kind or kIpRates, user, client)
  uint64_t records_since_sweep_ = 0;
  // controller_mutation_rate token buckets by (user, client) tag, under rates_mu_.
  struct Bucket {
    double tokens = 0;
    int64_t last_ms = 0;
    double limit = 0;  // the quota at the last record (to forget full buckets)
  };
  std::map<std::pair<std::string, std::string>, Bucket> buckets_;
  uint64_t takes_since_sweep_ = 0;

  std::atomic<uint64_t> throttled_[4] = {0, 0, 0, 0};
  std::atomic<uint64_t> throttled_ms_[4] = {0, 0, 0, 0};
  std::atomic<uint64_t> conn_throttled_{0};
};

}  // namespace ciuickafka::broker::quotas
