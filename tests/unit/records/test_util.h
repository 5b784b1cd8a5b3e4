// tests/unit/records/test_util.h: helpers shared by the records and
// compression tests: reading vector files, byte strings, the expected
// contents of the generated interop vectors (see gen_vectors.py).
#pragma once

#include <cstdint>
#include <fstream>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "protocol/wire/types.h"

namespace ck_test {

using ciuickafka::protocol::Bytes;

inline Bytes read_vector(const std::string& name) {
  std::ifstream f(std::string(CK_RECORDS_DATA_DIR) + "/" + name, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

inline Bytes bytes_of(const std::string& s) { return Bytes(s.begin(), s.end()); }

inline std::optional<std::string> str_of(const std::optional<std::span<const uint8_t>>& b) {
  if (!b) return std::nullopt;
  return std::string(b->begin(), b->end());
}

// Record i of the v2 vectors (gen_vectors.py: v2_record).
struct ExpectedRecord {
  int64_t timestamp;
  std::optional<std::string> key, value;
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
};

inline ExpectedRecord v2_record(int i) {
  ExpectedRecord r;
  r.timestamp = 1700000000000LL + i * 1000;
  if (i != 3) r.key = "key-" + std::to_string(i);
  if (i != 5) {
    std::string v = "value-" + std::to_string(i) + "-";
    for (int k = 0; k < i * 4; ++k) v += "abcdefgh";
    r.value = v;
  }
  if (i % 2 == 0) r.headers = {{"h-a", "ha" + std::to_string(i)}, {"h-b", std::nullopt}};
  return r;
}
inline constexpr int kV2Records = 7;

// Message i of the v0/v1 vectors (gen_vectors.py: legacy_record).
inline ExpectedRecord legacy_record(int magic, int i) {
  ExpectedRecord r;
  r.timestamp = magic == 0 ? -1 : 1600000000000LL + i;
  if (i != 2) r.key = "k" + std::to_string(i);
  r.value = "legacy-value-" + std::to_string(i) + "-" + std::string(static_cast<size_t>(i) * 10, 'z');
  return r;
}
inline constexpr int kLegacyRecords = 4;

// The codec vectors' plain text (gen_vectors.py: payload).
inline Bytes payload() {
  std::string s;
  for (int i = 0; i < 400; ++i) s += "line " + std::to_string(i) + ": the quick brown fox jumps over the lazy dog\n";
  return bytes_of(s);
}

// A deterministic pseudo-random generator for fuzz-style tests.
struct Lcg {
  uint64_t s;
  explicit Lcg(uint64_t seed) : s(seed) {}
  uint32_t next() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(s >> 33);
  }
  Bytes bytes(size_t n) {
    Bytes b(n);
    for (auto& x : b) x = static_cast<uint8_t>(next());
    return b;
  }
};

}  // namespace ck_test
