// broker/produce/acks_all_wait.h: the acks=all waiting room.
//
// A produce with acks=-1 (and ciuic.acks.all.fsync=true) is answered once
// every partition it wrote is durable: for each one a group-commit request
// (LogManager::sync_to(log, last_offset + 1)) is queued; its callback, on
// the flusher thread, counts down. No thread waits: the request lives in a
// small shared object until the last callback or the request's timeout (a
// timer on the broker's background thread) finishes it, whichever comes
// first, exactly once. Partitions not yet durable at the timeout get
// REQUEST_TIMED_OUT, as Kafka's delayed produce does; a failed fdatasync
// gives KAFKA_STORAGE_ERROR. The number of waiting requests is the
// produce purgatory gauge.
//
// Thread-safety: start() from any thread; `finish` runs once, on the flusher
// thread, the background thread, or the caller's (when the committer has
// stopped).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "protocol/error_code.h"
#include "storage/log.h"

namespace ciuickafka::broker {
class Broker;
}

namespace ciuickafka::broker::produce {

struct DurableTarget {
  std::shared_ptr<storage::Log> log;
  int64_t end_offset = 0;  // every record below must be durable
};

// finish(results): one error code per target, in order.
using AcksFinish = std::function<void(const std::vector<protocol::ErrorCode>&)>;

void wait_for_durability(Broker& broker, std::vector<DurableTarget> targets, int32_t timeout_ms,
                         AcksFinish finish);

}  // namespace ciuickafka::broker::produce
