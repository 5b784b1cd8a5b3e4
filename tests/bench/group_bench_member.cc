// tests/bench/group_bench_member.cc: one librdkafka group member on its own
// polling thread (see group_bench.h), and the wait for a full assignment.
#include <algorithm>
#include <chrono>
#include <set>
#include <sstream>

#include "tests/bench/broker_bench.h"
#include "tests/bench/group_bench.h"

namespace ckbench {

Member::Member(const GroupOptions& o, const std::string& group, int index, const std::string& extra_conf) {
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  std::vector<std::pair<std::string, std::string>> kv = {
      {"bootstrap.servers", o.brokers},
      {"group.id", group},
      {"client.id", "group-bench-" + std::to_string(index)},
      {"enable.auto.commit", "false"},
      {"auto.offset.reset", "earliest"},
      {"partition.assignment.strategy", "range"},
      {"log_level", "3"},
  };
  // extra_conf: "k=v,k=v"
  std::istringstream extra(extra_conf);
  std::string item;
  while (std::getline(extra, item, ',')) {
    auto eq = item.find('=');
    if (eq != std::string::npos) kv.emplace_back(item.substr(0, eq), item.substr(eq + 1));
  }
  for (auto& [k, v] : kv) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
      error_ = k + ": " + errstr;
      rd_kafka_conf_destroy(conf);
      return;
    }
  }
  rd_kafka_conf_set_rebalance_cb(conf, &Member::on_rebalance);
  rd_kafka_conf_set_opaque(conf, this);
  rk_ = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
  if (!rk_) {
    error_ = errstr;
    return;
  }
  rd_kafka_poll_set_consumer(rk_);
  rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(topics, o.topic.c_str(), RD_KAFKA_PARTITION_UA);
  rd_kafka_resp_err_t err = rd_kafka_subscribe(rk_, topics);
  rd_kafka_topic_partition_list_destroy(topics);
  if (err) error_ = std::string("subscribe: ") + rd_kafka_err2str(err);
  thread_ = std::thread([this] { loop(); });
}

Member::~Member() { close(); }

void Member::on_rebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts,
                          void* opaque) {
  auto* self = static_cast<Member*>(opaque);
  std::vector<int> now;
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    rd_kafka_assign(rk, parts);
    // No data is needed: paused partitions send no Fetch requests, so the
    // broker's CPU is the group protocol's and the commits'.
    rd_kafka_pause_partitions(rk, parts);
    for (int i = 0; i < parts->cnt; ++i) now.push_back(parts->elems[i].partition);
  } else {
    rd_kafka_assign(rk, nullptr);
  }
  std::lock_guard<std::mutex> lock(self->mu_);
  self->assigned_ = std::move(now);
}

void Member::loop() {
  while (!stop_.load()) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_, 20);
    if (m) rd_kafka_message_destroy(m);
    std::function<void(rd_kafka_t*)> work;
    {
      std::lock_guard<std::mutex> lock(mu_);
      work = work_;
    }
    if (work) work(rk_);
  }
}

void Member::set_work(std::function<void(rd_kafka_t*)> f) {
  std::lock_guard<std::mutex> lock(mu_);
  work_ = std::move(f);
}

std::vector<int> Member::assignment() {
  std::lock_guard<std::mutex> lock(mu_);
  return assigned_;
}

void Member::close() {
  if (!rk_) return;
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  rd_kafka_consumer_close(rk_);
  rd_kafka_destroy(rk_);
  rk_ = nullptr;
}

double wait_covered(std::vector<Member*> members, int partitions_total, double timeout_s) {
  const double t0 = now_s();
  while (now_s() - t0 < timeout_s) {
    std::set<int> seen;
    size_t total = 0;
    bool everyone = true;
    for (Member* m : members) {
      // One pass over a copy (g++ 12 -O3 warns a false use-after-free on
      // size() after a range insert of the same temporary).
      int count = 0;
      for (int p : m->assignment()) {
        seen.insert(p);
        ++count;
      }
      if (count == 0) everyone = false;
      total += static_cast<size_t>(count);
    }
    if (everyone && total == static_cast<size_t>(partitions_total) && seen.size() == total) return now_s() - t0;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return -1;
}

}  // namespace ckbench
