// broker/admin/auto_create.h: topic creation on first use (Metadata with
// auto.create.topics.enable) and the settings of the internal topics.
//
// An ordinary topic gets num.partitions and default.replication.factor (the
// TopicTable defaults). The internal topics (__consumer_offsets,
// __transaction_state) get their own partition count and segment size keys
// (offsets.topic.*, transaction.state.log.*), replication factor 1 (one
// node; Kafka's default of 3 could never be met) and cleanup.policy=compact,
// as Kafka creates them. The group coordinator can call
// ensure_internal_topic() to get the same topic.
//
// A concurrent creator winning the race (TOPIC_ALREADY_EXISTS) counts as
// success: the topic exists either way.
//
// Header-only (inline functions): small, and used by several handler files.
// Thread-safety: any thread (TopicTable serialises creations).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "broker/broker.h"
#include "protocol/error_code.h"

namespace ciuickafka::broker::admin {

struct AutoCreated {
  TopicError error;
  std::shared_ptr<const Topic> topic;
};

inline AutoCreated finish_create(Broker& broker, std::string_view name, TopicTable::Created created) {
  if (created.error.code == protocol::ErrorCode::TOPIC_ALREADY_EXISTS) {
    if (auto t = broker.topics().find(name)) return {{}, t};
  }
  return {created.error, created.topic};
}

// Creates an internal topic (__consumer_offsets, __transaction_state) with
// its own settings, or returns the existing one.
inline AutoCreated ensure_internal_topic(Broker& broker, std::string_view name) {
  if (auto t = broker.topics().find(name)) return {{}, t};
  const auto& cfg = broker.config();
  const bool offsets = name == "__consumer_offsets";
  const int32_t partitions =
      cfg.get_int(offsets ? "offsets.topic.num.partitions" : "transaction.state.log.num.partitions");
  const int32_t segment_bytes =
      cfg.get_int(offsets ? "offsets.topic.segment.bytes" : "transaction.state.log.segment.bytes");
  ConfigMap configs{{"cleanup.policy", "compact"}, {"segment.bytes", std::to_string(segment_bytes)}};
  if (offsets) configs["compression.type"] = "producer";
  return finish_create(broker, name,
                       broker.topics().create(name, partitions, 1, configs, false, Broker::now_ms()));
}

// Creates a topic a client asked for by name (Metadata auto-creation).
inline AutoCreated auto_create_topic(Broker& broker, std::string_view name) {
  if (name == "__consumer_offsets" || name == "__transaction_state") return ensure_internal_topic(broker, name);
  return finish_create(broker, name, broker.topics().create(name, -1, -1, {}, false, Broker::now_ms()));
}

}  // namespace ciuickafka::broker::admin
