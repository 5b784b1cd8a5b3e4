// replication/json.h: the small JSON value type behind Kafka's znode payloads.
//
// Json is null, bool, an integer (int64), a double, a string, an array or an
// object. Objects keep their members in insertion order (duplicates too; find()
// returns the last one, the value Jackson's tree would keep).
//
// parse_json() is strict RFC 8259: UTF-8 only (overlong forms, surrogates and
// code points past U+10FFFF are rejected), escapes including \uXXXX surrogate
// pairs, no trailing garbage, nesting at most max_depth deep. A number without
// fraction or exponent that fits int64 is an integer, any other number a
// double. Errors name the byte offset ("json: expected ':' at byte 12"). It
// never crashes, loops or recurses without bound on any input: fuzz it.
//
// to_json() is compact (no spaces), as Jackson's default writer, which is what
// Kafka writes: {"version":5,"port":9092}. Strings are escaped like Jackson:
// '"', '\\', \b \f \n \r \t, other control characters as \u00XX (upper-case
// hex); everything else, non-ASCII included, is written as is.
//
// The field_* helpers decode one member of an object with an error value that
// names the field ("field 'port': expected an integer").
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "replication/result.h"

namespace ciuickafka::replication {

class Json {
 public:
  enum class Kind : uint8_t { kNull, kBool, kInt, kDouble, kString, kArray, kObject };
  using Array = std::vector<Json>;
  using Member = std::pair<std::string, Json>;
  using Object = std::vector<Member>;

  Json() = default;  // null
  static Json null() { return Json(); }
  static Json boolean(bool b) { return Json(Value(std::in_place_index<1>, b)); }
  static Json integer(int64_t i) { return Json(Value(std::in_place_index<2>, i)); }
  static Json number(double d) { return Json(Value(std::in_place_index<3>, d)); }
  static Json string(std::string s) { return Json(Value(std::in_place_index<4>, std::move(s))); }
  static Json array(Array a = {}) { return Json(Value(std::in_place_index<5>, std::move(a))); }
  static Json object(Object o = {}) { return Json(Value(std::in_place_index<6>, std::move(o))); }

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_null() const { return kind() == Kind::kNull; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_double() const { return kind() == Kind::kDouble; }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_array() const { return kind() == Kind::kArray; }
  bool is_object() const { return kind() == Kind::kObject; }

  // Typed views: nullptr when the value is of another kind.
  const bool* if_bool() const { return std::get_if<1>(&v_); }
  const int64_t* if_int() const { return std::get_if<2>(&v_); }
  const double* if_double() const { return std::get_if<3>(&v_); }
  const std::string* if_string() const { return std::get_if<4>(&v_); }
  const Array* if_array() const { return std::get_if<5>(&v_); }
  const Object* if_object() const { return std::get_if<6>(&v_); }
  Array* if_array() { return std::get_if<5>(&v_); }
  Object* if_object() { return std::get_if<6>(&v_); }

  // The last member named key of an object; nullptr when absent or not an object.
  const Json* find(std::string_view key) const;

  // Builders: append a member to an object / an element to an array (no-ops
  // on other kinds). Return *this for chaining.
  Json& add(std::string key, Json value);
  Json& push(Json value);

  bool operator==(const Json& other) const = default;

 private:
  using Value = std::variant<std::monostate, bool, int64_t, double, std::string, Array, Object>;
  explicit Json(Value v) : v_(std::move(v)) {}
  Value v_;
};

inline constexpr size_t kDefaultJsonMaxDepth = 64;

Result<Json> parse_json(std::string_view text, size_t max_depth = kDefaultJsonMaxDepth);
std::string to_json(const Json& value);
// Appends the JSON string literal for s (quotes and escapes) to out.
void append_json_string(std::string& out, std::string_view s);

// One-field decoders for objects. "Missing" means absent; a JSON null counts
// as missing for the optional_* forms and as a type error for the others.
Result<int64_t> field_int64(const Json& object, std::string_view key);
Result<int32_t> field_int32(const Json& object, std::string_view key);
Result<std::string> field_string(const Json& object, std::string_view key);
Result<const Json*> field_object(const Json& object, std::string_view key);
Result<const Json*> field_array(const Json& object, std::string_view key);
Result<std::optional<int32_t>> optional_int32(const Json& object, std::string_view key);
Result<std::optional<std::string>> optional_string(const Json& object, std::string_view key);
// An array of int32 (replica lists, ISRs); what names it in errors.
Result<std::vector<int32_t>> int32_list(const Json& array, std::string_view what);
// The "version" member of a payload object, which must be an integer in [min, max].
Result<int32_t> payload_version(const Json& object, int32_t min, int32_t max);

}  // namespace ciuickafka::replication
