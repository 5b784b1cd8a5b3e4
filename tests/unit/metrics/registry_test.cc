// tests/unit/metrics/registry_test.cc: the Registry merges prometheus-cpp
// families with collect functions, sorted by name, and forgets a removed
// collector.
#include "metrics/registry.h"

#include <catch2/catch.hpp>

#include "prometheus/counter.h"
#include "prometheus/registry.h"

namespace m = ciuickafka::metrics;

TEST_CASE("registry text holds prometheus families and collectors, sorted by name") {
  m::Registry r;
  auto& fam = prometheus::BuildCounter().Name("b_total").Help("b help").Register(r.prometheus());
  fam.Add({{"k", "v"}}).Increment(3);
  auto id = r.add_collector([](std::vector<prometheus::MetricFamily>& out) {
    prometheus::MetricFamily f;
    f.name = "a_gauge";
    f.help = "a help";
    f.type = prometheus::MetricType::Gauge;
    prometheus::ClientMetric cm;
    cm.gauge.value = 7;
    f.metric.push_back(cm);
    out.push_back(f);
  });
  CHECK(r.text() ==
        "# HELP a_gauge a help\n"
        "# TYPE a_gauge gauge\n"
        "a_gauge 7\n"
        "# HELP b_total b help\n"
        "# TYPE b_total counter\n"
        "b_total{k=\"v\"} 3\n");
  r.remove_collector(id);
  CHECK(r.text() ==
        "# HELP b_total b help\n"
        "# TYPE b_total counter\n"
        "b_total{k=\"v\"} 3\n");
}
