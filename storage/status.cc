// storage/status.cc: Status formatting and errno mapping.
#include "storage/status.h"

#include <cstring>

namespace ciuickafka::storage {

const char* to_string(StatusCode c) {
  switch (c) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kIoError: return "I/O error";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kCorruption: return "corruption";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kIndexFull: return "index full";
    case StatusCode::kUnsupported: return "unsupported";
    case StatusCode::kCorruptRecords: return "corrupt records";
    case StatusCode::kOffsetOutOfRange: return "offset out of range";
    case StatusCode::kFenced: return "fenced";
  }
  return "unknown";
}

Status Status::from_errno(int err, std::string context) {
  return Status(err == ENOENT ? StatusCode::kNotFound : StatusCode::kIoError, err, std::move(context));
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  std::string s = storage::to_string(code_);
  s += ": ";
  s += message_;
  if (errno_ != 0) {
    s += " (";
    s += std::strerror(errno_);
    s += ")";
  }
  return s;
}

}  // namespace ciuickafka::storage
