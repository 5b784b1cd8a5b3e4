// tests/golden/golden_test.cc: the generated request codecs against bytes
// that real clients sent.
//
// Every frame under tests/data/golden (kcat/librdkafka, kafka-python,
// confluent-kafka-python, kafkajs, sarama; see the README there) must
//  - decode as RequestHeader (version from request_header_version) + the
//    generated body type, ending exactly at the end of the frame;
//  - re-encode byte-identical, with compute_size agreeing;
//  - carry the fields the capture drivers set (client id, topic, ...);
//  - fail to decode when truncated anywhere;
//  - decode or fail, never crash, with any single byte bit-flipped; what
//    still decodes must re-encode and decode back to the same message.
// The record batches inside Produce frames are checked in
// golden_records_test.cc.
#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "protocol/generated/api_keys.h"
#include "protocol/generated/messages.h"
#include "protocol/wire/reader.h"
#include "protocol/wire/writer.h"
#include "tests/golden/golden_data.h"

namespace {

using namespace ciuickafka::protocol;
using ciuickafka::golden::Frame;

// Fields are optional in the versions where the schema makes them nullable;
// these read both shapes.
template <class T>
const T& unwrap(const T& v) {
  return v;
}
template <class T>
const T& unwrap(const std::optional<T>& v) {
  REQUIRE(v.has_value());
  return *v;
}
template <class T>
bool is_null(const T&) {
  return false;
}
template <class T>
bool is_null(const std::optional<T>& v) {
  return !v.has_value();
}

bool version_known(int16_t key, int16_t version) {
  const ApiInfo* api = find_api(key);
  return api != nullptr && version >= api->min_version && version <= api->max_version;
}

// One decode attempt of header + body as (key, version).
struct Attempt {
  bool known = false;      // (key, version) names a generated request
  bool decoded = false;    // reader ok and exactly at the end
  bool encode_ok = false;  // re-encoding reported no error
  bool size_ok = false;    // compute_size() matched the re-encoded size
  bool stable = false;     // decode(re-encoded) == decoded
  std::vector<uint8_t> reencoded;
};

Attempt attempt(std::span<const uint8_t> bytes, int16_t key, int16_t version, bool reencode) {
  Attempt a;
  if (!version_known(key, version)) return a;
  const int16_t hv = request_header_version(key, version);
  a.known = visit_request_type(key, [&](auto tag) {
    using Req = typename decltype(tag)::type;
    Reader r(bytes);
    RequestHeader header;
    header.decode(r, hv);
    Req body;
    body.decode(r, version);
    a.decoded = r.ok() && r.at_end();
    if (!a.decoded || !reencode) return;
    Writer w;
    header.encode(w, hv);
    body.encode(w, version);
    a.encode_ok = w.ok();
    a.size_ok = header.compute_size(hv) + body.compute_size(version) == w.size();
    a.reencoded = w.release();
    Reader r2(a.reencoded);
    RequestHeader header2;
    header2.decode(r2, hv);
    Req body2;
    body2.decode(r2, version);
    a.stable = r2.ok() && r2.at_end() && header2 == header && body2 == body;
  });
  return a;
}

// Decodes a golden frame as a known type (for the field checks). The
// message's views point into frame.bytes.
template <class Req>
Req decode_as(const Frame& f, RequestHeader* header) {
  Reader r(f.bytes);
  header->decode(r, request_header_version(f.api_key(), f.api_version()));
  Req body;
  body.decode(r, f.api_version());
  REQUIRE(r.ok());
  REQUIRE(r.at_end());
  return body;
}

void check_header(const Frame& f, const RequestHeader& h) {
  CHECK(h.request_api_key == f.api_key());
  CHECK(h.request_api_version == f.file_version);
  CHECK(h.correlation_id >= 0);
  // Each driver names its client "<client>-...golden".
  REQUIRE_FALSE(is_null(h.client_id));
  const std::string id = unwrap(h.client_id);
  CHECK(id.rfind(f.client + "-", 0) == 0);
  CHECK(id.find("golden") != std::string::npos);
}

void check_fields(const Frame& f) {
  RequestHeader h;
  switch (f.api_key()) {
    case 0: {
      auto req = decode_as<ProduceRequest>(f, &h);
      if (f.api_version() >= 3) CHECK(is_null(req.transactional_id));
      CHECK((req.acks == 1 || req.acks == -1));
      CHECK(req.timeout_ms > 0);
      REQUIRE(req.topic_data.size() == 1);
      CHECK(unwrap(req.topic_data[0].name) == "golden");
      REQUIRE(req.topic_data[0].partition_data.size() == 1);
      const auto& p = req.topic_data[0].partition_data[0];
      CHECK(p.index == 0);
      CHECK_FALSE(p.records.null);
      CHECK(p.records.size() > 0);
      break;
    }
    case 3: {
      auto req = decode_as<MetadataRequest>(f, &h);
      if (f.scenario == "metadata") {  // kcat -L: all topics
        CHECK((is_null(req.topics) || unwrap(req.topics).empty()));
      }
      if (!is_null(req.topics)) {
        for (const auto& t : unwrap(req.topics)) CHECK(unwrap(t.name) == "golden");
      }
      break;
    }
    case 18: {
      auto req = decode_as<ApiVersionsRequest>(f, &h);
      if (f.api_version() >= 3) {
        CHECK_FALSE(req.client_software_name.empty());
        CHECK_FALSE(req.client_software_version.empty());
      }
      break;
    }
    case 19: {
      auto req = decode_as<CreateTopicsRequest>(f, &h);
      REQUIRE(req.topics.size() == 1);
      CHECK(req.topics[0].name == "golden-created");
      CHECK(req.topics[0].num_partitions == 3);
      CHECK(req.topics[0].replication_factor == 1);
      REQUIRE(req.topics[0].configs.size() == 1);
      CHECK(req.topics[0].configs[0].name == "cleanup.policy");
      CHECK(unwrap(req.topics[0].configs[0].value) == "compact");
      break;
    }
    case 22: {
      auto req = decode_as<InitProducerIdRequest>(f, &h);
      CHECK(is_null(req.transactional_id));
      // librdkafka's idempotent (non-transactional) producer sends -1.
      CHECK((req.transaction_timeout_ms > 0 || req.transaction_timeout_ms == -1));
      if (f.api_version() >= 3) {
        CHECK(req.producer_id == -1);
        CHECK(req.producer_epoch == -1);
      }
      break;
    }
    default:
      FAIL("no field checks for api key " << f.api_key());
  }
  check_header(f, h);
}

}  // namespace

TEST_CASE("golden: the data set covers four independent client implementations") {
  std::set<std::string> clients;
  for (const auto& s : ciuickafka::golden::scenarios()) clients.insert(s.client);
  CHECK(clients.count("kcat") == 1);  // librdkafka
  CHECK(clients.count("kafka-python") == 1);
  CHECK(clients.count("kafkajs") == 1);
  CHECK(clients.count("sarama") == 1);
  CHECK(ciuickafka::golden::all_frames().size() >= 40);
}

TEST_CASE("golden: frames decode and re-encode byte-identical") {
  for (const Frame* f : ciuickafka::golden::all_frames()) {
    INFO(f->path());
    REQUIRE(f->bytes.size() >= 8);
    CHECK(f->api_version() == f->file_version);
    const ApiInfo* api = find_api(f->api_key());
    REQUIRE(api != nullptr);
    CHECK(f->file.find(std::string("_") + std::string(api->name) + "_v") != std::string::npos);
    Attempt a = attempt(f->bytes, f->api_key(), f->api_version(), true);
    REQUIRE(a.known);
    REQUIRE(a.decoded);
    CHECK(a.encode_ok);
    CHECK(a.size_ok);
    CHECK(a.stable);
    CHECK(a.reencoded == f->bytes);
    check_fields(*f);
  }
}

TEST_CASE("golden: every truncation of every frame fails to decode") {
  for (const Frame* f : ciuickafka::golden::all_frames()) {
    INFO(f->path());
    const size_t n = f->bytes.size();
    // Every prefix of small frames; for large ones every prefix of the
    // first and last 512 bytes and a stride between.
    for (size_t len = 0; len < n; len += (n < 2048 || len < 512 || len + 512 >= n) ? 1 : 7) {
      INFO("prefix length " << len);
      Attempt a = attempt(std::span<const uint8_t>(f->bytes.data(), len), f->api_key(),
                          f->api_version(), false);
      CHECK_FALSE(a.decoded);
    }
  }
}

TEST_CASE("golden: bit-flipped frames decode or fail, and never crash") {
  size_t tried = 0, decoded = 0;
  for (const Frame* f : ciuickafka::golden::all_frames()) {
    INFO(f->path());
    std::vector<uint8_t> bytes = f->bytes;
    for (size_t i = 0; i < bytes.size(); ++i) {
      for (int bit : {0, 3, 7}) {
        bytes[i] ^= static_cast<uint8_t>(1u << bit);
        // The API key and version are read from the mutated bytes, so flips
        // in the first four bytes try other decoders on this body.
        const auto key = static_cast<int16_t>((bytes[0] << 8) | bytes[1]);
        const auto version = static_cast<int16_t>((bytes[2] << 8) | bytes[3]);
        Attempt a = attempt(bytes, key, version, true);
        ++tried;
        if (a.decoded) {
          ++decoded;
          INFO("byte " << i << " bit " << bit);
          CHECK(a.encode_ok);
          CHECK(a.size_ok);
          CHECK(a.stable);
        }
        bytes[i] ^= static_cast<uint8_t>(1u << bit);
      }
    }
  }
  // Most flips land in values (lengths aside), which decode fine.
  CHECK(decoded > 0);
  CHECK(decoded < tried);
}
