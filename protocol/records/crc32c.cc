// protocol/records/crc32c.cc: see crc32c.h.
#include "protocol/records/crc32c.h"

#include <array>

#include <isa-l/crc.h>

namespace ciuickafka::protocol {

namespace {

// Reflected Castagnoli polynomial.
constexpr uint32_t kPoly = 0x82F63B78u;

// Slicing-by-8: table[k][b] is the CRC of byte b followed by k zero bytes.
using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables make_tables() {
  Tables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int i = 0; i < 8; ++i) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[0][b] = c;
  }
  for (uint32_t b = 0; b < 256; ++b)
    for (size_t k = 1; k < 8; ++k) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFF];
  return t;
}

constexpr Tables kTables = make_tables();

}  // namespace

uint32_t crc32c_extend_portable(uint32_t crc, std::span<const uint8_t> data) {
  uint32_t c = ~crc;
  const uint8_t* p = data.data();
  size_t n = data.size();
  while (n >= 8) {
    uint32_t lo = c ^ (static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
                       static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24);
    c = kTables[7][lo & 0xFF] ^ kTables[6][(lo >> 8) & 0xFF] ^ kTables[5][(lo >> 16) & 0xFF] ^
        kTables[4][lo >> 24] ^ kTables[3][p[4]] ^ kTables[2][p[5]] ^ kTables[1][p[6]] ^ kTables[0][p[7]];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xFF];
  return ~c;
}

uint32_t crc32c_extend(uint32_t crc, std::span<const uint8_t> data) {
  if (data.empty()) return crc;
  // isa-l takes and returns the raw register; our API speaks finished CRCs.
  // crc32_iscsi takes a non-const pointer but does not write through it.
  auto* p = const_cast<unsigned char*>(data.data());
  uint64_t len = data.size();
  uint32_t out = 0;
  // Its length is an int: feed huge inputs in pieces.
  while (len > 0) {
    int chunk = len > (1u << 30) ? (1 << 30) : static_cast<int>(len);
    out = crc32_iscsi(p, chunk, ~crc);
    crc = ~out;
    p += chunk;
    len -= static_cast<uint64_t>(chunk);
  }
  return crc;
}

}  // namespace ciuickafka::protocol
