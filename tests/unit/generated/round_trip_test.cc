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
#include <catch2/catch.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "protocol/generated/messages.h"
#include "protocol/generated/testing/samples.h"

namespace ciuickafka::protocol {
namespace {

using testing::fill_sample;
using testing::set_absent_field;

template <class T>
std::vector<uint8_t> encode_ok(const T& x, int16_t v) {
  Writer w;
  x.encode(w, v);
  CHECK(w.ok());
  CHECK(w.size() == x.compute_size(v));
  return w.release();
}

// Decodes every prefix (all of them for small encodings, about 300 spread
// over large ones, always the last) and counts those that decode cleanly.
template <class T>
int truncations_that_decode(const std::vector<uint8_t>& buf, int16_t v) {
  std::vector<size_t> lengths;
  const size_t step = buf.size() <= 512 ? 1 : buf.size() / 300 + 1;
  for (size_t n = 0; n < buf.size(); n += step) lengths.push_back(n);
  if (!buf.empty()) lengths.push_back(buf.size() - 1);
  int bad = 0;
  for (size_t n : lengths) {
    Reader r(std::span<const uint8_t>(buf.data(), n));
    T y;
    y.decode(r, v);
    if (r.ok()) ++bad;
  }
  return bad;
}

// Corrupts `buf` in a few deterministic ways (byte changes, cuts, inserted
// bytes); whatever decodes must re-encode cleanly to a fixed point, with
// compute_size agreeing. Run under ASan/UBSan this also checks that decoding
// garbage never reads out of bounds.
template <class T>
void check_mutations(const std::vector<uint8_t>& buf, int16_t v) {
  uint32_t state = 0x9E3779B9u ^ static_cast<uint32_t>(buf.size() * 31 + static_cast<size_t>(v));
  auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    return state;
  };
  int unstable = 0;
  for (int round = 0; round < 24 && !buf.empty(); ++round) {
    std::vector<uint8_t> m = buf;
    const size_t at = next() % m.size();
    switch (round % 3) {
      case 0: m[at] = static_cast<uint8_t>(next()); break;
      case 1: m[at] ^= static_cast<uint8_t>(1u << (next() % 8)); break;
      default: m.insert(m.begin() + static_cast<std::ptrdiff_t>(at), static_cast<uint8_t>(next())); break;
    }
    Reader r(m);
    T y;
    y.decode(r, v);
    if (!r.ok()) continue;
    Writer w1;
    y.encode(w1, v);
    if (!w1.ok() || w1.size() != y.compute_size(v)) {
      ++unstable;
      continue;
    }
    Reader r2(w1.buffer());
    T z;
    z.decode(r2, v);
    if (!r2.ok() || !r2.at_end() || !(z == y)) ++unstable;
  }
  CHECK(unstable == 0);
}

template <class T>
void check_version(const char* name, int16_t v) {
  INFO(name << " v" << v);
  T x;
  fill_sample(x, v);
  const std::vector<uint8_t> buf = encode_ok(x, v);

  Reader r(buf);
  T y;
  y.decode(r, v);
  CHECK(r.ok());
  CHECK(r.at_end());
  CHECK(y == x);
  CHECK(truncations_that_decode<T>(buf, v) == 0);
  check_mutations<T>(buf, v);

  // A default-constructed message, where the version allows its nulls.
  T d;
  Writer wd;
  d.encode(wd, v);
  if (wd.ok()) {
    CHECK(wd.size() == d.compute_size(v));
    Reader rd(wd.buffer());
    T d2;
    d2.decode(rd, v);
    CHECK((rd.ok() && rd.at_end() && d2 == d));
  } else {
    CHECK(wd.error() == WireError::kUnexpectedNull);
  }

  for (int i = 0;; ++i) {
    T a;
    fill_sample(a, v);
    if (!set_absent_field(a, v, i, /*ignorable=*/false)) break;
    Writer wa;
    a.encode(wa, v);
    INFO("non-ignorable absent field #" << i);
    CHECK(wa.error() == WireError::kFieldNotInVersion);
  }
  for (int i = 0;; ++i) {
    T a;
    fill_sample(a, v);
    if (!set_absent_field(a, v, i, /*ignorable=*/true)) break;
    INFO("ignorable absent field #" << i);
    const std::vector<uint8_t> ba = encode_ok(a, v);
    CHECK(ba == buf);  // dropped: same bytes as without it
  }

  if constexpr (requires { x.unknown_tagged_fields; }) {
    if (T::kFirstFlexibleVersion < 0 || v < T::kFirstFlexibleVersion) {
      T u;
      fill_sample(u, v);
      u.unknown_tagged_fields.push_back(TaggedField{7, Bytes{1}});
      Writer wu;
      u.encode(wu, v);
      CHECK(wu.error() == WireError::kFieldNotInVersion);
    }
  }
}

template <class T>
int check_all(const char* name) {
  int versions = 0;
  for (int16_t v = T::kLowestVersion; v <= T::kHighestVersion; ++v) {
    check_version<T>(name, v);
    ++versions;
  }
  INFO(name);
  T x;
  Writer w;
  x.encode(w, static_cast<int16_t>(T::kHighestVersion + 1));
  CHECK(w.error() == WireError::kUnsupportedVersion);
  CHECK(x.compute_size(static_cast<int16_t>(T::kHighestVersion + 1)) == 0);
  std::vector<uint8_t> buf = encode_ok(x, T::kHighestVersion);
  Reader r(buf);
  x.decode(r, -1);
  CHECK(r.error() == WireError::kUnsupportedVersion);
  return versions;
}

#define CK_API(key, Name, Request, Response)                            \
  TEST_CASE("round trip: API " #key " " #Name, "[generated]") {         \
    CHECK(Request::kApiKey == key);                                     \
    CHECK(Response::kApiKey == key);                                    \
    CHECK(check_all<Request>(#Request) == check_all<Response>(#Response)); \
  }
#define CK_MESSAGE(Type) \
  TEST_CASE("round trip: " #Type, "[generated]") { CHECK(check_all<Type>(#Type) > 0); }
#include "protocol/generated/testing/message_list.inc"
#undef CK_API
#undef CK_MESSAGE

// The list above must cover every API key: the generator emits one CK_API
// line per key.
TEST_CASE("round trip: the message list covers every API key", "[generated]") {
  std::vector<int> keys;
#define CK_API(key, Name, Request, Response) keys.push_back(key);
#define CK_MESSAGE(Type)
#include "protocol/generated/testing/message_list.inc"
#undef CK_API
#undef CK_MESSAGE
  REQUIRE(keys.size() == all_apis().size());
  for (size_t i = 0; i < keys.size(); ++i) CHECK(keys[i] == static_cast<int>(i));
}

}  // namespace
}  // namespace ciuickafka::protocol
