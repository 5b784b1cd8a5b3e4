// tests/bench/broker_bench_fetch.cc: the librdkafka consumers of the broker
// benchmark. Each consumer is its own client (own connection) on its own
// thread, assigned its partitions explicitly from offset 0: no group, no
// commits. A consumer is done at end-of-partition on all of them, at its
// byte budget, or at the phase's time limit.
#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <mutex>
#include <thread>

#include "tests/bench/broker_bench.h"

namespace ckbench {
namespace {

struct ConsumerOut {
  std::uint64_t msgs = 0, bytes = 0;
  bool finished = false;
  double end_s = 0;  // when its last message (or end of data) arrived, before closing
  std::string error;
};

rd_kafka_t* make_consumer(const std::string& brokers, std::string* error) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char buf[512];
  const char* kv[][2] = {
      {"bootstrap.servers", brokers.c_str()},
      // librdkafka 2.0's assign() needs a group.id; nothing joins or commits.
      {"group.id", "broker_bench"},
      {"enable.auto.commit", "false"},
      {"enable.auto.offset.store", "false"},
      {"enable.partition.eof", "true"},
      {"fetch.wait.max.ms", "100"},
      {"max.partition.fetch.bytes", "8388608"},
      {"fetch.max.bytes", "52428800"},
      {"queued.max.messages.kbytes", "65536"},
      {"check.crcs", "false"},
  };
  for (auto& p : kv) {
    if (rd_kafka_conf_set(conf, p[0], p[1], buf, sizeof buf) != RD_KAFKA_CONF_OK) {
      *error = std::string(p[0]) + ": " + buf;
      rd_kafka_conf_destroy(conf);
      return nullptr;
    }
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, buf, sizeof buf);
  if (!rk) *error = buf;
  return rk;
}

void consume(const FetchSpec& spec, const std::vector<int>& parts, double deadline, ConsumerOut* out) {
  rd_kafka_t* rk = make_consumer(spec.brokers, &out->error);
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
  for (auto& o : outs) {
    r.msgs += o.msgs;
    r.bytes += o.bytes;
    r.finished += o.finished ? 1 : 0;
    if (r.first_error.empty() && !o.error.empty()) r.first_error = o.error;
  }
  return r;
}

}  // namespace ckbench
