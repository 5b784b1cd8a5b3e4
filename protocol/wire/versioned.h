// protocol/wire/versioned.h: an int16 schema version followed by a
// generated struct encoded at that version, which is how the records of
// Kafka's internal topics (__consumer_offsets, __transaction_state) frame
// their keys and values.
//
// Thread-safety: a pure function.
#pragma once

#include <cstdint>

#include "protocol/wire/types.h"
#include "protocol/wire/writer.h"

namespace ciuickafka::protocol {

template <class T>
Bytes versioned_bytes(const T& v, int16_t version) {
  Writer w(2 + v.compute_size(version));
  w.write_int16(version);
  v.encode(w, version);
  return w.release();
}

}  // namespace ciuickafka::protocol
