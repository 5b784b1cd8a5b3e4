// tests/unit/handlers/admin/alter_partition_test.cc: AlterPartition v0-3 on
// a broker that is not a ZooKeeper-mode controller (a single node):
// NOT_CONTROLLER, as Kafka's brokers answer it. The controller side is
// tested in tests/unit/replication/controller_runtime_test.cc.
#include <catch2/catch.hpp>

#include "protocol/generated/alter_partition.h"
#include "tests/unit/handlers/admin/admin_test_util.h"

using namespace ciuickafka;
using namespace ciuickafka::broker;
using protocol::AlterPartitionRequest;
using protocol::AlterPartitionResponse;
using protocol::ErrorCode;
using test::code;

TEST_CASE("AlterPartition on a broker that is not the controller answers NOT_CONTROLLER",
          "[admin][alter_partition]") {
  test::BrokerFixture f;
  for (int16_t v : {0, 1, 2, 3}) {
    AlterPartitionRequest req;
    req.broker_id = 1;
    req.broker_epoch = 5;
    AlterPartitionRequest::TopicData t;
    if (v >= 2)
      t.topic_id.bytes[0] = 1;
    else
      t.topic_name = "t";
    AlterPartitionRequest::PartitionData p;
    if (v >= 3)
      p.new_isr_with_epochs = {{1, 5, {}}};
    else
      p.new_isr = {1};
    t.partitions.push_back(p);
    req.topics.push_back(t);
    auto resp = f.call<AlterPartitionResponse>(req, v);
    CHECK(resp.error_code == code(ErrorCode::NOT_CONTROLLER));
    CHECK(resp.topics.empty());
  }
}
