// broker/server/server.h: the network side of the broker: listeners,
// network threads, connections.
//
// start() binds every listener of broker.listeners()->bound and starts
// num.network.threads threads (<= 0: one per core), each running its own
// io_context. Accepted connections are spread round-robin over the threads;
// a connection lives on its thread for good, so its requests are read,
// dispatched and answered there (see connection.h).
//
// num.network.threads is a dynamic broker config, as in Kafka (within half
// and double the current value, admin/dynamic_configs.cc). A change is
// carried out by the Server's resizer thread, off the thread that applied
// the config, so the request that asked for it is answered: more threads
// start and take new connections from then on; fewer, and the last threads
// leave. New connections go to the threads that stay at once; each
// connection on a leaving thread stops reading, gets the answers it is owed
// (its parked fetches are answered at once) for up to kLeaveGrace, and is
// closed, as Kafka closes a removed processor's connections (clients
// reconnect); then the thread stops and the writes still on its disk ring
// complete and publish. A socket accepted for a thread that has left moves
// to one that stays. A left thread's io_context lives until the Server is
// destroyed, like the others (see stop()). The broker-wide
// queued.max.request.bytes and queued.max.requests budget is shared by all
// connections (request_budget.h).
//
// Connection bounds, as Kafka's ConnectionQuotas:
//   - max.connections: when that many connections are open, the acceptors
//     stop accepting (new connections wait in the kernel's listen backlog)
//     until one closes. With more than one listener, the inter-broker
//     listener is exempt from the wait (its connections still count), so
//     followers reach a flooded leader. While more connections than the
//     limit are open (the inter-broker listener's, or a limit lowered
//     live), the least recently active connections of the other listeners
//     are closed until the count is back at the limit, as Kafka's
//     processors close their lowest-priority channel. Each listener also
//     has its own limit on its own connections (Kafka's
//     listener.name.<l>.max.connections, by default the broker's value),
//     which binds the inter-broker listener too.
//   - max.connections.per.ip, max.connections.per.ip.overrides: a
//     connection from an address already at its limit is closed as soon as
//     it is accepted, before anything is read.
//   - max.connection.creation.rate (KIP-612): each listener's accepted
//     connections, and all listeners' together, are counted in a rate
//     over quota.window.num windows of quota.window.size.seconds
//     (connection_rate.h); when a connection puts either over the limit,
//     the acceptor holds it for the wait the rate asks (at most one
//     window) before handing it on, and accepts nothing meanwhile (new
//     connections wait in the listen backlog), as Kafka's acceptor does.
//     With more than one listener, the inter-broker listener counts only
//     against its own listener's rate. A listener's rate limit is its
//     listener.name.<l>.max.connection.creation.rate, by default the
//     broker's value.
//   - connection_creation_rate client quotas ({ip} or {ip default},
//     quotas/client_quotas.h): after those waits, a connection that puts
//     its address over its rate is not served: it is closed after the
//     throttle time (at most one window) and not counted, as Kafka's
//     delayed close; the acceptor goes on meanwhile.
// All are dynamic broker configs (admin/dynamic_configs.h), as Kafka's
// DynamicConnectionQuota and listener reconfiguration: a change applies to
// the connections accepted after it (a paused acceptor resumes when the new
// max.connections leaves room; a connection held for the rate keeps its
// wait); connections already open are kept, as in Kafka, except those over
// a lowered max.connections (above).
// socket.send.buffer.bytes / socket.receive.buffer.bytes are set on each
// accepted socket (socket_options.h).
//
// stop(grace) stops accepting, stops reading, lets the requests in flight
// be answered and written for up to `grace`, then closes what is left and
// joins the threads. Responses that arrive later are dropped. The
// io_contexts themselves live until the Server is destroyed, so a handler
// holding a connection's executor never posts into freed memory; Broker
// must outlive the Server.
//
// Each thread owns an io_uring for log writes (disk_ring.h): produce queues
// its appends there and the completions come back on the thread's
// io_context. stop() drains those rings after joining the threads, so every
// write submitted is published before the logs close.
//
// Metrics: start() creates each listener's connection series and registers
// a scrape-time collector (removed by stop()) for the network threads' idle
// ratio (busy_time.h) and the request-memory queue (request_budget.h):
//   kafka_network_socketserver_networkprocessoravgidlepercent
//   ciuic_network_thread_busy_seconds_total{thread}
//   kafka_network_requestchannel_requestqueuesize
//   ciuic_network_request_bytes_in_use
//   ciuic_network_requests_in_flight, ciuic_network_request_waits_total
//   ciuic_network_pipeline_pauses_total
//   ciuic_network_connections_refused_total{listener,reason}
//   ciuic_network_connections_evicted_total
//   ciuic_network_acceptor_paused{listener}, ciuic_network_acceptor_pauses_total{listener}
//   ciuic_network_connections_throttled_total{listener},
//   ciuic_network_connection_throttle_seconds_total{listener}
//
// start() ignores SIGPIPE for the process: sendfile(2) to a socket the peer
// closed would otherwise kill the broker.
//
// The listeners change live (listeners,
// advertised.listeners and listener.security.protocol.map as dynamic
// broker configs: switch_listeners(), called through
// Broker::switch_listeners, which start() hooks up and stop() unhooks).
//
// Thread-safety: start/stop from one controlling thread; bound_ports and
// switch_listeners from any thread but a network thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <map>
#include <unordered_map>
#include <vector>

#include <prometheus/metric_family.h>

#include "broker/net/asio.h"
#include "broker/server/busy_time.h"
#include "broker/server/connection.h"
#include "broker/server/connection_rate.h"
#include "broker/server/disk_ring.h"
#include "broker/server/post_gate.h"
#include "broker/server/request_budget.h"

namespace ciuickafka::broker {

class Broker;

class Server {
 public:
  using DispatchFn = std::function<void(RequestContext)>;

  // dispatch: how complete frames are handled; dispatch_frame() when empty
  // (tests pass their own).
  explicit Server(Broker& broker, DispatchFn dispatch = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  bool start(std::string* error);
  // The ports actually bound, in listener order (port 0 resolved): the
  // listeners of now, after any live change.
  std::vector<uint16_t> bound_ports() const;
  // Listeners changed live (Broker::switch_listeners, from a
  // dynamic config change): binds the listeners of next.bound that are new
  // (a name not bound now, or bound now at another host or port) and, if
  // every one binds, records their ports (admin::BoundPorts), calls
  // publish(), then on the first thread accepts on them, stops the
  // listeners next no longer has (or has elsewhere) and closes their
  // connections, as Kafka's removed acceptors close theirs. A new listener
  // on the port of one that goes (renamed, or another host on that port) is
  // bound on the first thread once the old one stops accepting; if it
  // cannot be, the old one listens again. If one cannot be bound, nothing
  // changes and error says which and why. Call it from anything but a
  // network thread (the I/O pool does); it waits for the first thread
  // (bounded).
  bool switch_listeners(const config::Listeners& next, const std::function<void()>& publish, std::string* error);
  // Listeners changed live since start.
  uint64_t listener_switches() const { return listener_switches_.load(std::memory_order_acquire); }
  void stop(std::chrono::milliseconds grace);

  size_t connection_count() const;
  // The network threads running now, and the open connections on each (in
  // thread order). A resize in progress counts the threads that stay.
  size_t thread_count() const;
  std::vector<size_t> connections_per_thread() const;
  // Resizes done since start (a test waits on it instead of sleeping), and
  // sockets accepted for a thread that had left, moved to one that stays.
  uint64_t resizes() const { return resizes_.load(std::memory_order_acquire); }
  uint64_t sockets_moved() const { return sockets_moved_.load(std::memory_order_relaxed); }
  const RequestBudget& budget() const { return budget_; }
  // Connections closed at accept for max.connections.per.ip, and the times
  // an acceptor paused for max.connections, all listeners together.
  uint64_t refused_per_ip() const;
  uint64_t acceptor_pauses() const;
  // Connections the acceptors held for max.connection.creation.rate, all
  // listeners together.
  uint64_t connections_throttled() const;
  // Connections closed because more than max.connections were open.
  uint64_t connections_evicted() const { return evicted_.load(std::memory_order_relaxed); }
  // Times a connection stopped reading because its pipeline was full
  // (max in flight) or a request held the later ones (connection.h).
  uint64_t pipeline_pauses() const { return pipeline_pauses_.load(std::memory_order_relaxed); }
  // Returns once every network thread has run what was posted to it before
  // the call, so the handlers running or queued then have finished (false
  // when a thread did not get there in time). A barrier for tests.
  bool quiesce();

 private:
  struct IoThread {
    asio::io_context ioc{1};
    asio::executor_work_guard<asio::io_context::executor_type> work{ioc.get_executor()};
    std::shared_ptr<PostGate> gate = std::make_shared<PostGate>(ioc.get_executor());
    std::unique_ptr<DiskRing> disk;  // null: blocking log writes (disk_ring.h)
    std::thread thread;
    ThreadBusy busy;
    uint64_t scraped_busy_ns = 0;  // busy.ns at the previous scrape, under scrape_mu_
  };
  struct Listener {
    std::string name;
    config::Endpoint endpoint;  // as configured (port 0: any)
    uint16_t port = 0;          // as bound
    // Under conns_mu_: stopped by a live change (switch_listeners); kept in
    // removed_listeners_ for the handlers and connections still naming it.
    bool removed = false;
    std::unique_ptr<asio::ip::tcp::acceptor> acceptor;
    std::unique_ptr<asio::steady_timer> retry;  // after accept errors (EMFILE)
    // Under conns_mu_: paused for max.connections, and a socket accepted
    // while another listener took the last slot (held until one frees).
    bool paused = false;
    std::unique_ptr<asio::ip::tcp::socket> parked;
    IoThread* parked_thread = nullptr;  // whose io_context the parked socket uses
    uint64_t pauses = 0;
    uint64_t refused_per_ip = 0;
    // max.connection.creation.rate: the listener's rate (under conns_mu_),
    // and the timer that holds a connection for its wait (first thread).
    std::unique_ptr<ConnectionRate> rate;
    std::unique_ptr<asio::steady_timer> throttle;
    uint64_t throttled = 0;       // under conns_mu_
    int64_t throttled_ms = 0;     // under conns_mu_
    // Under conns_mu_: its open connections, and its own max.connections
    // and max.connection.creation.rate (a listener override, else the
    // broker's value; apply_connection_limits()).
    int64_t count = 0;
    int64_t max_connections = 0;
    int64_t max_creation_rate = 0;
  };
  struct Live {
    std::weak_ptr<Connection> connection;
    IoThread* thread = nullptr;
    asio::ip::address address;
    Listener* listener = nullptr;
    bool evicting = false;  // chosen by pick_excess_locked(), its close posted
  };

  // The listener Kafka exempts from max.connections: the inter-broker one,
  // when there are others.
  static std::string protected_of(const config::Listeners& l);
  void accept(Listener& l);
  void on_accept(Listener& l, IoThread& t, const boost::system::error_code& ec, asio::ip::tcp::socket socket);
  // Admits (or refuses) an accepted socket; false when it was parked because
  // max.connections is reached (the acceptor then pauses).
  bool admit(Listener& l, IoThread& t, asio::ip::tcp::socket socket);
  // The connection_creation_rate client quota's throttle for a new
  // connection from a (0: serve it).
  int64_t ip_quota_wait(const asio::ip::address& a);
  bool slot_available_locked(const Listener& l) const;
  // Records a connection accepted on l in its rate and the broker's; the
  // wait (ms) max.connection.creation.rate asks for.
  int64_t record_connection_locked(Listener& l);
  int32_t max_per_ip_locked(const asio::ip::address& a) const;
  // max.connections.per.ip.overrides as addresses (names resolved now).
  bool resolve_ip_overrides(std::map<asio::ip::address, int32_t>* out, std::string* error) const;
  // Re-reads the connection limits (a dynamic config change).
  void apply_connection_limits();
  // While more than max.connections are open (the inter-broker listener's
  // connections, or a limit lowered live): the least recently active
  // connections of the other listeners, enough to come back to the limit,
  // marked so that none is picked twice. close_excess() closes them on
  // their threads (without conns_mu_).
  std::vector<Live> pick_excess_locked();
  void close_excess(std::vector<Live> victims);
  // l's own limits from the config, under conns_mu_.
  void read_listener_limits_locked(Listener& l) const;
  std::unique_ptr<ConnectionRate> new_rate() const;
  void resume(Listener& l);
  void on_connection_closed(uint64_t id);
  bool active_locked(const IoThread* t) const;
  // num.network.threads: asks the resizer for n threads (<= 0: per core).
  void request_resize(int n);
  void run_resizer();
  void resize(size_t n);
  // Starts t's thread and its disk ring.
  static void launch(IoThread& t);
  // Runs f(connection) on each live connection's thread and waits (bounded).
  void for_each_connection(const std::function<void(Connection&)>& f);
  static void run_thread(IoThread& t);
  void collect(std::vector<prometheus::MetricFamily>& out);

  Broker& broker_;
  DispatchFn dispatch_;
  RequestBudget budget_;
  std::atomic<uint64_t> pipeline_pauses_{0};
  std::atomic<bool> stopping_{false};
  bool started_ = false;
  bool stopped_ = false;

  mutable std::mutex conns_mu_;
  std::condition_variable conns_cv_;
  std::unordered_map<uint64_t, Live> conns_;
  uint64_t next_id_ = 0;     // under conns_mu_
  std::map<asio::ip::address, int32_t> ip_counts_;  // under conns_mu_

  // Connection bounds, under conns_mu_: set at construction / start(), and
  // by apply_connection_limits().
  int64_t max_connections_;
  int32_t max_per_ip_;
  std::map<asio::ip::address, int32_t> ip_overrides_;
  int64_t max_creation_rate_;      // max.connection.creation.rate
  std::unique_ptr<ConnectionRate> broker_rate_;  // every listener's connections but the protected one's
  uint64_t config_subscription_ = 0;  // admin::DynamicConfigs::subscribe
  std::string protected_listener_;  // the inter-broker listener, under conns_mu_
  std::atomic<uint64_t> listener_switches_{0};

  // The idle-ratio window: the clock at the previous scrape.
  std::mutex scrape_mu_;
  std::chrono::steady_clock::time_point last_scrape_{};  // under scrape_mu_
  uint64_t collector_id_ = 0;
  size_t next_thread_ = 0;   // acceptor threads only, under conns_mu_

  // The resizer (num.network.threads): a target, or 0 for none.
  std::mutex resize_mu_;
  std::condition_variable resize_cv_;
  size_t resize_target_ = 0;   // under resize_mu_
  bool resizer_stop_ = false;  // under resize_mu_
  std::thread resizer_;
  std::atomic<uint64_t> resizes_{0};
  std::atomic<uint64_t> sockets_moved_{0};
  std::atomic<uint64_t> evicted_{0};

  // Declared last: destroyed first, listeners before the io_contexts they use.
  // threads_: the running threads (the vector changes under conns_mu_, only
  // on the resizer; the first thread, which owns the acceptors, never
  // leaves). retired_: threads that left, kept for their io_contexts
  // (resizer only, then the destructor).
  std::vector<std::unique_ptr<IoThread>> retired_;
  std::vector<std::unique_ptr<IoThread>> threads_;
  IoThread* first_ = nullptr;  // threads_[0], set by start()
  // Under conns_mu_ (start() and the first thread change them): a list, so
  // the handlers and connections holding a Listener& keep it; a listener
  // removed live moves to removed_listeners_ until the Server goes.
  std::list<Listener> listeners_;
  std::list<Listener> removed_listeners_;
};

}  // namespace ciuickafka::broker
