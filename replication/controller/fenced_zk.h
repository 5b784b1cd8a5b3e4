// replication/controller/fenced_zk.h: the controller's ZooKeeper writes,
// every one a multi that starts with check(/controller_epoch, zkVersion)
// (Kafka's KafkaZkClient.wrapRequestWithControllerEpochCheck), so a
// controller that lost its role writes nothing.
//
// Thread-safety: stateless; the session is used from the controller thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "replication/zk/session.h"

namespace ciuickafka::replication::controller {

enum class FenceOutcome : uint8_t {
  kOk,
  kFenced,    // the epoch check failed: another controller was elected
  kOpFailed,  // one of the caller's ops failed (failed_op, code say which/why)
  kError,     // the multi did not reach a verdict (connection loss, expiry...)
};

struct FencedWrite {
  FenceOutcome outcome = FenceOutcome::kOk;
  zk::Code code = zk::Code::kOk;
  size_t failed_op = 0;  // index into the caller's ops (the check excluded)
  std::vector<zk::OpResult> results;  // per caller op (the check excluded)
};

// Runs check(/controller_epoch, epoch_zk_version) followed by ops.
FencedWrite fenced_multi(zk::Session& zk, int32_t epoch_zk_version, std::vector<zk::Op> ops);

}  // namespace ciuickafka::replication::controller
