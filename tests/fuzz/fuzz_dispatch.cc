// tests/fuzz/fuzz_dispatch.cc: a mutation fuzzer for the broker's whole
// request path: dispatch_frame() -> header -> handler registry -> every
// handler -> partitions, logs, coordinators, against one real Broker in a
// temp dir (no sockets: frames go in as a connection hands them over).
//
// It is not libFuzzer (building the whole broker a second time with clang
// would double the test build): its own driver, random but reproducible
// (a seed for the generator), without coverage feedback. Inputs:
//   - seeds: a default request of every API at every version the broker
//     serves, and the golden request frames captured from real clients
//     (tests/data/golden, *.hex);
//   - mutants of them: bit flips, interesting integers (0, -1, INT_MAX, ...)
//     over 1, 2 or 4 bytes (length and count fields), truncation,
//     insertion, deletion, another seed's tail spliced in, a version moved
//     to just inside or just outside the supported range.
// Properties, beyond "no crash, no sanitizer report":
//   - a response that is sent has a size prefix equal to its length and the
//     request's correlation id, and its body decodes completely as that
//     API's response at that version (ApiVersions out of range: v0), so no
//     mutated request makes the broker send bytes a client cannot parse;
//   - every 256 inputs the broker still serves a well-formed ApiVersions
//     and Metadata (one bad client never harms another).
// A request not answered within 100 ms (long polls, joins waiting for a
// rebalance) is left pending; the broker answers or drops it at shutdown.
// CreateTopics and CreatePartitions asking for more than 64 partitions in
// all are not sent (they would only measure the disk).
//
// usage: fuzz_dispatch SEED_DIR SECONDS [RNG_SEED] [FAILURE_DIR]
//        fuzz_dispatch --replay FRAME_FILE   (a frame, no size prefix)
// On a property failure the frame is written to FAILURE_DIR (default: the
// current directory) as fuzz_dispatch-failure.bin and the run aborts.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "broker/broker.h"
#include "broker/config/broker_config.h"
#include "broker/handlers/registry.h"
#include "broker/server/dispatch.h"
#include "protocol/generated/api_keys.h"
#include "protocol/generated/headers.h"
#include "protocol/generated/messages.h"
#include "protocol/request.h"
#include "protocol/wire/reader.h"
#include "protocol/wire/writer.h"

using namespace ciuickafka;
using Frame = std::vector<uint8_t>;

namespace {

constexpr size_t kMaxInput = 64 * 1024;
constexpr int kMaxCreatedPartitions = 64;
constexpr auto kAnswerWait = std::chrono::milliseconds(100);
constexpr int kLivenessEvery = 256;

std::string g_failure_dir = ".";

[[noreturn]] void property_failed(const Frame& frame, const std::string& what) {
  const std::string path = g_failure_dir + "/fuzz_dispatch-failure.bin";
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(frame.data()),
                                              static_cast<std::streamsize>(frame.size()));
  std::fprintf(stderr, "fuzz_dispatch: property failed: %s\n  input frame (%zu bytes) written to %s\n",
               what.c_str(), frame.size(), path.c_str());
  std::abort();
}

int16_t be16(const Frame& f, size_t at) { return static_cast<int16_t>((f[at] << 8) | f[at + 1]); }
int32_t be32(const Frame& f, size_t at) {
  return static_cast<int32_t>((uint32_t{f[at]} << 24) | (uint32_t{f[at + 1]} << 16) | (uint32_t{f[at + 2]} << 8) |
                              uint32_t{f[at + 3]});
}

Frame request_frame(int16_t key, int16_t version, int32_t correlation, const std::vector<uint8_t>& body) {
  protocol::Writer w;
  protocol::RequestHeader h;
  h.request_api_key = key;
  h.request_api_version = version;
  h.correlation_id = correlation;
  h.client_id = "fuzz";
  int16_t hv = protocol::request_header_version(key, version);
  if (hv < 0) hv = 1;
  h.encode(w, hv);
  w.write_raw(body);
  return w.release();
}

struct Stats {
  uint64_t inputs = 0, sent = 0, closed = 0, silent = 0, pending = 0, skipped = 0, liveness = 0;
  std::map<int16_t, uint64_t> per_key;  // answered (sent) per API key
};

class Target {
 public:
  explicit Target(const std::string& dir) : dir_(dir) {
    broker::config::ConfigInput in;
    in.overrides = {"listeners=PLAINTEXT://127.0.0.1:0", "log.dirs=" + dir_, "num.partitions=1",
                    "offsets.topic.num.partitions=1", "transaction.state.log.num.partitions=1",
                    "group.initial.rebalance.delay.ms=0", "log.segment.bytes=1048576"};
    auto loaded = broker::config::load_config(in);
    if (!loaded.is_ok()) {
      std::fprintf(stderr, "fuzz_dispatch: config: %s\n", loaded.error().message.c_str());
      std::exit(2);
    }
    std::string err;
    broker_ = broker::Broker::open(std::move(loaded.value().config), &err);
    if (!broker_) {
      std::fprintf(stderr, "fuzz_dispatch: broker: %s\n", err.c_str());
      std::exit(2);
    }
  }
  ~Target() {
    broker_->shutdown();
    broker_.reset();
    io_.restart();
    io_.poll();  // timers of abandoned requests, cancelled by the shutdown
  }

  // Dispatches one frame (no size prefix) and checks what comes back.
  void run(const Frame& frame, Stats& st) {
    ++st.inputs;
    if (frame.size() >= 4 && too_many_partitions(frame)) {
      ++st.skipped;
      return;
    }
    auto answer = std::make_shared<std::promise<broker::Response>>();
    auto fut = answer->get_future();
    broker::RequestContext ctx;
    ctx.broker = broker_.get();
    ctx.frame = std::make_shared<broker::FrameBytes>(frame.begin(), frame.end());
    ctx.executor = io_.get_executor();
    ctx.listener = "PLAINTEXT";
    ctx.peer = "fuzz";
    ctx.connection_id = 1;
    ctx.received = std::chrono::steady_clock::now();
    ctx.respond = [answer](broker::Response r) { answer->set_value(std::move(r)); };
    broker::dispatch_frame(std::move(ctx));
    const auto deadline = std::chrono::steady_clock::now() + kAnswerWait;
    while (fut.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready) {
      if (std::chrono::steady_clock::now() >= deadline) {
        ++st.pending;
        return;
      }
      io_.restart();
      io_.run_for(std::chrono::milliseconds(1));
    }
    broker::Response r = fut.get();
    switch (r.action) {
      case broker::Response::Action::kClose: ++st.closed; return;
      case broker::Response::Action::kNoResponse: ++st.silent; return;
      case broker::Response::Action::kSend: break;
    }
    ++st.sent;
    check_response(frame, materialize(frame, r));
    ++st.per_key[be16(frame, 0)];
  }

  // A well-formed ApiVersions and Metadata still come back.
  void check_liveness(Stats& st) {
    for (auto [key, version] : {std::pair<int16_t, int16_t>{18, 3}, {3, 12}}) {
      std::vector<uint8_t> body;
      protocol::Writer w;
      if (key == 18) {
        protocol::ApiVersionsRequest req;
        req.client_software_name = "fuzz";
        req.client_software_version = "1";
        req.encode(w, version);
      } else {
        protocol::MetadataRequest req;  // null topics: all of them
        req.encode(w, version);
      }
      const Frame f = request_frame(key, version, ++liveness_correlation_, w.release());
      Stats local;
      run(f, local);
      if (local.sent != 1) property_failed(f, "liveness: no answer to a well-formed request (api " +
                                                  std::to_string(key) + ")");
    }
    ++st.liveness;
  }

 private:
  static bool too_many_partitions(const Frame& frame) {
    const int16_t key = be16(frame, 0);
    if (key != 19 && key != 37) return false;
    protocol::ParsedRequestHeader h;
    if (protocol::parse_request_header(frame, h) != protocol::WireError::kNone) return false;
    protocol::Reader r(std::span<const uint8_t>(frame).subspan(h.body_offset));
    int64_t total = 0;
    if (key == 19) {
      protocol::CreateTopicsRequest req;
      req.decode(r, h.header.request_api_version);
      if (!r.ok()) return false;
      for (const auto& t : req.topics)
        total += std::max<int64_t>({int64_t{t.num_partitions}, static_cast<int64_t>(t.assignments.size()), 1});
    } else {
      protocol::CreatePartitionsRequest req;
      req.decode(r, h.header.request_api_version);
      if (!r.ok()) return false;
      for (const auto& t : req.topics) total += std::max<int64_t>(t.count, 1);
    }
    return total > kMaxCreatedPartitions;
  }

  static Frame materialize(const Frame& req, const broker::Response& r) {
    Frame out;
    size_t from = 0;
    for (const broker::Splice& s : r.splices) {
      out.insert(out.end(), r.bytes.begin() + static_cast<long>(from), r.bytes.begin() + static_cast<long>(s.at));
      for (const storage::LogSlice& ls : s.slices) {
        std::vector<uint8_t> buf(ls.slice.length);
        auto n = ls.slice.file->read_at(ls.slice.position, buf);
        if (!n.is_ok() || n.value() != buf.size()) property_failed(req, "a spliced slice cannot be read back");
        out.insert(out.end(), buf.begin(), buf.end());
      }
      from = s.at;
    }
    out.insert(out.end(), r.bytes.begin() + static_cast<long>(from), r.bytes.end());
    return out;
  }

  static void check_response(const Frame& req, const Frame& resp) {
    if (resp.size() < 8) property_failed(req, "response shorter than a size and a correlation id");
    if (be32(resp, 0) != static_cast<int32_t>(resp.size() - 4)) property_failed(req, "size prefix is not the length");
    const int16_t key = be16(req, 0);
    int16_t version = be16(req, 2);
    if (be32(resp, 4) != be32(req, 4)) property_failed(req, "correlation id differs from the request's");
    const broker::HandlerEntry* h = broker::find_handler(key);
    if (h == nullptr) property_failed(req, "an answer to an API the broker does not serve");
    if (version < h->min_version || version > h->max_version) {
      if (key != 18) property_failed(req, "an answer to a version the broker does not serve");
      version = 0;  // ApiVersions answers UNSUPPORTED_VERSION at v0
    }
    protocol::Reader r(std::span<const uint8_t>(resp).subspan(4));
    protocol::ResponseHeader rh;
    rh.decode(r, protocol::response_header_version(key, version));
    bool decoded = false;
    protocol::visit_response_type(key, [&](auto type) {
      using T = typename decltype(type)::type;
      T msg;
      msg.decode(r, version);
      decoded = r.ok() && r.at_end();
    });
    if (!decoded)
      property_failed(req, "response to api " + std::to_string(key) + " v" + std::to_string(version) +
                               " does not decode as that response");
  }

  std::string dir_;
  std::unique_ptr<broker::Broker> broker_;
  broker::asio::io_context io_;
  int32_t liveness_correlation_ = 1 << 30;
};

// --- inputs

// A default request of every API at every version the broker serves.
std::vector<Frame> default_requests() {
  std::vector<Frame> out;
  int32_t correlation = 1;
  for (const protocol::ApiInfo& api : protocol::all_apis()) {
    const broker::HandlerEntry* h = broker::find_handler(api.key);
    if (h == nullptr) continue;
    for (int16_t v = h->min_version; v <= h->max_version; ++v) {
      protocol::visit_request_type(api.key, [&](auto type) {
        using T = typename decltype(type)::type;
        T req;
        protocol::Writer w;
        req.encode(w, v);
        if (w.ok()) out.push_back(request_frame(api.key, v, correlation++, w.release()));
      });
    }
  }
  return out;
}

// Golden request frames (hex, no size prefix) under dir.
std::vector<Frame> golden_requests(const std::string& dir) {
  std::vector<Frame> out;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().extension() != ".hex") continue;
    std::ifstream in(it->path());
    std::string hex, word;
    while (in >> word) hex += word;
    Frame f;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) f.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    if (f.size() >= 8 && f.size() <= kMaxInput) out.push_back(std::move(f));
  }
  return out;
}

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  Frame mutate(const Frame& base, const std::vector<Frame>& pool) {
    Frame f = base;
    const int rounds = 1 + static_cast<int>(below(4));
    for (int i = 0; i < rounds; ++i) step(f, pool);
    if (f.size() > kMaxInput) f.resize(kMaxInput);
    return f;
  }

  uint64_t below(uint64_t n) { return n == 0 ? 0 : std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }

 private:
  // Mostly (7 in 8) past the first 8 bytes: key, version, correlation id.
  size_t position(const Frame& f) {
    if (f.empty()) return 0;
    if (f.size() > 10 && below(8) != 0) return 8 + below(f.size() - 8);
    return below(f.size());
  }

  void put_int(Frame& f, size_t at, int width, int64_t v) {
    for (int b = 0; b < width && at + static_cast<size_t>(b) < f.size(); ++b)
      f[at + static_cast<size_t>(b)] = static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * (width - 1 - b)));
  }

  void step(Frame& f, const std::vector<Frame>& pool) {
    static constexpr int64_t kInteresting[] = {0, 1, -1, 2, 16, 127, 128, 255, 256, 0x7fff, -0x8000, 0xffff,
                                               0x7fffffff, INT32_MIN, 1 << 20, 1 << 24, -2};
    switch (below(9)) {
      case 0:  // a bit
        if (!f.empty()) f[position(f)] ^= static_cast<uint8_t>(1u << below(8));
        break;
      case 1:  // a byte
        if (!f.empty()) f[position(f)] = static_cast<uint8_t>(below(256));
        break;
      case 2:
      case 3: {  // an interesting integer, 1, 2 or 4 bytes wide (counts, lengths, varints)
        const int width = 1 << below(3);
        if (f.size() >= static_cast<size_t>(width))
          put_int(f, position(f), width, kInteresting[below(std::size(kInteresting))]);
        break;
      }
      case 4:  // truncate
        if (f.size() > 8) f.resize(8 + below(f.size() - 8));
        break;
      case 5: {  // insert random bytes
        const size_t at = position(f);
        const size_t n = 1 + below(16);
        for (size_t i = 0; i < n; ++i) f.insert(f.begin() + static_cast<long>(std::min(at, f.size())), static_cast<uint8_t>(below(256)));
        break;
      }
      case 6:  // delete a range
        if (f.size() > 9) {
          const size_t at = 8 + below(f.size() - 8);
          const size_t n = 1 + below(std::min<size_t>(32, f.size() - at));
          f.erase(f.begin() + static_cast<long>(at), f.begin() + static_cast<long>(std::min(f.size(), at + n)));
        }
        break;
      case 7: {  // another input's tail
        const Frame& other = pool[below(pool.size())];
        if (f.size() > 8 && other.size() > 8) {
          const size_t cut = 8 + below(f.size() - 8);
          const size_t from = 8 + below(other.size() - 8);
          f.resize(cut);
          f.insert(f.end(), other.begin() + static_cast<long>(from), other.end());
        }
        break;
      }
      case 8: {  // the version: near the edges of what the broker serves
        if (f.size() < 4) break;
        const broker::HandlerEntry* h = broker::find_handler(be16(f, 0));
        if (h == nullptr) break;
        const int16_t choices[] = {static_cast<int16_t>(h->min_version - 1), h->min_version, h->max_version,
                                   static_cast<int16_t>(h->max_version + 1),
                                   static_cast<int16_t>(h->min_version + below(h->max_version - h->min_version + 1))};
        put_int(f, 2, 2, choices[below(std::size(choices))]);
        break;
      }
    }
  }

  std::mt19937_64 rng_;
};

Frame read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Frame((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string temp_dir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/ck_fuzz_dispatch_XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    std::perror("mkdtemp");
    std::exit(2);
  }
  return tmpl;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--replay") {
    const std::string dir = temp_dir();
    Stats st;
    {
      Target t(dir);
      t.run(read_file(argv[2]), st);
      t.check_liveness(st);
    }
    std::filesystem::remove_all(dir);
    std::printf("fuzz_dispatch: replayed %s: %s\n", argv[2],
                st.sent ? "answered, well-formed" : st.closed ? "connection closed" : "no answer yet");
    return 0;
  }
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s SEED_DIR SECONDS [RNG_SEED] [FAILURE_DIR] | --replay FRAME_FILE\n", argv[0]);
    return 2;
  }
  const std::string seed_dir = argv[1];
  const double seconds = std::atof(argv[2]);
  const uint64_t rng_seed = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1;
  if (argc > 4) g_failure_dir = argv[4];

  std::vector<Frame> seeds = default_requests();
  const size_t defaults = seeds.size();
  for (Frame& f : golden_requests(seed_dir)) seeds.push_back(std::move(f));
  if (seeds.size() == defaults) {
    std::fprintf(stderr, "fuzz_dispatch: no golden frames under %s\n", seed_dir.c_str());
    return 1;
  }
  const std::string dir = temp_dir();
  Stats st;
  {
    Target t(dir);
    Mutator m(rng_seed);
    for (const Frame& f : seeds) t.run(f, st);  // every seed as it is
    t.check_liveness(st);
    const auto end = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
    while (std::chrono::steady_clock::now() < end) {
      t.run(m.mutate(seeds[m.below(seeds.size())], seeds), st);
      if (st.inputs % kLivenessEvery == 0) t.check_liveness(st);
    }
    t.check_liveness(st);
  }
  std::filesystem::remove_all(dir);
  std::printf("fuzz_dispatch: rng seed %llu, %zu seeds (%zu default requests of every API and version, %zu golden "
              "frames), %llu inputs: %llu answered, %llu closed, %llu without response, %llu pending after %lld ms, "
              "%llu skipped (too many partitions); %llu liveness checks passed; APIs answered: %zu\n",
              static_cast<unsigned long long>(rng_seed), seeds.size(), defaults, seeds.size() - defaults,
              static_cast<unsigned long long>(st.inputs), static_cast<unsigned long long>(st.sent),
              static_cast<unsigned long long>(st.closed), static_cast<unsigned long long>(st.silent),
              static_cast<unsigned long long>(st.pending), static_cast<long long>(kAnswerWait.count()),
              static_cast<unsigned long long>(st.skipped), static_cast<unsigned long long>(st.liveness),
              st.per_key.size());
  return 0;
}
