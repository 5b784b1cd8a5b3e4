// parse_request_header: the header version follows the API and version, and
// unknown APIs or versions are still decoded far enough to answer.
#include <catch2/catch.hpp>

#include <vector>

#include "protocol/request.h"

using namespace ciuickafka::protocol;

TEST_CASE("flexible request: header v2, body starts after the tagged fields") {
  // ApiVersions v3: key 18, version 3, correlation 7, client id "ab", no tags.
  std::vector<uint8_t> frame = {0x00, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x07,
                                0x00, 0x02, 'a',  'b',  0x00, /* body */ 0x01, 0x01, 0x00};
  ParsedRequestHeader h;
  REQUIRE(parse_request_header(frame, h) == WireError::kNone);
  CHECK(h.known_api);
  CHECK(h.supported_version);
  CHECK(h.header_version == 2);
  CHECK(h.header.correlation_id == 7);
  CHECK(h.header.client_id == std::optional<std::string>("ab"));
  CHECK(h.body_offset == 13);
}

TEST_CASE("classic request: header v1 with a null client id") {
  // Metadata v1: key 3, version 1, correlation 1, client id null.
  std::vector<uint8_t> frame = {0x00, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0xff, 0xff,
                                /* body */ 0xff, 0xff, 0xff, 0xff};
  ParsedRequestHeader h;
  REQUIRE(parse_request_header(frame, h) == WireError::kNone);
  CHECK(h.header_version == 1);
  CHECK_FALSE(h.header.client_id.has_value());
  CHECK(h.body_offset == 10);
}

TEST_CASE("ControlledShutdown v0 uses request header v0 (no client id)") {
  std::vector<uint8_t> frame = {0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05,
                                /* body: broker id */ 0x00, 0x00, 0x00, 0x01};
  ParsedRequestHeader h;
  REQUIRE(parse_request_header(frame, h) == WireError::kNone);
  CHECK(h.header_version == 0);
  CHECK(h.body_offset == 8);
}

TEST_CASE("unknown API key and too-new version are flagged, header still read") {
  std::vector<uint8_t> unknown = {0x03, 0xe7, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, 0x00, 0x00};
  ParsedRequestHeader h;
  REQUIRE(parse_request_header(unknown, h) == WireError::kNone);
  CHECK_FALSE(h.known_api);
  CHECK(h.header.correlation_id == 9);

  // ApiVersions v99: what a newer client sends first; Kafka answers v0.
  std::vector<uint8_t> too_new = {0x00, 0x12, 0x00, 0x63, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00};
  REQUIRE(parse_request_header(too_new, h) == WireError::kNone);
  CHECK(h.known_api);
  CHECK_FALSE(h.supported_version);
  CHECK(h.header.correlation_id == 2);
}

TEST_CASE("truncated headers are errors") {
  std::vector<uint8_t> frame = {0x00, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x05, 'a'};
  for (size_t n = 0; n < frame.size(); ++n) {
    ParsedRequestHeader h;
    CHECK(parse_request_header(std::span<const uint8_t>(frame.data(), n), h) != WireError::kNone);
  }
}
