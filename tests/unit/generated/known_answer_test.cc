// tests/unit/generated/known_answer_test.cc: generated codecs against bytes
// written out by hand from the Kafka protocol guide, so the generator is
// checked against an independent encoding and not only against itself.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "protocol/generated/messages.h"

namespace ciuickafka::protocol {
namespace {

using B = std::vector<uint8_t>;

template <class T>
B encode(const T& x, int16_t v) {
  Writer w;
  x.encode(w, v);
  REQUIRE(w.ok());
  CHECK(w.size() == x.compute_size(v));
  return w.release();
}

template <class T>
T decode(const B& bytes, int16_t v) {
  Reader r(bytes);
  T x;
  x.decode(r, v);
  CHECK(r.ok());
  CHECK(r.at_end());
  return x;
}

template <class T>
WireError encode_error(const T& x, int16_t v) {
  Writer w;
  x.encode(w, v);
  return w.error();
}

template <class T>
WireError decode_error(const B& bytes, int16_t v) {
  Reader r(bytes);
  T x;
  x.decode(r, v);
  return r.error();
}

TEST_CASE("known answer: ApiVersionsRequest", "[generated]") {
  ApiVersionsRequest req;
  req.client_software_name = std::string("kcat");
  req.client_software_version = std::string("1.7.0");
  // v3: two compact strings (length + 1 as an unsigned varint), no tags.
  const B v3 = {0x05, 'k', 'c', 'a', 't', 0x06, '1', '.', '7', '.', '0', 0x00};
  CHECK(encode(req, 3) == v3);
  CHECK(decode<ApiVersionsRequest>(v3, 3) == req);
  // v0-v2 have no fields; both are ignorable so they are dropped.
  CHECK(encode(req, 2).empty());
  CHECK(encode(ApiVersionsRequest{}, 3) == B{0x01, 0x01, 0x00});
}

TEST_CASE("known answer: MetadataRequest", "[generated]") {
  MetadataRequest req;
  req.topics = std::vector<MetadataRequest::MetadataRequestTopic>(2);
  (*req.topics)[0].name = "foo";
  (*req.topics)[1].name = "bar";
  // v0: int32 count, then classic strings (int16 length).
  const B v0 = {0, 0, 0, 2, 0, 3, 'f', 'o', 'o', 0, 3, 'b', 'a', 'r'};
  CHECK(encode(req, 0) == v0);
  CHECK(decode<MetadataRequest>(v0, 0) == req);

  // v1 allows a null topic list (all topics): int32 -1. v0 does not.
  MetadataRequest all;
  all.topics.reset();
  CHECK(encode(all, 1) == B{0xFF, 0xFF, 0xFF, 0xFF});
  CHECK(encode_error(all, 0) == WireError::kUnexpectedNull);
  CHECK(decode_error<MetadataRequest>(B{0xFF, 0xFF, 0xFF, 0xFF}, 0) == WireError::kUnexpectedNull);

  // v4 adds AllowAutoTopicCreation (default true, not ignorable).
  MetadataRequest none;
  none.topics = std::vector<MetadataRequest::MetadataRequestTopic>{};
  none.allow_auto_topic_creation = false;
  CHECK(encode(none, 4) == B{0, 0, 0, 0, 0});
  CHECK(encode_error(none, 3) == WireError::kFieldNotInVersion);
  none.allow_auto_topic_creation = true;
  CHECK(encode(none, 3) == B{0, 0, 0, 0});

  // v9 (flexible): compact array, compact strings, tag sections; topic v9 has
  // only Name; then AllowAutoTopicCreation, IncludeClusterAuthorizedOperations
  // (v8-10), IncludeTopicAuthorizedOperations.
  MetadataRequest one;
  one.topics = std::vector<MetadataRequest::MetadataRequestTopic>(1);
  (*one.topics)[0].name = "foo";
  const B v9 = {0x02, 0x04, 'f', 'o', 'o', 0x00, 0x01, 0x00, 0x00, 0x00};
  CHECK(encode(one, 9) == v9);
  CHECK(decode<MetadataRequest>(v9, 9) == one);
}

TEST_CASE("known answer: request and response headers", "[generated]") {
  RequestHeader h;
  h.request_api_key = 3;
  h.request_api_version = 0;
  h.correlation_id = 7;
  CHECK(h.client_id == "");  // no schema default: empty, as in Kafka
  h.client_id.reset();
  // v1: ClientId is a classic nullable string: null is int16 -1.
  const B v1 = {0, 3, 0, 0, 0, 0, 0, 7, 0xFF, 0xFF};
  CHECK(encode(h, 1) == v1);
  CHECK(decode<RequestHeader>(v1, 1) == h);
  // v2 adds a tag section, but ClientId stays a classic string.
  CHECK(encode(h, 2) == B{0, 3, 0, 0, 0, 0, 0, 7, 0xFF, 0xFF, 0x00});
  h.request_api_key = 18;
  h.request_api_version = 3;
  h.correlation_id = 42;
  h.client_id = "abc";
  const B v2 = {0, 18, 0, 3, 0, 0, 0, 42, 0, 3, 'a', 'b', 'c', 0x00};
  CHECK(encode(h, 2) == v2);
  CHECK(decode<RequestHeader>(v2, 2) == h);
  // v0 has no ClientId; the field is ignorable, so it is dropped.
  CHECK(encode(h, 0) == B{0, 18, 0, 3, 0, 0, 0, 42});

  ResponseHeader rh;
  rh.correlation_id = 7;
  CHECK(encode(rh, 0) == B{0, 0, 0, 7});
  CHECK(encode(rh, 1) == B{0, 0, 0, 7, 0});
  CHECK(encode_error(rh, 2) == WireError::kUnsupportedVersion);
}

ApiVersionsResponse sample_api_versions() {
  ApiVersionsResponse resp;
  resp.api_keys.push_back({18, 0, 4, {}});
  resp.finalized_features_epoch = 5;
  return resp;
}

TEST_CASE("known answer: ApiVersionsResponse tagged fields", "[generated]") {
  ApiVersionsResponse resp = sample_api_versions();
  resp.unknown_tagged_fields.push_back(TaggedField{9, Bytes{0xAA}});
  // error_code, compact array of (key, min, max, tags), throttle_time_ms, then
  // two tagged fields in tag order: FinalizedFeaturesEpoch (tag 1, 8 bytes)
  // and the unknown tag 9.
  const B v3 = {0, 0,                                            // error_code
                0x02, 0, 18, 0, 0, 0, 4, 0x00,                   // api_keys
                0, 0, 0, 0,                                      // throttle_time_ms
                0x02,                                            // 2 tagged fields
                0x01, 0x08, 0, 0, 0, 0, 0, 0, 0, 5,              // tag 1
                0x09, 0x01, 0xAA};                               // tag 9
  CHECK(encode(resp, 3) == v3);
  CHECK(decode<ApiVersionsResponse>(v3, 3) == resp);

  // v0: classic array, no throttle time; the tagged fields are ignorable.
  ApiVersionsResponse plain = sample_api_versions();
  CHECK(encode(plain, 0) == B{0, 0, 0, 0, 0, 1, 0, 18, 0, 0, 0, 4});

  // An unknown field may not reuse a known tag that is being written.
  ApiVersionsResponse clash = sample_api_versions();
  clash.unknown_tagged_fields.push_back(TaggedField{1, Bytes{0}});
  CHECK(encode_error(clash, 3) == WireError::kBadTaggedFields);
}

TEST_CASE("known answer: malformed tag sections", "[generated]") {
  const B head = {0, 0, 0x01, 0, 0, 0, 0};  // error, empty keys, throttle
  auto with = [&](B tail) {
    B b = head;
    b.insert(b.end(), tail.begin(), tail.end());
    return b;
  };
  // Tags out of order, duplicated, a known tag with bytes left over or
  // missing, a size past the end.
  CHECK(decode_error<ApiVersionsResponse>(with({2, 1, 8, 0, 0, 0, 0, 0, 0, 0, 5, 0, 1, 1}), 3) ==
        WireError::kBadTaggedFields);
  CHECK(decode_error<ApiVersionsResponse>(with({2, 9, 1, 0xAA, 9, 1, 0xBB}), 3) ==
        WireError::kBadTaggedFields);
  CHECK(decode_error<ApiVersionsResponse>(with({1, 1, 9, 0, 0, 0, 0, 0, 0, 0, 5, 0}), 3) ==
        WireError::kBadTaggedFields);
  CHECK(decode_error<ApiVersionsResponse>(with({1, 1, 4, 0, 0, 0, 5}), 3) ==
        WireError::kBadTaggedFields);
  CHECK(decode_error<ApiVersionsResponse>(with({1, 9, 5, 1}), 3) == WireError::kTruncated);
  // Well-formed: the known tag decodes, an unknown one is kept.
  auto ok = decode<ApiVersionsResponse>(with({2, 1, 8, 0, 0, 0, 0, 0, 0, 0, 5, 7, 0}), 3);
  CHECK(ok.finalized_features_epoch == 5);
  REQUIRE(ok.unknown_tagged_fields.size() == 1);
  CHECK(ok.unknown_tagged_fields[0].tag == 7);
}

TEST_CASE("known answer: forged array counts fail before allocating", "[generated]") {
  CHECK(decode_error<MetadataRequest>(B{0x7F, 0xFF, 0xFF, 0xFF, 0, 1, 'x'}, 0) ==
        WireError::kLengthTooLarge);
  CHECK(decode_error<MetadataRequest>(B{0xFF, 0xFF, 0xFF, 0xFF, 0x07, 0, 0, 0}, 9) ==
        WireError::kLengthTooLarge);
  CHECK(decode_error<MetadataRequest>(B{0xFF, 0xFF, 0xFF, 0xFE}, 1) == WireError::kNegativeLength);
}

TEST_CASE("known answer: nullable struct (DescribeTopicPartitionsRequest)", "[generated]") {
  DescribeTopicPartitionsRequest req;
  req.topics.push_back({"t", {}});
  CHECK(req.response_partition_limit == 2000);
  // Compact array of one topic, int32 limit, a null cursor (int8 -1), tags.
  const B null_cursor = {0x02, 0x02, 't', 0x00, 0, 0, 0x07, 0xD0, 0xFF, 0x00};
  CHECK(encode(req, 0) == null_cursor);
  CHECK(decode<DescribeTopicPartitionsRequest>(null_cursor, 0) == req);
  req.cursor = DescribeTopicPartitionsRequest::Cursor{"t", 3, {}};
  const B cursor = {0x02, 0x02, 't', 0x00, 0, 0, 0x07, 0xD0, 0x01, 0x02, 't', 0, 0, 0, 3, 0x00, 0x00};
  CHECK(encode(req, 0) == cursor);
  CHECK(decode<DescribeTopicPartitionsRequest>(cursor, 0) == req);
}

TEST_CASE("known answer: ProduceRequest carries records as opaque bytes", "[generated]") {
  static const uint8_t kRecords[] = {1, 2, 3};
  ProduceRequest req;
  req.acks = -1;
  req.timeout_ms = 1000;
  auto& topic = req.topic_data.emplace_back();
  topic.name = std::string("t");  // not = "t": g++ 12 -O3 -Wrestrict false positive
  auto& part = topic.partition_data.emplace_back();
  part.index = 0;
  part.records = Records(std::span<const uint8_t>(kRecords));
  const B v3 = {0xFF, 0xFF,                          // transactional_id null
                0xFF, 0xFF, 0, 0, 0x03, 0xE8,        // acks, timeout
                0, 0, 0, 1, 0, 1, 't',               // one topic "t"
                0, 0, 0, 1, 0, 0, 0, 0,              // one partition, index 0
                0, 0, 0, 3, 1, 2, 3};                // records
  CHECK(encode(req, 3) == v3);
  ProduceRequest back = decode<ProduceRequest>(v3, 3);
  CHECK(back == req);
  // The decoded records are a view into the input.
  CHECK(back.topic_data[0].partition_data[0].records.bytes.data() == v3.data() + v3.size() - 3);
  const B v9 = {0x00, 0xFF, 0xFF, 0, 0, 0x03, 0xE8, 0x02, 0x02, 't',
                0x02, 0, 0, 0, 0, 0x04, 1, 2, 3, 0x00, 0x00, 0x00};
  CHECK(encode(req, 9) == v9);
  CHECK(decode<ProduceRequest>(v9, 9) == req);
  // TransactionalId exists from v3 and is not ignorable.
  req.transactional_id = "tx";
  CHECK(encode_error(req, 2) == WireError::kFieldNotInVersion);
  // Unknown tagged fields cannot be sent before the flexible versions.
  ProduceRequest tagged;
  tagged.unknown_tagged_fields.push_back(TaggedField{3, Bytes{}});
  CHECK(encode_error(tagged, 8) == WireError::kFieldNotInVersion);
  CHECK(encode_error(tagged, 12) == WireError::kUnsupportedVersion);
}

TEST_CASE("known answer: tagged non-ignorable field in an older version", "[generated]") {
  // ProduceResponse.PartitionProduceResponse.CurrentLeader: tag 0 from v10.
  ProduceResponse resp;
  auto& p = resp.responses.emplace_back().partition_responses.emplace_back();
  p.current_leader.leader_id = 1;
  CHECK(encode_error(resp, 9) == WireError::kFieldNotInVersion);
  Writer w;
  resp.encode(w, 10);
  CHECK(w.ok());
}

}  // namespace
}  // namespace ciuickafka::protocol
