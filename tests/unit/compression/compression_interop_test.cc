// Interop: streams from independent encoders (python gzip, python-snappy raw,
// kafka-python's xerial snappy, python-lz4 frames, python-zstandard) decode
// to the known payload; see tests/unit/records/gen_vectors.py.
#include <catch2/catch.hpp>

#include "protocol/compression/codec.h"
#include "tests/unit/records/test_util.h"

using namespace ciuickafka::protocol;

TEST_CASE("independent encoders' streams decode") {
  const std::pair<const char*, Codec> files[] = {
      {"payload.gzip", Codec::kGzip},        {"payload.snappy_raw", Codec::kSnappy},
      {"payload.snappy_xerial", Codec::kSnappy}, {"payload.lz4", Codec::kLz4},
      {"payload.lz4_kafka", Codec::kLz4},    {"payload.lz4_v0", Codec::kLz4},
      {"payload.zstd", Codec::kZstd},        {"payload.zstd_2frames", Codec::kZstd},
  };
  Bytes expect = ck_test::payload();
  for (auto [file, codec] : files) {
    INFO(file);
    Bytes z = ck_test::read_vector(file);
    REQUIRE(!z.empty());
    auto out = decompress(codec, z, 1 << 20);
    REQUIRE(out.ok());
    CHECK(*out == expect);
    auto bounded = decompress(codec, z, expect.size() - 1);
    REQUIRE_FALSE(bounded.ok());
    CHECK(bounded.error() == CompressionError::kTooLarge);
  }
}

TEST_CASE("our lz4 frame has the layout Kafka's Java client writes") {
  auto z = lz4_frame_compress(ck_test::payload(), std::nullopt, false);
  REQUIRE(z.ok());
  // magic 04 22 4D 18; FLG: version 01, block independence, nothing else.
  CHECK((*z)[0] == 0x04);
  CHECK((*z)[3] == 0x18);
  CHECK((*z)[4] == 0x60);
  CHECK((*z)[5] == 0x40);  // BD: 64 KiB blocks
}
