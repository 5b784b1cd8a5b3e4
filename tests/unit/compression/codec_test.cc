// The codec interface: round trips for every codec and size, bounded
// decompression (bombs), corrupt and truncated input, snappy framing.
#include <catch2/catch.hpp>

#include "protocol/compression/codec.h"
#include "tests/unit/records/test_util.h"

using namespace ciuickafka::protocol;

namespace {
const Codec kCodecs[] = {Codec::kNone, Codec::kGzip, Codec::kSnappy, Codec::kLz4, Codec::kZstd};
const Codec kRealCodecs[] = {Codec::kGzip, Codec::kSnappy, Codec::kLz4, Codec::kZstd};
}  // namespace

TEST_CASE("codec ids") {
  for (int i = 0; i <= 4; ++i) CHECK(static_cast<int>(*codec_from_id(i)) == i);
  for (int i : {5, 6, 7, -1}) CHECK_FALSE(codec_from_id(i).has_value());
  CHECK(to_string(Codec::kZstd) == "zstd");
}

TEST_CASE("round trip for every codec and size") {
  ck_test::Lcg rng(1);
  for (Codec c : kCodecs) {
    for (size_t n : {0u, 1u, 100u, 32768u, 32769u, 70000u, 300000u}) {
      INFO(to_string(c) << " " << n);
      Bytes in = rng.bytes(n);
      // Make half of it compressible.
      for (size_t i = 0; i < n / 2; ++i) in[i] = static_cast<uint8_t>(i % 7);
      auto z = compress(c, in);
      REQUIRE(z.ok());
      auto out = decompress(c, *z, n);
      REQUIRE(out.ok());
      CHECK(*out == in);
      if (n > 0) {
        auto small = decompress(c, *z, n - 1);
        REQUIRE_FALSE(small.ok());
        CHECK(small.error() == CompressionError::kTooLarge);
      }
    }
  }
}

TEST_CASE("levels") {
  Bytes in = ck_test::payload();
  for (int level : {1, 9}) {
    for (Codec c : {Codec::kGzip, Codec::kLz4, Codec::kZstd}) {
      auto z = compress(c, in, level);
      REQUIRE(z.ok());
      CHECK(*decompress(c, *z, in.size()) == in);
    }
  }
}

TEST_CASE("decompression bombs fail cleanly for each codec") {
  Bytes zeros(1 << 20, 0);
  for (Codec c : kRealCodecs) {
    INFO(to_string(c));
    auto z = compress(c, zeros);
    REQUIRE(z.ok());
    CHECK(z->size() < 64 * 1024);
    auto out = decompress(c, *z, 64 * 1024);
    REQUIRE_FALSE(out.ok());
    CHECK(out.error() == CompressionError::kTooLarge);
    CHECK(decompress(c, *z, 1 << 20).ok());
  }
  // Raw snappy states its length up front: rejected before allocating.
  auto raw = snappy_compress_raw(zeros);
  CHECK(snappy_decompress(*raw, 64 * 1024).error() == CompressionError::kTooLarge);
  // A zero limit.
  auto z = compress(Codec::kZstd, ck_test::payload());
  CHECK(decompress(Codec::kZstd, *z, 0).error() == CompressionError::kTooLarge);
  CHECK(decompress(Codec::kNone, ck_test::payload(), 10).error() == CompressionError::kTooLarge);
}

TEST_CASE("garbage, truncated and flipped input is an error, never a crash") {
  Bytes in = ck_test::payload();
  ck_test::Lcg rng(3);
  for (Codec c : kRealCodecs) {
    INFO(to_string(c));
    CHECK_FALSE(decompress(c, {}, 1 << 20).ok());
    CHECK_FALSE(decompress(c, rng.bytes(100), 1 << 20).ok());
    auto z = compress(c, in);
    REQUIRE(z.ok());
    for (size_t n = 0; n < z->size(); n += (n < 64 ? 1 : 37)) {
      std::span<const uint8_t> cut(z->data(), n);
      auto out = decompress(c, cut, 1 << 20);
      // A cut at a block boundary of a framed format may still decode a
      // prefix cleanly; it must never produce more than the original.
      if (out.ok()) CHECK(out->size() <= in.size());
    }
    for (size_t i = 0; i < z->size(); i += 3) {
      Bytes bad = *z;
      bad[i] ^= static_cast<uint8_t>(1 + rng.next() % 255);
      auto out = decompress(c, bad, 1 << 20);
      if (out.ok()) CHECK(out->size() <= (1u << 20));
    }
  }
}

TEST_CASE("gzip: truncated stream and trailing garbage") {
  auto z = gzip_compress(ck_test::payload(), std::nullopt);
  Bytes cut(z->begin(), z->end() - 4);
  CHECK(gzip_decompress(cut, 1 << 20).error() == CompressionError::kCorrupt);
  Bytes trailing = *z;
  trailing.push_back('x');
  CHECK(gzip_decompress(trailing, 1 << 20).error() == CompressionError::kCorrupt);
  Bytes two = *z;
  two.insert(two.end(), z->begin(), z->end());
  auto out = gzip_decompress(two, 1 << 20);
  REQUIRE(out.ok());
  CHECK(out->size() == 2 * ck_test::payload().size());
}

TEST_CASE("snappy: xerial framing as Kafka's Java client writes it") {
  Bytes in(100000, 'q');
  auto x = snappy_compress_xerial(in);
  REQUIRE(x.ok());
  const uint8_t header[] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1};
  REQUIRE(x->size() > sizeof header);
  CHECK(std::equal(std::begin(header), std::end(header), x->begin()));
  CHECK(*snappy_decompress(*x, in.size()) == in);
  auto raw = snappy_compress_raw(in);
  CHECK(*snappy_decompress(*raw, in.size()) == in);
  // Header only: an empty stream.
  Bytes empty(std::begin(header), std::end(header));
  CHECK(snappy_decompress(empty, 10)->empty());
  // A block length past the end.
  Bytes bad = empty;
  bad.insert(bad.end(), {0, 0, 1, 0, 1, 2});
  CHECK(snappy_decompress(bad, 1 << 20).error() == CompressionError::kCorrupt);
}

TEST_CASE("lz4: Kafka magic-0 header checksum is accepted on read") {
  Bytes in = ck_test::payload();
  auto broken = lz4_frame_compress(in, std::nullopt, true);
  REQUIRE(broken.ok());
  CHECK(*lz4_frame_decompress(*broken, in.size()) == in);
  // A checksum that is neither the right nor the Kafka one is rejected.
  Bytes bad = *broken;
  bad[6] ^= 0x55;
  auto correct = lz4_frame_compress(in, std::nullopt, false);
  if (bad[6] != (*correct)[6]) CHECK_FALSE(lz4_frame_decompress(bad, in.size()).ok());
}
