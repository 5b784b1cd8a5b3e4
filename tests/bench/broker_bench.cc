// tests/bench/broker_bench.cc: the broker benchmark of issue #4, driver and
// table. Run through tests/bench/run_broker_bench.sh, which measures iperf3
// loopback bandwidth, starts a Release broker on a temp data dir and calls:
//
//   broker_bench run --brokers 127.0.0.1:PORT --pid BROKER_PID --data-dir DIR
//                    [--loopback1-gbps X] [--loopback8-gbps Y]
//                    [--only disk,produce,fetch,fanout,cold,latency] [--scale F]
//
// Phases, each bounded by a count and a time: raw disk writes; produce
// 100 B / 1 KiB x acks=1 / acks=all, and 1 KiB to 8 partitions; fetch by 1
// and 8 consumers of the hot partition and 8 consumers of 8 partitions;
// the 8-consumer fan-out again with a socket-level slow reader attached
// (broker RSS); 8 readers of hot data alone and beside one reader replaying
// 2 GB from the page cache, then from the disk (its pages dropped first);
// produce latency at a moderate fixed rate. Broker CPU time
// per phase comes from /proc/<pid>/stat, RSS from /proc/<pid>/status.
// --scale multiplies every count and time limit (0.2 for a quick check).
//
//   broker_bench produce --brokers B --topic T [--acks 1|-1] [--size BYTES] ...
//
// is one producer run printed as one JSON line, for scripts that run their
// own brokers (tests/bench/run_replication_bench.py), and
//
//   broker_bench fetch --brokers B --topic T [--partitions P] [--secs S]
//
// is one consumer reading a topic to its end, likewise one JSON line
// (tests/bench/run_vs_kafka.py), and `broker_bench mock` serves librdkafka's
// mock cluster as a broker to compare with (tests/bench/run_vs_mock.py).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/bench/broker_bench.h"

namespace ckbench {
namespace {

struct Options {
  std::string brokers = "127.0.0.1:9092", data_dir = "/tmp";
  int pid = 0;
  double loop1_mbps = 0, loop8_mbps = 0;  // iperf3, converted to MB/s
  std::set<std::string> only;
  double scale = 1.0;
  bool want(const std::string& p) const { return only.empty() || only.count(p) > 0; }
};

struct Row {
  std::string name;
  std::uint64_t msgs = 0, bytes = 0;
  double secs = 0, cpu_s = -1;
  long rss_peak_kib = 0;
  double vs_loop = 0, vs_disk = 0;  // reference MB/s (0 = none)
  std::string note;
  double mbps() const { return secs > 0 ? bytes / secs / 1e6 : 0; }
  double cpu_per_gb() const { return bytes > 0 && cpu_s >= 0 ? cpu_s / (bytes / 1e9) : -1; }
};

double self_cpu_s() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// Wraps one phase: broker CPU and peak RSS around it, client CPU for context.
class Meter {
 public:
  Meter(const Options& o, ProcSampler& s) : o_(o), s_(s) {
    s_.reset();
    before_ = read_proc(o_.pid);
    self_ = self_cpu_s();
  }
  void finish(Row* row) {
    ProcStat after = read_proc(o_.pid);
    if (before_.ok && after.ok) row->cpu_s = after.cpu_s - before_.cpu_s;
    row->rss_peak_kib = std::max(s_.peak_kib(), after.rss_kib);
    char buf[64];
    std::snprintf(buf, sizeof buf, "client CPU %.1fs", self_cpu_s() - self_);
    row->note = row->note.empty() ? buf : row->note + "; " + buf;
    if (!after.ok) row->note += "; BROKER GONE";
  }

 private:
  const Options& o_;
  ProcSampler& s_;
  ProcStat before_;
  double self_;
};

std::string fmt(double v, int prec) {
  if (v < 0 || std::isnan(v)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

// A measured rate; 0 or less means "not measured".
std::string fig(double v) { return v > 0 ? fmt(v, 1) : "-"; }

std::string pct(double v, double ref) { return ref > 0 && v >= 0 ? fmt(100.0 * v / ref, 0) + "%" : "-"; }

void print_row(const Row& r) {
  double msgs_s = r.secs > 0 ? r.msgs / r.secs : 0;
  std::printf("%-36s %10s %9s %8s %7s %9s %8s %8s  %s\n", r.name.c_str(), fmt(msgs_s, 0).c_str(),
              fmt(r.mbps(), 1).c_str(), fmt(r.cpu_per_gb(), 3).c_str(), fmt(r.rss_peak_kib / 1024.0, 0).c_str(),
              fmt(r.secs, 1).c_str(), pct(r.mbps(), r.vs_loop).c_str(), pct(r.mbps(), r.vs_disk).c_str(),
              r.note.c_str());
  std::fflush(stdout);
}

void print_header() {
  std::printf("%-36s %10s %9s %8s %7s %9s %8s %8s  %s\n", "phase", "msgs/s", "MB/s", "CPUs/GB", "RSS MiB",
              "secs", "%loop", "%disk", "notes");
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  std::size_t i = static_cast<std::size_t>(std::min<double>(v.size() - 1, std::floor(p * (v.size() - 1) + 0.5)));
  return v[i];
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--brokers") o.brokers = v;
    else if (k == "--pid") o.pid = std::atoi(v.c_str());
    else if (k == "--data-dir") o.data_dir = v;
    else if (k == "--loopback1-gbps") o.loop1_mbps = std::atof(v.c_str()) * 125.0;
    else if (k == "--loopback8-gbps") o.loop8_mbps = std::atof(v.c_str()) * 125.0;
    else if (k == "--scale") o.scale = std::atof(v.c_str());
    else if (k == "--only") {
      std::stringstream ss(v);
      std::string p;
      while (std::getline(ss, p, ',')) o.only.insert(p);
    } else {
      std::fprintf(stderr, "broker_bench: unknown option %s\n", k.c_str());
      std::exit(2);
    }
  }
  return o;
}

struct Targets {
  double produce_cpu = -1, fetch_cpu = -1, fanout_mbps = -1, rss_mib = -1;
  double cold_share = -1, cold_vs_cached = -1;  // hot readers beside a cold replay / alone, / beside a cached one
};

void verdict(const char* what, double v, double limit, bool at_most, const std::string& unit) {
  const char* s = v < 0 ? "NOT MEASURED" : ((at_most ? v <= limit : v >= limit) ? "met" : "NOT MET");
  std::printf("  %-58s %10s %-10s (target %s %s)  %s\n", what, fmt(v, 3).c_str(), unit.c_str(),
              at_most ? "<=" : ">=", fmt(limit, 3).c_str(), s);
}

int run(const Options& o) {
  ProcSampler sampler(o.pid);
  ProcStat idle = read_proc(o.pid);
  DiskResult disk;
  Targets t;
  std::printf("broker pid %d at %s, data dir %s; idle broker RSS %.0f MiB\n", o.pid, o.brokers.c_str(),
              o.data_dir.c_str(), idle.rss_kib / 1024.0);
  std::printf("MB = 10^6 bytes of payload (key+value), GB = 10^9; CPUs/GB = broker utime+stime per GB moved;\n"
              "RSS = broker peak VmRSS during the phase; %%loop / %%disk = MB/s against the raw figure below.\n\n");
  if (o.want("disk")) {
    disk = disk_bench(o.data_dir, static_cast<std::size_t>(2048 * o.scale), 4 * o.scale);
    if (!disk.error.empty()) std::printf("disk: %s\n", disk.error.c_str());
  }
  std::printf("raw figures:\n");
  std::printf("  loopback TCP, 1 stream  (iperf3)      %9s MB/s\n", fig(o.loop1_mbps).c_str());
  std::printf("  loopback TCP, 8 streams (iperf3 -P 8) %9s MB/s\n", fig(o.loop8_mbps).c_str());
  std::printf("  disk write 1 MiB blocks, page cache   %9s MB/s\n", fig(disk.buffered_mbps).c_str());
  std::printf("  disk write, one fdatasync at the end  %9s MB/s\n", fig(disk.sync_end_mbps).c_str());
  std::printf("  disk write, fdatasync every 1 MiB     %9s MB/s\n\n", fig(disk.sync_each_mbps).c_str());
  print_header();

  const auto n = [&](double v) { return static_cast<std::uint64_t>(v * o.scale); };
  const double tmax = 8 * o.scale;
  std::set<std::string> filled;
  auto produce_phase = [&](const std::string& name, const std::string& topic, std::size_t size, int acks,
                           int parts, std::uint64_t max_msgs, double ref_disk) {
    std::string err = create_topic(o.brokers, topic, parts);
    Row row;
    row.name = name;
    Meter m(o, sampler);
    ProduceSpec s;
    s.brokers = o.brokers;
    s.topic = topic;
    s.msg_size = size;
    s.acks = acks;
    s.partitions = parts;
    s.max_msgs = max_msgs;
    s.max_s = tmax;
    ProduceResult r = run_produce(s);
    row.msgs = r.delivered;
    row.bytes = r.bytes;
    row.secs = r.secs;
    row.vs_loop = o.loop1_mbps;
    row.vs_disk = ref_disk;
    if (!err.empty()) row.note = err;
    if (r.failed || !r.first_error.empty())
      row.note += (row.note.empty() ? "" : "; ") + std::to_string(r.failed) + " failed: " + r.first_error;
    m.finish(&row);
    print_row(row);
    if (r.delivered > 0) filled.insert(topic);
    return row;
  };
  auto fill = [&](const std::string& topic, int parts) {
    if (filled.count(topic)) return;
    produce_phase("(fill " + topic + ")", topic, 1024, 1, parts, n(1000000), 0);
  };

  if (o.want("produce")) {
    produce_phase("produce 100 B, acks=1", "bench-100-a1", 100, 1, 1, n(4000000), disk.buffered_mbps);
    produce_phase("produce 100 B, acks=all", "bench-100-aall", 100, -1, 1, n(4000000), disk.sync_each_mbps);
    Row big = produce_phase("produce 1 KiB, acks=1", "bench-hot", 1024, 1, 1, n(1000000), disk.buffered_mbps);
    t.produce_cpu = big.cpu_per_gb();
    produce_phase("produce 1 KiB, acks=all", "bench-1k-aall", 1024, -1, 1, n(1000000), disk.sync_each_mbps);
    produce_phase("produce 1 KiB, acks=1, 8 partitions", "bench-8p", 1024, 1, 8, n(1000000), disk.buffered_mbps);
  }

  auto fetch_phase = [&](const std::string& name, const std::string& topic, std::vector<std::vector<int>> cons,
                         double ref_loop, SlowReader* slow) {
    Row row;
    row.name = name;
    Meter m(o, sampler);
    FetchSpec s;
    s.brokers = o.brokers;
    s.topic = topic;
    s.consumers = std::move(cons);
    s.max_s = 12 * o.scale;
    FetchResult r = run_fetch(s);
    row.msgs = r.msgs;
    row.bytes = r.bytes;
    row.secs = r.secs;
    row.vs_loop = ref_loop;
    row.note = std::to_string(r.finished) + "/" + std::to_string(s.consumers.size()) + " read to the end";
    if (!r.first_error.empty()) row.note += "; error: " + r.first_error;
    if (slow) {
      row.note += "; slow reader " + fmt(slow->bytes() / 1e6, 1) + " MB in " + std::to_string(slow->responses()) +
                  " full responses";
      if (!slow->error().empty()) row.note += " (" + slow->error() + ")";
    }
    m.finish(&row);
    print_row(row);
    return row;
  };
  std::vector<std::vector<int>> hot8(8, std::vector<int>{0});
  if (o.want("fetch")) {
    fill("bench-hot", 1);
    fill("bench-8p", 8);
    fetch_phase("fetch 1 consumer, hot partition", "bench-hot", {{0}}, o.loop1_mbps, nullptr);
    Row f8 = fetch_phase("fetch 8 consumers, same hot partition", "bench-hot", hot8, o.loop8_mbps, nullptr);
    t.fetch_cpu = f8.cpu_per_gb();
    t.fanout_mbps = f8.mbps();
    fetch_phase("fetch 8 consumers, 8 partitions", "bench-8p", {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}},
                o.loop8_mbps, nullptr);
  }
  if (o.want("fanout")) {
    fill("bench-hot", 1);
    std::string host = o.brokers.substr(0, o.brokers.find(':'));
    int port = std::atoi(o.brokers.substr(o.brokers.find(':') + 1).c_str());
    SlowReader slow(host, port, "bench-hot", 1e6);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // its first response is under way
    Row r = fetch_phase("fan-out 8 + 1 slow reader (1 MB/s)", "bench-hot", hot8, o.loop8_mbps, &slow);
    slow.stop();
    t.rss_mib = r.rss_peak_kib / 1024.0;
  }
  if (o.want("cold")) {
    // One reader replays 2 GB of old data (dropped from the page cache)
    // while 8 readers read hot data: what it costs them (issue #14: <= 10 %).
    // Three rows of one fixed window each: the 8 alone, the 8 beside a
    // replay of the same 2 GB from the page cache (what one more reader
    // costs on these cores), and beside the replay from the disk.
    fill("bench-hot", 1);
    const std::string cold_topic = "bench-cold";
    if (!filled.count(cold_topic)) produce_phase("(fill bench-cold)", cold_topic, 1024, 1, 1, n(2000000), 0);
    const std::string cold_dir = o.data_dir + "/" + cold_topic + "-0";
    {
      // librdkafka reads read_committed: a partition's first such fetch
      // loads its producer state (a scan of the log). Done here, untimed,
      // so that the rows compare readers only.
      FetchSpec warm;
      warm.brokers = o.brokers;
      warm.topic = cold_topic;
      warm.consumers = {{0}};
      warm.max_bytes_per_consumer = 1 << 20;
      warm.max_s = 60;
      const double t0 = now_s();
      FetchResult w = run_fetch(warm);
      std::printf("%-36s %s\n", "(first read of bench-cold)",
                  (fmt(now_s() - t0, 1) + " s to its first MB, the producer state's load included" +
                   (w.first_error.empty() ? "" : "; error: " + w.first_error))
                      .c_str());
    }
    const double window = 5 * o.scale;
    auto hot_phase = [&](const std::string& name, int replay) {  // 0 none, 1 cached, 2 cold
      std::string dropped;
      if (replay == 2) {
        ColdResult c = drop_cached(cold_dir);
        dropped = "; dropped " + fmt(c.bytes / 1e6, 0) + " MB in " + std::to_string(c.files) + " files, " +
                  std::to_string(c.cold_probes) + "/" + std::to_string(c.probes) + " probes cold" +
                  (c.error.empty() ? "" : " (" + c.error + ")");
      }
      Row row;
      row.name = name;
      Meter m(o, sampler);
      FetchResult replayed;
      std::thread replayer;
      if (replay > 0) {
        replayer = std::thread([&] {
          FetchSpec rs;
          rs.brokers = o.brokers;
          rs.topic = cold_topic;
          rs.consumers = {{0}};
          rs.max_s = window;
          replayed = run_fetch(rs);
        });
      }
      FetchSpec s;
      s.brokers = o.brokers;
      s.topic = "bench-hot";
      s.consumers = hot8;
      s.max_s = window;
      FetchResult r = run_fetch(s);
      if (replayer.joinable()) replayer.join();
      row.msgs = r.msgs;
      row.bytes = r.bytes;
      row.secs = r.secs;
      row.vs_loop = o.loop8_mbps;
      row.note = "hot readers' bytes only";
      if (replay > 0) {
        row.note += "; replay " + fmt(replayed.secs > 0 ? replayed.bytes / replayed.secs / 1e6 : 0, 1) + " MB/s, " +
                    fmt(replayed.bytes / 1e6, 0) + " MB" + (replayed.finished ? " (all)" : "");
        if (!replayed.first_error.empty()) row.note += " error: " + replayed.first_error;
      }
      if (!r.first_error.empty()) row.note += "; error: " + r.first_error;
      row.note += dropped;
      m.finish(&row);
      print_row(row);
      return row;
    };
    Row alone = hot_phase("8 hot readers, alone", 0);
    const double raw_cold = cold_read_mbps(cold_dir, 20 * o.scale);  // leaves the files cached
    Row cached = hot_phase("8 hot + replay 2 GB from page cache", 1);
    Row cold = hot_phase("8 hot + replay 2 GB from disk", 2);
    std::printf("%-36s %10s %9s  (read() of 1 MiB after POSIX_FADV_DONTNEED)\n", "raw cold sequential read", "",
                fig(raw_cold).c_str());
    t.cold_share = alone.mbps() > 0 ? cold.mbps() / alone.mbps() : -1;
    t.cold_vs_cached = cached.mbps() > 0 ? cold.mbps() / cached.mbps() : -1;
  }
  if (o.want("latency")) {
    for (int acks : {1, -1}) {
      std::string topic = acks == 1 ? "bench-lat-a1" : "bench-lat-aall";
      create_topic(o.brokers, topic, 1);
      ProduceSpec s;
      s.brokers = o.brokers;
      s.topic = topic;
      s.msg_size = 1024;
      s.acks = acks;
      s.rate = 2000;
      s.linger_ms = 0;
      s.max_s = 5 * o.scale;
      s.max_msgs = n(10000);
      s.record_latency = true;
      ProduceResult r = run_produce(s);
      std::printf("%-36s %10s msgs/s  p50 %s ms  p99 %s ms  max %s ms  (%llu delivered, %llu failed%s%s)\n",
                  (std::string("latency 1 KiB, acks=") + (acks == 1 ? "1" : "all")).c_str(),
                  fmt(r.secs > 0 ? r.delivered / r.secs : 0, 0).c_str(), fmt(percentile(r.latency_us, 0.5) / 1e3, 2).c_str(),
                  fmt(percentile(r.latency_us, 0.99) / 1e3, 2).c_str(),
                  fmt(percentile(r.latency_us, 1.0) / 1e3, 2).c_str(), static_cast<unsigned long long>(r.delivered),
                  static_cast<unsigned long long>(r.failed), r.first_error.empty() ? "" : "; ",
                  r.first_error.c_str());
    }
  }

  std::printf("\ntargets (issue #4):\n");
  verdict("broker CPU per GB produced (1 KiB, acks=1, large batches)", t.produce_cpu, 0.5, true, "CPU-s/GB");
  verdict("broker CPU per GB fetched (8 consumers, hot partition)", t.fetch_cpu, 0.2, true, "CPU-s/GB");
  double share = t.fanout_mbps >= 0 && o.loop8_mbps > 0 ? t.fanout_mbps / o.loop8_mbps : -1;
  verdict("8-consumer fan-out / 8-stream loopback TCP", share, 0.6, false, "fraction");
  verdict("broker peak RSS, fan-out with a slow reader", t.rss_mib, 256, true, "MiB");
  verdict("8 hot readers beside a 2 GB cold replay / alone (issue #14)", t.cold_share, 0.9, false, "fraction");
  if (t.cold_vs_cached >= 0)
    std::printf("  %-58s %10s (beside the same replay from the page cache: the disk's share of the cost)\n",
                "8 hot readers beside the cold replay / the cached one", fmt(t.cold_vs_cached, 3).c_str());
  ProcStat end = read_proc(o.pid);
  if (!end.ok) std::printf("\nBROKER PROCESS GONE at the end of the run\n");
  return 0;
}

}  // namespace
}  // namespace ckbench

// `broker_bench produce --brokers B --topic T [--acks 1|-1] [--size BYTES]
// [--msgs N] [--secs S] [--partitions P] [--linger MS] [--batch-bytes B]`: one
// producer run, one JSON line (run_replication_bench.py and run_vs_kafka.py
// drive it). linger.ms defaults to 10 and batch.size to 1,000,000.
int produce_once(int argc, char** argv) {
  ckbench::ProduceSpec spec;
  spec.max_msgs = 1000000;
  spec.max_s = 10;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--brokers") spec.brokers = v;
    else if (k == "--topic") spec.topic = v;
    else if (k == "--acks") spec.acks = std::atoi(v.c_str());
    else if (k == "--size") spec.msg_size = static_cast<std::size_t>(std::atol(v.c_str()));
    else if (k == "--msgs") spec.max_msgs = static_cast<std::uint64_t>(std::atoll(v.c_str()));
    else if (k == "--secs") spec.max_s = std::atof(v.c_str());
    else if (k == "--partitions") spec.partitions = std::atoi(v.c_str());
    else if (k == "--linger") spec.linger_ms = std::atoi(v.c_str());
    else if (k == "--batch-bytes") spec.batch_bytes = std::atoi(v.c_str());
    else {
      std::fprintf(stderr, "broker_bench produce: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (spec.brokers.empty() || spec.topic.empty()) {
    std::fprintf(stderr, "broker_bench produce: --brokers and --topic are required\n");
    return 2;
  }
  ckbench::ProduceResult r = ckbench::run_produce(spec);
  std::string err;
  for (char c : r.first_error) err += (c == '"' || c == '\\') ? ' ' : c;
  std::printf("{\"sent\":%llu,\"delivered\":%llu,\"failed\":%llu,\"bytes\":%llu,\"secs\":%.6f,\"error\":\"%s\"}\n",
              static_cast<unsigned long long>(r.sent), static_cast<unsigned long long>(r.delivered),
              static_cast<unsigned long long>(r.failed), static_cast<unsigned long long>(r.bytes), r.secs,
              err.c_str());
  return r.failed == 0 && r.delivered > 0 ? 0 : 1;
}

// `broker_bench fetch --brokers B --topic T [--partitions P] [--secs S]`:
// one librdkafka consumer reads partitions 0..P-1 from offset 0 to their end
// (or S seconds), one JSON line (tests/bench/run_vs_kafka.py drives it).
int fetch_once(int argc, char** argv) {
  ckbench::FetchSpec spec;
  spec.max_s = 30;
  int partitions = 1, consumers = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--brokers") spec.brokers = v;
    else if (k == "--topic") spec.topic = v;
    else if (k == "--partitions") partitions = std::atoi(v.c_str());
    else if (k == "--consumers") consumers = std::atoi(v.c_str());
    else if (k == "--max-mb") spec.max_bytes_per_consumer = static_cast<std::uint64_t>(std::atof(v.c_str()) * 1e6);
    else if (k == "--secs") spec.max_s = std::atof(v.c_str());
    else if (k == "--partition-max-bytes")
      spec.partition_max_bytes = std::strtoull(v.c_str(), nullptr, 10);
    else {
      std::fprintf(stderr, "broker_bench fetch: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (spec.brokers.empty() || spec.topic.empty() || partitions < 1 || consumers < 1 ||
      spec.partition_max_bytes < 1) {
    std::fprintf(stderr,
                 "broker_bench fetch: --brokers, --topic, --partitions >= 1, --consumers >= 1 and "
                 "--partition-max-bytes >= 1 are required\n");
    return 2;
  }
  std::vector<int> all;
  for (int p = 0; p < partitions; ++p) all.push_back(p);
  spec.consumers.assign(static_cast<std::size_t>(consumers), all);
  // What a reader may read plus one fetch's overshoot, at most 1 GiB (librdkafka allows 2 GiB).
  spec.queue_kbytes = std::min<std::uint64_t>(
      spec.max_bytes_per_consumer ? spec.max_bytes_per_consumer / 1024 + 16384 : 1048576, 1048576);
  ckbench::FetchResult r = ckbench::run_fetch(spec);
  std::string err;
  for (char c : r.first_error) err += (c == '"' || c == '\\') ? ' ' : c;
  double slowest = 0, fastest = 0;
  if (!r.consumer_rates.empty()) {
    slowest = *std::min_element(r.consumer_rates.begin(), r.consumer_rates.end());
    fastest = *std::max_element(r.consumer_rates.begin(), r.consumer_rates.end());
  }
  // The same over each reader's own stream (start-up left out), for readers that read past their
  // first call.
  double stream_slowest = 0, stream_fastest = 0;
  if (r.stream_rates.size() == r.consumer_rates.size() && !r.stream_rates.empty()) {
    stream_slowest = *std::min_element(r.stream_rates.begin(), r.stream_rates.end());
    stream_fastest = *std::max_element(r.stream_rates.begin(), r.stream_rates.end());
  }
  std::printf("{\"msgs\":%llu,\"bytes\":%llu,\"secs\":%.6f,\"finished\":%d,\"slowest\":%.1f,\"fastest\":%.1f,"
              "\"stream_msgs\":%llu,\"stream_bytes\":%llu,\"stream_secs\":%.6f,\"stream_slowest\":%.1f,"
              "\"stream_fastest\":%.1f,\"first_record_s\":%.6f,\"error\":\"%s\"}\n",
              static_cast<unsigned long long>(r.msgs), static_cast<unsigned long long>(r.bytes), r.secs,
              r.finished, slowest, fastest, static_cast<unsigned long long>(r.stream_msgs),
              static_cast<unsigned long long>(r.stream_bytes), r.stream_secs, stream_slowest, stream_fastest,
              r.first_record_s, err.c_str());
  return r.finished == consumers && r.msgs > 0 ? 0 : 1;
}

// `broker_bench writers --brokers B --topic T --readers N [--size BYTES] [--msgs N] [--secs S]
// [--acks 1|-1] [--partitions P]`: the writer's rate with N readers tailing
// (run_writer_readers), one JSON line (tests/bench/run_vs_kafka.py drives it).
int writers_once(int argc, char** argv) {
  ckbench::ProduceSpec spec;
  int readers = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--brokers") spec.brokers = v;
    else if (k == "--topic") spec.topic = v;
    else if (k == "--readers") readers = std::atoi(v.c_str());
    else if (k == "--size") spec.msg_size = static_cast<std::size_t>(std::atol(v.c_str()));
    else if (k == "--msgs") spec.max_msgs = static_cast<std::uint64_t>(std::atoll(v.c_str()));
    else if (k == "--secs") spec.max_s = std::atof(v.c_str());
    else if (k == "--acks") spec.acks = std::atoi(v.c_str());
    else if (k == "--partitions") spec.partitions = std::atoi(v.c_str());
    else {
      std::fprintf(stderr, "broker_bench writers: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (spec.brokers.empty() || spec.topic.empty() || readers < 1 || spec.max_msgs == 0) {
    std::fprintf(stderr, "broker_bench writers: --brokers, --topic, --msgs and --readers >= 1 are required\n");
    return 2;
  }
  ckbench::WriterReadersResult r = ckbench::run_writer_readers(spec, readers);
  std::string err;
  for (char c : r.first_error) err += (c == '"' || c == '\\') ? ' ' : c;
  std::uint64_t slowest = 0, fastest = 0;
  if (!r.per_reader.empty()) {
    slowest = *std::min_element(r.per_reader.begin(), r.per_reader.end());
    fastest = *std::max_element(r.per_reader.begin(), r.per_reader.end());
  }
  std::printf("{\"delivered\":%llu,\"failed\":%llu,\"bytes\":%llu,\"secs\":%.6f,\"read\":%llu,\"slowest\":%llu,"
              "\"fastest\":%llu,\"error\":\"%s\"}\n",
              static_cast<unsigned long long>(r.writer.delivered), static_cast<unsigned long long>(r.writer.failed),
              static_cast<unsigned long long>(r.writer.bytes), r.writer.secs,
              static_cast<unsigned long long>(r.read_msgs), static_cast<unsigned long long>(slowest),
              static_cast<unsigned long long>(fastest), err.c_str());
  return r.first_error.empty() && r.writer.delivered > 0 ? 0 : 1;
}

// `broker_bench e2e --brokers B --topic T [--rate R] [--secs S] [--size BYTES] [--acks 1|-1]
// [--warmup S] [--linger MS]`: produce-to-consume latency at a fixed rate (run_e2e), one JSON
// line with the percentiles in ms (tests/bench/run_vs_kafka.py drives it).
int e2e_once(int argc, char** argv) {
  ckbench::E2eSpec spec;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--brokers") spec.brokers = v;
    else if (k == "--topic") spec.topic = v;
    else if (k == "--rate") spec.rate = std::atof(v.c_str());
    else if (k == "--secs") spec.max_s = std::atof(v.c_str());
    else if (k == "--size") spec.msg_size = static_cast<std::size_t>(std::atol(v.c_str()));
    else if (k == "--acks") spec.acks = std::atoi(v.c_str());
    else if (k == "--warmup") spec.warmup_s = std::atof(v.c_str());
    else if (k == "--linger") spec.linger_ms = std::atoi(v.c_str());
    else {
      std::fprintf(stderr, "broker_bench e2e: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (spec.brokers.empty() || spec.topic.empty()) {
    std::fprintf(stderr, "broker_bench e2e: --brokers and --topic are required\n");
    return 2;
  }
  ckbench::E2eResult r = ckbench::run_e2e(spec);
  std::string err;
  for (char c : r.first_error) err += (c == '"' || c == '\\') ? ' ' : c;
  using ckbench::percentile;
  std::printf("{\"sent\":%llu,\"received\":%llu,\"counted\":%llu,\"secs\":%.6f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,"
              "\"p999_ms\":%.3f,\"max_ms\":%.3f,\"error\":\"%s\"}\n",
              static_cast<unsigned long long>(r.sent), static_cast<unsigned long long>(r.received),
              static_cast<unsigned long long>(r.counted), r.secs, percentile(r.latency_us, 0.5) / 1e3,
              percentile(r.latency_us, 0.99) / 1e3, percentile(r.latency_us, 0.999) / 1e3,
              percentile(r.latency_us, 1.0) / 1e3, err.c_str());
  return r.first_error.empty() && r.counted > 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "produce") == 0) return produce_once(argc, argv);
  if (argc >= 2 && std::strcmp(argv[1], "fetch") == 0) return fetch_once(argc, argv);
  if (argc >= 2 && std::strcmp(argv[1], "e2e") == 0) return e2e_once(argc, argv);
  if (argc >= 2 && std::strcmp(argv[1], "writers") == 0) return writers_once(argc, argv);
  if (argc >= 2 && std::strcmp(argv[1], "mock") == 0) return ckbench::mock_once(argc, argv);
  if (argc < 2 || std::strcmp(argv[1], "run") != 0) {
    std::fprintf(
        stderr,
        "usage: broker_bench run --brokers HOST:PORT --pid BROKER_PID --data-dir DIR\n"
        "       [--loopback1-gbps X] [--loopback8-gbps Y] [--only disk,produce,fetch,fanout,cold,latency]\n"
        "       [--scale F]\n"
        "       broker_bench produce --brokers B --topic T [--acks 1|-1] [--size BYTES] [--msgs N]\n"
        "       [--secs S] [--partitions P] [--linger MS] [--batch-bytes B]   (one run, one JSON line)\n"
        "       broker_bench fetch --brokers B --topic T [--partitions P] [--secs S]\n"
        "       [--consumers N] [--max-mb M] [--partition-max-bytes B]\n"
        "       (N consumers each read P partitions to their end or M MB, one JSON line)\n"
        "       broker_bench e2e --brokers B --topic T [--rate R] [--secs S] [--size BYTES]\n"
        "       [--acks 1|-1] [--warmup S] [--linger MS]   (produce-to-consume latency, one JSON line)\n"
        "       broker_bench writers --brokers B --topic T --readers N --msgs N [--size BYTES]\n"
        "       [--secs S]   (the writer's rate with N readers tailing, one JSON line)\n"
        "       broker_bench mock --topic NAME[:PARTITIONS] ...   (librdkafka's mock cluster)\n"
        "Normally started by tests/bench/run_broker_bench.sh, run_replication_bench.py, run_vs_kafka.py.\n");
    return 2;
  }
  ckbench::Options o = ckbench::parse(argc, argv);
  if (o.pid <= 0) {
    std::fprintf(stderr, "broker_bench: --pid of the broker is required\n");
    return 2;
  }
  return ckbench::run(o);
}
