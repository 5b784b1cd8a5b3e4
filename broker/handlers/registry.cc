// broker/handlers/registry.cc: the table behind CK_REGISTER_HANDLER.
#include "broker/handlers/registry.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "protocol/generated/api_keys.h"

namespace ciuickafka::broker {
namespace {

constexpr int kMaxApiKey = 128;

// A function-local static, so registrars in other translation units can use
// it whatever the order of static initialisation.
std::array<HandlerEntry, kMaxApiKey>& table() {
  static std::array<HandlerEntry, kMaxApiKey> t{};
  return t;
}

}  // namespace

detail::Registrar::Registrar(int16_t api_key, int16_t min_version, int16_t max_version,
                             const char* /*type_name*/, HandlerFn fn) {
  if (api_key < 0 || api_key >= kMaxApiKey || table()[api_key].fn != nullptr) {
    std::fprintf(stderr, "handler registry: API key %d registered twice or out of range\n", api_key);
    std::abort();
  }
  const protocol::ApiInfo* info = protocol::find_api(api_key);
  table()[api_key] = HandlerEntry{api_key, min_version, max_version,
                                  info != nullptr ? info->name : std::string_view("Unknown"), fn};
}

const HandlerEntry* find_handler(int16_t api_key) {
  if (api_key < 0 || api_key >= kMaxApiKey) return nullptr;
  const HandlerEntry& e = table()[api_key];
  return e.fn != nullptr ? &e : nullptr;
}

std::vector<HandlerEntry> registered_handlers() {
  std::vector<HandlerEntry> out;
  for (const HandlerEntry& e : table())
    if (e.fn != nullptr) out.push_back(e);
  return out;
}

}  // namespace ciuickafka::broker
