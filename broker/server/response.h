// broker/server/response.h: an encoded response, ready for the socket.
//
// A response is the bytes of the frame (4-byte size, response header, body)
// with gaps where record data goes: each Splice says "at this position in
// `bytes`, send these file slices". The connection writes bytes with
// write/writev and slices with sendfile, in order, so the record bytes of a
// fetch never pass through user space. Slices hold a reference to their
// segment, which keeps the file open even if retention deletes it meanwhile.
//
// action says what the connection does with it: send it; send nothing
// (Produce with acks=0); or close the connection (a request that could not
// be decoded: Kafka's behaviour).
//
// timing carries the request's metrics handle and the phases measured so
// far (dispatch.cc: request queue, local, remote, and when it was answered);
// the connection adds the response queue and send phases once the response
// is written and records them. A response without a valid handle (tests'
// own dispatchers) is not recorded.
//
// Thread-safety: a value; moved from the handler to the connection.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "metrics/request_metrics.h"
#include "storage/log.h"

namespace ciuickafka::broker {

struct Splice {
  size_t at = 0;                            // position in Response::bytes
  std::vector<storage::LogSlice> slices;    // sent in order at that point
  uint64_t length = 0;                      // sum of the slices' lengths
};

struct Response {
  enum class Action { kSend, kNoResponse, kClose };

  std::vector<uint8_t> bytes;   // the frame, size prefix included, minus spliced bytes
  std::vector<Splice> splices;  // ascending `at`
  Action action = Action::kSend;
  int16_t error_code = 0;       // top-level or first error, for metrics (0 = none)
  // A client quota's throttle (ms): once this response is on its way the
  // connection reads no more requests for that long (KIP-219).
  int64_t throttle_ms = 0;

  struct Timing {
    metrics::RequestMetrics metrics;  // not valid(): not recorded
    metrics::RequestTimes times;      // request_queue, local, remote set by dispatch
    std::chrono::steady_clock::time_point answered{};
  };
  Timing timing;

  static Response none() {
    Response r;
    r.action = Action::kNoResponse;
    return r;
  }
  static Response close() {
    Response r;
    r.action = Action::kClose;
    return r;
  }
  uint64_t total_size() const {
    uint64_t n = bytes.size();
    for (const Splice& s : splices) n += s.length;
    return n;
  }
};

}  // namespace ciuickafka::broker
