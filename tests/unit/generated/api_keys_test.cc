// tests/unit/generated/api_keys_test.cc: the generated API table, header
// version rules and type visitor; and the tagged-field merge order of
// codec_support, which the sample round trips cannot reach (an unknown tag
// below a known one).
#include <catch2/catch.hpp>

#include <string>
#include <type_traits>
#include <vector>

#include "protocol/generated/messages.h"
#include "protocol/wire/codec_support.h"

namespace ciuickafka::protocol {
namespace {

TEST_CASE("api keys: table", "[generated]") {
  auto apis = all_apis();
  REQUIRE(apis.size() == 88);
  for (size_t i = 0; i < apis.size(); ++i) {
    CHECK(apis[i].key == static_cast<int16_t>(i));
    CHECK(find_api(apis[i].key) == &apis[i]);
    CHECK(apis[i].min_version == 0);
  }
  CHECK(find_api(-1) == nullptr);
  CHECK(find_api(88) == nullptr);
  const ApiInfo* produce = find_api(0);
  CHECK(produce->name == "Produce");
  CHECK(produce->max_version == 11);
  CHECK(produce->first_flexible_version == 9);
  CHECK(find_api(17)->first_flexible_version == -1);  // SaslHandshake
  CHECK(find_api(18)->name == "ApiVersions");
  CHECK(find_api(87)->name == "ReadShareGroupStateSummary");
}

TEST_CASE("api keys: table agrees with the message types", "[generated]") {
  for (const ApiInfo& api : all_apis()) {
    INFO(api.name);
    bool seen = false;
    CHECK(visit_request_type(api.key, [&](auto t) {
      using T = typename decltype(t)::type;
      seen = true;
      CHECK(T::kApiKey == api.key);
      CHECK(T::kLowestVersion == api.min_version);
      CHECK(T::kHighestVersion == api.max_version);
      CHECK(T::kFirstFlexibleVersion == api.first_flexible_version);
    }));
    CHECK(visit_response_type(api.key, [&](auto t) {
      using T = typename decltype(t)::type;
      CHECK(T::kApiKey == api.key);
      CHECK(T::kHighestVersion == api.max_version);
    }));
    CHECK(seen);
  }
  CHECK_FALSE(visit_request_type(88, [](auto) {}));
  CHECK_FALSE(visit_response_type(-1, [](auto) {}));
  bool is_produce = false;
  visit_request_type(0, [&](auto t) {
    is_produce = std::is_same_v<typename decltype(t)::type, ProduceRequest>;
  });
  CHECK(is_produce);
}

TEST_CASE("api keys: header versions", "[generated]") {
  CHECK(request_header_version(0, 8) == 1);
  CHECK(request_header_version(0, 9) == 2);
  CHECK(request_header_version(7, 0) == 0);  // ControlledShutdown v0
  CHECK(request_header_version(7, 1) == 1);
  CHECK(request_header_version(7, 3) == 2);
  CHECK(request_header_version(17, 1) == 1);  // SaslHandshake: never flexible
  CHECK(request_header_version(18, 3) == 2);
  CHECK(response_header_version(18, 3) == 0);  // ApiVersions: always v0
  CHECK(response_header_version(18, 0) == 0);
  CHECK(response_header_version(3, 8) == 0);
  CHECK(response_header_version(3, 9) == 1);
  CHECK(request_header_version(88, 0) == -1);
  CHECK(response_header_version(-1, 0) == -1);
}

TEST_CASE("codec support: tagged fields merge in tag order", "[generated]") {
  UnknownTaggedFields unknown = {TaggedField{9, Bytes{0x99}}, TaggedField{2, Bytes{0x22}}};
  Writer w;
  codec::TaggedWriter tw(w, unknown, 2);
  tw.field(0, 1);
  w.write_int8(0x00);
  tw.field(5, 1);
  w.write_int8(0x55);
  tw.finish();
  CHECK(w.ok());
  CHECK(w.buffer() == std::vector<uint8_t>{4, 0, 1, 0x00, 2, 1, 0x22, 5, 1, 0x55, 9, 1, 0x99});
  CHECK(codec::unknown_tagged_size(unknown) == 6);

  UnknownTaggedFields dup = {TaggedField{3, {}}, TaggedField{3, {}}};
  Writer w2;
  codec::TaggedWriter tw2(w2, dup, 0);
  tw2.finish();
  CHECK(w2.error() == WireError::kBadTaggedFields);
}

}  // namespace
}  // namespace ciuickafka::protocol
