// storage/status.h: errors as values for the storage module.
//
// Status is either ok or an error with a code, the errno that caused it (0
// when none did) and a message that names the file involved. Result<T> holds
// a T or a non-ok Status. Storage never throws: every I/O call, parser and
// index operation reports failure through these. Reading the wrong side of a
// Result is a broken invariant and aborts with a message.
//
// Thread-safety: plain value types.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace ciuickafka::storage {

enum class StatusCode : int {
  kOk = 0,
  kIoError,          // a system call failed; errno() says why
  kNotFound,         // the file or directory does not exist (ENOENT)
  kCorruption,       // a file's contents break its format (index, checkpoint)
  kInvalidArgument,  // the caller broke a precondition (non-monotonic append, bad name)
  kIndexFull,        // an index has no room for another entry: roll the segment
  kUnsupported,      // the platform cannot do this (io_uring missing, say)
  kCorruptRecords,   // records handed to an append are malformed (framing, magic, CRC):
                     // nothing was written (Kafka's CORRUPT_MESSAGE)
  kOffsetOutOfRange, // a read below the log start or above the log end offset
  kFenced,           // the writer may no longer append to this log (the broker's replica stopped
                     // being the leader); storage itself never returns it
};

const char* to_string(StatusCode c);

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok

  static Status ok() { return Status(); }
  // From a failed system call: ENOENT becomes kNotFound, anything else kIoError.
  static Status from_errno(int err, std::string context);
  static Status corruption(std::string msg) { return Status(StatusCode::kCorruption, 0, std::move(msg)); }
  static Status invalid_argument(std::string msg) {
    return Status(StatusCode::kInvalidArgument, 0, std::move(msg));
  }
  static Status not_found(std::string msg) { return Status(StatusCode::kNotFound, ENOENT, std::move(msg)); }
  static Status index_full(std::string msg) { return Status(StatusCode::kIndexFull, 0, std::move(msg)); }
  static Status corrupt_records(std::string msg) {
    return Status(StatusCode::kCorruptRecords, 0, std::move(msg));
  }
  static Status offset_out_of_range(std::string msg) {
    return Status(StatusCode::kOffsetOutOfRange, 0, std::move(msg));
  }
  static Status unsupported(int err, std::string msg) {
    return Status(StatusCode::kUnsupported, err, std::move(msg));
  }
  static Status fenced(std::string msg) { return Status(StatusCode::kFenced, 0, std::move(msg)); }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  int err() const { return errno_; }  // errno of the failed call, 0 if none
  const std::string& message() const { return message_; }
  // The same error with prefix in front of its message.
  Status with_prefix(const std::string& prefix) const { return Status(code_, errno_, prefix + message_); }
  // "ok" or "<code>: <message> (<strerror>)".
  std::string to_string() const;

 private:
  Status(StatusCode c, int e, std::string m) : code_(c), errno_(e), message_(std::move(m)) {}

  StatusCode code_ = StatusCode::kOk;
  int errno_ = 0;
  std::string message_;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Result(Status s) : v_(std::in_place_index<1>, std::move(s)) {      // NOLINT: implicit by design
    if (std::get<1>(v_).is_ok()) die("a Result built from an ok Status has no value");
  }

  bool is_ok() const { return v_.index() == 0; }
  explicit operator bool() const { return is_ok(); }

  T& value() & { return check(), std::get<0>(v_); }
  const T& value() const& { return check(), std::get<0>(v_); }
  T&& value() && { return check(), std::get<0>(std::move(v_)); }
  // The error; Status::ok() when this holds a value.
  Status status() const { return is_ok() ? Status() : std::get<1>(v_); }

  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  [[noreturn]] static void die(const char* what) {
    std::fprintf(stderr, "storage::Result: %s\n", what);
    std::abort();
  }
  void check() const {
    if (!is_ok()) {
      std::fprintf(stderr, "storage::Result: read the value of an error: %s\n",
                   std::get<1>(v_).to_string().c_str());
      std::abort();
    }
  }

  std::variant<T, Status> v_;
};

}  // namespace ciuickafka::storage

// Early return on error, LevelDB-style. Use inside functions returning Status
// or Result<T>.
#define CK_RETURN_IF_ERROR(expr)                  \
  do {                                            \
    ::ciuickafka::storage::Status ck_s_ = (expr); \
    if (!ck_s_.is_ok()) return ck_s_;             \
  } while (0)
