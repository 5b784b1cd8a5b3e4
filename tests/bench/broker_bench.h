// tests/bench/broker_bench.h: the pieces of the broker benchmark (issue #4).
//
// broker_bench is our own load generator on librdkafka (C API): producers
// and explicitly assigned consumers (no consumer groups), a raw-socket slow
// Fetch reader, a raw disk write loop and /proc samplers for the broker's
// CPU time and RSS. tests/bench/run_broker_bench.sh starts a broker and
// iperf3 and calls `broker_bench run`, which prints the table.
//
// Units: MB = 10^6 bytes, GB = 10^9 bytes, payload bytes only (key + value;
// the protocol's own overhead is not counted). Every phase is bounded by a
// message/byte count and by a wall-clock limit.
//
// Thread-safety: each run_* call owns its clients; ProcSampler is internally
// synchronised. Not a test: nothing here asserts timing.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ckbench {

double now_s();  // monotonic seconds

// ---- /proc of the broker ------------------------------------------------
struct ProcStat {
  bool ok = false;
  double cpu_s = 0;   // utime + stime
  long rss_kib = 0;   // VmRSS
};
ProcStat read_proc(int pid);

// Samples VmRSS every 50 ms; peak() is the maximum since the last reset().
class ProcSampler {
 public:
  explicit ProcSampler(int pid);
  ~ProcSampler();
  void reset();
  long peak_kib() const { return peak_.load(); }

 private:
  int pid_;
  std::atomic<long> peak_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// ---- raw disk -------------------------------------------------------------
struct DiskResult {
  double buffered_mbps = 0;     // write() of 1 MiB blocks, no sync
  double sync_end_mbps = 0;     // same, one fdatasync at the end counted in
  double sync_each_mbps = 0;    // fdatasync after every 1 MiB block
  std::string error;
};
DiskResult disk_bench(const std::string& dir, std::size_t max_mib, double max_s);

// ---- cold data ----------------------------------------------------------------
// Drops the page-cache pages of every .log file in dir (fdatasync, then
// POSIX_FADV_DONTNEED on a descriptor of our own: the page cache is the
// file's, whoever opened it) and probes one byte a MiB with RWF_NOWAIT to
// say how much is really gone.
struct ColdResult {
  int files = 0;
  std::uint64_t bytes = 0;
  std::uint64_t probes = 0, cold_probes = 0;
  std::string error;
};
ColdResult drop_cached(const std::string& dir);
// Drops dir's .log files from the page cache and reads them in order with
// read() of 1 MiB: the disk's raw cold sequential read, MB/s (-1 on error).
double cold_read_mbps(const std::string& dir, double max_s);

// ---- producer -------------------------------------------------------------
struct ProduceSpec {
  std::string brokers, topic;
  std::size_t msg_size = 1024;
  int acks = 1;                 // 1 or -1
  int partitions = 1;           // round-robin over 0..partitions-1
  std::uint64_t max_msgs = 0;
  double max_s = 8;
  double rate = 0;              // msgs/s; 0 = as fast as possible
  int linger_ms = 10;
  int batch_bytes = 1000000;
  bool record_latency = false;
};
struct ProduceResult {
  std::uint64_t sent = 0, delivered = 0, failed = 0, bytes = 0;
  double secs = 0;
  std::vector<double> latency_us;  // per delivered message, when asked
  std::string first_error;
};
ProduceResult run_produce(const ProduceSpec& spec);

// ---- consumers --------------------------------------------------------------
struct FetchSpec {
  std::string brokers, topic;
  std::vector<std::vector<int>> consumers;  // partitions each consumer reads from offset 0
  double max_s = 10;
  std::uint64_t max_bytes_per_consumer = 0;  // 0 = up to the end
  // Each reader's local queue bound in KiB, with no bound on its record
  // count (broker_bench_fetch.cc says why); 0: 64 MiB and 100,000 records,
  // as the `run` phases were measured.
  std::uint64_t queue_kbytes = 0;
  // The readers' max.partition.fetch.bytes (librdkafka's default is 1 MiB).
  std::uint64_t partition_max_bytes = 8388608;
};
struct FetchResult {
  std::uint64_t msgs = 0, bytes = 0;
  double secs = 0;
  int finished = 0;  // consumers that reached the end of every partition
  std::vector<double> consumer_rates;  // msgs/s of each consumer, from the start to its last message
  // The stream alone, without the clients' start-up (connect, metadata,
  // ListOffsets, the first fetch): from the first call that returned records
  // (any consumer) to the last record, and the records after those first
  // calls. first_record_s: the slowest consumer's wait for its first records.
  // stream_rates: each consumer's own stream, msgs/s from its first call
  // that returned records to its last record (0 for one that read nothing
  // after that call).
  double stream_secs = 0, first_record_s = 0;
  std::uint64_t stream_msgs = 0, stream_bytes = 0;
  std::vector<double> stream_rates;
  std::string first_error;
};
FetchResult run_fetch(const FetchSpec& spec);

// ---- one writer, many tailing readers ---------------------------------------
// `readers` consumers tail partitions 0..partitions-1 of spec.topic from
// their end (each its own client and thread) while run_produce(spec) writes
// as fast as it can: what readers cost the writer. The writer starts once
// every reader has reached the end; readers stop once they have read what
// was written (or 15 s after the writer).
struct WriterReadersResult {
  ProduceResult writer;
  std::uint64_t read_msgs = 0;          // all readers together
  std::vector<std::uint64_t> per_reader;
  std::string first_error;
};
WriterReadersResult run_writer_readers(const ProduceSpec& spec, int readers);

// ---- produce-to-consume latency --------------------------------------------
// One producer at a fixed rate writes messages carrying their send time
// (CLOCK_MONOTONIC, the same machine); one consumer, assigned partition 0
// of the topic from its end, takes one message per call and notes each
// one's arrival. The producer starts once the consumer has reached that
// end, and the first warmup_s of sends are not counted.
struct E2eSpec {
  std::string brokers, topic;
  std::size_t msg_size = 1024;
  int acks = 1;
  double rate = 10000;   // msgs/s
  double max_s = 10;     // sending time
  double warmup_s = 1;   // sends in the first warmup_s are delivered but not counted
  int linger_ms = 0;
};
struct E2eResult {
  std::uint64_t sent = 0, received = 0, counted = 0;
  double secs = 0;                 // sending time
  std::vector<double> latency_us;  // per counted message: arrival at the consumer - send
  std::string first_error;
};
E2eResult run_e2e(const E2eSpec& spec);

// ---- a slow reader at the socket level ------------------------------------
// Sends Fetch v4 for (topic, partition 0, offset 0, 64 MiB) and drains each
// response at `bytes_per_s` through a small receive buffer, again and again.
// librdkafka cannot play this part: it always reads its socket eagerly.
class SlowReader {
 public:
  SlowReader(std::string host, int port, std::string topic, double bytes_per_s);
  ~SlowReader();
  void stop();
  std::uint64_t bytes() const { return bytes_.load(); }
  int responses() const { return responses_.load(); }
  std::string error() const;

 private:
  void loop();
  std::string host_, topic_;
  int port_;
  double rate_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> bytes_{0};
  std::atomic<int> responses_{0};
  mutable std::mutex mu_;
  std::string error_;
  std::thread thread_;
};

// ---- admin ------------------------------------------------------------------
// CreateTopics through librdkafka's admin API; "" on success (or exists).
std::string create_topic(const std::string& brokers, const std::string& topic, int partitions);

// ---- mock -------------------------------------------------------------------
// `broker_bench mock --topic NAME[:PARTITIONS] ...`: librdkafka's mock
// cluster served until stdin closes (broker_bench_mock.cc).
int mock_once(int argc, char** argv);

}  // namespace ckbench
