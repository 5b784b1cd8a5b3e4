// tests/unit/handlers/produce/golden_produce_test.cc: the Produce (and
// InitProducerId) frames real clients sent (tests/data/golden, see its
// README) replayed into a real broker: every scenario's records must be
// stored and read back as the client was told to send them. sarama's zstd
// batch in Produce v3 is refused with UNSUPPORTED_COMPRESSION_TYPE, as
// Kafka refuses it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "protocol/error_code.h"
#include "protocol/request.h"
#include "tests/unit/handlers/produce/produce_helpers.h"

using namespace ciuickafka;
using namespace ciuickafka::broker::test;
using ciuickafka::broker::Broker;
using ciuickafka::broker::Response;
namespace fs = std::filesystem;

namespace {

std::vector<uint8_t> read_hex(const fs::path& p) {
  std::ifstream in(p);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  std::vector<uint8_t> out;
  int hi = -1;
  for (char c : text) {
    int v = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (v < 0) continue;
    if (hi < 0) {
      hi = v;
    } else {
      out.push_back(static_cast<uint8_t>(hi * 16 + v));
      hi = -1;
    }
  }
  return out;
}

struct Expected {
  std::string topic = "golden";
  std::vector<std::pair<std::string, std::string>> records;  // key, value
};

Expected read_expect(const fs::path& p) {
  Expected e;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string word;
    ls >> word;
    if (word == "topic") ls >> e.topic;
    if (word == "record") {
      std::string k, v;
      ls >> k >> v;
      e.records.emplace_back(k, v);
    }
  }
  return e;
}

protocol::ProduceResponse decode_produce(const std::vector<uint8_t>& raw, int16_t version) {
  protocol::Reader r(raw);
  (void)r.read_int32();
  protocol::ResponseHeader rh;
  rh.decode(r, protocol::response_header_version(protocol::ProduceRequest::kApiKey, version));
  protocol::ProduceResponse resp;
  resp.decode(r, version);
  if (!r.ok()) throw std::runtime_error("produce response does not decode");
  return resp;
}

}  // namespace

TEST_CASE("real clients' Produce frames are stored and read back") {
  const fs::path root = fs::path(test_data_dir()) / "golden";
  int scenarios = 0;
  for (const auto& client : fs::directory_iterator(root)) {
    if (!client.is_directory()) continue;
    for (const auto& scen : fs::directory_iterator(client.path())) {
      if (!fs::exists(scen.path() / "expect.txt")) continue;
      std::vector<fs::path> files;
      for (const auto& f : fs::directory_iterator(scen.path()))
        if (f.path().extension() == ".hex") files.push_back(f.path());
      std::sort(files.begin(), files.end());
      const std::string name = client.path().filename().string() + "/" + scen.path().filename().string();
      INFO(name);
      const Expected expect = read_expect(scen.path() / "expect.txt");
      const bool zstd_in_v3 = name == "sarama/produce-v2_2-zstd";
      BrokerFixture f;
      create_topic(f, expect.topic);
      int produced = 0;
      for (const auto& file : files) {
        const std::string fname = file.filename().string();
        if (fname.find("_Produce_") == std::string::npos && fname.find("_InitProducerId_") == std::string::npos)
          continue;
        INFO(fname);
        auto frame = read_hex(file);
        protocol::ParsedRequestHeader h;
        REQUIRE(protocol::parse_request_header(frame, h) == protocol::WireError::kNone);
        std::vector<uint8_t> body(frame.begin() + static_cast<long>(h.body_offset), frame.end());
        const int16_t key = h.header.request_api_key;
        const int16_t version = h.header.request_api_version;
        Response::Action action;
        auto raw = f.call_raw(key, version, body, &action);
        REQUIRE(action == Response::Action::kSend);
        if (key != protocol::ProduceRequest::kApiKey) continue;
        auto resp = decode_produce(raw, version);
        REQUIRE(resp.responses.size() == 1);
        for (const auto& p : resp.responses[0].partition_responses) {
          if (zstd_in_v3) {
            CHECK(p.error_code == protocol::to_wire(protocol::ErrorCode::UNSUPPORTED_COMPRESSION_TYPE));
          } else {
            CHECK(p.error_code == 0);
          }
        }
        ++produced;
      }
      CHECK(produced > 0);
      auto stored = stored_records(f, expect.topic);
      if (zstd_in_v3) {
        CHECK(stored.empty());
      } else {
        REQUIRE(stored.size() == expect.records.size());
        for (size_t i = 0; i < stored.size(); ++i) {
          CHECK(stored[i].offset == static_cast<int64_t>(i));
          CHECK(stored[i].key == expect.records[i].first);
          CHECK(stored[i].value == expect.records[i].second);
        }
      }
      ++scenarios;
    }
  }
  CHECK(scenarios >= 15);
}
