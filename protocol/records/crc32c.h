// protocol/records/crc32c.h: CRC32C (Castagnoli), the checksum of v2 batches.
//
// Two implementations with the same results: isa-l's crc32_iscsi, which
// picks SSE4.2/PCLMUL code at run time, and a portable table-driven one that
// is always compiled (for tests, and as the reference). crc32c() uses isa-l.
//
// Chaining: crc32c_extend(crc32c(a), b) == crc32c(a ++ b). Start from 0.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ciuickafka::protocol {

uint32_t crc32c_extend(uint32_t crc, std::span<const uint8_t> data);
inline uint32_t crc32c(std::span<const uint8_t> data) { return crc32c_extend(0, data); }

// The portable implementation (slicing-by-8 tables).
uint32_t crc32c_extend_portable(uint32_t crc, std::span<const uint8_t> data);
inline uint32_t crc32c_portable(std::span<const uint8_t> data) { return crc32c_extend_portable(0, data); }

}  // namespace ciuickafka::protocol
