// tests/bench/broker_bench_admin.cc: topic creation for the broker benchmark
// through librdkafka's admin API (CreateTopics), so each phase starts on a
// fresh topic with a known partition count. A topic that already exists is
// fine.
#include <librdkafka/rdkafka.h>

#include "tests/bench/broker_bench.h"

namespace ckbench {

std::string create_topic(const std::string& brokers, const std::string& topic, int partitions) {
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "bootstrap.servers", brokers.c_str(), errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
    rd_kafka_conf_destroy(conf);
    return errstr;
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (!rk) return errstr;
  std::string result;
  rd_kafka_NewTopic_t* nt = rd_kafka_NewTopic_new(topic.c_str(), partitions, 1, errstr, sizeof errstr);
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  rd_kafka_AdminOptions_t* opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
  rd_kafka_AdminOptions_set_operation_timeout(opts, 10000, errstr, sizeof errstr);
  rd_kafka_AdminOptions_set_request_timeout(opts, 15000, errstr, sizeof errstr);
  rd_kafka_CreateTopics(rk, &nt, 1, opts, q);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(q, 20000);
  if (!ev) {
    result = "CreateTopics: no answer in 20 s";
  } else if (rd_kafka_event_error(ev)) {
    result = std::string("CreateTopics: ") + rd_kafka_event_error_string(ev);
  } else {
    size_t n = 0;
    const rd_kafka_topic_result_t** res = rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
    for (size_t i = 0; i < n; ++i) {
      rd_kafka_resp_err_t e = rd_kafka_topic_result_error(res[i]);
      if (e && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
        result = std::string("CreateTopics ") + topic + ": " + rd_kafka_err2str(e);
    }
  }
  if (ev) rd_kafka_event_destroy(ev);
  rd_kafka_AdminOptions_destroy(opts);
  rd_kafka_NewTopic_destroy(nt);
  rd_kafka_queue_destroy(q);
  rd_kafka_destroy(rk);
  return result;
}

}  // namespace ckbench
