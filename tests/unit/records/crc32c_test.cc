// CRC32C: published vectors for both implementations, and the two agreeing
// on random data, including chained updates.
#include <catch2/catch.hpp>

#include <string>

#include "protocol/records/crc32c.h"
#include "tests/unit/records/test_util.h"

using namespace ciuickafka::protocol;

namespace {
std::span<const uint8_t> sv(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }
}  // namespace

TEST_CASE("crc32c check value") {
  std::string s = "123456789";
  CHECK(crc32c(sv(s)) == 0xE3069283u);
  CHECK(crc32c_portable(sv(s)) == 0xE3069283u);
  CHECK(crc32c({}) == 0u);
  CHECK(crc32c_portable({}) == 0u);
}

TEST_CASE("crc32c RFC 3720 B.4 vectors") {
  Bytes zeros(32, 0x00), ones(32, 0xFF), inc(32), dec(32);
  for (int i = 0; i < 32; ++i) {
    inc[i] = static_cast<uint8_t>(i);
    dec[i] = static_cast<uint8_t>(31 - i);
  }
  for (auto f : {&crc32c, &crc32c_portable}) {
    CHECK(f(zeros) == 0x8A9136AAu);
    CHECK(f(ones) == 0x62A8AB43u);
    CHECK(f(inc) == 0x46DD794Eu);
    CHECK(f(dec) == 0x113FDB5Cu);
  }
}

TEST_CASE("crc32c hardware and portable agree on random data, whole and chained") {
  ck_test::Lcg rng(42);
  for (size_t n : {1u, 3u, 7u, 8u, 9u, 15u, 16u, 63u, 64u, 65u, 255u, 1000u, 4096u, 65537u}) {
    Bytes data = rng.bytes(n);
    uint32_t whole = crc32c(data);
    REQUIRE(whole == crc32c_portable(data));
    // Split at a few points; chaining must equal the whole.
    for (size_t cut : {size_t{0}, n / 3, n / 2, n - 1, n}) {
      std::span<const uint8_t> all(data);
      uint32_t hw = crc32c_extend(crc32c(all.first(cut)), all.subspan(cut));
      uint32_t sw = crc32c_extend_portable(crc32c_portable(all.first(cut)), all.subspan(cut));
      CHECK(hw == whole);
      CHECK(sw == whole);
    }
  }
  // Misaligned starts.
  Bytes data = rng.bytes(1024);
  for (size_t off = 0; off < 9; ++off) {
    auto s = std::span<const uint8_t>(data).subspan(off);
    CHECK(crc32c(s) == crc32c_portable(s));
  }
}
