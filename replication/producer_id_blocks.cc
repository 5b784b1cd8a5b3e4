// replication/producer_id_blocks.cc: see producer_id_blocks.h.
#include "replication/producer_id_blocks.h"

#include <limits>

namespace ciuickafka::replication {

namespace {

Error zk_error(const char* what, zk::Code c) {
  return Error{std::string(what) + " " + std::string(kLatestProducerIdBlockPath) + ": " +
               std::string(zk::to_string(c))};
}

}  // namespace

Result<ProducerIdBlock> claim_producer_id_block(zk::Session& zk, int32_t broker_id, int max_attempts) {
  const std::string path(kLatestProducerIdBlockPath);
  for (int attempt = 0; attempt < max_attempts; ++attempt) {
    std::string data;
    zk::Stat stat;
    zk::Code c = zk.get(path, &data, &stat);
    bool absent = c == zk::Code::kNoNode;
    if (c != zk::Code::kOk && !absent) return zk_error("reading", c);
    ProducerIdBlock next;
    next.broker = broker_id;
    if (absent || data.empty()) {
      next.block_start = 0;
    } else {
      auto prev = decode_producer_id_block(data);
      if (!prev.ok()) return Error{path + ": " + prev.error().message};
      if (prev->block_end > std::numeric_limits<int64_t>::max() - kProducerIdBlockSize)
        return Error{path + ": producer ids exhausted (block_end " + std::to_string(prev->block_end) + ")"};
      next.block_start = prev->block_end + 1;
    }
    next.block_end = next.block_start + kProducerIdBlockSize - 1;
    const std::string payload = encode_producer_id_block(next);
    zk::Code w = absent ? zk.create(path, payload, zk::CreateMode::kPersistent)
                        : zk.set(path, payload, stat.version);
    if (w == zk::Code::kOk) return next;
    if (w != zk::Code::kBadVersion && w != zk::Code::kNodeExists) return zk_error("writing", w);
    // Another broker claimed a block between our read and write: read again.
  }
  return Error{path + ": lost " + std::to_string(max_attempts) + " races for a producer id block"};
}

}  // namespace ciuickafka::replication
