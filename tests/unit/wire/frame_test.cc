// FrameDecoder: frames arrive in pieces; oversized and negative sizes are
// rejected before any allocation of that size.
#include <catch2/catch.hpp>

#include <vector>

#include "protocol/wire/frame.h"

using namespace ciuickafka::protocol;

TEST_CASE("a frame fed one byte at a time") {
  std::vector<uint8_t> wire = {0, 0, 0, 3, 'a', 'b', 'c', 0, 0, 0, 1, 'z'};
  FrameDecoder d(1024);
  std::vector<std::vector<uint8_t>> frames;
  for (uint8_t b : wire) {
    CHECK(d.feed(std::span<const uint8_t>(&b, 1)) == 1);
    if (d.frame_ready()) frames.push_back(d.take_frame());
  }
  REQUIRE(frames.size() == 2);
  CHECK(frames[0] == std::vector<uint8_t>{'a', 'b', 'c'});
  CHECK(frames[1] == std::vector<uint8_t>{'z'});
  CHECK(d.error() == WireError::kNone);
}

TEST_CASE("two frames in one read are split at the boundary") {
  std::vector<uint8_t> wire = {0, 0, 0, 1, 'x', 0, 0, 0, 0};
  FrameDecoder d(1024);
  size_t used = d.feed(wire);
  CHECK(used == 5);
  REQUIRE(d.frame_ready());
  CHECK(d.take_frame() == std::vector<uint8_t>{'x'});
  used += d.feed(std::span<const uint8_t>(wire).subspan(used));
  CHECK(used == wire.size());
  REQUIRE(d.frame_ready());
  CHECK(d.take_frame().empty());
}

TEST_CASE("oversized frame is refused from its size alone") {
  std::vector<uint8_t> wire = {0x7f, 0xff, 0xff, 0xff};
  FrameDecoder d(100 * 1024 * 1024);
  d.feed(wire);
  CHECK(d.error() == WireError::kFrameTooLarge);
  CHECK_FALSE(d.frame_ready());
  std::vector<uint8_t> more = {1, 2, 3};
  CHECK(d.feed(more) == 0);
}

TEST_CASE("negative frame size is an error") {
  std::vector<uint8_t> wire = {0xff, 0xff, 0xff, 0xfe};
  FrameDecoder d(1024);
  d.feed(wire);
  CHECK(d.error() == WireError::kNegativeLength);
}

TEST_CASE("parse_frame_size needs four bytes") {
  std::vector<uint8_t> three = {0, 0, 1};
  WireError err;
  CHECK_FALSE(parse_frame_size(three, 10, err));
  CHECK(err == WireError::kTruncated);
  std::vector<uint8_t> ok = {0, 0, 0, 10};
  CHECK(parse_frame_size(ok, 10, err) == 10);
  CHECK(err == WireError::kNone);
}
