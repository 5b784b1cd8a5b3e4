// Writer: encodes exactly what Reader decodes, and size helpers agree with
// the bytes written.
#include <catch2/catch.hpp>

#include <limits>
#include <string>

#include "protocol/wire/reader.h"
#include "protocol/wire/writer.h"
#include "protocol/wire/codec_support.h"

using namespace ciuickafka::protocol;

TEST_CASE("varint round trip and sizes over edge values") {
  const int64_t values[] = {0, 1, -1, 63, -64, 64, -65, 8191, -8192, 8192, 1 << 20,
                            std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min(),
                            std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};
  for (int64_t v : values) {
    Writer w;
    w.write_varlong(v);
    CHECK(w.size() == Writer::varlong_size(v));
    if (v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max()) {
      auto v32 = static_cast<int32_t>(v);
      w.write_varint(v32);
      w.write_uvarint(static_cast<uint32_t>(v32));
      CHECK(w.size() == Writer::varlong_size(v) + Writer::varint_size(v32) +
                            Writer::uvarint_size(static_cast<uint32_t>(v32)));
      Reader r(w.buffer());
      CHECK(r.read_varlong() == v);
      CHECK(r.read_varint() == v32);
      CHECK(r.read_uvarint() == static_cast<uint32_t>(v32));
      CHECK(r.ok());
      CHECK(r.at_end());
    } else {
      Reader r(w.buffer());
      CHECK(r.read_varlong() == v);
      CHECK(r.ok());
    }
  }
}

TEST_CASE("known encodings") {
  Writer w;
  w.write_int16(0x0102);
  w.write_uvarint(300);  // 0xac 0x02
  w.write_compact_string("hi");
  w.write_compact_nullable_string(std::nullopt);
  w.write_nullable_string(std::nullopt);
  std::vector<uint8_t> want = {0x01, 0x02, 0xac, 0x02, 0x03, 'h', 'i', 0x00, 0xff, 0xff};
  CHECK(w.buffer() == want);
  CHECK(w.ok());
}

TEST_CASE("strings too long for their prefix fail") {
  Writer w;
  w.write_string(std::string(40000, 'x'));
  CHECK(w.error() == WireError::kValueTooLarge);
}

TEST_CASE("bytes and nullable bytes round trip") {
  std::vector<uint8_t> payload = {1, 2, 3};
  Writer w;
  w.write_bytes(payload);
  w.write_nullable_bytes(std::nullopt);
  w.write_compact_bytes(payload);
  w.write_compact_nullable_bytes(std::nullopt);
  Reader r(w.buffer());
  auto a = r.read_bytes_view();
  CHECK(std::vector<uint8_t>(a.begin(), a.end()) == payload);
  CHECK_FALSE(r.read_nullable_bytes_view());
  auto c = r.read_compact_bytes_view();
  CHECK(std::vector<uint8_t>(c.begin(), c.end()) == payload);
  CHECK_FALSE(r.read_compact_nullable_bytes_view());
  CHECK(r.ok());
  CHECK(r.at_end());
}

TEST_CASE("patch_int32 fills a reserved size prefix") {
  Writer w;
  w.write_int32(0);
  w.write_int16(7);
  w.patch_int32(0, static_cast<int32_t>(w.size() - 4));
  Reader r(w.buffer());
  CHECK(r.read_int32() == 2);
}

TEST_CASE("external Records are length-prefixed and leave a splice, not bytes", "[writer][records]") {
  using namespace ciuickafka::protocol;
  int source = 0;  // any address names the source
  for (bool compact : {false, true}) {
    Writer w;
    w.write_int16(7);
    codec::write_records(w, Records::external(&source, 300), compact, /*nullable=*/true);
    w.write_int16(9);
    REQUIRE(w.ok());
    const size_t prefix = compact ? 2 : 4;  // uvarint(301) is 2 bytes
    REQUIRE(w.size() == 2 + prefix + 2);
    REQUIRE(w.splices().size() == 1);
    CHECK(w.splices()[0].at == 2 + prefix);
    CHECK(w.splices()[0].token == &source);
    CHECK(w.splices()[0].length == 300);
    CHECK(w.total_size() == w.size() + 300);
    CHECK(codec::records_size(Records::external(&source, 300), compact) == prefix + 300);
    if (!compact) {
      CHECK(w.buffer()[2] == 0);
      CHECK(w.buffer()[3] == 0);
      CHECK(w.buffer()[4] == 1);
      CHECK(w.buffer()[5] == 44);
    }
  }
}
