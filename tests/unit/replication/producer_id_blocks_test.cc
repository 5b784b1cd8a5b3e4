// tests/unit/replication/producer_id_blocks_test.cc: claiming producer id
// blocks from /latest_producer_id_block (replication/producer_id_blocks.h)
// against the in-memory ZooKeeper: Kafka's first block and successor rule,
// the payload Kafka's own brokers read, brokers racing for blocks never
// overlapping, and a znode that does not parse left untouched.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "replication/producer_id_blocks.h"
#include "replication/zk/fake_zk.h"
#include "replication/zk_data.h"

using namespace ciuickafka::replication;

namespace {

std::unique_ptr<zk::Session> connect(zk::Client& client) {
  std::string error;
  zk::ConnectOptions o;
  o.connect = "fake:2181/kafka";
  auto s = client.connect(o, {}, &error);
  INFO(error);
  REQUIRE(s);
  return s;
}

std::string znode(zk::Session& s) {
  std::string data;
  REQUIRE(s.get(std::string(kLatestProducerIdBlockPath), &data) == zk::Code::kOk);
  return data;
}

}  // namespace

TEST_CASE("producer id blocks: first block 0-999, then each starts past the last") {
  zk::FakeZkServer server;
  auto client = server.client();
  auto s = connect(*client);
  SECTION("the znode absent") {}
  SECTION("the znode empty, as broker start-up creates it") {
    REQUIRE(s->create(std::string(kLatestProducerIdBlockPath), "", zk::CreateMode::kPersistent) == zk::Code::kOk);
  }
  auto a = claim_producer_id_block(*s, 1);
  REQUIRE(a.ok());
  CHECK(a->broker == 1);
  CHECK(a->block_start == 0);
  CHECK(a->block_end == 999);
  CHECK(znode(*s) == R"({"version":1,"broker":1,"block_start":"0","block_end":"999"})");
  auto b = claim_producer_id_block(*s, 2);
  REQUIRE(b.ok());
  CHECK(b->broker == 2);
  CHECK(b->block_start == 1000);
  CHECK(b->block_end == 1999);
  CHECK(znode(*s) == R"({"version":1,"broker":2,"block_start":"1000","block_end":"1999"})");
}

TEST_CASE("producer id blocks: a block Kafka wrote is continued") {
  zk::FakeZkServer server;
  auto client = server.client();
  auto s = connect(*client);
  REQUIRE(s->create(std::string(kLatestProducerIdBlockPath),
                    R"({"version":1,"broker":7,"block_start":"5000","block_end":"5999"})",
                    zk::CreateMode::kPersistent) == zk::Code::kOk);
  auto a = claim_producer_id_block(*s, 3);
  REQUIRE(a.ok());
  CHECK(a->block_start == 6000);
  CHECK(a->block_end == 6999);
}

TEST_CASE("producer id blocks: brokers claiming at once get disjoint blocks") {
  zk::FakeZkServer server;
  auto client = server.client();
  constexpr int kBrokers = 4, kClaims = 25;
  std::vector<std::unique_ptr<zk::Session>> sessions;
  for (int i = 0; i < kBrokers; ++i) sessions.push_back(connect(*client));
  std::vector<std::vector<int64_t>> starts(kBrokers);
  std::vector<int> failures(kBrokers, 0);
  std::vector<std::thread> threads;
  for (int i = 0; i < kBrokers; ++i)
    threads.emplace_back([&, i] {
      for (int k = 0; k < kClaims; ++k) {
        auto r = claim_producer_id_block(*sessions[i], i + 1);
        if (r.ok() && r->block_end == r->block_start + kProducerIdBlockSize - 1)
          starts[i].push_back(r->block_start);
        else
          ++failures[i];
      }
    });
  for (auto& t : threads) t.join();
  std::vector<int64_t> all;
  for (int i = 0; i < kBrokers; ++i) {
    CHECK(failures[i] == 0);
    all.insert(all.end(), starts[i].begin(), starts[i].end());
  }
  std::sort(all.begin(), all.end());
  REQUIRE(all.size() == static_cast<size_t>(kBrokers * kClaims));
  // Disjoint and gap-free: exactly 0, 1000, 2000, ...
  for (size_t i = 0; i < all.size(); ++i) CHECK(all[i] == static_cast<int64_t>(i) * kProducerIdBlockSize);
}

TEST_CASE("producer id blocks: a znode that does not parse is an error and is left as it is") {
  zk::FakeZkServer server;
  auto client = server.client();
  auto s = connect(*client);
  const std::string bad = R"({"version":1,"broker":1,"block_start":"x"})";
  REQUIRE(s->create(std::string(kLatestProducerIdBlockPath), bad, zk::CreateMode::kPersistent) == zk::Code::kOk);
  auto r = claim_producer_id_block(*s, 1);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("/latest_producer_id_block") != std::string::npos);
  CHECK(znode(*s) == bad);
}

TEST_CASE("producer id blocks: exhausted ids are refused") {
  zk::FakeZkServer server;
  auto client = server.client();
  auto s = connect(*client);
  const std::string last = R"({"version":1,"broker":1,"block_start":"9223372036854774808","block_end":"9223372036854775000"})";
  REQUIRE(s->create(std::string(kLatestProducerIdBlockPath), last, zk::CreateMode::kPersistent) == zk::Code::kOk);
  auto r = claim_producer_id_block(*s, 1);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("exhausted") != std::string::npos);
  CHECK(znode(*s) == last);
}
