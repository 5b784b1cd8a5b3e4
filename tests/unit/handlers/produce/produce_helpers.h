// tests/unit/handlers/produce/produce_helpers.h: building produce requests
// and reading back what the log stored, for the produce handler tests.
//
// Thread-safety: test thread only.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "broker/broker.h"
#include "protocol/generated/produce.h"
#include "protocol/records/batch_builder.h"
#include "protocol/records/record_batch.h"
#include "storage/log.h"
#include "tests/unit/handlers/broker_fixture.h"

namespace ciuickafka::broker::test {

inline std::string test_data_dir() { return CK_TEST_DATA_DIR; }

inline std::vector<uint8_t> read_binary(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

inline void create_topic(BrokerFixture& f, const std::string& name, int32_t partitions = 1,
                         const ConfigMap& configs = {}) {
  auto created = f.broker().topics().create(name, partitions, 1, configs, false, Broker::now_ms());
  if (!created.error.ok()) throw std::runtime_error("create_topic: " + created.error.message);
}

struct BatchSpec {
  int records = 3;
  protocol::Codec codec = protocol::Codec::kNone;
  int64_t timestamp = -2;  // -2: now
  int64_t producer_id = -1;
  int16_t epoch = -1;
  int32_t base_sequence = -1;
  std::string value_prefix = "value-";
  bool null_keys = false;
  bool transactional = false;
};

inline std::vector<uint8_t> make_batch(const BatchSpec& s) {
  protocol::BatchOptions o;
  o.codec = s.codec;
  o.producer_id = s.producer_id;
  o.producer_epoch = s.epoch;
  o.base_sequence = s.base_sequence;
  o.transactional = s.transactional;
  protocol::BatchBuilder b(o);
  const int64_t ts = s.timestamp == -2 ? Broker::now_ms() : s.timestamp;
  for (int i = 0; i < s.records; ++i) {
    std::string key = "key-" + std::to_string(i);
    std::string value = s.value_prefix + std::to_string(i);
    std::optional<std::span<const uint8_t>> k;
    if (!s.null_keys) k = protocol::as_bytes(key);
    b.add(ts, k, protocol::as_bytes(value));
  }
  auto built = b.build();
  if (!built.ok()) throw std::runtime_error("batch does not build");
  return built.value();
}

// A request with one partition's records (the bytes must outlive the call).
inline protocol::ProduceRequest produce_request(const std::string& topic, int32_t partition,
                                                std::span<const uint8_t> records, int16_t acks = 1,
                                                int32_t timeout_ms = 30000) {
  protocol::ProduceRequest req;
  req.transactional_id = std::nullopt;
  req.acks = acks;
  req.timeout_ms = timeout_ms;
  protocol::ProduceRequest::TopicProduceData td;
  td.name = topic;
  protocol::ProduceRequest::PartitionProduceData pd;
  pd.index = partition;
  pd.records = protocol::Records(records);
  td.partition_data.push_back(pd);
  req.topic_data.push_back(td);
  return req;
}

inline const protocol::ProduceResponse::PartitionProduceResponse& only_partition(
    const protocol::ProduceResponse& r) {
  if (r.responses.size() != 1 || r.responses[0].partition_responses.size() != 1)
    throw std::runtime_error("expected one partition in the response");
  return r.responses[0].partition_responses[0];
}

inline protocol::ProduceResponse::PartitionProduceResponse produce_one(BrokerFixture& f, const std::string& topic,
                                                                       std::span<const uint8_t> records,
                                                                       int16_t version = 9, int16_t acks = 1) {
  auto resp = f.call<protocol::ProduceResponse>(produce_request(topic, 0, records, acks), version);
  return only_partition(resp);
}

// Every stored byte of the partition (whole batches from the log start).
inline std::vector<uint8_t> stored_bytes(BrokerFixture& f, const std::string& topic, int32_t partition = 0) {
  auto p = f.broker().topics().partition(topic, partition);
  if (!p) throw std::runtime_error("no partition");
  auto r = p->log().read(p->log_start_offset(), 64u << 20);
  if (!r.is_ok()) throw std::runtime_error("read failed");
  auto bytes = storage::read_slices(r.value());
  if (!bytes.is_ok()) throw std::runtime_error("read_slices failed");
  return bytes.value();
}

struct StoredRecord {
  int64_t offset;
  int64_t timestamp;
  std::string key;
  std::string value;
};

// Decodes every stored batch (CRC checked) into records; throws on any error.
inline std::vector<StoredRecord> stored_records(BrokerFixture& f, const std::string& topic,
                                                std::vector<protocol::Codec>* codecs = nullptr) {
  std::vector<uint8_t> bytes = stored_bytes(f, topic);
  std::vector<StoredRecord> out;
  protocol::BatchSplitter sp{std::span<const uint8_t>(bytes)};
  protocol::RecordsEntry e;
  while (sp.next(&e) == protocol::SplitStatus::kEntry) {
    auto v = protocol::RecordBatchView::parse_and_validate(e.bytes);
    if (!v.ok()) throw std::runtime_error("stored batch invalid");
    if (codecs) codecs->push_back(*v.value().codec());
    auto d = protocol::decode_records(v.value(), 64u << 20);
    if (!d.ok()) throw std::runtime_error("stored batch does not decode");
    auto reader = d.value().reader();
    protocol::RecordView rec;
    while (reader.next(&rec)) {
      auto str = [](const std::optional<std::span<const uint8_t>>& s) {
        return s ? std::string(s->begin(), s->end()) : std::string("<null>");
      };
      out.push_back({rec.offset, rec.timestamp, str(rec.key), str(rec.value)});
    }
    if (reader.error() != protocol::RecordError::kNone) throw std::runtime_error("stored records malformed");
  }
  return out;
}

}  // namespace ciuickafka::broker::test
