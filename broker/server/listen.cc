// broker/server/listen.cc: bind and listen for one listener.
#include "broker/server/listen.h"

#include <vector>

namespace ciuickafka::broker {

using asio::ip::tcp;

std::string describe_endpoint(const config::Endpoint& endpoint) {
  const bool v6 = endpoint.host.find(':') != std::string::npos;
  return endpoint.name + "://" + (v6 ? "[" + endpoint.host + "]" : endpoint.host) + ":" +
         std::to_string(endpoint.port);
}

namespace {

bool try_bind(tcp::acceptor& acceptor, const tcp::endpoint& ep, bool dual_stack, boost::system::error_code& ec) {
  boost::system::error_code ignored;
  acceptor.close(ignored);
  acceptor.open(ep.protocol(), ec);
  if (ec) return false;
  acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (ec) return false;
  if (dual_stack) acceptor.set_option(asio::ip::v6_only(false), ignored);
  acceptor.bind(ep, ec);
  if (ec) return false;
  acceptor.listen(asio::socket_base::max_listen_connections, ec);
  return !ec;
}

}  // namespace

bool open_acceptor(tcp::acceptor& acceptor, const config::Endpoint& endpoint, std::string* error) {
  struct Candidate {
    tcp::endpoint ep;
    bool dual_stack = false;
  };
  std::vector<Candidate> candidates;
  boost::system::error_code ec;
  if (endpoint.host.empty()) {
    candidates.push_back({tcp::endpoint(asio::ip::address_v6::any(), endpoint.port), true});
    candidates.push_back({tcp::endpoint(asio::ip::address_v4::any(), endpoint.port), false});
  } else {
    const asio::ip::address addr = asio::ip::make_address(endpoint.host, ec);
    if (!ec) {
      candidates.push_back({tcp::endpoint(addr, endpoint.port), false});
    } else {
      tcp::resolver resolver(acceptor.get_executor());
      auto results = resolver.resolve(endpoint.host, std::to_string(endpoint.port),
                                      tcp::resolver::passive | tcp::resolver::numeric_service, ec);
      if (ec) {
        *error = "cannot listen on " + describe_endpoint(endpoint) + ": " + ec.message();
        return false;
      }
      for (const auto& r : results) candidates.push_back({r.endpoint(), false});
    }
  }
  boost::system::error_code first;
  for (const Candidate& c : candidates) {
    if (try_bind(acceptor, c.ep, c.dual_stack, ec)) return true;
    if (!first) first = ec;
    // An empty host falls back to IPv4 only when IPv6 itself is missing.
    if (endpoint.host.empty() && ec != asio::error::address_family_not_supported &&
        ec != boost::system::errc::address_not_available)
      break;
  }
  boost::system::error_code ignored;
  acceptor.close(ignored);
  *error = "cannot listen on " + describe_endpoint(endpoint) + ": " +
           (first ? first.message() : std::string("no address"));
  return false;
}

}  // namespace ciuickafka::broker
