// broker/server/server.cc: listeners, network threads, shutdown.
#include "broker/server/server.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <exception>
#include <future>

#include "broker/broker.h"
#include "broker/server/dispatch.h"
#include "broker/server/listen.h"
#include "metrics/log/log.h"

namespace ciuickafka::broker {

using asio::ip::tcp;

namespace {

constexpr auto kAcceptRetry = std::chrono::milliseconds(100);
constexpr auto kThreadHop = std::chrono::seconds(5);  // bound on waiting for a network thread

}  // namespace

Server::Server(Broker& broker, DispatchFn dispatch)
    : broker_(broker),
      dispatch_(dispatch ? std::move(dispatch) : DispatchFn(&dispatch_frame)),
      budget_(broker.config().get_long("queued.max.request.bytes")) {}

Server::~Server() {
  stop(std::chrono::milliseconds(0));
  listeners_.clear();
  threads_.clear();
}

bool Server::start(std::string* error) {
  if (started_) {
    *error = "server already started";
    return false;
  }
  started_ = true;
  std::signal(SIGPIPE, SIG_IGN);

  int n = broker_.config().get_int("num.network.threads");
  if (n <= 0) n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 0; i < n; ++i) {
    threads_.push_back(std::make_unique<IoThread>());
    threads_.back()->disk = DiskRing::create(threads_.back()->ioc);
  }

  // Bind everything before any thread runs: a failure leaves nothing behind.
  for (const config::Endpoint& ep : broker_.listeners().bound) {
    Listener l;
    l.name = ep.name;
    l.acceptor = std::make_unique<tcp::acceptor>(threads_[0]->ioc);
    l.retry = std::make_unique<asio::steady_timer>(threads_[0]->ioc);
    if (!open_acceptor(*l.acceptor, ep, error)) {
      l.acceptor.reset();  // before the io_context it uses
      l.retry.reset();
      listeners_.clear();
      threads_.clear();
      stopped_ = true;
      return false;
    }
    boost::system::error_code ec;
    ports_.push_back(l.acceptor->local_endpoint(ec).port());
    listeners_.push_back(std::move(l));
  }
  for (Listener& l : listeners_) accept(l);
  for (Listener& l : listeners_) broker_.metrics().add_listener(l.name);
  {
    std::lock_guard<std::mutex> lock(scrape_mu_);
    last_scrape_ = std::chrono::steady_clock::now();
    last_busy_ns_.assign(threads_.size(), 0);
  }
  collector_id_ = broker_.metrics_registry().add_collector(
      [this](std::vector<prometheus::MetricFamily>& out) { collect(out); });
  for (auto& t : threads_) {
    IoThread* raw = t.get();
    t->thread = std::thread([raw] { run_thread(*raw); });
  }
  return true;
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
    for (size_t i = 0; i < threads_.size() && i < last_busy_ns_.size(); ++i) {
      const uint64_t b = threads_[i]->busy.ns.load(std::memory_order_relaxed);
      const double used = window_ns > 0 ? static_cast<double>(b - last_busy_ns_[i]) / window_ns : 0;
      idle_sum += 1.0 - std::clamp(used, 0.0, 1.0);
      last_busy_ns_[i] = b;
      prometheus::ClientMetric m;
      m.label = {{"thread", std::to_string(i)}};
      m.counter.value = static_cast<double>(b) / 1e9;
      busy.metric.push_back(std::move(m));
    }
    last_scrape_ = now;
    prometheus::ClientMetric m;
    m.gauge.value = threads_.empty() ? 1.0 : idle_sum / static_cast<double>(threads_.size());
    idle.metric.push_back(std::move(m));
  }
  out.push_back(std::move(idle));
  out.push_back(std::move(busy));
  auto queue = family("kafka_network_requestchannel_requestqueuesize",
                      "Connections holding a read request until queued.max.request.bytes has room (handlers run "
                      "on the network threads, so this is the broker's only request queue)",
                      prometheus::MetricType::Gauge);
  prometheus::ClientMetric q;
  q.gauge.value = static_cast<double>(budget_.waiting());
  queue.metric.push_back(std::move(q));
  out.push_back(std::move(queue));
  auto bytes = family("ciuic_network_request_bytes_in_use",
                      "Bytes of requests read but not yet answered (bounded by queued.max.request.bytes)",
                      prometheus::MetricType::Gauge);
  prometheus::ClientMetric bm;
  bm.gauge.value = static_cast<double>(budget_.in_use());
  bytes.metric.push_back(std::move(bm));
  out.push_back(std::move(bytes));
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

void Server::accept(Listener& l) {
  IoThread* t;
  {
    std::lock_guard<std::mutex> lock(conns_mu_);
    t = threads_[next_thread_++ % threads_.size()].get();
  }
  l.acceptor->async_accept(t->ioc, [this, &l, t](const boost::system::error_code& ec, tcp::socket socket) {
    on_accept(l, *t, ec, std::move(socket));
  });
}

void Server::on_accept(Listener& l, IoThread& t, const boost::system::error_code& ec, tcp::socket socket) {
  if (stopping_.load() || ec == asio::error::operation_aborted) return;
  if (ec) {
    // Out of descriptors and the like: try again shortly rather than spin.
    CK_LOG_WARN("network", "accept on %s: %s", l.name.c_str(), ec.message().c_str());
    l.retry->expires_after(kAcceptRetry);
    l.retry->async_wait([this, &l](const boost::system::error_code& e) {
      if (!e && !stopping_.load()) accept(l);
    });
    return;
  }
  ConnectionOptions o;
  o.broker = &broker_;
  o.listener = l.name;
  o.max_request_bytes = broker_.config().get_int("socket.request.max.bytes");
  o.idle_timeout = std::chrono::milliseconds(broker_.config().get_long("connections.max.idle.ms"));
  o.budget = &budget_;
  o.gate = t.gate;
  o.on_closed = [this](uint64_t id) { on_connection_closed(id); };
  o.dispatch = dispatch_;
  std::shared_ptr<Connection> c;
  {
    std::lock_guard<std::mutex> lock(conns_mu_);
    c = std::make_shared<Connection>(std::move(socket), ++next_id_, std::move(o));
    conns_[c->id()] = Live{c, &t};
  }
  asio::post(t.ioc, [c] { c->start(); });
  accept(l);
}

void Server::on_connection_closed(uint64_t id) {
  std::lock_guard<std::mutex> lock(conns_mu_);
  conns_.erase(id);
  if (conns_.empty()) conns_cv_.notify_all();
}

size_t Server::connection_count() const {
  std::lock_guard<std::mutex> lock(conns_mu_);
  return conns_.size();
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
  // A barrier per thread: when it runs, the thread has done the posts above.
  std::vector<std::future<void>> done;
  for (auto& t : threads_) {
    auto p = std::make_shared<std::promise<void>>();
    done.push_back(p->get_future());
    asio::post(t->ioc, [p] { p->set_value(); });
  }
  for (auto& d : done) d.wait_for(kThreadHop);
}

void Server::stop(std::chrono::milliseconds grace) {
  if (stopped_) return;
  stopped_ = true;
  if (!started_) return;
  if (collector_id_ != 0) {
    broker_.metrics_registry().remove_collector(collector_id_);  // waits for a scrape in progress
    collector_id_ = 0;
  }
  stopping_.store(true);
  const auto deadline = std::chrono::steady_clock::now() + grace;

  // 1. Stop accepting (acceptors belong to the first thread).
  {
    auto p = std::make_shared<std::promise<void>>();
    auto f = p->get_future();
    asio::post(threads_[0]->ioc, [this, p] {
      boost::system::error_code ec;
      for (Listener& l : listeners_) {
        l.acceptor->close(ec);
        l.retry->cancel(ec);
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
