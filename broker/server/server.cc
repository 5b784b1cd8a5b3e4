// broker/server/server.cc: start-up, network threads, connection limits,
// shutdown (the acceptors and live listener changes: server_listeners.cc).
#include "broker/server/server.h"

#include <algorithm>
#include <limits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <future>

#include <unistd.h>

#include "broker/admin/cluster_info.h"
#include "broker/admin/dynamic_configs.h"
#include "broker/broker.h"
#include "broker/fetch/waiting_room.h"
#include "broker/quotas/client_quotas.h"
#include "broker/server/dispatch.h"
#include "broker/server/listen.h"
#include "broker/server/socket_options.h"
#include "metrics/log/log.h"
#include "metrics/log/rate_limit.h"

namespace ciuickafka::broker {

using asio::ip::tcp;

namespace {

constexpr auto kThreadHop = std::chrono::seconds(5);  // bound on waiting for a network thread
// How long a leaving network thread's connections get to write the answers
// they are owed before they are closed (num.network.threads lowered).
constexpr auto kLeaveGrace = std::chrono::seconds(3);

// Moves an accepted socket to another io_context (the descriptor stays
// open); false when that failed and the socket is closed.
bool move_socket(tcp::socket& s, asio::io_context& to) {
  boost::system::error_code ec;
  const tcp::endpoint local = s.local_endpoint(ec);
  if (ec) {
    s.close(ec);
    return false;
  }
  const int fd = s.release(ec);
  if (ec) {
    s.close(ec);
    return false;
  }
  tcp::socket moved(to);
  moved.assign(local.protocol(), fd, ec);
  if (ec) {
    ::close(fd);
    return false;
  }
  s = std::move(moved);
  return true;
}

int network_threads(int configured) {
  return configured > 0 ? configured : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

Server::Server(Broker& broker, DispatchFn dispatch)
    : broker_(broker),
      dispatch_(dispatch ? std::move(dispatch) : DispatchFn(&dispatch_frame)),
      budget_(broker.config().get_long("queued.max.request.bytes"), broker.config().get_int("queued.max.requests")),
      max_connections_(broker.config().get_int("max.connections")),
      max_per_ip_(broker.config().get_int("max.connections.per.ip")),
      max_creation_rate_(broker.config().get_int("max.connection.creation.rate")),
      broker_rate_(new_rate()),
      protected_listener_(protected_of(*broker.listeners())) {}

std::string Server::protected_of(const config::Listeners& l) {
  // Kafka protects the inter-broker listener only when there are others.
  return l.bound.size() > 1 ? l.inter_broker : std::string();
}

Server::~Server() {
  stop(std::chrono::milliseconds(0));
  listeners_.clear();
  removed_listeners_.clear();
  threads_.clear();
  retired_.clear();
}

bool Server::start(std::string* error) {
  if (started_) {
    *error = "server already started";
    return false;
  }
  started_ = true;
  std::signal(SIGPIPE, SIG_IGN);
  {
    std::map<asio::ip::address, int32_t> overrides;
    if (!resolve_ip_overrides(&overrides, error)) {
      stopped_ = true;
      return false;
    }
    std::lock_guard<std::mutex> lock(conns_mu_);
    ip_overrides_ = std::move(overrides);
  }

  const int n = network_threads(broker_.config().get_int("num.network.threads"));
  for (int i = 0; i < n; ++i) {
    threads_.push_back(std::make_unique<IoThread>());
    threads_.back()->disk = DiskRing::create(threads_.back()->ioc);
  }
  first_ = threads_[0].get();

  // Bind everything before any thread runs: a failure leaves nothing behind.
  const auto configured = broker_.listeners();
  for (const config::Endpoint& ep : configured->bound) {
    Listener l;
    l.name = ep.name;
    l.endpoint = ep;
    l.acceptor = std::make_unique<tcp::acceptor>(threads_[0]->ioc);
    l.retry = std::make_unique<asio::steady_timer>(threads_[0]->ioc);
    l.throttle = std::make_unique<asio::steady_timer>(threads_[0]->ioc);
    l.rate = new_rate();
    {
      std::lock_guard<std::mutex> lock(conns_mu_);
      read_listener_limits_locked(l);
    }
    if (!open_acceptor(*l.acceptor, ep, error)) {
      l.acceptor.reset();  // before the io_context it uses
      l.retry.reset();
      l.throttle.reset();
      listeners_.clear();
      threads_.clear();
      stopped_ = true;
      return false;
    }
    boost::system::error_code ec;
    l.port = l.acceptor->local_endpoint(ec).port();
    std::lock_guard<std::mutex> lock(conns_mu_);
    listeners_.push_back(std::move(l));
  }
  // Listeners on port 0 advertise the port they really got.
  for (const Listener& l : listeners_) broker_.service<admin::BoundPorts>().set(l.name, l.port);
  for (Listener& l : listeners_) accept(l);
  for (Listener& l : listeners_) broker_.metrics().add_listener(l.name);
  {
    std::lock_guard<std::mutex> lock(scrape_mu_);
    last_scrape_ = std::chrono::steady_clock::now();
  }
  collector_id_ = broker_.metrics_registry().add_collector(
      [this](std::vector<prometheus::MetricFamily>& out) { collect(out); });
  for (auto& t : threads_) launch(*t);
  resizer_ = std::thread([this] { run_resizer(); });
  config_subscription_ = broker_.service<admin::DynamicConfigs>().subscribe([this] {
    apply_connection_limits();
    request_resize(broker_.config().get_int("num.network.threads"));
  });
  broker_.set_listener_switch([this](const config::Listeners& next, const std::function<void()>& publish,
                                     std::string* error) { return switch_listeners(next, publish, error); });
  return true;
}

void Server::launch(IoThread& t) {
  IoThread* raw = &t;
  t.thread = std::thread([raw] { run_thread(*raw); });
}

size_t Server::thread_count() const {
  std::lock_guard<std::mutex> lock(conns_mu_);
  return threads_.size();
}

std::vector<size_t> Server::connections_per_thread() const {
  std::lock_guard<std::mutex> lock(conns_mu_);
  std::vector<size_t> out(threads_.size(), 0);
  for (const auto& [id, l] : conns_)
    for (size_t i = 0; i < threads_.size(); ++i)
      if (threads_[i].get() == l.thread) ++out[i];
  return out;
}

bool Server::active_locked(const IoThread* t) const {
  for (const auto& a : threads_)
    if (a.get() == t) return true;
  return false;
}

void Server::request_resize(int n) {
  {
    std::lock_guard<std::mutex> lock(resize_mu_);
    resize_target_ = static_cast<size_t>(network_threads(n));
  }
  resize_cv_.notify_all();
}

void Server::run_resizer() {
  for (;;) {
    size_t n = 0;
    {
      std::unique_lock<std::mutex> lock(resize_mu_);
      resize_cv_.wait(lock, [this] { return resizer_stop_ || resize_target_ != 0; });
      if (resizer_stop_) return;
      n = resize_target_;
      resize_target_ = 0;
    }
    resize(n);
  }
}

void Server::resize(size_t n) {
  const size_t before = thread_count();
  if (n == before || n == 0) return;
  if (n > before) {
    std::vector<std::unique_ptr<IoThread>> added;
    for (size_t i = before; i < n; ++i) {
      added.push_back(std::make_unique<IoThread>());
      added.back()->disk = DiskRing::create(added.back()->ioc);
      launch(*added.back());
    }
    {
      std::lock_guard<std::mutex> lock(conns_mu_);
      for (auto& t : added) threads_.push_back(std::move(t));
    }
    resizes_.fetch_add(1, std::memory_order_acq_rel);
    CK_LOG_INFO("network", "num.network.threads: %zu network threads, was %zu", n, before);
    return;
  }
  // Fewer: the last threads leave. From here on no connection is admitted
  // to them (admit() moves a socket accepted for one to a thread that stays).
  std::vector<std::unique_ptr<IoThread>> leaving;
  std::vector<Live> owed;
  {
    std::lock_guard<std::mutex> lock(conns_mu_);
    for (size_t i = n; i < threads_.size(); ++i) leaving.push_back(std::move(threads_[i]));
    threads_.resize(n);
    for (const auto& [id, l] : conns_)
      if (!active_locked(l.thread)) owed.push_back(l);
  }
  const auto on_leaving = [&leaving](const IoThread* t) {
    for (const auto& x : leaving)
      if (x.get() == t) return true;
    return false;
  };
  const auto count_left = [&] {
    size_t k = 0;
    for (const auto& [id, l] : conns_)
      if (on_leaving(l.thread)) ++k;
    return k;
  };
  // 1. Stop reading, answer what is owed (parked fetches at once), close.
  for (const Live& l : owed)
    asio::post(l.thread->ioc, [c = l.connection] {
      if (auto conn = c.lock()) conn->drain();
    });
  for (const auto& t : leaving) broker_.service<fetch::FetchWaitingRoom>().answer_waiters_on(t->ioc.get_executor());
  size_t closed_unanswered = 0;
  {
    std::unique_lock<std::mutex> lock(conns_mu_);
    conns_cv_.wait_for(lock, kLeaveGrace, [&] { return count_left() == 0; });
    closed_unanswered = count_left();
  }
  // 2. What did not finish in time is closed now.
  if (closed_unanswered > 0) {
    for (const Live& l : owed)
      asio::post(l.thread->ioc, [c = l.connection] {
        if (auto conn = c.lock()) conn->close("its network thread is leaving (num.network.threads lowered)");
      });
    std::unique_lock<std::mutex> lock(conns_mu_);
    conns_cv_.wait_for(lock, kThreadHop, [&] { return count_left() == 0; });
  }
  // 3. Stop the threads; their writes in flight complete and publish.
  for (auto& t : leaving) {
    t->work.reset();
    t->ioc.stop();
  }
  for (auto& t : leaving)
    if (t->thread.joinable()) t->thread.join();
  for (auto& t : leaving) {
    if (t->disk) t->disk->drain();
    t->gate->close();
    retired_.push_back(std::move(t));
  }
  resizes_.fetch_add(1, std::memory_order_acq_rel);
  CK_LOG_INFO("network",
              "num.network.threads: %zu network threads, was %zu; %zu connections of the threads that left were "
              "closed (%zu before their answers were all written)",
              n, before, owed.size(), closed_unanswered);
}

void Server::collect(std::vector<prometheus::MetricFamily>& out) {
  const auto family = [](const char* name, const char* help, prometheus::MetricType type) {
    prometheus::MetricFamily f;
    f.name = name;
    f.help = help;
    f.type = type;
    return f;
  };
  auto idle = family("kafka_network_socketserver_networkprocessoravgidlepercent",
                     "Fraction (0..1) of wall time since the previous scrape that the network threads, on average, "
                     "spent outside connection callbacks (reading and dispatching requests, handlers run there, "
                     "writing responses) and disk-ring completions; timers and waiting-room wake-ups count as idle",
                     prometheus::MetricType::Gauge);
  auto busy = family("ciuic_network_thread_busy_seconds_total",
                     "Seconds each network thread spent in connection callbacks and disk-ring completions",
                     prometheus::MetricType::Counter);
  {
    std::lock_guard<std::mutex> lock(scrape_mu_);
    const auto now = std::chrono::steady_clock::now();
    const double window_ns = static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - last_scrape_).count());
    double idle_sum = 0;
    std::vector<IoThread*> running;  // a thread started since the last scrape counts from its start
    {
      std::lock_guard<std::mutex> conns_lock(conns_mu_);
      for (const auto& t : threads_) running.push_back(t.get());
    }
    for (size_t i = 0; i < running.size(); ++i) {
      const uint64_t b = running[i]->busy.ns.load(std::memory_order_relaxed);
      const double used = window_ns > 0 ? static_cast<double>(b - running[i]->scraped_busy_ns) / window_ns : 0;
      idle_sum += 1.0 - std::clamp(used, 0.0, 1.0);
      running[i]->scraped_busy_ns = b;
      prometheus::ClientMetric m;
      m.label = {{"thread", std::to_string(i)}};
      m.counter.value = static_cast<double>(b) / 1e9;
      busy.metric.push_back(std::move(m));
    }
    last_scrape_ = now;
    prometheus::ClientMetric m;
    m.gauge.value = running.empty() ? 1.0 : idle_sum / static_cast<double>(running.size());
    idle.metric.push_back(std::move(m));
  }
  out.push_back(std::move(idle));
  out.push_back(std::move(busy));
  // One unlabelled sample per family.
  auto scalar = [&out, &family](const char* name, const char* help, prometheus::MetricType type, double v) {
    auto f = family(name, help, type);
    prometheus::ClientMetric m;
    if (type == prometheus::MetricType::Counter) {
      m.counter.value = v;
    } else {
      m.gauge.value = v;
    }
    f.metric.push_back(std::move(m));
    out.push_back(std::move(f));
  };
  scalar("kafka_network_requestchannel_requestqueuesize",
         "Connections holding a read request until queued.max.request.bytes and queued.max.requests have room "
         "(the request queue before any handler runs)",
         prometheus::MetricType::Gauge, static_cast<double>(budget_.waiting()));
  scalar("ciuic_network_request_bytes_in_use",
         "Bytes of requests read but not yet answered (bounded by queued.max.request.bytes)",
         prometheus::MetricType::Gauge, static_cast<double>(budget_.in_use()));
  scalar("ciuic_network_requests_in_flight",
         "Requests pipelined behind another on their connection and not yet answered (bounded by "
         "queued.max.requests; each connection's first request in flight is not counted)",
         prometheus::MetricType::Gauge, static_cast<double>(budget_.requests_in_use()));
  scalar("ciuic_network_request_waits_total",
         "Times a connection paused reading because queued.max.request.bytes or queued.max.requests was reached",
         prometheus::MetricType::Counter, static_cast<double>(budget_.waits()));
  scalar("ciuic_network_pipeline_pauses_total",
         "Times a connection stopped reading because its pipelined requests in flight reached the bound, or a "
         "request handled on the I/O pool held the later ones",
         prometheus::MetricType::Counter, static_cast<double>(pipeline_pauses()));
  scalar("ciuic_network_connections_evicted_total",
         "Open connections closed because more than max.connections were open (the least recently active of a "
         "listener other than the inter-broker one)",
         prometheus::MetricType::Counter, static_cast<double>(connections_evicted()));
  auto refused = family("ciuic_network_connections_refused_total",
                        "Connections closed as soon as they were accepted, by listener and the limit that refused "
                        "them",
                        prometheus::MetricType::Counter);
  auto paused = family("ciuic_network_acceptor_paused",
                       "1 while the listener accepts nothing because max.connections is reached",
                       prometheus::MetricType::Gauge);
  auto pauses = family("ciuic_network_acceptor_pauses_total",
                       "Times the listener stopped accepting because max.connections was reached",
                       prometheus::MetricType::Counter);
  auto throttled = family("ciuic_network_connections_throttled_total",
                          "Connections the listener held before handing them on because "
                          "max.connection.creation.rate was exceeded",
                          prometheus::MetricType::Counter);
  auto throttle_time = family("ciuic_network_connection_throttle_seconds_total",
                              "Time the listener held connections (and accepted none) for "
                              "max.connection.creation.rate",
                              prometheus::MetricType::Counter);
  {
    std::lock_guard<std::mutex> lock(conns_mu_);
    for (const Listener& l : listeners_) {
      prometheus::ClientMetric r;
      r.label = {{"listener", l.name}, {"reason", "max.connections.per.ip"}};
      r.counter.value = static_cast<double>(l.refused_per_ip);
      refused.metric.push_back(std::move(r));
      prometheus::ClientMetric g;
      g.label = {{"listener", l.name}};
      g.gauge.value = l.paused ? 1.0 : 0.0;
      paused.metric.push_back(std::move(g));
      prometheus::ClientMetric c;
      c.label = {{"listener", l.name}};
      c.counter.value = static_cast<double>(l.pauses);
      pauses.metric.push_back(std::move(c));
      prometheus::ClientMetric th;
      th.label = {{"listener", l.name}};
      th.counter.value = static_cast<double>(l.throttled);
      throttled.metric.push_back(std::move(th));
      prometheus::ClientMetric tt;
      tt.label = {{"listener", l.name}};
      tt.counter.value = static_cast<double>(l.throttled_ms) / 1000.0;
      throttle_time.metric.push_back(std::move(tt));
    }
  }
  out.push_back(std::move(refused));
  out.push_back(std::move(paused));
  out.push_back(std::move(pauses));
  out.push_back(std::move(throttled));
  out.push_back(std::move(throttle_time));

  // Client quotas (quotas/client_quotas.h).
  auto& q = broker_.client_quotas();
  auto quota_throttled = family("ciuic_client_quota_throttled_total",
                                "Responses that told a client it is throttled for going over its quota, by quota "
                                "(producer_byte_rate: produce, consumer_byte_rate: fetch, request_percentage: "
                                "request, controller_mutation_rate: controller_mutation)",
                                prometheus::MetricType::Counter);
  auto quota_time = family("ciuic_client_quota_throttle_seconds_total",
                           "Throttle time given to clients over a quota (their connections read nothing "
                           "meanwhile), by quota",
                           prometheus::MetricType::Counter);
  for (const auto& [kind, name] : {std::pair{quotas::Kind::kProduce, "produce"}, std::pair{quotas::Kind::kFetch, "fetch"},
                                    std::pair{quotas::Kind::kRequest, "request"},
                                    std::pair{quotas::Kind::kMutation, "controller_mutation"}}) {
    prometheus::ClientMetric n;
    n.label = {{"type", name}};
    n.counter.value = static_cast<double>(q.throttled(kind));
    quota_throttled.metric.push_back(std::move(n));
    prometheus::ClientMetric t;
    t.label = {{"type", name}};
    t.counter.value = static_cast<double>(q.throttled_ms(kind)) / 1000.0;
    quota_time.metric.push_back(std::move(t));
  }
  out.push_back(std::move(quota_throttled));
  out.push_back(std::move(quota_time));
  scalar("ciuic_client_quota_connections_throttled_total",
         "Connections closed unserved because their address went over its connection_creation_rate quota",
         prometheus::MetricType::Counter, static_cast<double>(q.connections_throttled()));
}

void Server::run_thread(IoThread& t) {
  bind_busy_counter(&t.busy);
  if (t.disk) t.disk->bind_to_this_thread();
  for (;;) {
    try {
      t.ioc.run();
      return;
    } catch (const std::exception& e) {  // a bug in a handler; keep serving the others
      CK_LOG_ERROR("network", "network thread: unexpected exception: %s", e.what());
    } catch (...) {
      CK_LOG_ERROR("network", "network thread: unexpected exception");
    }
  }
}

bool Server::resolve_ip_overrides(std::map<asio::ip::address, int32_t>* out, std::string* error) const {
  const std::string text = broker_.config().get_string("max.connections.per.ip.overrides");
  auto parsed = config::parse_ip_overrides(text);
  if (!parsed) {  // load_config validated it; kept as a guard
    *error = "invalid value \"" + text + "\" for max.connections.per.ip.overrides";
    return false;
  }
  for (const config::IpOverride& o : *parsed) {
    boost::system::error_code ec;
    const asio::ip::address a = asio::ip::make_address(o.host, ec);
    if (!ec) {
      (*out)[a] = o.max;
      continue;
    }
    // A host name: every address it resolves to now (Kafka resolves once too).
    asio::io_context ioc;
    tcp::resolver resolver(ioc);
    auto results = resolver.resolve(o.host, "", ec);
    if (ec || results.empty()) {
      *error = "invalid value \"" + text + "\" for max.connections.per.ip.overrides: cannot resolve \"" + o.host +
               "\": " + (ec ? ec.message() : std::string("no address"));
      return false;
    }
    for (const auto& r : results) (*out)[r.endpoint().address()] = o.max;
  }
  return true;
}

void Server::apply_connection_limits() {
  std::map<asio::ip::address, int32_t> overrides;
  std::string error;
  const bool resolved = resolve_ip_overrides(&overrides, &error);
  if (!resolved) CK_LOG_WARN("network", "%s: the previous overrides stay", error.c_str());
  std::vector<Listener*> waiting;
  std::vector<Live> victims;
  {
    std::lock_guard<std::mutex> lock(conns_mu_);
    max_connections_ = broker_.config().get_int("max.connections");
    max_per_ip_ = broker_.config().get_int("max.connections.per.ip");
    max_creation_rate_ = broker_.config().get_int("max.connection.creation.rate");
    for (Listener& l : listeners_) read_listener_limits_locked(l);
    if (resolved) ip_overrides_ = std::move(overrides);
    if (!stopping_.load()) {
      for (Listener& l : listeners_)
        if (l.paused && slot_available_locked(l)) waiting.push_back(&l);
      victims = pick_excess_locked();
    }
  }
  close_excess(std::move(victims));
  // Acceptors belong to the first thread: resume there.
  for (Listener* l : waiting) asio::post(first_->ioc, [this, l] { resume(*l); });
}

void Server::read_listener_limits_locked(Listener& l) const {
  const config::BrokerConfig& c = broker_.config();
  l.max_connections = c.listener_int(l.name, "max.connections").value_or(max_connections_);
  l.max_creation_rate = c.listener_int(l.name, "max.connection.creation.rate").value_or(max_creation_rate_);
}

std::unique_ptr<ConnectionRate> Server::new_rate() const {
  const config::BrokerConfig& c = broker_.config();
  return std::make_unique<ConnectionRate>(c.get_int("quota.window.num"),
                                          int64_t{c.get_int("quota.window.size.seconds")} * 1000);
}

std::vector<Server::Live> Server::pick_excess_locked() {
  std::vector<Live> out;
  if (stopping_.load()) return out;
  // Candidates: the other listeners' connections not closing already.
  auto candidate = [&](const Live& l) {
    return !l.evicting && l.listener != nullptr && l.listener->name != protected_listener_;
  };
  int64_t open = 0, candidates = 0;
  for (const auto& [id, live] : conns_) {
    open += live.evicting ? 0 : 1;
    candidates += candidate(live) ? 1 : 0;
  }
  const int64_t excess = std::min(open - max_connections_, candidates);
  if (excess <= 0) return out;  // the usual case: nothing is looked at further
  std::vector<std::pair<int64_t, Live*>> by_age;  // by last activity, one gone already first
  by_age.reserve(static_cast<size_t>(candidates));
  for (auto& [id, live] : conns_) {
    if (!candidate(live)) continue;
    auto c = live.connection.lock();
    by_age.emplace_back(c ? c->last_activity_ns() : std::numeric_limits<int64_t>::min(), &live);
  }
  std::partial_sort(by_age.begin(), by_age.begin() + excess, by_age.end(),
                    [](const auto& a, const auto& b) { return a.first < b.first; });
  for (int64_t i = 0; i < excess; ++i) {
    by_age[i].second->evicting = true;
    out.push_back(*by_age[i].second);
  }
  return out;
}

void Server::close_excess(std::vector<Live> victims) {
  for (Live& v : victims) {
    evicted_.fetch_add(1, std::memory_order_relaxed);
    asio::post(v.thread->ioc, [c = v.connection] {
      if (auto conn = c.lock())
        conn->close("more connections than max.connections are open; the least recently active one of a "
                    "listener other than the inter-broker one is closed");
    });
  }
}

int64_t Server::record_connection_locked(Listener& l) {
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  // As Kafka: the broker-wide rate first (not for the protected listener),
  // then the listener's; the longer wait.
  int64_t wait = 0;
  if (l.name != protected_listener_) wait = broker_rate_->record(now, max_creation_rate_);
  wait = std::max(wait, l.rate->record(now, l.max_creation_rate));
  if (wait > 0) {
    ++l.throttled;
    l.throttled_ms += wait;
  }
  return wait;
}

bool Server::slot_available_locked(const Listener& l) const {
  // As Kafka's ConnectionQuotas: the listener's own limit first, then the
  // broker's (which the inter-broker listener is exempt from).
  if (l.count >= l.max_connections) return false;
  return l.name == protected_listener_ || static_cast<int64_t>(conns_.size()) < max_connections_;
}

int32_t Server::max_per_ip_locked(const asio::ip::address& a) const {
  auto it = ip_overrides_.find(a);
  if (it != ip_overrides_.end()) return it->second;
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {  // a dual-stack listener sees IPv4 clients as ::ffff:a.b.c.d
    it = ip_overrides_.find(asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6()));
    if (it != ip_overrides_.end()) return it->second;
  }
  return max_per_ip_;
}

int64_t Server::ip_quota_wait(const asio::ip::address& a) {
  auto& q = broker_.client_quotas();
  if (!q.enabled()) return 0;
  const asio::ip::address ip =
      a.is_v6() && a.to_v6().is_v4_mapped() ? asio::ip::address(asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6()))
                                            : a;
  return q.record_connection(ip.to_string(), quotas::steady_ms());  // (asio's text is inet_ntop's, as the quotas')
}

bool Server::admit(Listener& l, IoThread& t, tcp::socket socket) {
  boost::system::error_code ec;
  const tcp::endpoint remote = socket.remote_endpoint(ec);
  if (ec) {  // already gone
    socket.close(ec);
    return true;
  }
  const asio::ip::address addr = remote.address();
  if (const int64_t wait = ip_quota_wait(addr); wait > 0) {
    // connection_creation_rate of this address (client quotas): not
    // served, closed after the throttle time (as Kafka's delayed close).
    auto held = std::make_shared<tcp::socket>(std::move(socket));
    auto timer = std::make_shared<asio::steady_timer>(t.ioc, std::chrono::milliseconds(wait));
    timer->async_wait([held, timer](const boost::system::error_code&) {
      boost::system::error_code ignored;
      held->close(ignored);
    });
    return true;
  }
  const auto& cfg = broker_.config();
  if (const int err = apply_socket_buffers(socket.native_handle(), cfg.get_int("socket.send.buffer.bytes"),
                                           cfg.get_int("socket.receive.buffer.bytes"));
      err != 0)
    CK_LOG_WARN("network", "socket.send.buffer.bytes / socket.receive.buffer.bytes on a connection from %s: %s",
                addr.to_string().c_str(), std::strerror(err));
  ConnectionOptions o;
  o.broker = &broker_;
  o.listener = l.name;
  o.max_request_bytes = cfg.get_int("socket.request.max.bytes");
  o.idle_timeout = std::chrono::milliseconds(cfg.get_long("connections.max.idle.ms"));
  o.max_in_flight = std::min<size_t>(kMaxInFlightPerConnection,
                                     static_cast<size_t>(std::max(1, cfg.get_int("queued.max.requests"))));
  o.budget = &budget_;
  o.pipeline_pauses = &pipeline_pauses_;
  o.on_closed = [this](uint64_t id) { on_connection_closed(id); };
  o.dispatch = dispatch_;
  std::shared_ptr<Connection> c;
  IoThread* home = &t;
  int32_t refused_at = -1;  // the per-IP limit that refused it
  std::vector<Live> victims;
  {
    std::lock_guard<std::mutex> lock(conns_mu_);
    if (l.removed) {  // held for the rate while its listener was removed live
      socket.close(ec);
      return true;
    }
    if (!slot_available_locked(l)) {
      // Another listener took the last slot meanwhile: hold this one.
      l.parked = std::make_unique<tcp::socket>(std::move(socket));
      l.parked_thread = &t;
      if (!l.paused) ++l.pauses;
      l.paused = true;
      return false;
    }
    const int32_t max = max_per_ip_locked(addr);
    auto it = ip_counts_.find(addr);
    const int32_t count = it == ip_counts_.end() ? 0 : it->second;
    if (count >= max) {
      ++l.refused_per_ip;
      refused_at = max;
    } else {
      if (!active_locked(home)) {
        // Accepted (or parked) for a thread that has left since: the
        // socket moves to one that stays.
        IoThread* to = threads_[next_thread_++ % threads_.size()].get();
        if (!move_socket(socket, to->ioc)) return true;  // closed
        home = to;
        sockets_moved_.fetch_add(1, std::memory_order_relaxed);
      }
      ++ip_counts_[addr];
      ++l.count;
      o.gate = home->gate;
      c = std::make_shared<Connection>(std::move(socket), ++next_id_, std::move(o));
      conns_[c->id()] = Live{c, home, addr, &l};
      // The inter-broker listener may go past max.connections: room is made.
      if (l.name == protected_listener_) victims = pick_excess_locked();
    }
  }
  close_excess(std::move(victims));
  if (refused_at >= 0) {
    // Kafka closes such a connection at once (TooManyConnectionsException).
    // A flood from one address logs 5 lines per 10 s, then a count.
    static metrics::log::RateLimiter limiter(5, std::chrono::seconds(10));
    const std::string ip = addr.to_string();
    if (const auto a = limiter.admit(ip); a.admitted) {
      const std::string more = a.suppressed > 0 ? " (" + std::to_string(a.suppressed) + " similar suppressed)" : "";
      CK_LOG_INFO("network",
                  "refused connection from %s on %s: the address already has its maximum of %d connections "
                  "(max.connections.per.ip)%s",
                  ip.c_str(), l.name.c_str(), refused_at, more.c_str());
    }
    socket.shutdown(tcp::socket::shutdown_both, ec);
    socket.close(ec);
    return true;
  }
  asio::post(home->ioc, [c] { c->start(); });
  return true;
}

void Server::on_connection_closed(uint64_t id) {
  std::vector<Listener*> waiting;
  {
    std::lock_guard<std::mutex> lock(conns_mu_);
    auto it = conns_.find(id);
    if (it != conns_.end()) {
      auto ip = ip_counts_.find(it->second.address);
      if (ip != ip_counts_.end() && --ip->second <= 0) ip_counts_.erase(ip);
      if (it->second.listener != nullptr) --it->second.listener->count;
      conns_.erase(it);
    }
    conns_cv_.notify_all();  // stop() waits for none left, a resize for none on the leaving threads
    if (!stopping_.load())
      for (Listener& l : listeners_)
        if (l.paused && slot_available_locked(l)) waiting.push_back(&l);
  }
  // Acceptors belong to the first thread: resume there.
  for (Listener* l : waiting) asio::post(first_->ioc, [this, l] { resume(*l); });
}

uint64_t Server::refused_per_ip() const {
  std::lock_guard<std::mutex> lock(conns_mu_);
  uint64_t n = 0;
  for (const auto* list : {&listeners_, &removed_listeners_})
    for (const Listener& l : *list) n += l.refused_per_ip;
  return n;
}

uint64_t Server::connections_throttled() const {
  std::lock_guard<std::mutex> lock(conns_mu_);
  uint64_t n = 0;
  for (const auto* list : {&listeners_, &removed_listeners_})
    for (const Listener& l : *list) n += l.throttled;
  return n;
}

uint64_t Server::acceptor_pauses() const {
  std::lock_guard<std::mutex> lock(conns_mu_);
  uint64_t n = 0;
  for (const auto* list : {&listeners_, &removed_listeners_})
    for (const Listener& l : *list) n += l.pauses;
  return n;
}

size_t Server::connection_count() const {
  std::lock_guard<std::mutex> lock(conns_mu_);
  return conns_.size();
}

bool Server::quiesce() {
  std::vector<IoThread*> running;
  {
    std::lock_guard<std::mutex> lock(conns_mu_);
    for (const auto& t : threads_) running.push_back(t.get());
  }
  std::vector<std::future<void>> done;
  for (IoThread* t : running) {
    auto p = std::make_shared<std::promise<void>>();
    done.push_back(p->get_future());
    asio::post(t->ioc, [p] { p->set_value(); });
  }
  bool all = true;
  for (auto& d : done) all = d.wait_for(kThreadHop) == std::future_status::ready && all;
  return all;
}

void Server::for_each_connection(const std::function<void(Connection&)>& f) {
  std::vector<Live> live;
  {
    std::lock_guard<std::mutex> lock(conns_mu_);
    for (auto& [id, l] : conns_) live.push_back(l);
  }
  for (Live& l : live) {
    asio::post(l.thread->ioc, [c = l.connection, f] {
      if (auto conn = c.lock()) f(*conn);
    });
  }
  quiesce();  // when it returns, each thread has done the posts above
}

void Server::stop(std::chrono::milliseconds grace) {
  if (stopped_) return;
  stopped_ = true;
  if (!started_) return;
  broker_.set_listener_switch({});  // waits for a change in progress
  if (config_subscription_ != 0) {
    broker_.service<admin::DynamicConfigs>().unsubscribe(config_subscription_);
    config_subscription_ = 0;
  }
  if (collector_id_ != 0) {
    broker_.metrics_registry().remove_collector(collector_id_);  // waits for a scrape in progress
    collector_id_ = 0;
  }
  // A resize in progress finishes first (bounded); threads_ is fixed from here.
  {
    std::lock_guard<std::mutex> lock(resize_mu_);
    resizer_stop_ = true;
  }
  resize_cv_.notify_all();
  if (resizer_.joinable()) resizer_.join();
  stopping_.store(true);
  const auto deadline = std::chrono::steady_clock::now() + grace;

  // 1. Stop accepting (acceptors belong to the first thread).
  {
    auto p = std::make_shared<std::promise<void>>();
    auto f = p->get_future();
    asio::post(first_->ioc, [this, p] {
      boost::system::error_code ec;
      std::lock_guard<std::mutex> lock(conns_mu_);
      for (Listener& l : listeners_) {
        l.acceptor->close(ec);
        l.retry->cancel(ec);
        l.throttle->cancel(ec);
      }
      p->set_value();
    });
    f.wait_for(kThreadHop);
  }
  // 2. Stop reading; answer what is in flight; wait up to grace.
  for_each_connection([](Connection& c) { c.drain(); });
  {
    std::unique_lock<std::mutex> lock(conns_mu_);
    conns_cv_.wait_until(lock, deadline, [this] { return conns_.empty(); });
  }
  // 3. Close what is left, then stop the threads.
  for_each_connection([](Connection& c) { c.close(nullptr); });
  for (auto& t : threads_) {
    t->work.reset();
    t->ioc.stop();
  }
  for (auto& t : threads_)
    if (t->thread.joinable()) t->thread.join();
  // 4. Writes still in flight on the threads' rings complete and publish.
  for (auto& t : threads_)
    if (t->disk) t->disk->drain();
  for (auto& t : threads_) t->gate->close();
}

}  // namespace ciuickafka::broker
