// broker/cluster/coordinator_errors.h: how a coordinator (groups, or
// transactions) answers a failed append to its internal topic, as Kafka's
// GroupMetadataManager and TransactionStateManager both map them: the
// partition is unavailable or the write timed out -> COORDINATOR_NOT_AVAILABLE
// (retry here); this broker is no longer its leader, or its disk failed ->
// NOT_COORDINATOR (look the coordinator up again). Other errors are returned
// as they are (each coordinator maps what is left its own way).
//
// Thread-safety: a pure function.
#pragma once

#include "protocol/error_code.h"

namespace ciuickafka::broker {

inline protocol::ErrorCode coordinator_append_error(protocol::ErrorCode e) {
  using protocol::ErrorCode;
  switch (e) {
    case ErrorCode::UNKNOWN_TOPIC_OR_PARTITION:
    case ErrorCode::NOT_ENOUGH_REPLICAS:
    case ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND:
    case ErrorCode::REQUEST_TIMED_OUT:
      return ErrorCode::COORDINATOR_NOT_AVAILABLE;
    case ErrorCode::NOT_LEADER_OR_FOLLOWER:
    case ErrorCode::KAFKA_STORAGE_ERROR:
      return ErrorCode::NOT_COORDINATOR;
    default:
      return e;
  }
}

}  // namespace ciuickafka::broker
