// tests/bench/broker_bench_mock.cc: `broker_bench mock`, librdkafka's
// in-memory mock cluster as a broker of its own process, the reference issue
// #14 names for the consume rate ("consume >= 1.0x the mock broker in the
// same run"; tests/bench/run_vs_mock.py).
//
//   broker_bench mock --topic NAME[:PARTITIONS] ...
//
// starts a one-broker mock cluster on 127.0.0.1, creates the topics, prints
// one JSON line {"bootstrap":"HOST:PORT","pid":N} and serves until its
// standard input closes. The mock keeps at most 5 MiB and 100,000 record
// batches per partition (librdkafka's own bound, not settable), dropping the
// oldest: a run that reads from offset 0 must stay under that.
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "tests/bench/broker_bench.h"

namespace ckbench {

int mock_once(int argc, char** argv) {
  std::vector<std::pair<std::string, int>> topics;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--topic") != 0 || i + 1 >= argc) {
      std::fprintf(stderr, "usage: broker_bench mock --topic NAME[:PARTITIONS] ...\n");
      return 2;
    }
    const std::string spec = argv[++i];
    const auto colon = spec.rfind(':');
    int parts = 1;
    if (colon != std::string::npos) {
      parts = std::atoi(spec.c_str() + colon + 1);
      if (parts < 1) {
        std::fprintf(stderr, "broker_bench mock: bad partition count in --topic %s\n", spec.c_str());
        return 2;
      }
    }
    topics.emplace_back(spec.substr(0, colon), parts);
  }
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  // The handle only hosts the cluster: no bootstrap.servers, and no notice for its absence.
  if (rd_kafka_conf_set(conf, "log_level", "3", err, sizeof err) != RD_KAFKA_CONF_OK) {
    std::fprintf(stderr, "broker_bench mock: %s\n", err);
    rd_kafka_conf_destroy(conf);
    return 1;
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (rk == nullptr) {
    std::fprintf(stderr, "broker_bench mock: rd_kafka_new: %s\n", err);
    return 1;
  }
  rd_kafka_mock_cluster_t* cluster = rd_kafka_mock_cluster_new(rk, 1);
  if (cluster == nullptr) {
    std::fprintf(stderr, "broker_bench mock: rd_kafka_mock_cluster_new failed\n");
    rd_kafka_destroy(rk);
    return 1;
  }
  int rc = 0;
  for (const auto& [name, parts] : topics) {
    const rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(cluster, name.c_str(), parts, 1);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      std::fprintf(stderr, "broker_bench mock: creating %s: %s\n", name.c_str(), rd_kafka_err2str(e));
      rc = 1;
    }
  }
  if (rc == 0) {
    std::printf("{\"bootstrap\":\"%s\",\"pid\":%d}\n", rd_kafka_mock_cluster_bootstraps(cluster),
                static_cast<int>(::getpid()));
    std::fflush(stdout);
    char buf[256];
    while (::read(0, buf, sizeof buf) > 0) {
    }
  }
  rd_kafka_mock_cluster_destroy(cluster);
  rd_kafka_destroy(rk);
  return rc;
}

}  // namespace ckbench
