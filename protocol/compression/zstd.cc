// protocol/compression/zstd.cc: zstd frames; see codec.h.
//
// Decompression streams into a bounded buffer (the frame's declared content
// size is never trusted for allocation). The decoder's window is capped at
// 2^27 bytes (zstd's own default limit), so a hostile frame header cannot
// make it reserve more than that.
//
// Each thread keeps one decompression context between calls: a fresh one per
// batch re-allocated (and page-faulted) its window buffer every time, which
// made checking zstd batches on produce cost about ten times the rest of the
// broker's work per GB. A context that grew past kMaxKeptDctxBytes (a large
// window) is freed after its call, so what a thread keeps stays small.
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
constexpr size_t kMaxKeptDctxBytes = 16u << 20;

// This thread's context, reset for a new frame; nullptr when out of memory.
ZSTD_DCtx* thread_dctx(std::unique_ptr<ZSTD_DCtx, DctxDeleter>& kept) {
  if (!kept) kept.reset(ZSTD_createDCtx());
  if (!kept) return nullptr;
  if (ZSTD_isError(ZSTD_DCtx_reset(kept.get(), ZSTD_reset_session_and_parameters)) ||
      ZSTD_isError(ZSTD_DCtx_setParameter(kept.get(), ZSTD_d_windowLogMax, kMaxWindowLog))) {
    kept.reset();
    return nullptr;
  }
  return kept.get();
}
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
  thread_local std::unique_ptr<ZSTD_DCtx, DctxDeleter> kept;
  ZSTD_DCtx* dctx = thread_dctx(kept);
  if (dctx == nullptr) return CompressionError::kInternal;
  struct TrimOnExit {
    std::unique_ptr<ZSTD_DCtx, DctxDeleter>& kept;
    ~TrimOnExit() {
      if (kept && ZSTD_sizeof_DCtx(kept.get()) > kMaxKeptDctxBytes) kept.reset();
    }
  } trim{kept};

  detail::BoundedOutput out(max_output_bytes, input.size() * 4);
  ZSTD_inBuffer in{input.data(), input.size(), 0};
  size_t hint = 1;  // 0 once a frame is complete and flushed
  while (in.pos < in.size || hint != 0) {
    auto space = out.next_space();
    uint8_t probe = 0;
    bool probing = space.empty();
    ZSTD_outBuffer ob{probing ? &probe : space.data(), probing ? 1 : space.size(), 0};
    size_t in_before = in.pos;
    hint = ZSTD_decompressStream(dctx, &ob, &in);
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
