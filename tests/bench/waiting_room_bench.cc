// tests/bench/waiting_room_bench.cc: what one append costs the fetch
// waiting room when N readers tail the partition (issue #14: "N readers of
// hot data cost little more than one").
//
// Each tailing reader's fetch is parked in the room; an append wakes every
// one of them, each re-reads (here: a callback that answers at once), is
// answered and leaves the room, and its next fetch parks again. This bench
// drives the room itself (broker/fetch/waiting_room.h) on a real Broker
// with no sockets: N waiters parked on one partition, one append
// notification, every waiter run to its answer on one executor; repeated
// for `rounds` and for several N. It prints, per N, the time per append
// burst and per waiter: flat per waiter means the burst is O(N).
//
// Usage: waiting_room_bench [--rounds R] [--max N] [--dir DIR]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "broker/broker.h"
#include "broker/config/broker_config.h"
#include "broker/fetch/waiting_room.h"

using namespace ciuickafka;
using namespace ciuickafka::broker;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  int rounds = 20;
  size_t max_n = 16384;
  std::string dir = std::filesystem::temp_directory_path() / ("ck-room-bench-" + std::to_string(::getpid()));
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--rounds") rounds = std::atoi(v.c_str());
    else if (k == "--max") max_n = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--dir") dir = v;
    else {
      std::fprintf(stderr, "usage: waiting_room_bench [--rounds R] [--max N] [--dir DIR]\n");
      return 2;
    }
  }
  std::filesystem::create_directories(dir);
  config::ConfigInput in;
  in.overrides = {"listeners=PLAINTEXT://127.0.0.1:0", "log.dirs=" + dir};
  auto loaded = config::load_config(in);
  if (!loaded.is_ok()) {
    std::fprintf(stderr, "config: %s\n", loaded.error().message.c_str());
    return 1;
  }
  std::string err;
  auto broker = Broker::open(std::move(loaded.value().config), &err);
  if (!broker) {
    std::fprintf(stderr, "broker: %s\n", err.c_str());
    return 1;
  }
  auto created = broker->topics().create("t", 1, 1, {}, false, Broker::now_ms());
  if (!created.error.ok()) {
    std::fprintf(stderr, "create topic: %s\n", created.error.message.c_str());
    return 1;
  }
  std::shared_ptr<Partition> partition = broker->topics().partition("t", 0);
  auto& room = broker->service<fetch::FetchWaitingRoom>();
  asio::io_context io;

  std::printf("%8s %14s %14s\n", "readers", "us per append", "ns per reader");
  for (size_t n = 16; n <= max_n; n *= 4) {
    double total_us = 0;
    for (int r = 0; r < rounds; ++r) {
      size_t answered = 0;
      for (size_t i = 0; i < n; ++i) {
        auto w = std::make_shared<fetch::FetchWaitingRoom::Waiter>();
        w->executor = io.get_executor();
        // park() looks once more right after registering: that look finds
        // nothing new (false); the append's wake answers (true).
        w->attempt = [&answered, looked = false](bool) mutable {
          if (!looked) {
            looked = true;
            return false;
          }
          ++answered;
          return true;
        };
        if (!room.park(w, {{"t", 0}}, std::chrono::minutes(1))) {
          std::fprintf(stderr, "the room refused a waiter at %zu\n", i);
          return 1;
        }
      }
      io.restart();
      while (io.poll() > 0) {  // the looks after parking, untimed
      }
      const auto t0 = Clock::now();
      broker->append_listeners().notify(*partition);
      while (answered < n) {
        io.restart();
        io.poll();
      }
      total_us += std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
      if (room.size() != 0) {
        std::fprintf(stderr, "%zu waiters left in the room after the burst\n", room.size());
        return 1;
      }
      io.restart();
      io.poll();  // the cancelled timers' handlers
    }
    const double per_append = total_us / rounds;
    std::printf("%8zu %14.1f %14.1f\n", n, per_append, per_append * 1000.0 / static_cast<double>(n));
    std::fflush(stdout);
  }
  broker->shutdown();
  broker.reset();
  std::filesystem::remove_all(dir);
  return 0;
}
