// tests/bench/broker_bench_fetch.cc: the librdkafka consumers of the broker
// benchmark. Each consumer is its own client (own connection) on its own
// thread, assigned its partitions explicitly from offset 0: no group, no
// commits. A consumer is done at end-of-partition on all of them, at its
// byte budget, or at the phase's time limit.
#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <thread>

#include "tests/bench/broker_bench.h"

namespace ckbench {
namespace {

struct ConsumerOut {
  std::uint64_t msgs = 0, bytes = 0;
  bool finished = false;
  double end_s = 0;  // when its last message (or end of data) arrived, before closing
  double first_s = 0;  // when the first call that returned records returned
  std::uint64_t first_msgs = 0;  // records that call returned
  std::uint64_t first_bytes = 0;  // and their bytes
  std::string error;
};

// queue_kbytes: FetchSpec::queue_kbytes.
//
// librdkafka 2.0 stops fetching a partition whose local queue holds
// queued.min.messages or queued.max.messages.kbytes and, once the
// application has drained it, fetches again only when its broker thread next
// wakes, up to about a second later. Reading 4 M x 100 B at 100,000 and
// 64 MiB took 1.8 to 6.6 s from run to run, the client busy 1.6 CPU-s and our
// broker 0.05 of it; above what the run reads, the same read took 1.65-1.72 s
// every time. So `broker_bench fetch` gives its readers bounds above what they
// read, and a row measures the brokers, not that wait; both brokers get the
// same settings.
rd_kafka_t* make_consumer(const std::string& brokers, std::string* error, std::uint64_t queue_kbytes = 0,
                          std::uint64_t partition_max_bytes = 8388608) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char buf[512];
  const std::string kbytes = std::to_string(queue_kbytes ? queue_kbytes : 65536);
  const std::string partition_bytes = std::to_string(partition_max_bytes);
  const char* kv[][2] = {
      {"bootstrap.servers", brokers.c_str()},
      // librdkafka 2.0's assign() needs a group.id; nothing joins or commits.
      {"group.id", "broker_bench"},
      {"enable.auto.commit", "false"},
      {"enable.auto.offset.store", "false"},
      {"enable.partition.eof", "true"},
      {"fetch.wait.max.ms", "100"},
      {"max.partition.fetch.bytes", partition_bytes.c_str()},
      {"fetch.max.bytes", "52428800"},
      {"queued.max.messages.kbytes", kbytes.c_str()},
      {"queued.min.messages", queue_kbytes ? "10000000" : "100000"},
      {"check.crcs", "false"},
  };
  for (auto& p : kv) {
    if (rd_kafka_conf_set(conf, p[0], p[1], buf, sizeof buf) != RD_KAFKA_CONF_OK) {
      *error = std::string(p[0]) + ": " + buf;
      rd_kafka_conf_destroy(conf);
      return nullptr;
    }
  }
  // CK_BENCH_RDKAFKA_DEBUG=fetch,protocol,... : librdkafka's debug log on stderr, to see where a
  // consumer's time goes.
  if (const char* dbg = std::getenv("CK_BENCH_RDKAFKA_DEBUG"); dbg && *dbg &&
      rd_kafka_conf_set(conf, "debug", dbg, buf, sizeof buf) != RD_KAFKA_CONF_OK) {
    *error = std::string("debug: ") + buf;
    rd_kafka_conf_destroy(conf);
    return nullptr;
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, buf, sizeof buf);
  if (!rk) *error = buf;
  return rk;
}

void consume(const FetchSpec& spec, const std::vector<int>& parts, double deadline, ConsumerOut* out) {
  rd_kafka_t* rk = make_consumer(spec.brokers, &out->error, spec.queue_kbytes, spec.partition_max_bytes);
  if (!rk) return;
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(static_cast<int>(parts.size()));
  for (int p : parts) rd_kafka_topic_partition_list_add(list, spec.topic.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  rd_kafka_resp_err_t e = rd_kafka_assign(rk, list);
  rd_kafka_topic_partition_list_destroy(list);
  if (e) {
    out->error = std::string("assign: ") + rd_kafka_err2str(e);
    rd_kafka_destroy(rk);
    return;
  }
  rd_kafka_queue_t* q = rd_kafka_queue_get_consumer(rk);
  std::vector<bool> at_eof(parts.size(), false);
  std::vector<rd_kafka_message_t*> batch(4096);
  std::uint64_t budget = spec.max_bytes_per_consumer ? spec.max_bytes_per_consumer : UINT64_MAX;
  while (now_s() < deadline && out->bytes < budget) {
    ssize_t n = rd_kafka_consume_batch_queue(q, 100, batch.data(), batch.size());
    const std::uint64_t before = out->msgs;
    for (ssize_t i = 0; i < n; ++i) {
      rd_kafka_message_t* m = batch[i];
      if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        auto it = std::find(parts.begin(), parts.end(), m->partition);
        if (it != parts.end()) at_eof[it - parts.begin()] = true;
      } else if (m->err) {
        if (out->error.empty()) out->error = rd_kafka_message_errstr(m);
      } else {
        out->msgs++;
        out->bytes += m->len + m->key_len;
      }
      rd_kafka_message_destroy(m);
    }
    if (before == 0 && out->msgs > 0) {
      out->first_s = now_s();
      out->first_msgs = out->msgs;
      out->first_bytes = out->bytes;
    }
    if (std::all_of(at_eof.begin(), at_eof.end(), [](bool b) { return b; })) {
      out->finished = true;
      break;
    }
  }
  if (out->bytes >= budget) out->finished = true;
  out->end_s = now_s();
  rd_kafka_queue_destroy(q);
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
}

}  // namespace

FetchResult run_fetch(const FetchSpec& spec) {
  FetchResult r;
  std::vector<ConsumerOut> outs(spec.consumers.size());
  std::vector<std::thread> threads;
  double t0 = now_s();
  double deadline = t0 + spec.max_s;
  for (std::size_t i = 0; i < spec.consumers.size(); ++i)
    threads.emplace_back(consume, std::cref(spec), std::cref(spec.consumers[i]), deadline, &outs[i]);
  for (auto& t : threads) t.join();
  double end = t0;
  for (auto& o : outs) end = std::max(end, o.end_s);
  r.secs = end - t0;  // consumer close time is not part of the figure
  double first = end;
  std::uint64_t first_msgs = 0, first_bytes = 0;
  for (auto& o : outs) {
    if (o.first_msgs == 0) continue;
    first = std::min(first, o.first_s);
    r.first_record_s = std::max(r.first_record_s, o.first_s - t0);
    first_msgs += o.first_msgs;
    first_bytes += o.first_bytes;
    r.stream_rates.push_back(o.end_s > o.first_s ? static_cast<double>(o.msgs - o.first_msgs) / (o.end_s - o.first_s)
                                                 : 0);
  }
  r.stream_secs = end - first;
  for (auto& o : outs) {
    r.consumer_rates.push_back(o.end_s > t0 ? static_cast<double>(o.msgs) / (o.end_s - t0) : 0);
    r.msgs += o.msgs;
    r.bytes += o.bytes;
    r.finished += o.finished ? 1 : 0;
    if (r.first_error.empty() && !o.error.empty()) r.first_error = o.error;
  }
  r.stream_msgs = r.msgs - first_msgs;
  r.stream_bytes = r.bytes - first_bytes;
  return r;
}

namespace {

std::uint64_t mono_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

struct E2eProduced {
  std::atomic<std::uint64_t> failed{0};
  std::mutex mu;
  std::string error;
};

void on_e2e_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  if (!m->err) return;
  auto* st = static_cast<E2eProduced*>(opaque);
  st->failed++;
  std::lock_guard<std::mutex> lock(st->mu);
  if (st->error.empty()) st->error = rd_kafka_err2str(m->err);
}

}  // namespace

WriterReadersResult run_writer_readers(const ProduceSpec& spec, int readers) {
  WriterReadersResult r;
  const int parts = std::max(1, spec.partitions);
  std::atomic<int> ready{0};
  std::atomic<bool> stop{false};
  std::vector<std::atomic<std::uint64_t>> got(static_cast<std::size_t>(readers));
  std::mutex error_mu;
  auto fail = [&](const std::string& why) {
    std::lock_guard<std::mutex> lock(error_mu);
    if (r.first_error.empty()) r.first_error = why;
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < readers; ++i) {
    threads.emplace_back([&, i] {
      std::string err;
      rd_kafka_t* rk = make_consumer(spec.brokers, &err);
      if (!rk) {
        fail(err);
        ready++;
        return;
      }
      rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(parts);
      for (int p = 0; p < parts; ++p)
        rd_kafka_topic_partition_list_add(list, spec.topic.c_str(), p)->offset = RD_KAFKA_OFFSET_END;
      rd_kafka_resp_err_t e = rd_kafka_assign(rk, list);
      rd_kafka_topic_partition_list_destroy(list);
      if (e) fail(std::string("assign: ") + rd_kafka_err2str(e));
      rd_kafka_queue_t* q = rd_kafka_queue_get_consumer(rk);
      std::vector<rd_kafka_message_t*> batch(4096);
      int eofs = 0;
      bool counted_ready = false;
      const double give_up = now_s() + 30;
      while (!e && !stop.load()) {
        ssize_t n = rd_kafka_consume_batch_queue(q, 50, batch.data(), batch.size());
        for (ssize_t k = 0; k < n; ++k) {
          rd_kafka_message_t* m = batch[k];
          if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            ++eofs;
          } else if (m->err) {
            fail(rd_kafka_message_errstr(m));
          } else {
            got[static_cast<std::size_t>(i)].fetch_add(1, std::memory_order_relaxed);
          }
          rd_kafka_message_destroy(m);
        }
        if (!counted_ready && (eofs >= parts || now_s() > give_up)) {
          if (eofs < parts) fail("a reader never reached the end of the partitions");
          counted_ready = true;
          ready++;
        }
      }
      if (!counted_ready) ready++;
      rd_kafka_queue_destroy(q);
      rd_kafka_consumer_close(rk);
      rd_kafka_destroy(rk);
    });
  }
  while (ready.load() < readers) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  bool ok;
  {
    std::lock_guard<std::mutex> lock(error_mu);
    ok = r.first_error.empty();
  }
  if (ok) {
    r.writer = run_produce(spec);
    const double until = now_s() + 15;
    auto all_read = [&] {
      for (auto& g : got)
        if (g.load() < r.writer.delivered) return false;
      return true;
    };
    while (!all_read() && now_s() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  stop = true;
  for (auto& t : threads) t.join();
  for (auto& g : got) {
    r.per_reader.push_back(g.load());
    r.read_msgs += g.load();
  }
  if (r.first_error.empty() && !r.writer.first_error.empty()) r.first_error = r.writer.first_error;
  if (r.first_error.empty())
    for (std::uint64_t n : r.per_reader)
      if (n < r.writer.delivered) {
        r.first_error = "a reader read " + std::to_string(n) + " of " + std::to_string(r.writer.delivered);
        break;
      }
  return r;
}

E2eResult run_e2e(const E2eSpec& spec) {
  E2eResult r;
  if (spec.msg_size < 16 || spec.rate <= 0) {
    r.first_error = "e2e: --size must be >= 16 and --rate > 0";
    return r;
  }
  // The consumer first: assigned from the start of the empty partition, it is
  // ready once librdkafka reports that end.
  std::atomic<bool> ready{false}, stop{false};
  std::atomic<std::uint64_t> received{0};
  std::atomic<std::uint64_t> counted_from{UINT64_MAX};  // first send time (ns) that counts
  std::vector<double> lat;
  std::mutex error_mu;  // consumer_error: written by the consumer thread, read by this one
  std::string consumer_error;
  auto consumer_failed = [&] {
    std::lock_guard<std::mutex> lock(error_mu);
    return !consumer_error.empty();
  };
  auto fail_consumer = [&](const std::string& why) {
    std::lock_guard<std::mutex> lock(error_mu);
    if (consumer_error.empty()) consumer_error = why;
  };
  std::thread consumer([&] {
    std::string make_error;
    // Local queue bounds far above what a run holds (1 GiB, no record bound): with librdkafka's
    // 100,000-record default, a consumer a quarter of a second behind at 400,000 msgs/s stops
    // fetching until its broker thread next wakes, and that wait (up to about a second, see
    // make_consumer) was measured as the broker's latency.
    rd_kafka_t* rk = make_consumer(spec.brokers, &make_error, 1048576);
    if (!rk) {
      fail_consumer(make_error);
      ready = true;
      return;
    }
    rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(list, spec.topic.c_str(), 0)->offset = RD_KAFKA_OFFSET_END;
    rd_kafka_resp_err_t e = rd_kafka_assign(rk, list);
    rd_kafka_topic_partition_list_destroy(list);
    if (e) fail_consumer(std::string("assign: ") + rd_kafka_err2str(e));
    rd_kafka_queue_t* q = rd_kafka_queue_get_consumer(rk);
    const double give_up = now_s() + 30;  // never ready: the producer is told through ready + error
    while (!e && !stop.load()) {
      // One message per call: rd_kafka_consume_batch_queue waits for a full
      // batch or its timeout, which would be measured as latency.
      rd_kafka_message_t* m = rd_kafka_consume_queue(q, 10);
      const std::uint64_t now = mono_ns();
      if (m != nullptr) {
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
          ready = true;
        } else if (m->err) {
          fail_consumer(rd_kafka_message_errstr(m));
        } else if (m->len >= 8) {
          std::uint64_t sent_ns;
          std::memcpy(&sent_ns, m->payload, 8);
          received++;
          if (sent_ns >= counted_from.load(std::memory_order_relaxed))
            lat.push_back(static_cast<double>(now - sent_ns) / 1e3);
        }
        rd_kafka_message_destroy(m);
      }
      if (!ready && now_s() > give_up) {
        fail_consumer("the consumer never reached the end of the empty partition");
        ready = true;
        break;
      }
    }
    ready = true;
    rd_kafka_queue_destroy(q);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
  });
  while (!ready.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));

  E2eProduced st;
  rd_kafka_t* rk = nullptr;
  if (!consumer_failed()) {
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    char buf[512];
    const std::string acks = std::to_string(spec.acks), linger = std::to_string(spec.linger_ms);
    const char* kv[][2] = {{"bootstrap.servers", spec.brokers.c_str()}, {"acks", acks.c_str()},
                           {"linger.ms", linger.c_str()},             {"compression.codec", "none"},
                           {"enable.idempotence", "false"},          {"message.timeout.ms", "30000"},
                           {"queue.buffering.max.kbytes", "1048576"}};
    for (auto& p : kv) {
      if (rd_kafka_conf_set(conf, p[0], p[1], buf, sizeof buf) != RD_KAFKA_CONF_OK && r.first_error.empty())
        r.first_error = std::string(p[0]) + ": " + buf;
    }
    rd_kafka_conf_set_dr_msg_cb(conf, on_e2e_delivery);
    rd_kafka_conf_set_opaque(conf, &st);
    rk = r.first_error.empty() ? rd_kafka_new(RD_KAFKA_PRODUCER, conf, buf, sizeof buf) : nullptr;
    if (!rk && r.first_error.empty()) r.first_error = buf;
    if (!rk) rd_kafka_conf_destroy(conf);
  }
  if (rk) {
    std::vector<char> payload(spec.msg_size, 'x');
    const double t0 = now_s();
    const std::uint64_t t0_ns = mono_ns();
    counted_from = t0_ns + static_cast<std::uint64_t>(spec.warmup_s * 1e9);
    for (std::uint64_t i = 0;; ++i) {
      const double due = t0 + static_cast<double>(i) / spec.rate;
      if (due - t0 >= spec.max_s) break;
      double now = now_s();
      while (now < due) {  // paced: poll (delivery reports) while waiting
        rd_kafka_poll(rk, 0);
        if (due - now > 0.0002) std::this_thread::sleep_for(std::chrono::microseconds(100));
        now = now_s();
      }
      const std::uint64_t ts = mono_ns();
      std::memcpy(payload.data(), &ts, 8);
      for (;;) {
        rd_kafka_resp_err_t e = rd_kafka_producev(
            rk, RD_KAFKA_V_TOPIC(spec.topic.c_str()), RD_KAFKA_V_PARTITION(0),
            RD_KAFKA_V_VALUE(payload.data(), payload.size()), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_END);
        if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
          rd_kafka_poll(rk, 1);
          continue;
        }
        if (e) {
          st.failed++;
          if (r.first_error.empty()) r.first_error = rd_kafka_err2str(e);
        } else {
          r.sent++;
        }
        break;
      }
      if ((i & 63) == 0) rd_kafka_poll(rk, 0);
    }
    r.secs = now_s() - t0;
    rd_kafka_flush(rk, 30000);
    // Wait for the consumer to see everything sent (bounded).
    const double until = now_s() + 15;
    while (received.load() < r.sent && now_s() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    rd_kafka_destroy(rk);
  }
  stop = true;
  consumer.join();
  r.received = received.load();
  r.latency_us = std::move(lat);
  r.counted = r.latency_us.size();
  if (r.first_error.empty() && !consumer_error.empty()) r.first_error = consumer_error;
  if (r.first_error.empty() && st.failed > 0) {
    std::lock_guard<std::mutex> lock(st.mu);
    r.first_error = std::to_string(st.failed.load()) + " failed: " + st.error;
  }
  if (r.first_error.empty() && r.received < r.sent)
    r.first_error = "received " + std::to_string(r.received) + " of " + std::to_string(r.sent);
  return r;
}

}  // namespace ckbench
