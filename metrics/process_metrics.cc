// metrics/process_metrics.cc: /proc and getrusage readers for the process_*
// series. Each is a few small reads; a scrape runs them once.
#include "metrics/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace ciuickafka::metrics {
namespace {

// Seconds since boot at which this process started, or <0.
double start_since_boot() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return -1;
  // Field 2 (comm) may contain spaces; the fields after it follow the last ')'.
  auto close = line.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  // After ')' come fields 3.. ; starttime is field 22, i.e. the 20th here.
  for (int i = 3; i <= 22; ++i) {
    if (!(rest >> field)) return -1;
  }
  long ticks = sysconf(_SC_CLK_TCK);
  if (ticks <= 0) return -1;
  return std::strtod(field.c_str(), nullptr) / static_cast<double>(ticks);
}

double boot_time() {
  std::ifstream in("/proc/stat");
  std::string key;
  double value = 0;
  while (in >> key) {
    if (key == "btime" && (in >> value)) return value;
    in.ignore(1 << 20, '\n');
  }
  return -1;
}

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

double process_start_time_seconds() {
  static const double start = [] {
    double since_boot = start_since_boot();
    double boot = boot_time();
    if (since_boot >= 0 && boot > 0) return boot + since_boot;
    return now_seconds();
  }();
  return start;
}

void collect_process(std::vector<prometheus::MetricFamily>& out) {
  using prometheus::MetricType;
  out.push_back(single_sample_family("process_start_time_seconds",
                                     "Start time of the process since the Unix epoch, in seconds",
                                     MetricType::Gauge, process_start_time_seconds()));

  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) == 0) {
    double cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                 static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    out.push_back(single_sample_family(
        "process_cpu_seconds_total", "User and system CPU time spent, in seconds", MetricType::Counter, cpu));
  }

  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  if (statm >> pages_total >> pages_resident) {
    out.push_back(single_sample_family(
        "process_resident_memory_bytes", "Resident memory size, in bytes", MetricType::Gauge,
        static_cast<double>(pages_resident) * static_cast<double>(sysconf(_SC_PAGESIZE))));
  }

  if (DIR* dir = opendir("/proc/self/fd")) {
    long n = 0;
    while (dirent* e = readdir(dir)) {
      if (e->d_name[0] != '.') ++n;
    }
    closedir(dir);
    out.push_back(
        single_sample_family("process_open_fds", "Open file descriptors", MetricType::Gauge,
                             static_cast<double>(n > 0 ? n - 1 : 0)));  // less the directory's own fd
  }
}

prometheus::MetricFamily single_sample_family(const char* name, const char* help, prometheus::MetricType type,
                                              double v) {
  prometheus::MetricFamily fam;
  fam.name = name;
  fam.help = help;
  fam.type = type;
  prometheus::ClientMetric m;
  if (type == prometheus::MetricType::Counter) {
    m.counter.value = v;
  } else {
    m.gauge.value = v;
  }
  fam.metric.push_back(std::move(m));
  return fam;
}

}  // namespace ciuickafka::metrics
