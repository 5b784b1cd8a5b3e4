// replication/zk_data_internal.h: helpers shared by zk_data.cc and
// zk_admin_data.cc; not part of the module's interface.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "replication/json.h"
#include "replication/result.h"

namespace ciuickafka::replication::detail {

// The object of members in `order` (indices into members), compact.
std::string encode_ordered(Json::Object members, const std::vector<size_t>& order);
std::vector<std::string> keys_of(const Json::Object& members);
Json int_list(const std::vector<int32_t>& v);
// Parses bytes as a JSON object (any other value is an error).
Result<Json> parse_payload(std::string_view bytes);
// Java's Long.parseLong: optional sign then digits; what names it in errors.
Result<int64_t> parse_java_long(std::string_view s, std::string_view what);

}  // namespace ciuickafka::replication::detail
