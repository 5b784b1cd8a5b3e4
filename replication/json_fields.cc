// replication/json_fields.cc: the field_* decoders of json.h.
#include <limits>

#include "replication/json.h"

namespace ciuickafka::replication {

namespace {

Error field_error(std::string_view key, const char* what) {
  return Error{"field '" + std::string(key) + "': " + what};
}

}  // namespace

Result<int64_t> field_int64(const Json& object, std::string_view key) {
  const Json* v = object.find(key);
  if (v == nullptr) return field_error(key, "missing");
  if (!v->is_int()) return field_error(key, "expected an integer");
  return *v->if_int();
}

Result<int32_t> field_int32(const Json& object, std::string_view key) {
  auto v = field_int64(object, key);
  if (!v) return v.error();
  if (*v < std::numeric_limits<int32_t>::min() || *v > std::numeric_limits<int32_t>::max())
    return field_error(key, "out of int32 range");
  return static_cast<int32_t>(*v);
}

Result<std::string> field_string(const Json& object, std::string_view key) {
  const Json* v = object.find(key);
  if (v == nullptr) return field_error(key, "missing");
  if (!v->is_string()) return field_error(key, "expected a string");
  return *v->if_string();
}

Result<const Json*> field_object(const Json& object, std::string_view key) {
  const Json* v = object.find(key);
  if (v == nullptr) return field_error(key, "missing");
  if (!v->is_object()) return field_error(key, "expected an object");
  return v;
}

Result<const Json*> field_array(const Json& object, std::string_view key) {
  const Json* v = object.find(key);
  if (v == nullptr) return field_error(key, "missing");
  if (!v->is_array()) return field_error(key, "expected an array");
  return v;
}

Result<std::optional<int32_t>> optional_int32(const Json& object, std::string_view key) {
  const Json* v = object.find(key);
  if (v == nullptr || v->is_null()) return std::optional<int32_t>();
  auto i = field_int32(object, key);
  if (!i) return i.error();
  return std::optional<int32_t>(*i);
}

Result<std::optional<std::string>> optional_string(const Json& object, std::string_view key) {
  const Json* v = object.find(key);
  if (v == nullptr || v->is_null()) return std::optional<std::string>();
  if (!v->is_string()) return field_error(key, "expected a string");
  return std::optional<std::string>(*v->if_string());
}

Result<std::vector<int32_t>> int32_list(const Json& array, std::string_view what) {
  const Json::Array* a = array.if_array();
  if (a == nullptr) return field_error(what, "expected an array");
  std::vector<int32_t> out;
  out.reserve(a->size());
  for (const Json& e : *a) {
    const int64_t* i = e.if_int();
    if (i == nullptr || *i < std::numeric_limits<int32_t>::min() || *i > std::numeric_limits<int32_t>::max())
      return field_error(what, "expected an array of int32");
    out.push_back(static_cast<int32_t>(*i));
  }
  return out;
}

Result<int32_t> payload_version(const Json& object, int32_t min, int32_t max) {
  if (!object.is_object()) return Error{"payload: expected a JSON object"};
  auto v = field_int32(object, "version");
  if (!v) return v.error();
  if (*v < min || *v > max)
    return Error{"field 'version': unsupported version " + std::to_string(*v) + " (expected " +
                 std::to_string(min) + ".." + std::to_string(max) + ")"};
  return *v;
}

}  // namespace ciuickafka::replication
