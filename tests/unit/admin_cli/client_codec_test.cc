// The pure client codec: a request frame has the size prefix and the header
// version api_keys.h prescribes; a response frame decodes, and a wrong
// correlation id, truncation or trailing bytes are reported, not thrown;
// version negotiation picks the highest common version.
#include <catch2/catch.hpp>

#include "protocol/client/client_codec.h"
#include "protocol/generated/metadata.h"

using namespace ciuickafka::protocol;
using namespace ciuickafka::protocol::client;

TEST_CASE("client codec: request frame round-trips through the broker's header parser") {
  MetadataRequest req;
  req.topics = std::nullopt;
  WireError e = WireError::kTruncated;
  auto frame = encode_request_frame(req, 12, 77, "cli", &e);
  REQUIRE(e == WireError::kNone);
  REQUIRE(frame.size() > 4);
  const uint32_t size = (uint32_t{frame[0]} << 24) | (frame[1] << 16) | (frame[2] << 8) | frame[3];
  CHECK(size == frame.size() - 4);
  Reader r(std::span<const uint8_t>(frame).subspan(4));
  RequestHeader h;
  h.decode(r, request_header_version(MetadataRequest::kApiKey, 12));
  CHECK(h.request_api_key == 3);
  CHECK(h.request_api_version == 12);
  CHECK(h.correlation_id == 77);
  CHECK(h.client_id == std::optional<std::string>("cli"));
  MetadataRequest back;
  back.decode(r, 12);
  CHECK(r.ok());
  CHECK(r.at_end());
  CHECK_FALSE(back.topics.has_value());

  auto none = encode_request_frame(req, 13, 1, "cli", &e);
  CHECK(none.empty());
  CHECK(e == WireError::kUnsupportedVersion);
}

TEST_CASE("client codec: response decode and its failures") {
  ApiVersionsResponse resp;
  resp.api_keys.push_back({3, 0, 12, {}});
  resp.api_keys.push_back({19, 2, 5, {}});
  Writer w;
  ResponseHeader h;
  h.correlation_id = 9;
  h.encode(w, response_header_version(ApiVersionsResponse::kApiKey, 3));
  resp.encode(w, 3);
  auto bytes = w.release();

  ApiVersionsResponse got;
  auto ok = decode_response_frame(bytes, 3, 9, &got);
  REQUIRE(ok.ok());
  CHECK(got.api_keys.size() == 2);

  ApiVersionsResponse other;
  auto mismatch = decode_response_frame(bytes, 3, 10, &other);
  CHECK(mismatch.status == DecodeStatus::kCorrelationMismatch);
  CHECK(describe(mismatch).find("correlation id 9") != std::string::npos);

  std::vector<uint8_t> cut(bytes.begin(), bytes.end() - 3);
  auto trunc = decode_response_frame(cut, 3, 9, &other);
  CHECK(trunc.status == DecodeStatus::kWireError);

  auto extra = bytes;
  extra.push_back(0);
  CHECK(decode_response_frame(extra, 3, 9, &other).status == DecodeStatus::kTrailingBytes);

  auto table = VersionTable::from_response(got);
  CHECK(table.pick<MetadataRequest>() == std::optional<int16_t>(12));
  CHECK(table.pick(19, 0, 7) == std::optional<int16_t>(5));
  CHECK(table.pick(19, 6, 7) == std::nullopt);  // ranges do not meet
  CHECK(table.pick(44, 0, 1) == std::nullopt);  // API unknown to the broker
  CHECK(table.pick_at_most<MetadataRequest>(4) == std::optional<int16_t>(4));
}
