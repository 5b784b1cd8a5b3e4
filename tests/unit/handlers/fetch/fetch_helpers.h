// tests/unit/handlers/fetch/fetch_helpers.h: shared set-up for the fetch
// area's handler tests: topics with known batches, fetch requests, and the
// bytes the segment files hold (what a zero-copy response must carry).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "broker/broker.h"
#include "protocol/generated/fetch.h"
#include "protocol/records/batch_builder.h"
#include "storage/log.h"
#include "tests/unit/handlers/broker_fixture.h"

namespace ciuickafka::broker::test {

// BrokerFixture with a valid metrics listener: the shared fixture passes
// "ciuic.metrics.listener=", which the config validator rejects today; a
// later override of the same key wins. (Nothing listens: Broker::open does
// not start the exposer.)
class FetchFixture : public BrokerFixture {
 public:
  FetchFixture() : BrokerFixture({"ciuic.metrics.listener=127.0.0.1:0"}) {}
};

// A v2 batch of n records with values of value_size bytes ('a' + i).
inline std::vector<uint8_t> make_batch(int n, size_t value_size, int64_t timestamp = 1'000,
                                       protocol::Codec codec = protocol::Codec::kNone) {
  protocol::BatchOptions o;
  o.codec = codec;
  protocol::BatchBuilder b(o);
  for (int i = 0; i < n; ++i) {
    std::string v(value_size, static_cast<char>('a' + (i % 26)));
    std::string k = "k" + std::to_string(i);
    b.add(timestamp + i, protocol::as_bytes(k), protocol::as_bytes(v));
  }
  auto r = b.build();
  if (!r.ok()) throw std::runtime_error("batch does not build");
  return r.value();
}

inline std::shared_ptr<const Topic> create_topic(BrokerFixture& f, const std::string& name, int32_t partitions = 1) {
  auto c = f.broker().topics().create(name, partitions, 1, {}, false, Broker::now_ms());
  if (!c.error.ok()) throw std::runtime_error("create failed: " + c.error.message);
  return c.topic;
}

inline storage::AppendResult append(Partition& p, std::vector<uint8_t> batch) {
  auto r = p.append(batch, Broker::now_ms());
  if (!r.is_ok()) throw std::runtime_error("append failed: " + r.status().to_string());
  return r.value();
}

// The bytes of whole batches from `offset` up to the HW, as the files hold them.
inline std::vector<uint8_t> log_bytes(Partition& p, int64_t offset, uint64_t max_bytes = 1u << 30) {
  auto r = p.log().read(offset, max_bytes, p.high_watermark());
  if (!r.is_ok()) throw std::runtime_error("read failed");
  auto bytes = storage::read_slices(r.value());
  if (!bytes.is_ok()) throw std::runtime_error("read_slices failed");
  return bytes.value();
}

inline std::vector<uint8_t> record_bytes(const protocol::Records& r) {
  return std::vector<uint8_t>(r.bytes.begin(), r.bytes.end());
}

inline protocol::FetchRequest fetch_request(const std::string& topic, std::vector<std::pair<int32_t, int64_t>> parts,
                                            int32_t partition_max = 1 << 20, int32_t max_bytes = 50 << 20) {
  protocol::FetchRequest req;
  req.max_wait_ms = 0;
  req.min_bytes = 0;
  req.max_bytes = max_bytes;
  protocol::FetchRequest::FetchTopic t;
  t.topic = topic;
  for (auto [p, off] : parts) {
    protocol::FetchRequest::FetchPartition fp;
    fp.partition = p;
    fp.fetch_offset = off;
    fp.partition_max_bytes = partition_max;
    t.partitions.push_back(fp);
  }
  req.topics.push_back(std::move(t));
  return req;
}

}  // namespace ciuickafka::broker::test
