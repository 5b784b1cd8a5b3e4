// protocol/compression/snappy.cc: snappy, raw and xerial-framed; see codec.h.
//
// Xerial framing (snappy-java's SnappyOutputStream, what Kafka's Java client
// and librdkafka send):
//   header  82 53 4E 41 50 50 59 00  int32 version (1)  int32 compatible (1)
//   blocks  [int32 compressed length, raw snappy block]*
// Each raw block states its uncompressed length up front, so the output
// limit is checked before any allocation.
#include <snappy.h>

#include <cstring>

#include "protocol/compression/codec.h"

namespace ciuickafka::protocol {

namespace {

constexpr uint8_t kXerialMagic[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0x00};
constexpr size_t kXerialHeaderSize = 16;
constexpr size_t kXerialBlockSize = 32 * 1024;  // snappy-java's default

void put_be32(Bytes& out, uint32_t v) {
  out.push_back(static_cast<uint8_t>(v >> 24));
  out.push_back(static_cast<uint8_t>(v >> 16));
  out.push_back(static_cast<uint8_t>(v >> 8));
  out.push_back(static_cast<uint8_t>(v));
}

uint32_t get_be32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 |
         static_cast<uint32_t>(p[2]) << 8 | static_cast<uint32_t>(p[3]);
}

bool is_xerial(std::span<const uint8_t> in) {
  return in.size() >= kXerialHeaderSize && std::memcmp(in.data(), kXerialMagic, 8) == 0;
}

// Appends one raw block's output to out, keeping out.size() <= max.
CompressionError uncompress_block(std::span<const uint8_t> block, size_t max, Bytes& out) {
  const char* src = reinterpret_cast<const char*>(block.data());
  size_t len = 0;
  if (!snappy::GetUncompressedLength(src, block.size(), &len)) return CompressionError::kCorrupt;
  if (len > max || out.size() > max - len) return CompressionError::kTooLarge;
  size_t at = out.size();
  out.resize(at + len);
  if (len == 0) return block.size() == 1 ? CompressionError::kNone : CompressionError::kCorrupt;
  if (!snappy::RawUncompress(src, block.size(), reinterpret_cast<char*>(out.data() + at)))
    return CompressionError::kCorrupt;
  return CompressionError::kNone;
}

}  // namespace

Result<Bytes, CompressionError> snappy_compress_raw(std::span<const uint8_t> input) {
  Bytes out(snappy::MaxCompressedLength(input.size()));
  size_t n = 0;
  snappy::RawCompress(reinterpret_cast<const char*>(input.data()), input.size(),
                      reinterpret_cast<char*>(out.data()), &n);
  out.resize(n);
  return out;
}

Result<Bytes, CompressionError> snappy_compress_xerial(std::span<const uint8_t> input) {
  Bytes out(kXerialMagic, kXerialMagic + 8);
  put_be32(out, 1);  // version
  put_be32(out, 1);  // minimum compatible version
  for (size_t at = 0; at < input.size(); at += kXerialBlockSize) {
    size_t n = std::min(kXerialBlockSize, input.size() - at);
    size_t len_pos = out.size();
    put_be32(out, 0);
    out.resize(len_pos + 4 + snappy::MaxCompressedLength(n));
    size_t clen = 0;
    snappy::RawCompress(reinterpret_cast<const char*>(input.data() + at), n,
                        reinterpret_cast<char*>(out.data() + len_pos + 4), &clen);
    out.resize(len_pos + 4 + clen);
    uint32_t c = static_cast<uint32_t>(clen);
    out[len_pos] = static_cast<uint8_t>(c >> 24);
    out[len_pos + 1] = static_cast<uint8_t>(c >> 16);
    out[len_pos + 2] = static_cast<uint8_t>(c >> 8);
    out[len_pos + 3] = static_cast<uint8_t>(c);
  }
  return out;
}

Result<Bytes, CompressionError> snappy_decompress(std::span<const uint8_t> input, size_t max_output_bytes) {
  Bytes out;
  if (!is_xerial(input)) {
    if (input.empty()) return CompressionError::kCorrupt;
    auto e = uncompress_block(input, max_output_bytes, out);
    if (e != CompressionError::kNone) return e;
    return out;
  }
  size_t pos = kXerialHeaderSize;
  while (pos < input.size()) {
    if (input.size() - pos < 4) return CompressionError::kCorrupt;
    uint32_t len = get_be32(input.data() + pos);
    pos += 4;
    if (len == 0 || len > input.size() - pos) return CompressionError::kCorrupt;
    auto e = uncompress_block(input.subspan(pos, len), max_output_bytes, out);
    if (e != CompressionError::kNone) return e;
    pos += len;
  }
  return out;
}

}  // namespace ciuickafka::protocol
