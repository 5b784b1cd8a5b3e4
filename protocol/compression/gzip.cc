// protocol/compression/gzip.cc: gzip (RFC 1952) through zlib; see codec.h.
//
// Decompression accepts concatenated gzip members (as Java's GZIPInputStream
// does) and rejects any other trailing bytes.
#include <zlib.h>

#include <climits>

#include "protocol/compression/bounded_output.h"
#include "protocol/compression/codec.h"

namespace ciuickafka::protocol {

namespace {
constexpr int kGzipWindowBits = 15 + 16;  // 32 KiB window, gzip wrapper
}

Result<Bytes, CompressionError> gzip_compress(std::span<const uint8_t> input, std::optional<int> level) {
  if (input.size() > UINT_MAX / 2) return CompressionError::kInternal;
  int lvl = level.value_or(Z_DEFAULT_COMPRESSION);
  if (lvl != Z_DEFAULT_COMPRESSION && (lvl < 0 || lvl > 9)) lvl = Z_DEFAULT_COMPRESSION;
  z_stream zs{};
  if (deflateInit2(&zs, lvl, Z_DEFLATED, kGzipWindowBits, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return CompressionError::kInternal;
  Bytes out(deflateBound(&zs, static_cast<uLong>(input.size())) + 32);
  zs.next_in = const_cast<Bytef*>(input.data());
  zs.avail_in = static_cast<uInt>(input.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  size_t produced = zs.total_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) return CompressionError::kInternal;
  out.resize(produced);
  return out;
}

Result<Bytes, CompressionError> gzip_decompress(std::span<const uint8_t> input, size_t max_output_bytes) {
  if (input.empty() || input.size() > UINT_MAX) return CompressionError::kCorrupt;
  z_stream zs{};
  if (inflateInit2(&zs, kGzipWindowBits) != Z_OK) return CompressionError::kInternal;
  detail::BoundedOutput out(max_output_bytes, input.size() * 4);
  zs.next_in = const_cast<Bytef*>(input.data());
  zs.avail_in = static_cast<uInt>(input.size());
  CompressionError err = CompressionError::kNone;
  for (;;) {
    auto space = out.next_space();
    uint8_t probe = 0;
    bool probing = space.empty();  // at the cap: any further byte is too many
    zs.next_out = probing ? &probe : space.data();
    zs.avail_out = probing ? 1 : static_cast<uInt>(std::min<size_t>(space.size(), UINT_MAX));
    uInt before = zs.avail_out;
    uInt in_before = zs.avail_in;
    int rc = inflate(&zs, Z_NO_FLUSH);
    size_t wrote = before - zs.avail_out;
    if (probing && wrote > 0) {
      err = CompressionError::kTooLarge;
      break;
    }
    out.commit(wrote);
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0) break;
      // Another member must follow; anything else is garbage.
      if (zs.avail_in < 2 || zs.next_in[0] != 0x1f || zs.next_in[1] != 0x8b) {
        err = CompressionError::kCorrupt;
        break;
      }
      if (inflateReset(&zs) != Z_OK) {
        err = CompressionError::kInternal;
        break;
      }
      continue;
    }
    if (rc == Z_MEM_ERROR) {
      err = CompressionError::kInternal;
      break;
    }
    if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT || rc == Z_STREAM_ERROR) {
      err = CompressionError::kCorrupt;
      break;
    }
    // Z_OK or Z_BUF_ERROR: no progress at all means truncated input.
    if (wrote == 0 && zs.avail_in == in_before) {
      err = CompressionError::kCorrupt;
      break;
    }
  }
  inflateEnd(&zs);
  if (err != CompressionError::kNone) return err;
  return out.take();
}

}  // namespace ciuickafka::protocol
