// tests/golden/golden_data.h: loading the captured golden frames.
//
// tests/data/golden/<client>/<scenario>/NN_<Api>_v<version>.hex holds one
// request frame each (header + body, as hex); a Produce scenario's
// expect.txt lists the codec, the batch magic and the records the client was
// told to send. See tests/data/golden/README.md. CK_GOLDEN_DIR (a compile
// definition) points at tests/data/golden.
//
// Thread-safety: plain functions and values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ciuickafka::golden {

struct Frame {
  std::string client;    // "kcat", "sarama", ...
  std::string scenario;  // "produce-gzip", ...
  std::string file;      // "02_Produce_v7.hex"
  std::vector<uint8_t> bytes;
  int16_t file_version = -1;  // the version in the file name

  // client/scenario/file, for messages.
  std::string path() const { return client + "/" + scenario + "/" + file; }
  int16_t api_key() const;  // from the first two bytes
  int16_t api_version() const;
};

struct ExpectedRecord {
  std::string key;
  std::string value;
  std::vector<std::pair<std::string, std::string>> headers;
};

struct Expectation {
  std::string client;
  std::string scenario;
  std::string topic;
  std::string codec;  // none, gzip, snappy, lz4, zstd
  int magic = 2;
  std::optional<int64_t> producer_id;  // set for idempotent producers
  std::vector<ExpectedRecord> records;
};

struct Scenario {
  std::string client;
  std::string scenario;
  std::vector<Frame> frames;  // in file-name (arrival) order
  std::optional<Expectation> expect;
};

// Every scenario under CK_GOLDEN_DIR, sorted by client then scenario. Fails
// loudly (throws std::runtime_error) on a malformed file: the data set is
// part of the test.
const std::vector<Scenario>& scenarios();

// All frames of all scenarios.
std::vector<const Frame*> all_frames();

// Decodes hex text (whitespace ignored); throws on anything else.
std::vector<uint8_t> parse_hex(const std::string& text);

}  // namespace ciuickafka::golden
