// broker/server/connection_rate.h: a connection creation rate measured and
// limited as Kafka's ConnectionQuotas does (max.connection.creation.rate,
// KIP-612), for the Server's acceptors.
//
// Kafka records each accepted connection in a Rate over a sampled window:
// quota.window.num samples of quota.window.size.seconds each. A sample
// takes the records from its start until it is a window old; the next
// record then starts the next sample (the oldest one is reused once there
// are quota.window.num + 1 of them, the one extra as in Kafka's
// SampledStat); a sample whose last record is older than all the windows
// together counts nothing. The rate is the count of every sample over the
// time since the oldest sample began, but never less than
// quota.window.num - 1 windows (so a fresh broker is not throttled for its
// first few connections), in connections per second. When a record puts
// the rate over the quota, the acceptor waits
//   (rate - quota) / quota * that time span
// before it hands the connection on and accepts the next one, at most one
// window (quota 0: always one window). The connection is recorded either
// way.
//
// Pure: the caller passes the time (steady milliseconds) and holds its own
// lock (Server's conns_mu_).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace ciuickafka::broker {

class ConnectionRate {
 public:
  ConnectionRate(int samples, int64_t window_ms)
      : samples_(std::max(1, samples)), window_ms_(std::max<int64_t>(1, window_ms)) {}

  // Records one connection at now_ms; the wait (ms) the quota (connections
  // per second) asks for after it: 0 when the rate is within it.
  int64_t record(int64_t now_ms, int64_t quota) {
    return std::min<int64_t>(window_ms_, record_value(now_ms, 1, static_cast<double>(quota)));
  }

  // Records value at now_ms (a negative value takes an earlier record
  // back, as Kafka's unrecord of a throttled fetch) and measures the rate
  // after it against quota (per second): the time (ms) that would bring the
  // rate back within it, (rate - quota) / quota * the span, uncapped; 0 when
  // the rate is within it. Client quotas (quotas/client_quotas.h) record
  // bytes this way.
  int64_t record_value(int64_t now_ms, double value, double quota) {
    Sample* cur = current(now_ms);
    cur->count += value;
    cur->last = now_ms;
    const double span_ms = static_cast<double>(window_size(now_ms));
    const double rate = total(now_ms) * 1000.0 / span_ms;
    if (rate <= quota) return 0;
    if (quota <= 0) return window_ms_;
    return static_cast<int64_t>(std::llround((rate - quota) / quota * span_ms));
  }

  // When the last record was (0: never), to forget idle rates.
  int64_t last_record_ms() const { return list_.empty() ? 0 : list_[cur_].last; }

  // The rate at now_ms, connections per second (metrics, tests).
  double rate(int64_t now_ms) {
    return total(now_ms) * 1000.0 / static_cast<double>(window_size(now_ms));
  }

 private:
  struct Sample {
    int64_t start = 0;
    int64_t last = 0;  // the last record's time
    double count = 0;
  };

  // The sample a record at now_ms goes to (advancing when the current one
  // is a window old).
  Sample* current(int64_t now_ms) {
    if (list_.empty()) {
      list_.push_back({now_ms, now_ms, 0});
      return &list_.front();
    }
    if (now_ms - list_[cur_].start < window_ms_) return &list_[cur_];
    cur_ = (cur_ + 1) % (static_cast<size_t>(samples_) + 1);
    if (cur_ >= list_.size()) {
      list_.push_back({now_ms, now_ms, 0});
    } else {
      list_[cur_] = {now_ms, now_ms, 0};
    }
    return &list_[cur_];
  }

  // Samples with no record in all the windows together count nothing from
  // now on.
  void purge(int64_t now_ms) {
    const int64_t expire = static_cast<int64_t>(samples_) * window_ms_;
    for (Sample& s : list_)
      if (now_ms - s.last >= expire) s = {now_ms, now_ms, 0};
  }

  double total(int64_t now_ms) {
    purge(now_ms);
    double sum = 0;
    for (const Sample& s : list_) sum += s.count;
    return sum;
  }

  // The time the rate is taken over: since the oldest sample began, and at
  // least samples - 1 whole windows.
  int64_t window_size(int64_t now_ms) {
    purge(now_ms);
    int64_t oldest = now_ms;
    for (const Sample& s : list_) oldest = std::min(oldest, s.start);
    int64_t elapsed = now_ms - oldest;
    const int64_t full = elapsed / window_ms_;
    const int64_t min_full = samples_ - 1;
    if (full < min_full) elapsed += (min_full - full) * window_ms_;
    return std::max<int64_t>(1, elapsed);
  }

  int samples_;
  int64_t window_ms_;
  std::vector<Sample> list_;
  size_t cur_ = 0;
};

}  // namespace ciuickafka::broker
