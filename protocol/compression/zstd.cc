// protocol/compression/zstd.cc: zstd frames; see codec.h.
//
// Decompression streams into a bounded buffer (the frame's declared content
// size is never trusted for allocation). The decoder's window is capped at
// 2^27 bytes (zstd's own default limit), so a hostile frame header cannot
// make it reserve more than that.
#include <zstd.h>
#include <zstd_errors.h>

#include <memory>

#include "protocol/compression/bounded_output.h"
#include "protocol/compression/codec.h"

namespace ciuickafka::protocol {

namespace {
struct DctxDeleter {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};
constexpr int kMaxWindowLog = 27;
}  // namespace

Result<Bytes, CompressionError> zstd_compress(std::span<const uint8_t> input, std::optional<int> level) {
  int lvl = level.value_or(ZSTD_CLEVEL_DEFAULT);
  if (lvl < ZSTD_minCLevel() || lvl > ZSTD_maxCLevel()) lvl = ZSTD_CLEVEL_DEFAULT;
  Bytes out(ZSTD_compressBound(input.size()));
  size_t n = ZSTD_compress(out.data(), out.size(), input.data(), input.size(), lvl);
  if (ZSTD_isError(n)) return CompressionError::kInternal;
  out.resize(n);
  return out;
}

Result<Bytes, CompressionError> zstd_decompress(std::span<const uint8_t> input, size_t max_output_bytes) {
  if (input.empty()) return CompressionError::kCorrupt;
  std::unique_ptr<ZSTD_DCtx, DctxDeleter> dctx(ZSTD_createDCtx());
  if (!dctx) return CompressionError::kInternal;
  if (ZSTD_isError(ZSTD_DCtx_setParameter(dctx.get(), ZSTD_d_windowLogMax, kMaxWindowLog)))
    return CompressionError::kInternal;

  detail::BoundedOutput out(max_output_bytes, input.size() * 4);
  ZSTD_inBuffer in{input.data(), input.size(), 0};
  size_t hint = 1;  // 0 once a frame is complete and flushed
  while (in.pos < in.size || hint != 0) {
    auto space = out.next_space();
    uint8_t probe = 0;
    bool probing = space.empty();
    ZSTD_outBuffer ob{probing ? &probe : space.data(), probing ? 1 : space.size(), 0};
    size_t in_before = in.pos;
    hint = ZSTD_decompressStream(dctx.get(), &ob, &in);
    if (ZSTD_isError(hint)) {
      return ZSTD_getErrorCode(hint) == ZSTD_error_memory_allocation ? CompressionError::kInternal
                                                                      : CompressionError::kCorrupt;
    }
    if (probing && ob.pos > 0) return CompressionError::kTooLarge;
    out.commit(ob.pos);
    if (ob.pos == 0 && in.pos == in_before && hint != 0) return CompressionError::kCorrupt;  // truncated
  }
  return out.take();
}

}  // namespace ciuickafka::protocol
