// Kafka error codes: wire values and names agree with Kafka's table.
#include <catch2/catch.hpp>

#include <set>

#include "protocol/error_code.h"

using namespace ciuickafka::protocol;

TEST_CASE("error codes carry Kafka's wire values") {
  CHECK(to_wire(ErrorCode::UNKNOWN_SERVER_ERROR) == -1);
  CHECK(to_wire(ErrorCode::NONE) == 0);
  CHECK(to_wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION) == 3);
  CHECK(to_wire(ErrorCode::UNSUPPORTED_VERSION) == 35);
  CHECK(to_wire(ErrorCode::MEMBER_ID_REQUIRED) == 79);
  CHECK(to_wire(ErrorCode::FENCED_INSTANCE_ID) == 82);
  CHECK(to_wire(ErrorCode::UNKNOWN_TOPIC_ID) == 100);
  CHECK(to_wire(ErrorCode::VOTER_NOT_FOUND) == 127);
  CHECK(error_name(ErrorCode::NOT_COORDINATOR) == "NOT_COORDINATOR");
  CHECK(error_name(static_cast<ErrorCode>(5000)) == "UNKNOWN_ERROR_CODE");
  CHECK(is_retriable(ErrorCode::NOT_LEADER_OR_FOLLOWER));
  CHECK_FALSE(is_retriable(ErrorCode::UNSUPPORTED_VERSION));
}

TEST_CASE("codes -1..127 are each defined exactly once") {
  std::set<int16_t> seen;
#define CK_COLLECT(name, code, retriable, desc) CHECK(seen.insert(code).second);
  CK_KAFKA_ERRORS(CK_COLLECT)
#undef CK_COLLECT
  CHECK(seen.size() == 129);
  CHECK(*seen.begin() == -1);
  CHECK(*seen.rbegin() == 127);
}
