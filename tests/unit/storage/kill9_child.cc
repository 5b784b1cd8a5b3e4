// tests/unit/storage/kill9_child.cc: the process kill9_test.cc kills.
//
// Usage: storage_kill9_child <log dir> <posix|io_uring> <seed>
// Opens (recovering) the log at <log dir> and appends forever from four
// threads, each waiting for its append to be fsync-acknowledged through a
// GroupCommitter before writing one line to stdout:
//   <base offset> <last offset> <value>\n
// where <value> is the first record's value. A line is written only after
// the acknowledgement, and each line is one write(2) below PIPE_BUF, so a
// line the parent reads is a durability promise. Exits only when killed
// (or 2 on an error, which the parent reports).
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "protocol/records/batch_builder.h"
#include "storage/group_commit.h"
#include "storage/io/posix_file.h"
#include "storage/io/uring_file.h"
#include "storage/log.h"

using namespace ciuickafka;

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "kill9_child: %s\n", what.c_str());
  std::_Exit(2);
}

protocol::Bytes make_batch(const std::string& value, int records) {
  protocol::BatchBuilder b{protocol::BatchOptions{}};
  for (int i = 0; i < records; ++i) {
    const std::string v = value + "/" + std::to_string(i);
    if (!b.add(1'700'000'000'000 + i, protocol::as_bytes(std::string("k")), protocol::as_bytes(v))) die("add");
  }
  auto r = b.build();
  if (!r.ok()) die("build");
  return std::move(r).value();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) die("usage: <dir> <posix|io_uring> <seed>");
  const std::string dir = argv[1], kind = argv[2];
  const unsigned seed = static_cast<unsigned>(std::strtoul(argv[3], nullptr, 10));
  std::unique_ptr<storage::io::FileSystem> fs;
  if (kind == "posix") {
    fs = std::make_unique<storage::io::PosixFileSystem>();
  } else {
    fs = std::make_unique<storage::io::UringFileSystem>();
  }
  storage::LogConfig cfg;
  cfg.segment.segment_bytes = 48 * 1024;  // several rolls per run
  cfg.segment.index_interval_bytes = 1024;
  auto opened = storage::Log::open(*fs, dir, cfg, 0);
  if (!opened) die(opened.status().to_string());
  std::shared_ptr<storage::Log> log = std::move(opened).value();
  storage::GroupCommitter committer;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(seed * 31 + static_cast<unsigned>(t));
      for (uint64_t n = 0;; ++n) {
        std::string value = "s" + std::to_string(seed) + "-t" + std::to_string(t) + "-n" + std::to_string(n) + "-";
        value.resize(value.size() + std::uniform_int_distribution<size_t>(0, 300)(rng), 'x');
        protocol::Bytes batch = make_batch(value, std::uniform_int_distribution<int>(1, 5)(rng));
        auto r = log->append(batch, 1, 0);
        if (!r) die(r.status().to_string());
        std::promise<storage::Status> acked;
        committer.sync_to(log, r->last_offset + 1, [&](storage::Status s) { acked.set_value(std::move(s)); });
        storage::Status s = acked.get_future().get();
        if (!s.is_ok()) die(s.to_string());
        const std::string line =
            std::to_string(r->base_offset) + " " + std::to_string(r->last_offset) + " " + value + "\n";
        if (::write(1, line.data(), line.size()) != static_cast<ssize_t>(line.size())) std::_Exit(3);
      }
    });
  }
  for (auto& th : threads) th.join();
  return 0;
}
