// protocol/compression/result.h: Result<T, E>, a value or an error value.
//
// The record and compression code returns errors as values on hot paths (no
// exceptions). Result holds either a T or an E (an error enum); callers test
// ok() and then read value() or error(). Reading the wrong side is a broken
// invariant and aborts with a message. This is deliberately tiny: it can move
// to a shared utility folder once another module needs it.
//
// Thread-safety: a plain value type.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <utility>
#include <variant>

namespace ciuickafka::protocol {

template <class T, class E>
class [[nodiscard]] Result {
  static_assert(!std::is_same_v<T, E>, "Result<T, E> needs distinct types");

 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Result(E error) : v_(std::in_place_index<1>, error) {}             // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    check(true);
    return std::get<0>(v_);
  }
  const T& value() const& {
    check(true);
    return std::get<0>(v_);
  }
  T&& value() && {
    check(true);
    return std::get<0>(std::move(v_));
  }
  E error() const {
    check(false);
    return std::get<1>(v_);
  }

  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  void check(bool want_value) const {
    if (ok() != want_value) {
      std::fprintf(stderr, "Result: read %s of a result holding %s\n",
                   want_value ? "value" : "error", ok() ? "a value" : "an error");
      std::abort();
    }
  }

  std::variant<T, E> v_;
};

}  // namespace ciuickafka::protocol
