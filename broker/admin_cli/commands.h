// broker/admin_cli/commands.h: the admin commands, one function each,
// shared by admin_cli.cc (dispatch) and the commands_*.cc files.
//
// Each command reads its Invocation, talks to the cluster through the
// KafkaClient and prints through `out`; failures are CliError (client.h).
//
// Thread-safety: one thread.
#pragma once

#include <iosfwd>
#include <map>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

#include "broker/admin_cli/args.h"
#include "broker/admin_cli/client.h"
#include "broker/admin_cli/output.h"

namespace ciuickafka::broker::admin_cli {

struct Ctx {
  const Invocation& inv;
  KafkaClient& client;
  std::ostream& out;
  std::ostream& err;
  std::istream& in;
  void print(const std::vector<Table>& tables) const;
};

// topics, cluster, configs (commands_topics.cc)
void cmd_topics_create(Ctx& c);
void cmd_topics_list(Ctx& c);
void cmd_topics_describe(Ctx& c);
void cmd_topics_delete(Ctx& c);
void cmd_topics_add_partitions(Ctx& c);
void cmd_topics_alter_config(Ctx& c);
void cmd_cluster_info(Ctx& c);
void cmd_configs_describe(Ctx& c);
void cmd_configs_alter(Ctx& c);

// groups (commands_groups.cc)
void cmd_groups_list(Ctx& c);
void cmd_groups_describe(Ctx& c);
void cmd_groups_reset_offsets(Ctx& c);
void cmd_groups_delete(Ctx& c);

// produce / consume (commands_data.cc)
void cmd_produce(Ctx& c);
void cmd_consume(Ctx& c);

// Kafka's murmur2 hash, as the Java client's default partitioner uses it:
// a keyed record goes to (murmur2(key) & 0x7fffffff) % partitions.
uint32_t kafka_murmur2(std::string_view data);

// Shared helpers.
// Earliest (-2) or latest (-1) offsets of topic partitions, asking each
// partition's leader; a partition error throws.
std::map<std::pair<std::string, int32_t>, int64_t> list_offsets(
    KafkaClient& client, const protocol::MetadataResponse& md,
    const std::vector<std::pair<std::string, int32_t>>& partitions, int64_t timestamp);
// The partitions of one topic from metadata; an unknown topic throws.
const protocol::MetadataResponse::MetadataResponseTopic& find_topic(const protocol::MetadataResponse& md,
                                                                   const std::string& name);

}  // namespace ciuickafka::broker::admin_cli
