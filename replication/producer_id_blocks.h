// replication/producer_id_blocks.h: claiming a block of producer ids from
// ZooKeeper's /latest_producer_id_block, so that the ids brokers hand out
// (InitProducerId) are unique across the whole cluster.
//
// The rule is Kafka's ZkProducerIdManager.getNewProducerIdBlock: read the
// znode and its version; empty or absent means no block was ever handed out
// and the first block starts at 0; otherwise the next one starts one past
// the last block's block_end. The new block (kBlockSize ids, the claiming
// broker's id in "broker") is written with a conditional set on the version
// read (a create when the znode is absent); a concurrent claim by another
// broker makes that write fail and the whole step is tried again, so two
// brokers never get overlapping blocks. A znode that does not parse is an
// error (nothing is overwritten), as is a block end past 2^63-1 - kBlockSize.
//
// Blocking ZooKeeper calls: call it off the network threads.
// Thread-safety: a stateless function over the session.
#pragma once

#include <cstdint>
#include <string>

#include "replication/result.h"
#include "replication/zk/session.h"
#include "replication/zk_data.h"

namespace ciuickafka::replication {

inline constexpr int64_t kProducerIdBlockSize = 1000;  // Kafka's PRODUCER_ID_BLOCK_SIZE

// Claims the next block for broker_id; at most max_attempts conditional
// writes lost to other brokers before giving up. A ZooKeeper error other
// than a lost race is returned as the error (its code in the message).
Result<ProducerIdBlock> claim_producer_id_block(zk::Session& zk, int32_t broker_id, int max_attempts = 100);

}  // namespace ciuickafka::replication
