// replication/result.h: errors as values for the pure replication code
// (JSON, znode payloads, assignment, election).
//
// Error carries a message that says what is wrong and where ("field 'port':
// expected an integer"). Result<T> holds a T or an Error (or another error
// type E with a `message` member). Nothing in these
// modules throws; reading the wrong side of a Result is a broken invariant
// and aborts with a message.
//
// Thread-safety: plain value types.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace ciuickafka::replication {

struct Error {
  std::string message;
};

// E is Error unless a module needs a code its caller maps (assignment.h).
template <class T, class E = Error>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}    // NOLINT: implicit by design
  Result(E error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  const T& value() const& { check(true); return std::get<0>(v_); }
  T& value() & { check(true); return std::get<0>(v_); }
  T&& value() && { check(true); return std::get<0>(std::move(v_)); }
  const E& error() const { check(false); return std::get<1>(v_); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }

 private:
  void check(bool want_value) const {
    if (ok() != want_value) {
      std::fprintf(stderr, "replication::Result: read the %s of a Result holding %s\n",
                   want_value ? "value" : "error", ok() ? "a value" : get_if_error());
      std::abort();
    }
  }
  const char* get_if_error() const {
    const E* e = std::get_if<1>(&v_);
    return e ? e->message.c_str() : "";
  }
  std::variant<T, E> v_;
};

}  // namespace ciuickafka::replication

// Declares `name` from a Result-returning expression, or returns its error
// from the enclosing function (which returns a Result of any type).
#define CK_TRY(name, expr)                                  \
  auto name##_result_ = (expr);                             \
  if (!name##_result_) return name##_result_.error();       \
  auto name = std::move(name##_result_).value()
