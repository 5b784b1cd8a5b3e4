// tests/unit/handlers/admin/admin_test_util.h: small helpers shared by the
// admin handler tests: create a topic through CreateTopics, find a config
// entry in a DescribeConfigs answer, append a record to a partition.
#pragma once

#include <catch2/catch.hpp>

#include <string>

#include "protocol/error_code.h"
#include "protocol/generated/create_topics.h"
#include "protocol/generated/describe_configs.h"
#include "protocol/records/batch_builder.h"
#include "tests/unit/handlers/broker_fixture.h"

namespace ciuickafka::broker::test {

inline int16_t code(protocol::ErrorCode e) { return protocol::to_wire(e); }

inline protocol::CreateTopicsResponse::CreatableTopicResult create_topic(
    BrokerFixture& f, const std::string& name, int32_t partitions = 1,
    std::vector<std::pair<std::string, std::string>> configs = {}, int16_t version = 7) {
  protocol::CreateTopicsRequest req;
  protocol::CreateTopicsRequest::CreatableTopic t;
  t.name = name;
  t.num_partitions = partitions;
  t.replication_factor = 1;
  for (auto& [k, v] : configs) {
    protocol::CreateTopicsRequest::CreatableTopicConfig c;
    c.name = k;
    c.value = v;
    t.configs.push_back(c);
  }
  req.topics.push_back(t);
  auto resp = f.call<protocol::CreateTopicsResponse>(req, version);
  REQUIRE(resp.topics.size() == 1);
  return resp.topics[0];
}

inline const protocol::DescribeConfigsResponse::DescribeConfigsResourceResult* find_config(
    const protocol::DescribeConfigsResponse::DescribeConfigsResult& r, const std::string& name) {
  for (const auto& c : r.configs)
    if (c.name == name) return &c;
  return nullptr;
}

// Appends one record (value bytes) to topic/partition through the partition.
inline void append_record(BrokerFixture& f, const std::string& topic, int32_t partition, const std::string& value) {
  auto p = f.broker().topics().partition(topic, partition);
  REQUIRE(p);
  protocol::BatchBuilder b(protocol::BatchOptions{});
  REQUIRE(b.add(1000, std::nullopt, protocol::as_bytes(value)));
  auto batch = b.build();
  REQUIRE(batch.ok());
  protocol::Bytes bytes = batch.value();
  auto r = p->append(bytes, 1000);
  REQUIRE(r.is_ok());
}

}  // namespace ciuickafka::broker::test
