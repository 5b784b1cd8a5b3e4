// protocol/compression/lz4.cc: the LZ4 frame format through lz4frame; see
// codec.h for the Kafka magic-0 header checksum quirk (KAFKA-3160).
//
// Frames are written the way Kafka's Java client writes them: 64 KiB
// independent blocks, no block or content checksum, no content size.
// The frame header's checksum byte is (XXH32(descriptor, 0) >> 8) & 0xFF,
// where the descriptor runs from FLG to just before the checksum; Kafka's
// magic-0 writer hashed from the magic number instead. We compute XXH32
// ourselves (the system lz4 does not export it) for those few bytes.
#include <lz4frame.h>

#include <cstring>
#include <memory>

#include "protocol/compression/bounded_output.h"
#include "protocol/compression/codec.h"

namespace ciuickafka::protocol {

namespace {

constexpr uint32_t kLz4FrameMagic = 0x184D2204;

uint32_t rotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
uint32_t load_le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

// XXH32 as specified in the xxHash documentation.
uint32_t xxh32(const uint8_t* p, size_t len, uint32_t seed) {
  constexpr uint32_t P1 = 2654435761u, P2 = 2246822519u, P3 = 3266489917u, P4 = 668265263u,
                     P5 = 374761393u;
  const uint8_t* end = p + len;
  uint32_t h;
  if (len >= 16) {
    uint32_t v[4] = {seed + P1 + P2, seed + P2, seed, seed - P1};
    while (end - p >= 16) {
      for (auto& acc : v) {
        acc = rotl(acc + load_le32(p) * P2, 13) * P1;
        p += 4;
      }
    }
    h = rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18);
  } else {
    h = seed + P5;
  }
  h += static_cast<uint32_t>(len);
  while (end - p >= 4) {
    h = rotl(h + load_le32(p) * P3, 17) * P4;
    p += 4;
  }
  while (p < end) h = rotl(h + static_cast<uint32_t>(*p++) * P5, 11) * P1;
  h ^= h >> 15;
  h *= P2;
  h ^= h >> 13;
  h *= P3;
  h ^= h >> 16;
  return h;
}

// Position of the header checksum byte, or 0 if the input does not start
// with a well-formed LZ4 frame header.
size_t header_checksum_pos(std::span<const uint8_t> in) {
  if (in.size() < 7 || load_le32(in.data()) != kLz4FrameMagic) return 0;
  uint8_t flg = in[4];
  size_t pos = 6 + ((flg & 0x08) ? 8 : 0) + ((flg & 0x01) ? 4 : 0);
  return pos < in.size() ? pos : 0;
}

uint8_t correct_checksum(std::span<const uint8_t> in, size_t hc_pos) {
  return static_cast<uint8_t>(xxh32(in.data() + 4, hc_pos - 4, 0) >> 8);
}
uint8_t kafka_v0_checksum(std::span<const uint8_t> in, size_t hc_pos) {
  return static_cast<uint8_t>(xxh32(in.data(), hc_pos, 0) >> 8);
}

struct DctxDeleter {
  void operator()(LZ4F_dctx* d) const { LZ4F_freeDecompressionContext(d); }
};

}  // namespace

Result<Bytes, CompressionError> lz4_frame_compress(std::span<const uint8_t> input, std::optional<int> level,
                                                   bool kafka_v0_checksum_wanted) {
  LZ4F_preferences_t prefs;
  std::memset(&prefs, 0, sizeof prefs);
  prefs.frameInfo.blockSizeID = LZ4F_max64KB;
  prefs.frameInfo.blockMode = LZ4F_blockIndependent;
  prefs.frameInfo.contentChecksumFlag = LZ4F_noContentChecksum;
  prefs.compressionLevel = level.value_or(0);
  Bytes out(LZ4F_compressFrameBound(input.size(), &prefs));
  size_t n = LZ4F_compressFrame(out.data(), out.size(), input.data(), input.size(), &prefs);
  if (LZ4F_isError(n)) return CompressionError::kInternal;
  out.resize(n);
  if (kafka_v0_checksum_wanted) {
    size_t hc = header_checksum_pos(out);
    if (hc == 0) return CompressionError::kInternal;
    out[hc] = kafka_v0_checksum(out, hc);
  }
  return out;
}

Result<Bytes, CompressionError> lz4_frame_decompress(std::span<const uint8_t> input, size_t max_output_bytes) {
  if (input.empty()) return CompressionError::kCorrupt;
  // A magic-0 frame with Kafka's broken header checksum: fix a copy.
  Bytes fixed;
  if (size_t hc = header_checksum_pos(input); hc != 0 && input[hc] != correct_checksum(input, hc) &&
                                              input[hc] == kafka_v0_checksum(input, hc)) {
    fixed.assign(input.begin(), input.end());
    fixed[hc] = correct_checksum(fixed, hc);
    input = fixed;
  }
  LZ4F_dctx* raw = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&raw, LZ4F_VERSION))) return CompressionError::kInternal;
  std::unique_ptr<LZ4F_dctx, DctxDeleter> dctx(raw);

  detail::BoundedOutput out(max_output_bytes, input.size() * 4);
  size_t pos = 0;
  size_t hint = 1;  // 0 once a frame has ended
  while (pos < input.size() || hint != 0) {
    auto space = out.next_space();
    uint8_t probe = 0;
    bool probing = space.empty();
    size_t dst = probing ? 1 : space.size();
    size_t src = input.size() - pos;
    hint = LZ4F_decompress(dctx.get(), probing ? &probe : space.data(), &dst, input.data() + pos, &src,
                           nullptr);
    if (LZ4F_isError(hint)) return CompressionError::kCorrupt;
    if (probing && dst > 0) return CompressionError::kTooLarge;
    pos += src;
    out.commit(dst);
    if (src == 0 && dst == 0 && hint != 0) return CompressionError::kCorrupt;  // truncated
  }
  return out.take();
}

}  // namespace ciuickafka::protocol
