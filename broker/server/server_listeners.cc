// broker/server/server_listeners.cc: the Server's acceptors (accept, the
// max.connections pause and resume, accept errors and the connection rate's
// hold) and listeners changed live (switch_listeners). See server.h.
#include <algorithm>
#include <future>
#include <list>

#include "broker/admin/cluster_info.h"
#include "broker/broker.h"
#include "broker/server/listen.h"
#include "broker/server/server.h"
#include "metrics/log/log.h"

namespace ciuickafka::broker {

using asio::ip::tcp;

namespace {
constexpr auto kAcceptRetry = std::chrono::milliseconds(100);
}  // namespace

std::vector<uint16_t> Server::bound_ports() const {
  std::lock_guard<std::mutex> lock(conns_mu_);
  std::vector<uint16_t> out;
  for (const Listener& l : listeners_) out.push_back(l.port);
  return out;
}

bool Server::switch_listeners(const config::Listeners& next, const std::function<void()>& publish,
                              std::string* error) {
  if (stopping_.load()) {
    *error = "the broker is shutting down";
    return false;
  }
  const auto kept = [&next](const config::Endpoint& ep) {
    return std::find(next.bound.begin(), next.bound.end(), ep) != next.bound.end();
  };
  // 1. Bind what is new, off the network threads; a failure changes nothing.
  // A new listener on the port of one that goes (renamed, or moved to
  // another host on the same port) cannot be bound beside it: it is handed
  // over on the first thread below.
  std::list<Listener> fresh, handed_over;
  {
    std::vector<config::Endpoint> now;
    {
      std::lock_guard<std::mutex> lock(conns_mu_);
      for (const Listener& l : listeners_) now.push_back(l.endpoint);
    }
    const auto port_of_leaving = [&](uint16_t port) {
      return port != 0 && std::any_of(now.begin(), now.end(), [&](const config::Endpoint& e) {
               return e.port == port && !kept(e);
             });
    };
    for (const config::Endpoint& ep : next.bound) {
      if (std::find(now.begin(), now.end(), ep) != now.end()) continue;
      Listener l;
      l.name = ep.name;
      l.endpoint = ep;
      l.acceptor = std::make_unique<tcp::acceptor>(first_->ioc);
      l.retry = std::make_unique<asio::steady_timer>(first_->ioc);
      l.throttle = std::make_unique<asio::steady_timer>(first_->ioc);
      l.rate = new_rate();
      if (port_of_leaving(ep.port)) {
        handed_over.push_back(std::move(l));
        continue;
      }
      if (!open_acceptor(*l.acceptor, ep, error)) return false;  // fresh's acceptors, never used by a thread, close here
      boost::system::error_code ec;
      l.port = l.acceptor->local_endpoint(ec).port();
      fresh.push_back(std::move(l));
    }
  }
  // On the first thread, which owns the acceptors.
  const auto on_first = [this](const std::function<void()>& fn) {
    if (first_->ioc.get_executor().running_in_this_thread()) {
      fn();
      return;
    }
    auto done = std::make_shared<std::promise<void>>();
    auto f = done->get_future();
    asio::post(first_->ioc, [&fn, done] {
      fn();
      done->set_value();
    });
    // The first thread runs only short handlers, and stop() cannot stop it
    // meanwhile: it takes the listener switch away first (Broker's mutex,
    // held by the caller of this function), so this wait ends.
    f.wait();
  };
  if (!handed_over.empty()) {
    // The leaving listeners on those ports stop accepting (their
    // connections stay until the swap), the new ones bind; if one cannot,
    // the old ones listen again and nothing has changed.
    bool bound = true;
    on_first([&] {
      std::vector<Listener*> paused;
      {
        std::lock_guard<std::mutex> lock(conns_mu_);
        for (Listener& l : listeners_)
          if (!kept(l.endpoint) && std::any_of(handed_over.begin(), handed_over.end(), [&](const Listener& h) {
                return h.endpoint.port == l.endpoint.port;
              }))
            paused.push_back(&l);
      }
      for (Listener* l : paused) {
        boost::system::error_code ec;
        l->acceptor->close(ec);
        l->retry->cancel();
      }
      for (Listener& h : handed_over) {
        if (!open_acceptor(*h.acceptor, h.endpoint, error)) {
          bound = false;
          break;
        }
        boost::system::error_code ec;
        h.port = h.acceptor->local_endpoint(ec).port();
      }
      if (bound) return;
      for (Listener& h : handed_over) {
        boost::system::error_code ec;
        h.acceptor->close(ec);
      }
      for (Listener* l : paused) {
        std::string again;
        if (!open_acceptor(*l->acceptor, l->endpoint, &again))
          CK_LOG_WARN("network", "%s (after a listener change that could not be made)", again.c_str());
        else
          accept(*l);
      }
    });
    if (!bound) return false;
    fresh.splice(fresh.end(), handed_over);
  }
  for (const Listener& l : fresh) broker_.service<admin::BoundPorts>().set(l.name, l.port);
  publish();  // Metadata advertises the new listeners from here on
  // 2. On the first thread: swap, accept, close.
  const std::function<void()> swap = [this, &fresh, &next, &kept] {
    std::vector<Listener*> started;
    std::vector<Live> orphans;
    std::vector<std::string> gone;
    {
      std::lock_guard<std::mutex> lock(conns_mu_);
      protected_listener_ = protected_of(next);
      for (auto it = listeners_.begin(); it != listeners_.end();) {
        const auto at = it++;
        if (kept(at->endpoint)) continue;
        Listener& l = *at;
        l.removed = true;
        boost::system::error_code ec;
        l.acceptor->close(ec);
        l.retry->cancel();
        l.throttle->cancel();  // a connection held for the rate is closed by its handler
        if (l.parked) l.parked->close(ec);
        l.parked.reset();
        for (const auto& [id, live] : conns_)
          if (live.listener == &l) orphans.push_back(live);
        gone.push_back(describe_endpoint(l.endpoint));
        removed_listeners_.splice(removed_listeners_.end(), listeners_, at);
      }
      for (Listener& l : fresh) {
        read_listener_limits_locked(l);
        started.push_back(&l);
      }
      listeners_.splice(listeners_.end(), fresh);
      // In next's order, as bound_ports() reports them.
      std::vector<config::Endpoint> order = next.bound;
      listeners_.sort([&order](const Listener& a, const Listener& b) {
        return std::find(order.begin(), order.end(), a.endpoint) < std::find(order.begin(), order.end(), b.endpoint);
      });
    }
    for (Listener* l : started) {
      broker_.metrics().add_listener(l->name);
      accept(*l);
      config::Endpoint at = l->endpoint;
      at.port = l->port;
      CK_LOG_INFO("network", "listening on %s (a dynamic config change)", describe_endpoint(at).c_str());
    }
    for (const std::string& g : gone)
      CK_LOG_INFO("network", "stopped listening on %s (a dynamic config change)", g.c_str());
    for (const Live& o : orphans)
      asio::post(o.thread->ioc, [c = o.connection] {
        if (auto conn = c.lock()) conn->close("its listener was removed (a dynamic config change)");
      });
  };
  on_first(swap);
  listener_switches_.fetch_add(1, std::memory_order_acq_rel);
  return true;
}

void Server::accept(Listener& l) {
  IoThread* t;
  {
    std::lock_guard<std::mutex> lock(conns_mu_);
    if (stopping_.load() || l.removed) return;
    if (!slot_available_locked(l)) {
      // max.connections: accept nothing more until a connection closes
      // (on_connection_closed resumes); clients wait in the listen backlog.
      if (!l.paused) ++l.pauses;
      l.paused = true;
      return;
    }
    t = threads_[next_thread_++ % threads_.size()].get();
  }
  l.acceptor->async_accept(t->ioc, [this, &l, t](const boost::system::error_code& ec, tcp::socket socket) {
    on_accept(l, *t, ec, std::move(socket));
  });
}

void Server::resume(Listener& l) {
  std::unique_ptr<tcp::socket> parked;
  IoThread* t = nullptr;
  {
    std::lock_guard<std::mutex> lock(conns_mu_);
    if (!l.paused || stopping_.load() || l.removed || !slot_available_locked(l)) return;
    l.paused = false;
    parked = std::move(l.parked);
    t = l.parked_thread;  // the socket belongs to that thread's io_context
    l.parked_thread = nullptr;
  }
  if (parked && !admit(l, *t, std::move(*parked))) return;
  accept(l);
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
  int64_t wait = 0;
  {
    std::lock_guard<std::mutex> lock(conns_mu_);
    if (l.removed) {  // accepted just before its listener was removed live
      boost::system::error_code ignored;
      socket.close(ignored);
      return;
    }
    wait = record_connection_locked(l);
  }
  if (wait > 0) {
    // max.connection.creation.rate: hold this connection, and accept no
    // other, for the wait (the acceptor's thread stays free meanwhile).
    auto held = std::make_shared<tcp::socket>(std::move(socket));
    l.throttle->expires_after(std::chrono::milliseconds(wait));
    l.throttle->async_wait([this, &l, &t, held](const boost::system::error_code& e) {
      if (e || stopping_.load()) {
        boost::system::error_code ignored;
        held->close(ignored);
        return;
      }
      if (admit(l, t, std::move(*held))) accept(l);
    });
    return;
  }
  if (admit(l, t, std::move(socket))) accept(l);
}

}  // namespace ciuickafka::broker
