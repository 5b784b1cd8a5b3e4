// tests/fuzz/fuzz_znode.cc: libFuzzer target for znode data, which other
// tools (CMAK, zookeeper-shell, old Kafka tools) write and the controller
// reads: the JSON parser and every payload decoder. Nothing may crash; JSON
// that parses must print as valid JSON, and a decoded payload (brokers
// aside) must encode to bytes that decode again.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "replication/json.h"
#include "replication/zk_data.h"

using namespace ciuickafka::replication;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto json = parse_json(text);
  if (json.ok()) {
    // Values may change (1e999 prints as null) but the output is valid JSON.
    if (!parse_json(to_json(*json)).ok()) std::abort();
  }
  if (auto b = decode_broker_registration(text); b.ok()) {
    // A v1 host is not validated (Kafka does not either), so re-encoding may
    // not decode again; it must still be handled without a crash.
    (void)decode_broker_registration(encode_broker_registration(*b));
  }
  if (auto t = decode_topic_assignment(text); t.ok())
    if (!decode_topic_assignment(encode_topic_assignment(*t)).ok()) std::abort();
  if (auto s = decode_partition_state(text); s.ok())
    if (!(*decode_partition_state(encode_partition_state(*s)) == *s)) std::abort();
  if (auto c = decode_entity_config(text); c.ok())
    if (!decode_entity_config(encode_entity_config(*c)).ok()) std::abort();
  if (auto r = decode_reassign_partitions(text); r.ok())
    if (!(*decode_reassign_partitions(encode_reassign_partitions(*r)) == *r)) std::abort();
  if (auto l = decode_partition_list(text); l.ok())
    if (!(*decode_partition_list(encode_partition_list(*l)) == *l)) std::abort();
  if (auto p = decode_producer_id_block(text); p.ok())
    if (!(*decode_producer_id_block(encode_producer_id_block(*p)) == *p)) std::abort();
  (void)decode_controller(text);
  (void)decode_controller_epoch(text);
  (void)decode_cluster_id(text);
  (void)decode_config_change(text);
  (void)decode_log_dir_event(text);
  return 0;
}
