// tests/unit/generated/round_trip_test.cc: every generated message, every
// version, round-tripped.
//
// For each API key (one TEST_CASE each, request and response, all versions)
// and each header and internal record schema: fill every field present in the
// version with a non-default value (the generated fill_sample), encode, check
// compute_size, decode, compare. Then: every truncation of the encoding must
// fail to decode; a non-ignorable field the version lacks must fail the
// encode with kFieldNotInVersion while an ignorable one is dropped; unknown
// tagged fields in a non-flexible version fail; versions outside the range
// fail with kUnsupportedVersion; corrupted encodings that still decode must
// re-encode to a fixed point.
//
// The checks work on the type-erased testing::SampleMessage, so they are
// compiled once, not once per message type (this file's compile time matters
// in CI); the per-type code lives in the generated testing/samples_N.cc.
#include <catch2/catch.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "protocol/generated/testing/samples.h"

namespace ciuickafka::protocol {
namespace {

using Buf = std::vector<uint8_t>;
using Message = testing::SampleMessage;
using Type = testing::SampleType;

Buf encode_ok(const Message& x, int16_t v) {
  Writer w;
  x.encode(w, v);
  CHECK(w.ok());
  CHECK(w.size() == x.compute_size(v));
  return w.release();
}

// Decodes every prefix (all of them for small encodings, about 300 spread
// over large ones, always the last) and counts those that decode cleanly.
int truncations_that_decode(const Type& t, const Buf& buf, int16_t v) {
  std::vector<size_t> lengths;
  const size_t step = buf.size() <= 512 ? 1 : buf.size() / 300 + 1;
  for (size_t n = 0; n < buf.size(); n += step) lengths.push_back(n);
  if (!buf.empty()) lengths.push_back(buf.size() - 1);
  int bad = 0;
  for (size_t n : lengths) {
    Reader r(std::span<const uint8_t>(buf.data(), n));
    t.make()->decode(r, v);
    if (r.ok()) ++bad;
  }
  return bad;
}

// Corrupts `buf` in a few deterministic ways (changed bytes, flipped bits,
// inserted bytes); whatever decodes must re-encode cleanly to a fixed point,
// with compute_size agreeing. Under ASan/UBSan this also checks that decoding
// garbage never reads out of bounds.
int unstable_mutations(const Type& t, const Buf& buf, int16_t v) {
  uint32_t state = 0x9E3779B9u ^ static_cast<uint32_t>(buf.size() * 31 + static_cast<size_t>(v));
  auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    return state;
  };
  int unstable = 0;
  for (int round = 0; round < 24 && !buf.empty(); ++round) {
    Buf m = buf;
    const size_t at = next() % m.size();
    switch (round % 3) {
      case 0: m[at] = static_cast<uint8_t>(next()); break;
      case 1: m[at] ^= static_cast<uint8_t>(1u << (next() % 8)); break;
      default: m.insert(m.begin() + static_cast<std::ptrdiff_t>(at), static_cast<uint8_t>(next()));
    }
    Reader r(m);
    auto y = t.make();
    y->decode(r, v);
    if (!r.ok()) continue;
    Writer w1;
    y->encode(w1, v);
    if (!w1.ok() || w1.size() != y->compute_size(v)) {
      ++unstable;
      continue;
    }
    // Compared as bytes, not with ==: a corrupted float64 may be a NaN.
    Reader r2(w1.buffer());
    auto z = t.make();
    z->decode(r2, v);
    Writer w2;
    z->encode(w2, v);
    if (!r2.ok() || !r2.at_end() || w2.buffer() != w1.buffer()) ++unstable;
  }
  return unstable;
}

void check_version(const Type& t, int16_t v) {
  INFO(t.name << " v" << v);
  auto x = t.make();
  x->fill(v);
  const Buf buf = encode_ok(*x, v);

  Reader r(buf);
  auto y = t.make();
  y->decode(r, v);
  CHECK(r.ok());
  CHECK(r.at_end());
  CHECK(y->equals(*x));
  CHECK(truncations_that_decode(t, buf, v) == 0);
  CHECK(unstable_mutations(t, buf, v) == 0);

  // A default-constructed message, where the version allows its nulls.
  auto d = t.make();
  Writer wd;
  d->encode(wd, v);
  if (wd.ok()) {
    CHECK(wd.size() == d->compute_size(v));
    Reader rd(wd.buffer());
    auto d2 = t.make();
    d2->decode(rd, v);
    CHECK((rd.ok() && rd.at_end() && d2->equals(*d)));
  } else {
    CHECK(wd.error() == WireError::kUnexpectedNull);
  }

  for (int i = 0;; ++i) {
    auto a = t.make();
    a->fill(v);
    if (!a->set_absent(v, i, /*ignorable=*/false)) break;
    Writer wa;
    a->encode(wa, v);
    INFO("non-ignorable absent field #" << i);
    CHECK(wa.error() == WireError::kFieldNotInVersion);
  }
  for (int i = 0;; ++i) {
    auto a = t.make();
    a->fill(v);
    if (!a->set_absent(v, i, /*ignorable=*/true)) break;
    INFO("ignorable absent field #" << i);
    CHECK(encode_ok(*a, v) == buf);  // dropped: same bytes as without it
  }

  if (t.first_flexible_version < 0 || v < t.first_flexible_version) {
    auto u = t.make();
    u->fill(v);
    if (u->add_unknown_tag()) {
      Writer wu;
      u->encode(wu, v);
      CHECK(wu.error() == WireError::kFieldNotInVersion);
    }
  }
}

int check_all(const Type& t) {
  int versions = 0;
  for (int16_t v = t.lowest_version; v <= t.highest_version; ++v) {
    check_version(t, v);
    ++versions;
  }
  INFO(t.name);
  const auto above = static_cast<int16_t>(t.highest_version + 1);
  auto x = t.make();
  Writer w;
  x->encode(w, above);
  CHECK(w.error() == WireError::kUnsupportedVersion);
  CHECK(x->compute_size(above) == 0);
  const Buf buf = encode_ok(*x, t.highest_version);
  Reader r(buf);
  x->decode(r, -1);
  CHECK(r.error() == WireError::kUnsupportedVersion);
  return versions;
}

const Type& find(const char* name) {
  const Type* t = testing::find_sample_type(name);
  INFO(name);
  REQUIRE(t != nullptr);
  return *t;
}

#define CK_API(key, Name, Request, Response)                                 \
  TEST_CASE("round trip: API " #key " " #Name, "[generated]") {              \
    const Type& request = find(#Request);                                    \
    const Type& response = find(#Response);                                  \
    CHECK(request.api_key == key);                                           \
    CHECK(response.api_key == key);                                          \
    const int request_versions = check_all(request);                         \
    CHECK(request_versions == check_all(response));                          \
  }
#define CK_MESSAGE(M) \
  TEST_CASE("round trip: " #M, "[generated]") { CHECK(check_all(find(#M)) > 0); }
#include "protocol/generated/testing/message_list.inc"
#undef CK_API
#undef CK_MESSAGE

// The list above must cover every API key: the generator emits one CK_API
// line per key.
TEST_CASE("round trip: the message list covers every API key", "[generated]") {
  std::vector<int> keys;
#define CK_API(key, Name, Request, Response) keys.push_back(key);
#define CK_MESSAGE(M)
#include "protocol/generated/testing/message_list.inc"
#undef CK_API
#undef CK_MESSAGE
  REQUIRE(keys.size() == 88);
  for (size_t i = 0; i < keys.size(); ++i) CHECK(keys[i] == static_cast<int>(i));
  // Every sample type is in the list: 88 requests, 88 responses, 2 headers
  // and the internal records.
  size_t messages = 2 * keys.size();
#define CK_API(key, Name, Request, Response)
#define CK_MESSAGE(M) ++messages;
#include "protocol/generated/testing/message_list.inc"
#undef CK_API
#undef CK_MESSAGE
  CHECK(testing::all_sample_types().size() == messages);
}

}  // namespace
}  // namespace ciuickafka::protocol
