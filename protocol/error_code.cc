// protocol/error_code.cc: see error_code.h.
#include "protocol/error_code.h"

namespace ciuickafka::protocol {

std::string_view error_name(ErrorCode e) {
  switch (e) {
#define CK_ERROR_NAME(name, code, retriable, desc) \
  case ErrorCode::name: return #name;
    CK_KAFKA_ERRORS(CK_ERROR_NAME)
#undef CK_ERROR_NAME
  }
  return "UNKNOWN_ERROR_CODE";
}

std::string_view error_description(ErrorCode e) {
  switch (e) {
#define CK_ERROR_DESC(name, code, retriable, desc) \
  case ErrorCode::name: return desc;
    CK_KAFKA_ERRORS(CK_ERROR_DESC)
#undef CK_ERROR_DESC
  }
  return "unknown error code";
}

bool is_retriable(ErrorCode e) {
  switch (e) {
#define CK_ERROR_RETRY(name, code, retriable, desc) \
  case ErrorCode::name: return retriable;
    CK_KAFKA_ERRORS(CK_ERROR_RETRY)
#undef CK_ERROR_RETRY
  }
  return false;
}

}  // namespace ciuickafka::protocol
