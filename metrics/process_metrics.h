// metrics/process_metrics.h: the usual process_* series, read at scrape time.
//
//   process_start_time_seconds     gauge: Unix time the process started
//   process_cpu_seconds_total      counter: user + system CPU time
//   process_resident_memory_bytes  gauge: RSS, from /proc/self/statm
//   process_open_fds               gauge: entries of /proc/self/fd
//
// A figure that cannot be read (no /proc) is left out, not reported as 0.
//
// Thread-safety: a pure function of the process state; any thread.
#pragma once

#include <vector>

#include "prometheus/metric_family.h"

namespace ciuickafka::metrics {

// The process start time, from /proc/self/stat and /proc/stat's btime; the
// time of the first call when those cannot be read.
double process_start_time_seconds();

void collect_process(std::vector<prometheus::MetricFamily>& out);

// A family with one unlabelled sample (a gauge or a counter): what
// scrape-time collectors (this file, the broker's index-cache figures) emit.
prometheus::MetricFamily single_sample_family(const char* name, const char* help, prometheus::MetricType type,
                                              double value);

}  // namespace ciuickafka::metrics
