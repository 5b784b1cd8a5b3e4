// broker/server/listen.h: binding one configured listener.
//
// open_acceptor() turns a config::Endpoint into a listening acceptor with
// SO_REUSEADDR. An empty host means every interface: dual-stack IPv6 when
// the machine has it, else IPv4. A literal address (IPv6 without brackets)
// is used as is; a name is resolved and its addresses tried in order. On
// failure the message names the listener and address, e.g.
// "cannot listen on PLAINTEXT://127.0.0.1:9092: Address already in use".
//
// Thread-safety: call before the acceptor is shared with a running thread.
#pragma once

#include <string>

#include "broker/config/listeners.h"
#include "broker/net/asio.h"

namespace ciuickafka::broker {

bool open_acceptor(asio::ip::tcp::acceptor& acceptor, const config::Endpoint& endpoint, std::string* error);

// "PLAINTEXT://[::1]:9092" for messages.
std::string describe_endpoint(const config::Endpoint& endpoint);

}  // namespace ciuickafka::broker
