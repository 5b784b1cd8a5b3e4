// tests/unit/metrics/broker_metrics_test.cc: what the broker pushes in shows
// up as exact lines of the text exposition; handles are cached and stable;
// removing a topic removes its series (and marks old handles stale); the
// split request-time histograms; per-listener connections; process_* is present.
#include "metrics/broker_metrics.h"

#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/metrics/text_lines.h"

namespace m = ciuickafka::metrics;
using ck_metrics_test::has_line;
using ck_metrics_test::has_series;
using namespace std::chrono_literals;

TEST_CASE("topic counters appear per topic and in the all-topics aggregate") {
  m::Registry r;
  m::BrokerMetrics bm(r);
  auto t = bm.topic("train");
  auto u = bm.topic("eval");
  t.add_bytes_in(1000);
  t.add_messages_in(10);
  u.add_bytes_in(24);
  u.add_messages_in(1);
  t.add_bytes_out(4000);
  t.failed_produce();
  u.failed_fetch();
  u.failed_fetch();
  bm.all_topics().add_bytes_out(5);  // no topic: aggregate only

  std::string text = r.text();
  CHECK(has_line(text, "# TYPE kafka_server_brokertopicmetrics_bytesin_total counter"));
  CHECK(has_line(text, "kafka_server_brokertopicmetrics_bytesin_total 1024"));
  CHECK(has_line(text, "kafka_server_brokertopicmetrics_bytesin_total{topic=\"train\"} 1000"));
  CHECK(has_line(text, "kafka_server_brokertopicmetrics_bytesin_total{topic=\"eval\"} 24"));
  CHECK(has_line(text, "kafka_server_brokertopicmetrics_messagesin_total 11"));
  CHECK(has_line(text, "kafka_server_brokertopicmetrics_messagesin_total{topic=\"train\"} 10"));
  CHECK(has_line(text, "kafka_server_brokertopicmetrics_bytesout_total 4005"));
  CHECK(has_line(text, "kafka_server_brokertopicmetrics_bytesout_total{topic=\"train\"} 4000"));
  CHECK(has_line(text, "kafka_server_brokertopicmetrics_bytesout_total{topic=\"eval\"} 0"));
  CHECK(has_line(text, "kafka_server_brokertopicmetrics_failedproducerequests_total 1"));
  CHECK(has_line(text, "kafka_server_brokertopicmetrics_failedproducerequests_total{topic=\"train\"} 1"));
  CHECK(has_line(text, "kafka_server_brokertopicmetrics_failedfetchrequests_total 2"));
  CHECK(has_line(text, "kafka_server_brokertopicmetrics_failedfetchrequests_total{topic=\"eval\"} 2"));
}

TEST_CASE("replication bytes count for all topics only, never in bytes out") {
  m::Registry r;
  m::BrokerMetrics bm(r);
  auto t = bm.topic("train");
  t.add_replication_bytes_out(300);
  t.add_replication_bytes_in(70);
  t.add_bytes_out(9);

  std::string text = r.text();
  CHECK(has_line(text, "kafka_server_brokertopicmetrics_replicationbytesout_total 300"));
  CHECK(has_line(text, "kafka_server_brokertopicmetrics_replicationbytesin_total 70"));
  CHECK(text.find("replicationbytesout_total{topic=") == std::string::npos);
  CHECK(text.find("replicationbytesin_total{topic=") == std::string::npos);
  CHECK(has_line(text, "kafka_server_brokertopicmetrics_bytesout_total 9"));
  CHECK(has_line(text, "kafka_server_brokertopicmetrics_bytesout_total{topic=\"train\"} 9"));
}

TEST_CASE("topic handles are cached: the same name gives the same counters") {
  m::Registry r;
  m::BrokerMetrics bm(r);
  auto a = bm.topic("t");
  auto b = bm.topic(std::string("t"));
  REQUIRE(a.counters() != nullptr);
  CHECK(a.counters() == b.counters());
  CHECK(bm.topic("other").counters() != a.counters());
  a.add_bytes_in(1);
  b.add_bytes_in(2);
  CHECK(a.counters()->bytes_in.load() == 3);
  CHECK(has_line(r.text(), "kafka_server_brokertopicmetrics_bytesin_total{topic=\"t\"} 3"));

  auto r1 = bm.request("Produce", 9);
  auto r2 = bm.request("Produce", 9);
  CHECK(r1.requests == r2.requests);
  CHECK(r1.latency == r2.latency);
  auto r3 = bm.request("Produce", 8);
  CHECK(r3.requests != r1.requests);
  CHECK(r3.latency == r1.latency);  // latency is per API, not per version
  CHECK(&bm.request_error("Fetch", "NONE") == &bm.request_error("Fetch", "NONE"));
}

TEST_CASE("topic removal drops its series, marks old handles stale - a recreated topic starts at zero") {
  m::Registry r;
  m::BrokerMetrics bm(r);
  auto t = bm.topic("t");
  auto keep = bm.topic("keep");
  t.add_bytes_in(5);
  t.produce_request();
  t.fetch_request();
  t.fetch_request();
  keep.produce_request();

  std::string text = r.text();
  CHECK(has_line(text, "kafka_server_brokertopicmetrics_totalproducerequests_total{topic=\"t\"} 1"));
  CHECK(has_line(text, "kafka_server_brokertopicmetrics_totalproducerequests_total 2"));
  CHECK(has_line(text, "kafka_server_brokertopicmetrics_totalfetchrequests_total{topic=\"t\"} 2"));
  CHECK(has_line(text, "kafka_server_brokertopicmetrics_totalfetchrequests_total{topic=\"keep\"} 0"));
  CHECK_FALSE(t.stale());

  bm.remove_topic("t");
  CHECK(t.stale());
  CHECK_FALSE(keep.stale());
  text = r.text();
  CHECK_FALSE(has_series(text, "kafka_server_brokertopicmetrics_bytesin_total{topic=\"t\"}"));
  CHECK_FALSE(has_series(text, "kafka_server_brokertopicmetrics_totalfetchrequests_total{topic=\"t\"}"));
  CHECK(has_series(text, "kafka_server_brokertopicmetrics_totalproducerequests_total{topic=\"keep\"}"));
  // The aggregate keeps what the deleted topic contributed, as Kafka's does.
  CHECK(has_line(text, "kafka_server_brokertopicmetrics_bytesin_total 5"));

  // Old handles stay usable and invisible; a recreated topic starts at zero.
  t.add_bytes_in(100);
  auto t2 = bm.topic("t");
  CHECK(t2.counters() != t.counters());
  CHECK_FALSE(t2.stale());
  text = r.text();
  CHECK(has_line(text, "kafka_server_brokertopicmetrics_bytesin_total{topic=\"t\"} 0"));
  CHECK_FALSE(has_series(text, "kafka_log_log_size{"));  // the broker's log collector owns those

  bm.remove_topic("never-existed");  // harmless
}

TEST_CASE("request time split: five phases per API, the total is their sum") {
  m::Registry r;
  m::BrokerMetrics bm(r);
  m::RequestTimes t;
  t.request_queue = 10us;
  t.local = 200us;
  t.remote = 400ms;
  t.response_queue = 40us;
  t.response_send = 1ms;
  bm.request("Fetch", 12).record(t);
  std::string text = r.text();
  CHECK(has_line(text, "kafka_network_requestmetrics_requests_total{request=\"Fetch\",version=\"12\"} 1"));
  CHECK(has_line(text, "# TYPE kafka_network_requestmetrics_remotetimems histogram"));
  CHECK(has_line(text, "kafka_network_requestmetrics_requestqueuetimems_sum{request=\"Fetch\"} 0.01"));
  CHECK(has_line(text, "kafka_network_requestmetrics_localtimems_sum{request=\"Fetch\"} 0.2"));
  CHECK(has_line(text, "kafka_network_requestmetrics_remotetimems_sum{request=\"Fetch\"} 400"));
  CHECK(has_line(text, "kafka_network_requestmetrics_remotetimems_bucket{request=\"Fetch\",le=\"250\"} 0"));
  CHECK(has_line(text, "kafka_network_requestmetrics_remotetimems_bucket{request=\"Fetch\",le=\"500\"} 1"));
  CHECK(has_line(text, "kafka_network_requestmetrics_responsequeuetimems_sum{request=\"Fetch\"} 0.04"));
  CHECK(has_line(text, "kafka_network_requestmetrics_responsesendtimems_sum{request=\"Fetch\"} 1"));
  CHECK(has_line(text, "kafka_network_requestmetrics_totaltimems_sum{request=\"Fetch\"} 401.25"));
  CHECK(has_line(text, "kafka_network_requestmetrics_totaltimems_count{request=\"Fetch\"} 1"));
}

TEST_CASE("request counters, errors and latency histograms per API") {
  m::Registry r;
  m::BrokerMetrics bm(r);
  auto produce9 = bm.request("Produce", 9);
  produce9.record(300us);
  produce9.record(3ms);
  bm.request("Produce", 3).record(20s);
  bm.request("Fetch", 12).record(500ms);
  bm.request_error("Produce", "NOT_LEADER_OR_FOLLOWER").Increment();
  bm.request_error("Produce", "NOT_LEADER_OR_FOLLOWER").Increment();

  std::string text = r.text();
  CHECK(has_line(text, "# TYPE kafka_network_requestmetrics_requests_total counter"));
  CHECK(has_line(text, "kafka_network_requestmetrics_requests_total{request=\"Produce\",version=\"9\"} 2"));
  CHECK(has_line(text, "kafka_network_requestmetrics_requests_total{request=\"Produce\",version=\"3\"} 1"));
  CHECK(has_line(text, "kafka_network_requestmetrics_requests_total{request=\"Fetch\",version=\"12\"} 1"));
  CHECK(has_line(text,
                 "kafka_network_requestmetrics_errors_total{error=\"NOT_LEADER_OR_FOLLOWER\",request=\"Produce\"} 2"));

  CHECK(has_line(text, "# TYPE kafka_network_requestmetrics_totaltimems histogram"));
  CHECK(has_line(text, "kafka_network_requestmetrics_totaltimems_count{request=\"Produce\"} 3"));
  CHECK(has_line(text, "kafka_network_requestmetrics_totaltimems_sum{request=\"Produce\"} 20003.3"));
  CHECK(has_line(text, "kafka_network_requestmetrics_totaltimems_bucket{request=\"Produce\",le=\"0.1\"} 0"));
  CHECK(has_line(text, "kafka_network_requestmetrics_totaltimems_bucket{request=\"Produce\",le=\"0.5\"} 1"));
  CHECK(has_line(text, "kafka_network_requestmetrics_totaltimems_bucket{request=\"Produce\",le=\"5\"} 2"));
  CHECK(has_line(text, "kafka_network_requestmetrics_totaltimems_bucket{request=\"Produce\",le=\"10000\"} 2"));
  CHECK(has_line(text, "kafka_network_requestmetrics_totaltimems_bucket{request=\"Produce\",le=\"+Inf\"} 3"));
  CHECK(has_line(text, "kafka_network_requestmetrics_totaltimems_bucket{request=\"Fetch\",le=\"250\"} 0"));
  CHECK(has_line(text, "kafka_network_requestmetrics_totaltimems_bucket{request=\"Fetch\",le=\"500\"} 1"));
  CHECK(has_line(text, "kafka_network_requestmetrics_totaltimems_count{request=\"Fetch\"} 1"));
}

TEST_CASE("connection, flush and purgatory gauges") {
  m::Registry r;
  m::BrokerMetrics bm(r);
  bm.add_listener("INTERNAL");
  bm.connection_opened("PLAINTEXT");
  bm.connection_opened("PLAINTEXT");
  bm.connection_opened("PLAINTEXT");
  bm.connection_closed("PLAINTEXT");
  bm.log_flush().observe(3ms);
  bm.produce_purgatory().Increment();
  bm.fetch_purgatory().Set(5);
  CHECK(&bm.purgatory_size("Fetch") == &bm.fetch_purgatory());
  bm.purgatory_size("DeleteRecords").Set(1);

  std::string text = r.text();
  CHECK(has_line(text, "kafka_server_socketservermetrics_connection_count{listener=\"PLAINTEXT\"} 2"));
  CHECK(has_line(text, "kafka_server_socketservermetrics_connection_creation_total{listener=\"PLAINTEXT\"} 3"));
  CHECK(has_line(text, "kafka_server_socketservermetrics_connection_close_total{listener=\"PLAINTEXT\"} 1"));
  CHECK(has_line(text, "kafka_server_socketservermetrics_connection_count{listener=\"INTERNAL\"} 0"));
  CHECK(has_line(text, "kafka_log_logflushstats_logflushrateandtimems_count 1"));
  CHECK(has_line(text, "kafka_log_logflushstats_logflushrateandtimems_sum 3"));
  CHECK(has_line(text, "kafka_server_delayedoperationpurgatory_numdelayedoperations{delayedOperation=\"Fetch\"} 5"));
  CHECK(has_line(text, "kafka_server_delayedoperationpurgatory_purgatorysize{delayedOperation=\"Produce\"} 1"));
  CHECK(has_line(text, "kafka_server_delayedoperationpurgatory_purgatorysize{delayedOperation=\"Fetch\"} 5"));
  CHECK(has_line(text,
                 "kafka_server_delayedoperationpurgatory_purgatorysize{delayedOperation=\"DeleteRecords\"} 1"));
}

TEST_CASE("process series are present and plausible") {
  m::Registry r;
  m::BrokerMetrics bm(r);
  bool saw_start = false, saw_rss = false;
  for (const auto& fam : r.collect()) {
    if (fam.name == "process_start_time_seconds") {
      saw_start = true;
      double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
      CHECK(fam.metric.at(0).gauge.value <= now + 1);
      CHECK(fam.metric.at(0).gauge.value > now - 86400 * 365);
    }
    if (fam.name == "process_resident_memory_bytes") {
      saw_rss = true;
      CHECK(fam.metric.at(0).gauge.value > 1024 * 1024);
    }
  }
  CHECK(saw_start);
  CHECK(saw_rss);
  CHECK(has_series(r.text(), "process_cpu_seconds_total "));
  CHECK(has_series(r.text(), "process_open_fds "));
}

TEST_CASE("a destroyed BrokerMetrics leaves its Registry empty and reusable") {
  m::Registry r;
  {
    m::BrokerMetrics bm(r);
    bm.topic("t").add_bytes_in(1);
    bm.request("Metadata", 12).record(1ms);
  }
  CHECK(r.text().empty());
  m::BrokerMetrics again(r);
  CHECK(has_line(r.text(), "kafka_server_brokertopicmetrics_bytesin_total 0"));
}

TEST_CASE("concurrent updates, lookups, removals and scrapes lose no count") {
  m::Registry r;
  m::BrokerMetrics bm(r);
  auto hot = bm.topic("hot");
  auto produce = bm.request("Produce", 9);
  std::atomic<bool> stop{false};
  std::thread scraper([&] {
    while (!stop.load()) (void)r.text();
  });
  std::thread churn([&] {
    for (int i = 0; i < 200; ++i) {
      std::string name = "tmp" + std::to_string(i % 5);
      bm.topic(name).add_bytes_in(1);
      bm.remove_topic(name);
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < 3; ++t) {
    writers.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        hot.add_bytes_in(2);
        produce.record(std::chrono::microseconds(i % 100));
      }
    });
  }
  for (auto& w : writers) w.join();
  churn.join();
  stop = true;
  scraper.join();
  std::string text = r.text();
  CHECK(has_line(text, "kafka_server_brokertopicmetrics_bytesin_total{topic=\"hot\"} 120000"));
  CHECK(has_line(text, "kafka_server_brokertopicmetrics_bytesin_total 120200"));
  CHECK(has_line(text, "kafka_network_requestmetrics_requests_total{request=\"Produce\",version=\"9\"} 60000"));
  CHECK(has_line(text, "kafka_network_requestmetrics_totaltimems_count{request=\"Produce\"} 60000"));
  CHECK_FALSE(has_series(text, "kafka_log_log_size{"));
}
