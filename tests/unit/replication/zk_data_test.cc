// tests/unit/replication/zk_data_test.cc: Kafka's znode paths and payloads.
//
// Expected bytes are derived from Kafka 3.9's core/src/main/scala/kafka/zk/
// ZkData.scala: which Scala/Java map each encode builds (hence the member
// order Jackson writes, see replication/jvm_order.h) and which members it
// puts in. The broker, controller, topic and partition-state orders match
// what zookeeper-shell shows on a Kafka 3.x ZooKeeper-mode cluster. Decode
// tests use payloads other writers produce (CMAK's topic znode without
// topic_id, Kafka's own v1/v2/v4 broker registrations from the ZkData doc
// comments) and malformed inputs that must give errors naming the field.
#include <catch2/catch.hpp>
#include <string>

#include "replication/jvm_order.h"
#include "replication/zk_data.h"
#include "storage/checkpoint.h"

using namespace ciuickafka::replication;

namespace {

std::string error_of(const auto& result) {
  REQUIRE_FALSE(result.ok());
  return result.error().message;
}

BrokerRegistration plaintext_broker() {
  BrokerRegistration b;
  b.endpoints.push_back({"PLAINTEXT", "h1", 9092, "PLAINTEXT"});
  b.timestamp_ms = 1700000000000;
  return b;
}

}  // namespace

TEST_CASE("zk_data: paths are Kafka's") {
  CHECK(broker_id_path(3) == "/brokers/ids/3");
  CHECK(topic_path("t") == "/brokers/topics/t");
  CHECK(topic_partitions_path("t") == "/brokers/topics/t/partitions");
  CHECK(partition_state_path("t", 7) == "/brokers/topics/t/partitions/7/state");
  CHECK(topic_config_path("t") == "/config/topics/t");
  CHECK(config_entity_path("brokers", "1") == "/config/brokers/1");
  CHECK(delete_topic_path("t") == "/admin/delete_topics/t");
  CHECK(kPersistentPaths.front() == "/consumers");
  CHECK(kPersistentPaths.back() == "/config/ips");
}

TEST_CASE("zk_data: broker registration v5, bytes as Kafka writes them") {
  // BrokerIdZNode.encode: mutable.Map of six (16 slots) + listener map + features.
  CHECK(encode_broker_registration(plaintext_broker()) ==
        R"({"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},)"
        R"("endpoints":["PLAINTEXT://h1:9092"],"jmx_port":-1,"port":9092,"host":"h1","version":5,)"
        R"("timestamp":"1700000000000"})");
  auto racked = plaintext_broker();
  racked.rack = "r1";
  CHECK(encode_broker_registration(racked) ==
        R"({"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},)"
        R"("endpoints":["PLAINTEXT://h1:9092"],"rack":"r1","jmx_port":-1,"port":9092,"host":"h1",)"
        R"("version":5,"timestamp":"1700000000000"})");
}

TEST_CASE("zk_data: broker host/port come from the first PLAINTEXT endpoint, else null/-1") {
  BrokerRegistration b;
  b.timestamp_ms = 5;
  b.endpoints.push_back({"REPLICATION", "h2", 9093, "SSL"});
  b.endpoints.push_back({"CLIENT", "::1", 9092, "PLAINTEXT"});
  CHECK(encode_broker_registration(b) ==
        R"({"features":{},"listener_security_protocol_map":{"REPLICATION":"SSL","CLIENT":"PLAINTEXT"},)"
        R"("endpoints":["REPLICATION://h2:9093","CLIENT://[::1]:9092"],"jmx_port":-1,"port":9092,"host":"::1",)"
        R"("version":5,"timestamp":"5"})");
  b.endpoints.pop_back();
  CHECK(encode_broker_registration(b) ==
        R"({"features":{},"listener_security_protocol_map":{"REPLICATION":"SSL"},)"
        R"("endpoints":["REPLICATION://h2:9093"],"jmx_port":-1,"port":-1,"host":null,"version":5,"timestamp":"5"})");
  // Version 4 has no features; version 2 no rack and no listener map either.
  b.version = 4;
  b.rack = "r";
  CHECK(encode_broker_registration(b) ==
        R"({"listener_security_protocol_map":{"REPLICATION":"SSL"},"endpoints":["REPLICATION://h2:9093"],)"
        R"("rack":"r","jmx_port":-1,"port":-1,"host":null,"version":4,"timestamp":"5"})");
  b.version = 2;
  CHECK(encode_broker_registration(b) ==
        R"({"endpoints":["REPLICATION://h2:9093"],"jmx_port":-1,"port":-1,"host":null,"version":2,"timestamp":"5"})");
}

TEST_CASE("zk_data: broker registration decodes every version Kafka accepts") {
  auto v5 = decode_broker_registration(encode_broker_registration(plaintext_broker()));
  REQUIRE(v5.ok());
  CHECK(v5->version == 5);
  CHECK(v5->endpoints == plaintext_broker().endpoints);
  CHECK(v5->timestamp_ms == 1700000000000);
  CHECK_FALSE(v5->rack.has_value());
  // The examples in BrokerIdZNode.decode's doc comment.
  auto v1 = decode_broker_registration(
      R"({"version":1,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666"})");
  REQUIRE(v1.ok());
  CHECK(v1->endpoints == std::vector<BrokerEndPoint>{{"PLAINTEXT", "localhost", 9092, "PLAINTEXT"}});
  CHECK(v1->jmx_port == 9999);
  auto v3 = decode_broker_registration(
      R"({"version":3,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666",)"
      R"("endpoints":["PLAINTEXT://host1:9092","SSL://host1:9093"],"rack":"dc1"})");
  REQUIRE(v3.ok());  // no listener map: names are security protocols
  CHECK(v3->endpoints == std::vector<BrokerEndPoint>{{"PLAINTEXT", "host1", 9092, "PLAINTEXT"},
                                                     {"SSL", "host1", 9093, "SSL"}});
  CHECK(v3->rack == "dc1");
  auto v4 = decode_broker_registration(
      R"({"version":4,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666",)"
      R"("endpoints":["CLIENT://host1:9092","REPLICATION://[fe80::1]:9093"],"rack":null,)"
      R"("listener_security_protocol_map":{"CLIENT":"SASL_PLAINTEXT","REPLICATION":"SSL"}})");
  REQUIRE(v4.ok());
  CHECK(v4->endpoints == std::vector<BrokerEndPoint>{{"CLIENT", "host1", 9092, "SASL_PLAINTEXT"},
                                                     {"REPLICATION", "fe80::1", 9093, "SSL"}});
  CHECK_FALSE(v4->rack.has_value());
  // Listener names are normalised to upper case before the map lookup; an
  // empty host is the wildcard.
  auto lower = decode_broker_registration(
      R"({"version":4,"jmx_port":-1,"endpoints":["client://:9092"],"listener_security_protocol_map":{"CLIENT":"SSL"}})");
  REQUIRE(lower.ok());
  CHECK(lower->endpoints == std::vector<BrokerEndPoint>{{"CLIENT", "", 9092, "SSL"}});
}

TEST_CASE("zk_data: a wildcard PLAINTEXT host is written as null, as Kafka's EndPoint(null, port)") {
  BrokerRegistration b;
  b.timestamp_ms = 1;
  b.endpoints.push_back({"PLAINTEXT", "", 9092, "PLAINTEXT"});
  CHECK(encode_broker_registration(b) ==
        R"({"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://:9092"],)"
        R"("jmx_port":-1,"port":9092,"host":null,"version":5,"timestamp":"1"})");
}

TEST_CASE("zk_data: malformed broker registrations are errors naming the field") {
  CHECK(error_of(decode_broker_registration("")) == "json: unexpected end of input at byte 0");
  CHECK(error_of(decode_broker_registration("[1]")) == "payload: expected a JSON object");
  CHECK(error_of(decode_broker_registration(R"({"version":0,"jmx_port":1})")) ==
        "field 'version': unsupported version 0 (expected 1..5)");
  CHECK(error_of(decode_broker_registration(R"({"version":"5"})")) == "field 'version': expected an integer");
  CHECK(error_of(decode_broker_registration(R"({"version":5,"endpoints":[]})")) == "field 'jmx_port': missing");
  CHECK(error_of(decode_broker_registration(R"({"version":1,"jmx_port":-1,"host":"h"})")) ==
        "field 'port': missing");
  CHECK(error_of(decode_broker_registration(R"({"version":5,"jmx_port":-1})")) == "field 'endpoints': missing");
  CHECK(error_of(decode_broker_registration(R"({"version":5,"jmx_port":-1,"endpoints":[1]})")) ==
        "field 'endpoints': expected an array of strings");
  CHECK(error_of(decode_broker_registration(R"({"version":5,"jmx_port":-1,"endpoints":["h:1"]})")) ==
        "field 'endpoints': expected LISTENER://host:port: 'h:1'");
  CHECK(error_of(decode_broker_registration(R"({"version":5,"jmx_port":-1,"endpoints":["X://h:1"]})")) ==
        "field 'endpoints': no security protocol for the listener: 'X://h:1'");
  CHECK(error_of(decode_broker_registration(R"({"version":5,"jmx_port":-1,"endpoints":["SSL://h:x"]})")) ==
        "field 'endpoints': invalid port: 'SSL://h:x'");
  CHECK(error_of(decode_broker_registration(
            R"({"version":5,"jmx_port":-1,"endpoints":[],"listener_security_protocol_map":{"A":"TLS"}})")) ==
        "field 'listener_security_protocol_map': unknown security protocol for 'A'");
  CHECK(error_of(decode_broker_registration(R"({"version":5,"jmx_port":-1,"endpoints":[],"rack":3})")) ==
        "field 'rack': expected a string");
  CHECK(error_of(decode_broker_registration(R"({"version":5,"jmx_port":-1,"endpoints":[],"features":[]})")) ==
        "field 'features': expected an object");
}

TEST_CASE("zk_data: controller and controller epoch") {
  // ControllerZNode.encode: an immutable Map of four keeps insertion order.
  CHECK(encode_controller(1, 1700000000000) ==
        R"({"version":2,"brokerid":1,"timestamp":"1700000000000","kraftControllerEpoch":-1})");
  auto c = decode_controller(encode_controller(2, 7));
  REQUIRE(c.ok());
  CHECK(c->broker_id == 2);
  CHECK(c->timestamp_ms == 7);
  CHECK(c->kraft_controller_epoch == -1);
  auto v1 = decode_controller(R"({"version":1,"brokerid":0,"timestamp":"1"})");
  REQUIRE(v1.ok());
  CHECK(v1->broker_id == 0);
  CHECK_FALSE(v1->kraft_controller_epoch.has_value());
  CHECK(error_of(decode_controller(R"({"version":2,"timestamp":"1"})")) == "field 'brokerid': missing");
  CHECK(error_of(decode_controller(R"({"version":3,"brokerid":1})")) ==
        "field 'version': unsupported version 3 (expected 1..2)");
  CHECK(error_of(decode_controller(R"({"version":2,"brokerid":"1"})")) == "field 'brokerid': expected an integer");

  // ControllerEpochZNode: epoch.toString / String.toInt.
  CHECK(encode_controller_epoch(5) == "5");
  CHECK(*decode_controller_epoch("5") == 5);
  CHECK(*decode_controller_epoch("+12") == 12);
  CHECK(*decode_controller_epoch("-1") == -1);
  CHECK(error_of(decode_controller_epoch("")) == "controller epoch: not a decimal number: ''");
  CHECK(error_of(decode_controller_epoch("5\n")) == "controller epoch: not a decimal number: '5\n'");
  CHECK(error_of(decode_controller_epoch("2147483648")) == "controller epoch: out of int32 range");
  CHECK(error_of(decode_controller_epoch("-")) == "controller epoch: not a decimal number: '-'");
}

TEST_CASE("zk_data: cluster id has its version as a string") {
  CHECK(encode_cluster_id("fZlIwpnhT3qpGIk2Yv2vyA") == R"({"version":"1","id":"fZlIwpnhT3qpGIk2Yv2vyA"})");
  CHECK(*decode_cluster_id(R"({"version":"1","id":"abc"})") == "abc");
  CHECK(error_of(decode_cluster_id(R"({"version":"1"})")) == "field 'id': missing");
  CHECK(error_of(decode_cluster_id(R"({"version":"1","id":1})")) == "field 'id': expected a string");
}

TEST_CASE("zk_data: topic assignment v3 bytes as Kafka writes them") {
  auto id = ciuickafka::storage::uuid_from_string("vGjSlL1HTdGBOoqsKLZDTg");
  REQUIRE(id.is_ok());
  TopicAssignment t;
  t.topic_id = *id;
  t.partitions[1].replicas = {2, 3, 1};
  t.partitions[0].replicas = {1, 2, 3};
  // TopicZNode.encode: mutable.Map of four (8 slots) plus topic_id.
  CHECK(encode_topic_assignment(t) ==
        R"({"partitions":{"0":[1,2,3],"1":[2,3,1]},"topic_id":"vGjSlL1HTdGBOoqsKLZDTg",)"
        R"("adding_replicas":{},"removing_replicas":{},"version":3})");
  t.topic_id.reset();
  t.partitions[1].adding_replicas = {4};
  t.partitions[1].removing_replicas = {1};
  CHECK(encode_topic_assignment(t) ==
        R"({"partitions":{"0":[1,2,3],"1":[2,3,1]},"adding_replicas":{"1":[4]},"removing_replicas":{"1":[1]},)"
        R"("version":3})");
  // Twelve partitions: the partition map has grown to 32 slots and "11" comes first.
  TopicAssignment many;
  for (int32_t p = 0; p < 12; ++p) many.partitions[p].replicas = {p};
  CHECK(encode_topic_assignment(many) ==
        R"({"partitions":{"11":[11],"0":[0],"1":[1],"2":[2],"3":[3],"4":[4],"5":[5],"6":[6],"7":[7],"8":[8],)"
        R"("9":[9],"10":[10]},"adding_replicas":{},"removing_replicas":{},"version":3})");
}

TEST_CASE("zk_data: topic assignment decodes v1 (CMAK), v2 and v3") {
  auto cmak = decode_topic_assignment(R"({"version":1,"partitions":{"0":[1,2],"1":[2,1]}})");
  REQUIRE(cmak.ok());
  CHECK_FALSE(cmak->topic_id.has_value());
  REQUIRE(cmak->partitions.size() == 2);
  CHECK(cmak->partitions.at(0).replicas == std::vector<int32_t>{1, 2});
  CHECK(cmak->partitions.at(1).replicas == std::vector<int32_t>{2, 1});
  CHECK(cmak->partitions.at(1).adding_replicas.empty());
  auto v2 = decode_topic_assignment(
      R"({"version":2,"partitions":{"0":[1,2,4]},"adding_replicas":{"0":[4]},"removing_replicas":{}})");
  REQUIRE(v2.ok());
  CHECK(v2->partitions.at(0).adding_replicas == std::vector<int32_t>{4});
  auto v3 = decode_topic_assignment(
      R"({"partitions":{"0":[1]},"topic_id":"vGjSlL1HTdGBOoqsKLZDTg","adding_replicas":{},"removing_replicas":{},"version":3})");
  REQUIRE(v3.ok());
  REQUIRE(v3->topic_id.has_value());
  CHECK(ciuickafka::storage::uuid_to_string(*v3->topic_id) == "vGjSlL1HTdGBOoqsKLZDTg");
  CHECK(encode_topic_assignment(*v3) ==
        R"({"partitions":{"0":[1]},"topic_id":"vGjSlL1HTdGBOoqsKLZDTg","adding_replicas":{},"removing_replicas":{},"version":3})");
}

TEST_CASE("zk_data: malformed topic assignments are errors naming the field") {
  CHECK(error_of(decode_topic_assignment(R"({"version":4,"partitions":{}})")) ==
        "field 'version': unsupported version 4 (expected 1..3)");
  CHECK(error_of(decode_topic_assignment(R"({"version":1,"partitions":[]})")) ==
        "field 'partitions': expected an object");
  CHECK(error_of(decode_topic_assignment(R"({"version":1,"partitions":{"x":[1]}})")) ==
        "field 'partitions': invalid partition 'x'");
  CHECK(error_of(decode_topic_assignment(R"({"version":1,"partitions":{"-1":[1]}})")) ==
        "field 'partitions': invalid partition '-1'");
  CHECK(error_of(decode_topic_assignment(R"({"version":1,"partitions":{"0":[1,"2"]}})")) ==
        "field 'partitions': expected an array of int32");
  CHECK(error_of(decode_topic_assignment(R"({"version":3,"topic_id":"nope","partitions":{}})")) ==
        "field 'topic_id': not a base64url topic id: 'nope'");
  CHECK(error_of(decode_topic_assignment(R"({"version":3,"topic_id":7})")) == "field 'topic_id': expected a string");
  CHECK(error_of(decode_topic_assignment(R"({"version":3,"partitions":{"0":[1]},"adding_replicas":{"0":{}}})")) ==
        "field 'adding_replicas': expected an array");
}

TEST_CASE("zk_data: partition state bytes as Kafka writes them") {
  PartitionState s{1, 0, 1, {1, 2, 3}, LeaderRecoveryState::kRecovered};
  // TopicPartitionStateZNode.encode: an immutable Map of five (a CHAMP trie).
  CHECK(encode_partition_state(s) == R"({"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2,3]})");
  PartitionState rec{2, 5, 3, {2}, LeaderRecoveryState::kRecovering};
  CHECK(encode_partition_state(rec) ==
        R"({"controller_epoch":3,"leader":2,"version":1,"leader_recovery_state":1,"leader_epoch":5,"isr":[2]})");
  CHECK(*decode_partition_state(encode_partition_state(s)) == s);
  CHECK(*decode_partition_state(encode_partition_state(rec)) == rec);
  auto leaderless = decode_partition_state(R"({"version":1,"leader":-1,"leader_epoch":9,"controller_epoch":2,"isr":[3]})");
  REQUIRE(leaderless.ok());
  CHECK(leaderless->leader == -1);
  CHECK(leaderless->leader_recovery_state == LeaderRecoveryState::kRecovered);
}

TEST_CASE("zk_data: malformed partition states are errors naming the field") {
  CHECK(error_of(decode_partition_state(R"({"version":1,"leader_epoch":0,"controller_epoch":1,"isr":[]})")) ==
        "field 'leader': missing");
  CHECK(error_of(decode_partition_state(R"({"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":{}})")) ==
        "field 'isr': expected an array");
  CHECK(error_of(decode_partition_state(R"({"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1.5]})")) ==
        "field 'isr': expected an array of int32");
  CHECK(error_of(decode_partition_state(
            R"({"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1],"leader_recovery_state":2})")) ==
        "field 'leader_recovery_state': unknown value 2");
  CHECK(error_of(decode_partition_state(R"({"version":2,"leader":1})")) ==
        "field 'version': unsupported version 2 (expected 1..1)");
}

TEST_CASE("zk_data: entity config and config change notification") {
  // ConfigEntityZNode.encode: Map(version, config); config is a Properties
  // (ConcurrentHashMap bins, 16 of them up to 11 keys).
  ConfigEntries c = {{"segment.bytes", "1024"}, {"retention.ms", "-1"}, {"compression.type", "lz4"},
                     {"cleanup.policy", "compact"}, {"max.message.bytes", "100"}};
  CHECK(encode_entity_config(c) ==
        R"({"version":1,"config":{"compression.type":"lz4","cleanup.policy":"compact","max.message.bytes":"100",)"
        R"("segment.bytes":"1024","retention.ms":"-1"}})");
  CHECK(encode_entity_config({}) == R"({"version":1,"config":{}})");
  auto d = decode_entity_config(R"({"version":1,"config":{"b":"1","a":"2"}})");
  REQUIRE(d.ok());
  CHECK(*d == ConfigEntries{{"b", "1"}, {"a", "2"}});
  CHECK(decode_entity_config(R"({"version":1})")->empty());
  CHECK(error_of(decode_entity_config(R"({"version":1,"config":{"a":1}})")) ==
        "field 'config': value of 'a' is not a string");
  CHECK(error_of(decode_entity_config(R"({"version":1,"config":[]})")) == "field 'config': expected an object");

  CHECK(encode_config_change("topics/t") == R"({"version":2,"entity_path":"topics/t"})");
  CHECK(*decode_config_change(R"({"version":2,"entity_path":"brokers/<default>"})") == "brokers/<default>");
  CHECK(error_of(decode_config_change(R"({"version":1,"entity_type":"topics","entity_name":"t"})")) ==
        "field 'version': unsupported version 1 (expected 2..2)");
}

TEST_CASE("zk_data: reassignment, preferred election, ISR change and log-dir payloads") {
  std::vector<PartitionReassignment> r = {{"t", 0, {1, 2, 3}}, {"u", 2, {3}}};
  CHECK(encode_reassign_partitions(r) ==
        R"({"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2,3]},)"
        R"({"topic":"u","partition":2,"replicas":[3]}]})");
  CHECK(*decode_reassign_partitions(encode_reassign_partitions(r)) == r);
  CHECK(error_of(decode_reassign_partitions(R"({"version":1,"partitions":[{"topic":"t","partition":0}]})")) ==
        "field 'replicas': missing");
  CHECK(error_of(decode_reassign_partitions(R"({"version":1})")) == "field 'partitions': missing");

  std::vector<TopicPartitionRef> l = {{"t", 0}, {"t", 1}};
  CHECK(encode_partition_list(l) ==
        R"({"version":1,"partitions":[{"topic":"t","partition":0},{"topic":"t","partition":1}]})");
  CHECK(*decode_partition_list(encode_partition_list(l)) == l);
  CHECK(error_of(decode_partition_list(R"({"version":1,"partitions":[3]})")) ==
        "field 'partitions': expected an array of objects");
  CHECK(error_of(decode_partition_list(R"({"version":1,"partitions":[{"topic":"t"}]})")) ==
        "field 'partition': missing");

  CHECK(encode_log_dir_event(3) == R"({"version":1,"broker":3,"event":1})");
  CHECK(*decode_log_dir_event(encode_log_dir_event(3)) == 3);
}

TEST_CASE("zk_data: producer id block has its numbers as strings") {
  // ProducerIdBlockZNode.generateProducerIdBlockJson: an immutable Map of four.
  ProducerIdBlock b{1, 0, 999};
  CHECK(encode_producer_id_block(b) == R"({"version":1,"broker":1,"block_start":"0","block_end":"999"})");
  CHECK(*decode_producer_id_block(encode_producer_id_block(b)) == b);
  CHECK(error_of(decode_producer_id_block(R"({"version":1,"broker":1,"block_start":0,"block_end":"9"})")) ==
        "field 'block_start': expected a string");
  CHECK(error_of(decode_producer_id_block(R"({"version":1,"broker":1,"block_start":"x","block_end":"9"})")) ==
        "field 'block_start': not a decimal number: 'x'");
  CHECK(error_of(decode_producer_id_block(R"({"version":1,"broker":1,"block_start":"10","block_end":"9"})")) ==
        "field 'block_end': below block_start");
}

TEST_CASE("zk_data: every decoder survives mutated payloads") {
  const std::string seeds[] = {
      encode_broker_registration(plaintext_broker()),
      encode_controller(1, 2),
      encode_cluster_id("abc"),
      R"({"partitions":{"0":[1,2]},"topic_id":"vGjSlL1HTdGBOoqsKLZDTg","adding_replicas":{"0":[2]},"removing_replicas":{},"version":3})",
      encode_partition_state({1, 2, 3, {1, 2}, LeaderRecoveryState::kRecovering}),
      encode_entity_config({{"a", "b"}}),
      encode_reassign_partitions({{"t", 0, {1}}}),
      encode_producer_id_block({1, 0, 999}),
  };
  uint32_t x = 2463534242u;
  auto next = [&] { x ^= x << 13; x ^= x >> 17; x ^= x << 5; return x; };
  const char alphabet[] = "{}[]\":,0123456789-x\\ nul";
  size_t decoded = 0;
  for (int round = 0; round < 5000; ++round) {
    std::string s = seeds[round % 8];
    for (int e = 0; e < 3; ++e) {
      size_t at = next() % s.size();
      if (next() % 2) s[at] = alphabet[next() % (sizeof alphabet - 1)];
      else s.erase(at, 1);
      if (s.empty()) break;
    }
    decoded += decode_broker_registration(s).ok() + decode_controller(s).ok() + decode_cluster_id(s).ok() +
               decode_topic_assignment(s).ok() + decode_partition_state(s).ok() + decode_entity_config(s).ok() +
               decode_reassign_partitions(s).ok() + decode_partition_list(s).ok() +
               decode_producer_id_block(s).ok() + decode_controller_epoch(s).ok() + decode_log_dir_event(s).ok();
  }
  CHECK(decoded > 0);  // some mutations stay valid; none may crash (ASan/UBSan build)
}

TEST_CASE("jvm_order: Java string hashes and Scala table growth") {
  CHECK(java_string_hash("") == 0);
  CHECK(java_string_hash("hello") == 99162322);                 // "hello".hashCode()
  CHECK(java_string_hash("version") == 351608024);              // "version".hashCode()
  CHECK(java_string_hash("\xC3\xA9") == 0xE9);                  // one UTF-16 unit
  CHECK(java_string_hash("\xF0\x9F\x98\x80") == 31 * 0xD83D + 0xDE00);  // a surrogate pair
  CHECK(scala_mutable_table_size(0) == 16);
  CHECK(scala_mutable_table_size(11) == 16);
  CHECK(scala_mutable_table_size(12) == 32);  // grows before the insert that reaches 12 = 16 * 3/4
  CHECK(scala_mutable_table_size(24) == 64);
  CHECK(scala_immutable_map_order({"b", "a"}) == std::vector<size_t>{0, 1});  // Map2: insertion order
}
