// broker/net/asio.h: the one place that includes Boost.Asio.
//
// Boost 1.74's Asio does not compile with g++ 12 in C++20 mode unless
// <utility> comes first (awaitable.hpp uses std::exchange without including
// it). Every broker file that needs Asio includes this header instead.
#pragma once

#include <utility>

#include <boost/asio.hpp>

namespace ciuickafka::broker {
namespace asio = boost::asio;
}  // namespace ciuickafka::broker
