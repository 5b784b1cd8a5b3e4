// replication/membership.h: this broker's place in a ZooKeeper-mode cluster.
//
// ClusterMembership owns the broker's ZooKeeper session and does what a Kafka
// 3.9 broker in ZooKeeper mode does with it, with Kafka's znodes and JSON
// (replication/zk_data.h):
// - at start: creates Kafka's persistent paths, gets or creates /cluster/id
//   (proposing the id the log dirs already carry, so a single-node data dir
//   keeps its id; a different id in ZooKeeper stops startup, as Kafka's
//   InconsistentClusterIdException does);
// - registers the broker: ephemeral /brokers/ids/N, v5 JSON with every
//   advertised endpoint and the rack. The broker epoch is that znode's czxid
//   (KIP-380). A node left by an earlier process of this broker id (a kill -9
//   shortly before) is waited out until its session expires; a node held by
//   another live broker with the same id is an error;
// - takes part in controller election: ephemeral /controller plus a
//   conditional increment of /controller_epoch in one multi; every broker
//   watches /controller and runs the election again when it disappears;
// - keeps a view of the cluster (live brokers from /brokers/ids, the
//   controller and its epoch) that Metadata and DescribeCluster answer from.
//
// Session handling: a lost connection is retried by the ZooKeeper client and
// every step here is retried until it succeeds (the view stays as it was,
// the broker keeps serving). An expired session makes a new one: the broker
// registers again with a new broker epoch, as Kafka does (the controller
// treats it as bounced).
//
// Threading: one thread of its own (the event thread) runs every step;
// ZooKeeper callbacks only queue events for it. view() may be called from any
// thread (a snapshot under a short lock).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "replication/zk/session.h"
#include "replication/zk_data.h"

namespace ciuickafka::replication {

// An advertised endpoint, as /brokers/ids/N carries it.
using ListenerEndpoint = BrokerEndPoint;

struct LiveBroker {
  int32_t id = -1;
  int64_t epoch = -1;  // czxid of /brokers/ids/N
  std::vector<ListenerEndpoint> endpoints;
  std::optional<std::string> rack;
};

struct ClusterView {
  std::string cluster_id;
  int32_t controller_id = -1;     // -1: none elected right now
  int32_t controller_epoch = 0;   // the value of /controller_epoch last seen
  bool this_is_controller = false;
  int64_t broker_epoch = -1;      // ours; -1 until registered
  std::vector<LiveBroker> brokers;  // sorted by id
  uint64_t generation = 0;        // grows with every change of the view
};

struct MembershipConfig {
  zk::ConnectOptions zk;
  int32_t broker_id = -1;
  std::optional<std::string> rack;
  // The cluster id already in the log dirs' meta.properties; empty if none.
  std::string local_cluster_id;
  // Backoff between retries of a step that failed on a lost connection.
  int32_t retry_backoff_ms = 200;
};

// What the membership reports; each runs on the event thread and must be
// short. Counters live in the broker's metrics.
//
// became_controller hands the controller role over: called when this
// broker won the election, with the session it won on, the epoch it wrote
// to /controller_epoch and that node's zkVersion (the fencing token every
// controller write checks). It comes just before controller_changed(true).
// controller_changed(false) (the controller moved, this broker stops, or
// the session expired: a new session means a new election) tells the
// owner to deactivate the controller.
struct MembershipListener {
  std::function<void(const ClusterView&)> view_changed;
  std::function<void(bool is_controller)> controller_changed;
  std::function<void()> session_expired;
  // A sync (every step above, with ZooKeeper round trips) that started at
  // started_ms (steady clock) succeeded; registered_anew: it registered
  // this broker on a new session (a new broker epoch).
  std::function<void(int64_t started_ms, bool registered_anew)> synced;
  std::function<void(std::shared_ptr<zk::Session> session, int32_t controller_epoch, int32_t epoch_zk_version)>
      became_controller;
};

class ClusterMembership {
 public:
  // Connects (blocking, up to zookeeper.connection.timeout.ms), creates the
  // persistent paths and settles the cluster id. Registration waits for
  // start(), once the listeners are bound (the ports go into the znode).
  static std::unique_ptr<ClusterMembership> open(zk::Client& client, MembershipConfig config,
                                                 std::string* error);
  ~ClusterMembership();
  ClusterMembership(const ClusterMembership&) = delete;
  ClusterMembership& operator=(const ClusterMembership&) = delete;

  const std::string& cluster_id() const { return cluster_id_; }

  // Registers the broker with these advertised endpoints and joins the
  // election. Blocks until registered (bounded by deadline_ms: waiting out
  // a stale registration of this broker id takes up to a session timeout);
  // false with *error when it could not.
  bool start(std::vector<ListenerEndpoint> endpoints, int64_t deadline_ms, std::string* error);

  // A live listener change: these endpoints replace the advertised ones in
  // /brokers/ids/N, written by the event thread on the same znode (so the
  // broker epoch stays; the controller's data watch sends every broker the
  // new list). A write that fails is retried with the next sync; a new
  // session registers with them. Any thread, after start().
  void update_endpoints(std::vector<ListenerEndpoint> endpoints);

  // Resigns (deletes /controller if ours), closes the session (its
  // ephemeral nodes go at once) and joins the thread. Idempotent.
  void stop();

  std::shared_ptr<const ClusterView> view() const;
  // Asks the event thread for a sync (a ZooKeeper round trip); its outcome
  // reaches MembershipListener::synced. Any thread.
  void request_sync();
  void set_listener(MembershipListener l);

  // The current ZooKeeper session (replaced after an expiry; null before
  // open() connected), for the broker's own reads (topic configs...).
  std::shared_ptr<zk::Session> session() const;

  // Counters for metrics.
  uint64_t session_expirations() const { return expirations_.load(); }
  uint64_t controller_elections_won() const { return elections_won_.load(); }
  // Registration creates tried by start() (a held id makes it retry).
  uint64_t registration_attempts() const { return registration_attempts_.load(); }
  // Syncs by the event thread that failed (ZooKeeper unreachable, a call
  // refused): each is retried after retry_backoff_ms.
  uint64_t failed_syncs() const { return failed_syncs_.load(); }

 private:
  enum class Event : uint8_t { kSync, kSessionExpired, kStop };

  ClusterMembership(zk::Client& client, MembershipConfig config);
  bool connect(std::string* error);
  bool settle_cluster_id(std::string* error);
  void run();
  void post(Event e);
  void post_later(int32_t delay_ms);
  // One pass of everything: registered, elected if no controller, view read,
  // watches set. Returns false when ZooKeeper was not reachable (retry).
  bool sync();
  zk::Code register_broker();
  zk::Code elect();
  zk::Code read_controller(int32_t* id);
  zk::Code read_brokers(std::vector<LiveBroker>* out);
  void publish(ClusterView v);

  zk::Client& client_;
  const MembershipConfig config_;
  std::string cluster_id_;
  std::vector<ListenerEndpoint> endpoints_;  // start(), then the event thread
  bool endpoints_written_ = true;            // event thread: endpoints_ are in our znode

  mutable std::mutex mu_;  // guards session_, view_, listener_, events_
  std::shared_ptr<zk::Session> session_;
  std::shared_ptr<const ClusterView> view_;
  MembershipListener listener_;
  std::deque<Event> events_;
  // update_endpoints(): the endpoints to register, taken by the next sync.
  std::optional<std::vector<ListenerEndpoint>> pending_endpoints_;
  std::condition_variable cv_;
  std::atomic<bool> registered_{false};
  std::atomic<bool> stopping_{false};
  std::thread thread_;

  // One-shot watches currently set (so a retry does not stack watchers).
  std::atomic<bool> controller_watch_armed_{false};
  std::atomic<bool> brokers_watch_armed_{false};

  // Event-thread state.
  bool needs_new_session_ = false;
  bool was_controller_reported_ = false;
  int64_t broker_epoch_ = -1;
  bool is_controller_ = false;
  int32_t controller_epoch_ = 0;
  int32_t controller_epoch_zk_version_ = -1;
  int32_t won_epoch_ = 0;  // the epoch this broker's last won election wrote
  uint64_t generation_ = 0;

  std::atomic<uint64_t> expirations_{0};
  std::atomic<uint64_t> session_gen_{0};  // bumped by each connect(); older sessions' events are dropped
  std::atomic<uint64_t> elections_won_{0};
  std::atomic<uint64_t> registration_attempts_{0};
  std::atomic<uint64_t> failed_syncs_{0};
};

}  // namespace ciuickafka::replication
