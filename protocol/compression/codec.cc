// protocol/compression/codec.cc: codec names and dispatch; see codec.h.
#include "protocol/compression/codec.h"

namespace ciuickafka::protocol {

std::string_view to_string(Codec c) {
  switch (c) {
    case Codec::kNone: return "none";
    case Codec::kGzip: return "gzip";
    case Codec::kSnappy: return "snappy";
    case Codec::kLz4: return "lz4";
    case Codec::kZstd: return "zstd";
  }
  return "unknown";
}

std::string_view to_string(CompressionError e) {
  switch (e) {
    case CompressionError::kNone: return "none";
    case CompressionError::kUnknownCodec: return "unknown codec";
    case CompressionError::kCorrupt: return "corrupt compressed data";
    case CompressionError::kTooLarge: return "decompressed data exceeds the limit";
    case CompressionError::kInternal: return "compression library failure";
  }
  return "unknown";
}

std::optional<Codec> codec_from_id(int id) {
  if (id < 0 || id > 4) return std::nullopt;
  return static_cast<Codec>(id);
}

Result<Bytes, CompressionError> compress(Codec codec, std::span<const uint8_t> input,
                                         std::optional<int> level) {
  switch (codec) {
    case Codec::kNone: return Bytes(input.begin(), input.end());
    case Codec::kGzip: return gzip_compress(input, level);
    case Codec::kSnappy: return snappy_compress_xerial(input);
    case Codec::kLz4: return lz4_frame_compress(input, level, false);
    case Codec::kZstd: return zstd_compress(input, level);
  }
  return CompressionError::kUnknownCodec;
}

Result<Bytes, CompressionError> decompress(Codec codec, std::span<const uint8_t> input,
                                           size_t max_output_bytes) {
  switch (codec) {
    case Codec::kNone:
      if (input.size() > max_output_bytes) return CompressionError::kTooLarge;
      return Bytes(input.begin(), input.end());
    case Codec::kGzip: return gzip_decompress(input, max_output_bytes);
    case Codec::kSnappy: return snappy_decompress(input, max_output_bytes);
    case Codec::kLz4: return lz4_frame_decompress(input, max_output_bytes);
    case Codec::kZstd: return zstd_decompress(input, max_output_bytes);
  }
  return CompressionError::kUnknownCodec;
}

}  // namespace ciuickafka::protocol
