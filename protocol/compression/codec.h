// protocol/compression/codec.h: the one compression interface for record data.
//
// Kafka compresses the records section of a v2 batch (and the value of a
// v0/v1 wrapper message) with one of four codecs, named by the low three bits
// of the attributes: none 0, gzip 1, snappy 2, lz4 3, zstd 4.
//
//   gzip   zlib with the gzip wrapper (RFC 1952).
//   snappy compress: the xerial framing that Kafka's Java client writes
//          (magic 82 'SNAPPY' 00, int32 version 1, int32 compatible 1, then
//          [int32 length, raw snappy block]*, 32 KiB blocks); decompress:
//          xerial framing when the magic is present, raw snappy otherwise
//          (some non-Java clients send raw blocks).
//   lz4    the LZ4 frame format (64 KiB independent blocks, no content
//          checksum, as Kafka's Java client writes). Magic-0 message sets are
//          the exception, see lz4_frame_compress below.
//   zstd   a zstd frame; decompression is streaming.
//
// Decompression is always bounded by the caller's max_output_bytes: output
// that would exceed it stops with kTooLarge (a decompression bomb costs at
// most that much memory). Corrupt input of any shape returns kCorrupt; no
// input can crash these functions.
//
// Thread-safety: all functions are reentrant; they keep no shared state (zstd
// keeps one decompression context per thread, see zstd.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "protocol/compression/result.h"
#include "protocol/wire/types.h"

namespace ciuickafka::protocol {

enum class Codec : uint8_t {
  kNone = 0,
  kGzip = 1,
  kSnappy = 2,
  kLz4 = 3,
  kZstd = 4,
};

enum class CompressionError : uint8_t {
  kNone = 0,
  kUnknownCodec,  // codec id 5-7, or a codec not allowed where it was used
  kCorrupt,       // the compressed input is malformed or truncated
  kTooLarge,      // the output would exceed max_output_bytes
  kInternal,      // the library failed for a reason other than the input (out of memory)
};

std::string_view to_string(Codec c);
std::string_view to_string(CompressionError e);

// Maps the attribute bits 0-2 to a codec; nullopt for 5, 6, 7.
std::optional<Codec> codec_from_id(int id);

// Compresses input. level: codec-specific (gzip 1-9, lz4 frame 0-12, zstd
// 1-22); nullopt picks the library default. Codec::kNone returns a copy.
Result<Bytes, CompressionError> compress(Codec codec, std::span<const uint8_t> input,
                                         std::optional<int> level = std::nullopt);

// Decompresses input, producing at most max_output_bytes bytes.
// Codec::kNone returns a copy (also bounded).
Result<Bytes, CompressionError> decompress(Codec codec, std::span<const uint8_t> input,
                                           size_t max_output_bytes);

// The codecs one by one (compress()/decompress() dispatch here).
Result<Bytes, CompressionError> gzip_compress(std::span<const uint8_t> input, std::optional<int> level);
Result<Bytes, CompressionError> gzip_decompress(std::span<const uint8_t> input, size_t max_output_bytes);

Result<Bytes, CompressionError> snappy_compress_xerial(std::span<const uint8_t> input);
Result<Bytes, CompressionError> snappy_compress_raw(std::span<const uint8_t> input);
// Xerial framing when the input starts with the xerial magic, else raw.
Result<Bytes, CompressionError> snappy_decompress(std::span<const uint8_t> input, size_t max_output_bytes);

// LZ4 frame. Kafka's magic-0 message sets carry LZ4 frames whose header
// checksum was computed (wrongly) over the 4 magic bytes plus the descriptor
// (KAFKA-3160). kafka_v0_checksum=true writes that broken checksum, which
// pre-0.10 clients expect for magic 0. Decompression always accepts both the
// correct checksum and the broken one (as Kafka's broker does for magic 0;
// a v1/v2 frame with the broken checksum is harmless to accept).
Result<Bytes, CompressionError> lz4_frame_compress(std::span<const uint8_t> input, std::optional<int> level,
                                                   bool kafka_v0_checksum = false);
Result<Bytes, CompressionError> lz4_frame_decompress(std::span<const uint8_t> input, size_t max_output_bytes);

Result<Bytes, CompressionError> zstd_compress(std::span<const uint8_t> input, std::optional<int> level);
Result<Bytes, CompressionError> zstd_decompress(std::span<const uint8_t> input, size_t max_output_bytes);

}  // namespace ciuickafka::protocol
