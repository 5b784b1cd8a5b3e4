// tests/unit/replication/broker_client_test.cc: BrokerClient against the
// real broker (Broker + Server on 127.0.0.1:0, in this process): version
// negotiation, typed calls in non-flexible and flexible versions, and a
// Fetch through call_raw whose records are read in place.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string_view>

#include "protocol/generated/create_topics.h"
#include "protocol/generated/fetch.h"
#include "protocol/generated/metadata.h"
#include "protocol/generated/produce.h"
#include "protocol/records/batch_builder.h"
#include "replication/net/broker_client.h"
#include "tests/unit/server/server_test_util.h"

namespace ciuickafka::replication::net::test {
namespace {

using broker::test::ServerFixture;

std::unique_ptr<BrokerClient> connect_to(ServerFixture& f) {
  ClientOptions o;
  o.client_id = "net-test";
  o.connect_timeout_ms = 5000;
  o.request_timeout_ms = 10000;
  o.max_response_bytes = 1 << 20;
  NetResult<std::unique_ptr<BrokerClient>> c = BrokerClient::connect("127.0.0.1", f.port(), o);
  if (!c) FAIL(c.error().message);
  return std::move(c.value());
}

bool contains(std::span<const uint8_t> hay, std::string_view needle) {
  return std::search(hay.begin(), hay.end(), needle.begin(), needle.end()) != hay.end();
}

TEST_CASE("the real broker: negotiation and Metadata in classic and flexible versions") {
  ServerFixture f;
  auto c = connect_to(f);
  REQUIRE(c->ok());
  CHECK(c->api_versions_version() == 3);
  CHECK(c->pick_version(18, 4) == 4);
  CHECK(c->pick_version(3, 12) == 12);
  CHECK(c->pick_version(1, 17) == 17);  // a 3.9 follower's Fetch
  CHECK(c->pick_version(23, 4) == 4);   // OffsetForLeaderEpoch
  CHECK(c->pick_version(2, 9) == 9);    // ListOffsets
  // LeaderAndIsr: whatever the broker registers, capped at 3.9's v7.
  if (auto li = c->broker_versions(4))
    CHECK(c->pick_version(4, 7) == std::min<int16_t>(li->max, 7));
  else
    CHECK(c->pick_version(4, 7) == std::nullopt);

  for (int16_t v : {int16_t{1}, int16_t{8}, int16_t{9}, int16_t{12}}) {
    INFO("Metadata v" << v);
    protocol::MetadataRequest req;
    protocol::MetadataResponse resp;
    Status st = c->call(req, v, &resp);
    INFO((st.ok() ? std::string() : st.message()));
    REQUIRE(st.ok());
    REQUIRE(resp.brokers.size() == 1);
    // (The broker advertises the configured port, 0 here, not the bound
    // one, so only the host is checked.)
    CHECK(resp.brokers[0].host == "127.0.0.1");
    if (v >= 2) CHECK(resp.cluster_id.has_value());
  }
  CHECK(c->ok());
}

TEST_CASE("the real broker: CreateTopics, Produce, then Fetch v17 through call_raw") {
  ServerFixture f;
  auto c = connect_to(f);

  protocol::CreateTopicsRequest create;
  protocol::CreateTopicsRequest::CreatableTopic t;
  t.name = "net-topic";
  t.num_partitions = 1;
  t.replication_factor = 1;
  create.topics.push_back(t);
  protocol::CreateTopicsResponse created;
  REQUIRE(c->call(create, 7, &created).ok());
  REQUIRE(created.topics.size() == 1);
  REQUIRE(created.topics[0].error_code == 0);
  const protocol::Uuid topic_id = created.topics[0].topic_id;
  REQUIRE_FALSE(topic_id.is_zero());

  protocol::BatchBuilder builder(protocol::BatchOptions{});
  REQUIRE(builder.add(1000, std::nullopt, protocol::as_bytes("hello-replica-0")));
  REQUIRE(builder.add(1001, std::nullopt, protocol::as_bytes("hello-replica-1")));
  auto batch = builder.build();
  REQUIRE(batch.ok());
  protocol::ProduceRequest produce;
  produce.acks = 1;
  produce.timeout_ms = 5000;
  protocol::ProduceRequest::TopicProduceData td;
  td.name = "net-topic";
  protocol::ProduceRequest::PartitionProduceData pd;
  pd.index = 0;
  pd.records = protocol::Records(batch.value());
  td.partition_data.push_back(pd);
  produce.topic_data.push_back(td);
  protocol::ProduceResponse produced;
  REQUIRE(c->call(produce, 9, &produced).ok());
  REQUIRE(produced.responses.size() == 1);
  REQUIRE(produced.responses[0].partition_responses.size() == 1);
  CHECK(produced.responses[0].partition_responses[0].error_code == 0);
  CHECK(produced.responses[0].partition_responses[0].base_offset == 0);

  protocol::FetchRequest fetch;
  fetch.max_wait_ms = 2000;
  fetch.min_bytes = 1;
  protocol::FetchRequest::FetchTopic ft;
  ft.topic_id = topic_id;
  protocol::FetchRequest::FetchPartition fp;
  fp.partition = 0;
  fp.fetch_offset = 0;
  fp.partition_max_bytes = 1 << 20;
  ft.partitions.push_back(fp);
  fetch.topics.push_back(ft);
  protocol::Writer body;
  fetch.encode(body, 17);
  REQUIRE(body.ok());

  NetResult<RawResponse> raw = c->call_raw(1, 17, body.buffer());
  REQUIRE(raw.ok());
  // The records are decoded in place: their bytes lie in the response frame.
  protocol::FetchResponse resp;
  protocol::Reader r(raw.value().body());
  resp.decode(r, 17);
  REQUIRE(r.ok());
  CHECK(r.at_end());
  CHECK(resp.error_code == 0);
  REQUIRE(resp.responses.size() == 1);
  CHECK(resp.responses[0].topic_id == topic_id);
  REQUIRE(resp.responses[0].partitions.size() == 1);
  const auto& p = resp.responses[0].partitions[0];
  CHECK(p.error_code == 0);
  CHECK(p.high_watermark == 2);
  const std::span<const uint8_t> records = p.records.bytes;
  REQUIRE(records.size() == batch.value().size());
  const std::span<const uint8_t> frame = raw.value().frame;
  CHECK(records.data() >= frame.data());
  CHECK(records.data() + records.size() <= frame.data() + frame.size());
  CHECK(contains(records, "hello-replica-0"));
  CHECK(contains(records, "hello-replica-1"));
  CHECK(c->ok());
}

TEST_CASE("the real broker: an unencodable request fails without killing the connection") {
  ServerFixture f;
  auto c = connect_to(f);
  protocol::MetadataRequest req;
  protocol::MetadataResponse resp;
  Status st = c->call(req, 99, &resp);
  REQUIRE_FALSE(st.ok());
  CHECK(st.kind() == NetErrorKind::kEncode);
  CHECK(c->ok());
  REQUIRE(c->call(req, 12, &resp).ok());
}

}  // namespace
}  // namespace ciuickafka::replication::net::test
