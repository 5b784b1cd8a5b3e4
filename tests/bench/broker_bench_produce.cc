// tests/bench/broker_bench_produce.cc: the librdkafka producer of the broker
// benchmark: as fast as it can (throughput) or at a fixed rate (latency,
// measured from rd_kafka_produce to the delivery report).
//
// The payload is one constant buffer handed to librdkafka without copying,
// so the client spends its CPU on batching and the socket, not on memcpy.
#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "tests/bench/broker_bench.h"

namespace ckbench {
namespace {

struct DrState {
  ProduceResult* result = nullptr;
  std::vector<double>* sent_at = nullptr;  // per message index, when latency is recorded
};

void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* st = static_cast<DrState*>(opaque);
  if (m->err) {
    st->result->failed++;
    if (st->result->first_error.empty()) st->result->first_error = rd_kafka_err2str(m->err);
    return;
  }
  st->result->delivered++;
  st->result->bytes += m->len + m->key_len;
  if (st->sent_at) {
    auto idx = reinterpret_cast<std::uintptr_t>(m->_private);
    st->result->latency_us.push_back((now_s() - (*st->sent_at)[idx]) * 1e6);
  }
}

bool set(rd_kafka_conf_t* conf, const char* k, const std::string& v, std::string* err) {
  char buf[512];
  if (rd_kafka_conf_set(conf, k, v.c_str(), buf, sizeof buf) != RD_KAFKA_CONF_OK) {
    *err = std::string(k) + ": " + buf;
    return false;
  }
  return true;
}

}  // namespace

ProduceResult run_produce(const ProduceSpec& spec) {
  ProduceResult r;
  DrState st;
  st.result = &r;
  std::vector<double> sent_at;
  if (spec.record_latency) {
    sent_at.resize(spec.max_msgs);
    st.sent_at = &sent_at;
    r.latency_us.reserve(spec.max_msgs);
  }
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  std::string err;
  bool ok = set(conf, "bootstrap.servers", spec.brokers, &err) &&
            set(conf, "acks", std::to_string(spec.acks), &err) &&
            set(conf, "linger.ms", std::to_string(spec.linger_ms), &err) &&
            set(conf, "batch.size", std::to_string(spec.batch_bytes), &err) &&
            set(conf, "batch.num.messages", "100000", &err) &&
            set(conf, "queue.buffering.max.messages", "1000000", &err) &&
            set(conf, "queue.buffering.max.kbytes", "1048576", &err) &&
            set(conf, "message.timeout.ms", "30000", &err) &&
            set(conf, "compression.codec", "none", &err) &&
            set(conf, "enable.idempotence", "false", &err);
  if (!ok) {
    rd_kafka_conf_destroy(conf);
    r.first_error = err;
    return r;
  }
  rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  rd_kafka_conf_set_opaque(conf, &st);
  char errstr[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (!rk) {
    r.first_error = errstr;
    return r;
  }
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, spec.topic.c_str(), nullptr);
  // Warm up: metadata for the topic (and the connection) before the clock starts.
  const rd_kafka_metadata_t* md = nullptr;
  if (rd_kafka_metadata(rk, 0, rkt, &md, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR) rd_kafka_metadata_destroy(md);

  std::string payload(spec.msg_size, 'x');
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>('a' + i % 26);
  double t0 = now_s();
  double deadline = t0 + spec.max_s;
  while (r.sent < spec.max_msgs) {
    double t = now_s();
    if (t > deadline) break;
    if (spec.rate > 0 && r.sent >= (t - t0) * spec.rate) {
      rd_kafka_poll(rk, 0);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    int part = static_cast<int>(r.sent % static_cast<std::uint64_t>(std::max(1, spec.partitions)));
    if (spec.record_latency) sent_at[r.sent] = now_s();
    void* opaque = reinterpret_cast<void*>(static_cast<std::uintptr_t>(r.sent));
    if (rd_kafka_produce(rkt, part, 0, payload.data(), payload.size(), nullptr, 0, opaque) == -1) {
      rd_kafka_resp_err_t e = rd_kafka_last_error();
      if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        rd_kafka_poll(rk, 1);
        continue;
      }
      r.first_error = std::string("produce: ") + rd_kafka_err2str(e);
      break;
    }
    ++r.sent;
    if ((r.sent & 1023) == 0) rd_kafka_poll(rk, 0);
  }
  // Bounded drain: whatever is not delivered 20 s after the last send counts as lost.
  rd_kafka_flush(rk, 20000);
  r.secs = now_s() - t0;
  if (rd_kafka_outq_len(rk) > 0 && r.first_error.empty())
    r.first_error = std::to_string(rd_kafka_outq_len(rk)) + " messages undelivered after 20 s";
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(rk);
  return r;
}

}  // namespace ckbench
