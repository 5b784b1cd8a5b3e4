// replication/controller/fenced_zk.cc: see fenced_zk.h.
#include "replication/controller/fenced_zk.h"

#include "replication/zk_data.h"

namespace ciuickafka::replication::controller {

FencedWrite fenced_multi(zk::Session& zk, int32_t epoch_zk_version, std::vector<zk::Op> ops) {
  std::vector<zk::Op> all;
  all.reserve(ops.size() + 1);
  all.push_back(zk::Op::check(std::string(kControllerEpochPath), epoch_zk_version));
  for (auto& op : ops) all.push_back(std::move(op));
  std::vector<zk::OpResult> results;
  FencedWrite w;
  w.code = zk.multi(all, &results);
  if (w.code == zk::Code::kOk) {
    w.results.assign(results.begin() + (results.empty() ? 0 : 1), results.end());
    return w;
  }
  if (results.size() != all.size()) {
    w.outcome = FenceOutcome::kError;
    return w;
  }
  if (results[0].code != zk::Code::kOk) {
    // BADVERSION: the epoch moved; NONODE: /controller_epoch is gone. Both
    // mean this broker is no longer the controller it thinks it is.
    w.outcome = (results[0].code == zk::Code::kBadVersion || results[0].code == zk::Code::kNoNode)
                    ? FenceOutcome::kFenced
                    : FenceOutcome::kError;
    w.code = results[0].code;
    return w;
  }
  for (size_t i = 1; i < results.size(); ++i) {
    if (results[i].code != zk::Code::kOk && results[i].code != zk::Code::kRuntimeInconsistency) {
      w.outcome = FenceOutcome::kOpFailed;
      w.failed_op = i - 1;
      w.code = results[i].code;
      break;
    }
  }
  if (w.outcome == FenceOutcome::kOk) w.outcome = FenceOutcome::kError;
  w.results.assign(results.begin() + 1, results.end());
  return w;
}

}  // namespace ciuickafka::replication::controller
