// tests/fuzz/fuzz_records.cc: libFuzzer target for record data, the other
// thing a producer sends that the broker must look inside: v2 batches
// (split, CRC-validate, decompress within a bound, iterate records and
// headers) and legacy v0/v1 message sets (decode, convert to v2, and v2 back
// down to v1/v0 as old fetchers need). Nothing here may crash, read out of
// bounds or allocate beyond the decompression bound.
//
// The CRC is checked but not required: the fuzzer would almost never produce
// a valid one, so record iteration also runs on batches whose CRC is wrong.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "protocol/records/legacy.h"
#include "protocol/records/record_batch.h"

using namespace ciuickafka::protocol;

namespace {

constexpr size_t kMaxDecompressed = 1 << 20;

void walk_v2(const RecordBatchView& batch) {
  auto decoded = decode_records(batch, kMaxDecompressed);
  if (!decoded.ok()) return;
  RecordReader reader = decoded.value().reader();
  RecordView rec;
  int64_t seen = 0;
  while (reader.next(&rec)) {
    ++seen;
    HeaderIterator headers = rec.headers();
    HeaderView h;
    while (headers.next(&h)) {
    }
    if (batch.is_control() && rec.key) (void)parse_control_key(*rec.key);
  }
  // The reader yields at most the count the header declares.
  if (seen > 0 && seen > batch.record_count()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> in(data, size);

  BatchSplitter splitter(in);
  RecordsEntry entry;
  while (splitter.next(&entry) == SplitStatus::kEntry) {
    if (entry.bytes.empty() || splitter.position() > size) std::abort();
    if (entry.magic != 2) continue;
    auto checked = RecordBatchView::parse_and_validate(entry.bytes);
    auto parsed = RecordBatchView::parse(entry.bytes);
    if (checked.ok() && !parsed.ok()) std::abort();  // validation is stricter than framing
    if (parsed.ok()) walk_v2(parsed.value());
  }

  LegacyDecodeOptions lopts;
  lopts.max_decompressed_bytes = kMaxDecompressed;
  lopts.verify_crc = false;
  (void)decode_message_set(in, lopts);

  LegacyToV2Options to_v2;
  to_v2.max_decompressed_bytes = kMaxDecompressed;
  auto converted = message_set_to_v2(in, to_v2);
  if (converted.ok() && !converted.value().empty()) {
    // What the converter writes must be a valid v2 batch.
    auto batch = RecordBatchView::parse_and_validate(converted.value());
    if (!batch.ok()) std::abort();
  }

  V2ToLegacyOptions down;
  down.max_decompressed_bytes = kMaxDecompressed;
  down.magic = static_cast<int8_t>(size & 1);
  (void)v2_to_message_set(in, down);
  return 0;
}
