// broker/handlers/registry.h: which APIs this broker implements, and how.
//
// Each handler file (one per API, handlers/<api>.cc) registers itself:
//
//   CK_REGISTER_HANDLER(protocol::ProduceRequest, 0, 11, handle_produce);
//
// The registry is then the single source of truth for dispatch and for
// ApiVersions: the broker advertises exactly the API keys and version ranges
// that have a handler, nothing more. Registration happens during static
// initialisation, which is why the handler files are built as an object
// library (all objects are linked, none dropped by the linker).
//
// Thread-safety: written only before main() runs; read-only afterwards.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "broker/server/request_context.h"

namespace ciuickafka::broker {

using HandlerFn = void (*)(RequestContext&& ctx);

struct HandlerEntry {
  int16_t api_key = -1;
  int16_t min_version = 0;
  int16_t max_version = -1;
  std::string_view api_name;
  HandlerFn fn = nullptr;
};

// The handler for api_key, or nullptr. The version range is not checked here.
const HandlerEntry* find_handler(int16_t api_key);
// All registered handlers, by API key.
std::vector<HandlerEntry> registered_handlers();

namespace detail {
struct Registrar {
  Registrar(int16_t api_key, int16_t min_version, int16_t max_version, const char* name, HandlerFn fn);
};
}  // namespace detail

#define CK_REGISTER_HANDLER_CAT2(a, b) a##b
#define CK_REGISTER_HANDLER_CAT(a, b) CK_REGISTER_HANDLER_CAT2(a, b)
#define CK_REGISTER_HANDLER(RequestType, min_version, max_version, fn)                     \
  static_assert((min_version) >= RequestType::kLowestVersion &&                            \
                    (max_version) <= RequestType::kHighestVersion,                         \
                "handler versions outside the schema's range");                            \
  static const ::ciuickafka::broker::detail::Registrar CK_REGISTER_HANDLER_CAT(            \
      ck_handler_registrar_, __LINE__)(RequestType::kApiKey, (min_version), (max_version), \
                                       #RequestType, (fn))

}  // namespace ciuickafka::broker
