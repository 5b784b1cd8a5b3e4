// broker/cluster/topic_table.cc: topic lifecycle and the registry file.
#include "broker/cluster/topic_table.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <random>

#include "broker/cluster/topics.pb.h"
#include "broker/config/topic_config.h"
#include "metrics/log/log.h"
#include "replication/membership_codec.h"
#include "storage/checkpoint.h"

namespace ciuickafka::broker {
namespace {

using protocol::ErrorCode;

constexpr char kRegistryFile[] = "__ciuickafka_topics.pb";
constexpr size_t kMaxTopicNameLength = 249;

int64_t to_long(const std::optional<std::string>& v, int64_t fallback) {
  if (!v) return fallback;
  int64_t out = fallback;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc() || p != v->data() + v->size()) return fallback;
  return out;
}

}  // namespace

TopicTable::TopicTable(const config::BrokerConfig& config, storage::io::FileSystem& fs,
                       storage::LogManager& logs, const AppendListeners* listeners)
    : config_(config),
      fs_(fs),
      logs_(logs),
      listeners_(listeners),
      registry_path_(logs.log_dirs().front() + "/" + kRegistryFile) {}

std::optional<std::string> TopicTable::invalid_name_reason(std::string_view name) {
  if (name.empty()) return "Topic name is illegal, it can't be empty";
  if (name == "." || name == "..") return "Topic name cannot be \".\" or \"..\"";
  if (name.size() > kMaxTopicNameLength)
    return "Topic name is illegal, it can't be longer than 249 characters";
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok)
      return "Topic name \"" + std::string(name) +
             "\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'";
  }
  return std::nullopt;
}

std::shared_ptr<const Topic> TopicTable::find(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::shared_ptr<const Topic> TopicTable::find(const protocol::Uuid& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second;
}

std::shared_ptr<Partition> TopicTable::partition(std::string_view topic, int32_t index) const {
  auto t = find(topic);
  return t ? t->partition(index) : nullptr;
}

std::vector<std::shared_ptr<const Topic>> TopicTable::list() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<const Topic>> out;
  out.reserve(by_name_.size());
  for (const auto& [name, t] : by_name_) out.push_back(t);
  return out;
}

size_t TopicTable::partition_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [name, t] : by_name_)
    for (const auto& p : t->partitions) n += p ? 1 : 0;
  return n;
}

std::optional<std::string> TopicTable::config_value(const Topic& topic, std::string_view key) const {
  auto it = topic.configs.find(std::string(key));
  if (it != topic.configs.end()) return it->second;
  return config::topic_default(config_, key);
}

int32_t TopicTable::min_insync_replicas(const Topic& topic) const {
  int32_t v = 1;
  if (auto s = config_value(topic, "min.insync.replicas")) {
    int32_t parsed = 0;
    auto [ptr, ec] = std::from_chars(s->data(), s->data() + s->size(), parsed);
    if (ec == std::errc() && ptr == s->data() + s->size() && parsed > 0) v = parsed;
  }
  return v;
}

TopicError TopicTable::validate_configs(const ConfigMap& configs) const {
  for (const auto& [key, value] : configs) {
    auto parsed = config::parse_topic_value(key, value);
    if (!parsed.is_ok()) return {ErrorCode::INVALID_CONFIG, parsed.error().message};
  }
  return {};
}

storage::LogConfig TopicTable::log_config(const ConfigMap& overrides) const {
  Topic probe;
  probe.configs = overrides;
  auto num = [&](std::string_view key, int64_t fallback) { return to_long(config_value(probe, key), fallback); };
  storage::LogConfig c;
  c.segment.segment_bytes = static_cast<uint64_t>(num("segment.bytes", static_cast<int64_t>(c.segment.segment_bytes)));
  c.segment.segment_ms = num("segment.ms", c.segment.segment_ms);
  c.segment.index_interval_bytes =
      static_cast<uint32_t>(num("index.interval.bytes", c.segment.index_interval_bytes));
  c.segment.max_index_bytes = static_cast<uint32_t>(num("segment.index.bytes", c.segment.max_index_bytes));
  c.segment.preallocate = config_value(probe, "preallocate").value_or("false") == "true";
  c.flush_messages = num("flush.messages", c.flush_messages);
  c.flush_ms = num("flush.ms", c.flush_ms);
  c.retention_ms = num("retention.ms", c.retention_ms);
  c.retention_bytes = num("retention.bytes", c.retention_bytes);
  c.file_delete_delay_ms = num("file.delete.delay.ms", c.file_delete_delay_ms);
  // Compaction (storage/cleaner.h): cleanup.policy is a list of compact/delete.
  const std::string policy = config_value(probe, "cleanup.policy").value_or("delete");
  c.cleanup_compact = policy.find("compact") != std::string::npos;
  c.cleanup_delete = policy.find("delete") != std::string::npos;
  if (auto ratio = config_value(probe, "min.cleanable.dirty.ratio"))
    c.min_cleanable_dirty_ratio = std::strtod(ratio->c_str(), nullptr);
  c.min_compaction_lag_ms = num("min.compaction.lag.ms", c.min_compaction_lag_ms);
  c.max_compaction_lag_ms = num("max.compaction.lag.ms", c.max_compaction_lag_ms);
  c.delete_retention_ms = num("delete.retention.ms", c.delete_retention_ms);
  return c;
}

std::shared_ptr<Partition> TopicTable::make_partition(const Topic& t, int32_t index,
                                                      std::shared_ptr<storage::Log> log) const {
  auto p = std::make_shared<Partition>(storage::TopicPartition{t.name, index}, t.id, std::move(log),
                                       /*leader_epoch=*/0, listeners_);
  if (sparse_) {
    // Cluster mode: not served until the controller's LeaderAndIsr says how.
    PartitionRoleState st;
    st.role = ReplicaRole::kOffline;
    p->set_role(std::move(st));
  } else if (!p->log().leader_epochs().records(0)) {
    // Single-node mode leads every partition at epoch 0 from its creation.
    // The epoch's start goes into the leader-epoch-checkpoint now, as
    // Kafka's makeLeader records it (maybeAssignEpochStartOffset), on the
    // thread creating or loading the topic (the I/O pool, or start-up),
    // and not by the first Produce to each partition. Once per partition:
    // the file then holds it. A failed write is retried by the first append.
    auto start = p->log().assign_epoch_start_at_end(0);
    if (!start.is_ok())
      CK_LOG_WARN("topics", "%s-%d: start of leader epoch 0 not recorded: %s", t.name.c_str(), index,
                  start.status().to_string().c_str());
  }
  return p;
}

void TopicTable::publish_locked(std::shared_ptr<const Topic> topic) {
  std::lock_guard<std::mutex> lock(mu_);
  by_id_[topic->id] = topic;
  by_name_[topic->name] = std::move(topic);
}

void TopicTable::unpublish_locked(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return;
  by_id_.erase(it->second->id);
  by_name_.erase(it);
}

storage::Status TopicTable::persist_locked() {
  pb::TopicRegistry reg;
  reg.set_version(1);
  for (const auto& t : list()) {
    pb::Topic* p = reg.add_topics();
    p->set_name(t->name);
    p->set_topic_id(std::string(reinterpret_cast<const char*>(t->id.bytes.data()), t->id.bytes.size()));
    p->set_partitions(static_cast<int32_t>(t->partitions.size()));
    p->set_replication_factor(t->replication_factor);
    for (const auto& [k, v] : t->configs) (*p->mutable_configs())[k] = v;
  }
  std::string bytes;
  if (!reg.SerializeToString(&bytes))
    return storage::Status::corruption("cannot serialise the topic registry");
  return storage::io::write_file_atomically(
      fs_, registry_path_,
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

storage::Status TopicTable::load(int64_t now_ms) {
  std::lock_guard<std::mutex> wlock(write_mu_);
  // Registry file (absent on a fresh data dir).
  std::map<std::string, pb::Topic> recorded;
  if (auto type = fs_.file_type(registry_path_); type.is_ok() && type.value() == storage::io::FileType::kFile) {
    auto data = storage::io::read_file(fs_, registry_path_);
    if (!data.is_ok()) return data.status();
    pb::TopicRegistry reg;
    if (!reg.ParseFromArray(data.value().data(), static_cast<int>(data.value().size())))
      return storage::Status::corruption(registry_path_ + ": not a valid topic registry");
    for (const pb::Topic& t : reg.topics()) recorded[t.name()] = t;
  }
  // Logs found on disk, grouped by topic.
  std::map<std::string, std::map<int32_t, std::shared_ptr<storage::Log>>> on_disk;
  for (auto& [tp, log] : logs_.all()) on_disk[tp.topic][tp.partition] = log;

  std::map<std::string, int> names;
  for (const auto& [n, t] : recorded) names[n] = 1;
  for (const auto& [n, l] : on_disk) names[n] = 1;

  for (const auto& [name, unused] : names) {
    auto topic = std::make_shared<Topic>();
    topic->name = name;
    int32_t count = 0;
    auto rec = recorded.find(name);
    if (rec != recorded.end()) {
      const pb::Topic& p = rec->second;
      if (p.topic_id().size() == 16) std::copy(p.topic_id().begin(), p.topic_id().end(), topic->id.bytes.begin());
      count = p.partitions();
      topic->replication_factor = static_cast<int16_t>(p.replication_factor());
      for (const auto& [k, v] : p.configs()) topic->configs[k] = v;
    }
    auto& disk = on_disk[name];
    if (!disk.empty()) {
      count = std::max(count, disk.rbegin()->first + 1);
      if (topic->id.is_zero()) {
        if (auto id = logs_.topic_id(storage::TopicPartition{name, disk.begin()->first})) topic->id = *id;
      }
    }
    if (topic->id.is_zero()) topic->id = replication::random_topic_id();
    const storage::LogConfig lc = log_config(topic->configs);
    if (sparse_) {
      // Cluster mode: adopt what is on disk, create nothing.
      if (disk.empty()) continue;
      topic->partitions.resize(static_cast<size_t>(disk.rbegin()->first) + 1);
      for (auto& [i, log] : disk) {
        (void)logs_.update_config(storage::TopicPartition{name, i}, lc);
        topic->partitions[static_cast<size_t>(i)] = make_partition(*topic, i, log);
      }
      publish_locked(std::move(topic));
      continue;
    }
    for (int32_t i = 0; i < count; ++i) {
      std::shared_ptr<storage::Log> log;
      auto it = disk.find(i);
      if (it != disk.end()) {
        log = it->second;
        (void)logs_.update_config(storage::TopicPartition{name, i}, lc);
      } else {
        auto created = logs_.create(storage::TopicPartition{name, i}, topic->id, lc, now_ms);
        if (!created.is_ok()) return created.status();
        log = created.value();
      }
      topic->partitions.push_back(make_partition(*topic, i, std::move(log)));
    }
    publish_locked(std::move(topic));
  }
  return persist_locked();
}

TopicTable::Created TopicTable::create(std::string_view name, int32_t partitions, int16_t replication_factor,
                                       const ConfigMap& configs, bool validate_only, int64_t now_ms) {
  Created out;
  if (auto reason = invalid_name_reason(name)) {
    out.error = {ErrorCode::INVALID_TOPIC_EXCEPTION, *reason};
    return out;
  }
  if (partitions == -1) partitions = config_.get_int("num.partitions");
  if (replication_factor == -1) replication_factor = static_cast<int16_t>(config_.get_int("default.replication.factor"));
  if (partitions <= 0) {
    out.error = {ErrorCode::INVALID_PARTITIONS, "Number of partitions must be larger than 0."};
    return out;
  }
  if (partitions > 100000) {
    out.error = {ErrorCode::INVALID_PARTITIONS, "Number of partitions is too large (at most 100000)."};
    return out;
  }
  if (replication_factor <= 0) {
    out.error = {ErrorCode::INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0."};
    return out;
  }
  if (replication_factor > 1) {
    out.error = {ErrorCode::INVALID_REPLICATION_FACTOR,
                 "Replication factor: " + std::to_string(replication_factor) +
                     " larger than available brokers: 1."};
    return out;
  }
  if (TopicError e = validate_configs(configs); !e.ok()) {
    out.error = e;
    return out;
  }

  std::lock_guard<std::mutex> wlock(write_mu_);
  if (find(name)) {
    out.error = {ErrorCode::TOPIC_ALREADY_EXISTS, "Topic '" + std::string(name) + "' already exists."};
    return out;
  }
  auto topic = std::make_shared<Topic>();
  topic->name = std::string(name);
  topic->id = replication::random_topic_id();
  topic->replication_factor = replication_factor;
  topic->configs = configs;
  if (validate_only) {
    out.topic = topic;
    return out;
  }
  const storage::LogConfig lc = log_config(configs);
  for (int32_t i = 0; i < partitions; ++i) {
    auto log = logs_.create(storage::TopicPartition{topic->name, i}, topic->id, lc, now_ms);
    if (!log.is_ok()) {
      for (int32_t j = 0; j < i; ++j) (void)logs_.remove(storage::TopicPartition{topic->name, j});
      out.error = {ErrorCode::KAFKA_STORAGE_ERROR, log.status().to_string()};
      return out;
    }
    topic->partitions.push_back(make_partition(*topic, i, log.value()));
  }
  publish_locked(topic);
  if (storage::Status s = persist_locked(); !s.is_ok()) {
    out.error = {ErrorCode::KAFKA_STORAGE_ERROR, s.to_string()};
    return out;
  }
  if (metrics::log::enabled(metrics::log::Level::kInfo)) {
    std::string cfg;
    for (const auto& [k, v] : configs) cfg += (cfg.empty() ? "" : ", ") + k + "=" + v;
    CK_LOG_INFO("topics", "topic %s created: %d partition(s), replication factor %d, configs {%s}",
                topic->name.c_str(), partitions, static_cast<int>(replication_factor), cfg.c_str());
  }
  out.topic = std::move(topic);
  return out;
}

TopicError TopicTable::remove(std::string_view name) {
  std::lock_guard<std::mutex> wlock(write_mu_);
  auto topic = find(name);
  if (!topic) return {ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic."};
  unpublish_locked(topic->name);
  TopicError err;
  for (const auto& p : topic->partitions) {
    if (!p) continue;
    storage::Status s = logs_.remove(p->tp());
    if (!s.is_ok() && err.ok()) err = {ErrorCode::KAFKA_STORAGE_ERROR, s.to_string()};
  }
  if (storage::Status s = persist_locked(); !s.is_ok() && err.ok())
    err = {ErrorCode::KAFKA_STORAGE_ERROR, s.to_string()};
  if (err.ok()) {
    CK_LOG_INFO("topics", "topic %s deleted: %zu partition(s) removed", topic->name.c_str(), topic->partitions.size());
  } else {
    CK_LOG_ERROR("topics", "topic %s deleted with errors: %s", topic->name.c_str(), err.message.c_str());
  }
  return err;
}

TopicError TopicTable::add_partitions(std::string_view name, int32_t new_total, bool validate_only,
                                      int64_t now_ms) {
  std::lock_guard<std::mutex> wlock(write_mu_);
  auto topic = find(name);
  if (!topic) return {ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic."};
  const auto current = static_cast<int32_t>(topic->partitions.size());
  if (new_total <= current)
    return {ErrorCode::INVALID_PARTITIONS, "Topic currently has " + std::to_string(current) +
                                               " partitions, " + std::to_string(new_total) +
                                               " would not be an increase."};
  if (new_total > 100000) return {ErrorCode::INVALID_PARTITIONS, "Number of partitions is too large."};
  if (validate_only) return {};
  auto next = std::make_shared<Topic>(*topic);
  const storage::LogConfig lc = log_config(next->configs);
  for (int32_t i = current; i < new_total; ++i) {
    auto log = logs_.create(storage::TopicPartition{next->name, i}, next->id, lc, now_ms);
    if (!log.is_ok()) return {ErrorCode::KAFKA_STORAGE_ERROR, log.status().to_string()};
    next->partitions.push_back(make_partition(*next, i, log.value()));
  }
  publish_locked(next);
  if (storage::Status s = persist_locked(); !s.is_ok()) return {ErrorCode::KAFKA_STORAGE_ERROR, s.to_string()};
  return {};
}

TopicError TopicTable::set_configs(std::string_view name, const ConfigMap& configs, bool validate_only) {
  if (TopicError e = validate_configs(configs); !e.ok()) return e;
  std::lock_guard<std::mutex> wlock(write_mu_);
  auto topic = find(name);
  if (!topic) return {ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic."};
  if (validate_only) return {};
  auto next = std::make_shared<Topic>(*topic);
  next->configs = configs;
  const storage::LogConfig lc = log_config(configs);
  for (const auto& p : next->partitions)
    if (p) (void)logs_.update_config(p->tp(), lc);
  publish_locked(next);
  if (storage::Status s = persist_locked(); !s.is_ok()) return {ErrorCode::KAFKA_STORAGE_ERROR, s.to_string()};
  return {};
}

void TopicTable::refresh_log_configs() {
  std::lock_guard<std::mutex> wlock(write_mu_);
  for (const auto& topic : list()) {
    const storage::LogConfig lc = log_config(topic->configs);
    for (const auto& p : topic->partitions)
      if (p) (void)logs_.update_config(p->tp(), lc);
  }
}

TopicTable::Ensured TopicTable::ensure_partition(std::string_view name, const protocol::Uuid& id, int32_t index,
                                                const ConfigMap& configs, int64_t now_ms) {
  Ensured out;
  if (index < 0 || index >= 100000) {
    out.error = {ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "Invalid partition index " + std::to_string(index)};
    return out;
  }
  if (auto reason = invalid_name_reason(name)) {
    out.error = {ErrorCode::INVALID_TOPIC_EXCEPTION, *reason};
    return out;
  }
  std::lock_guard<std::mutex> wlock(write_mu_);
  auto existing = find(name);
  if (existing && !id.is_zero() && !existing->id.is_zero() && existing->id != id) {
    out.error = {ErrorCode::INCONSISTENT_TOPIC_ID, "The topic id of " + std::string(name) + " does not match the log's"};
    return out;
  }
  if (existing) {
    if (auto p = existing->partition(index)) {
      out.partition = std::move(p);
      return out;
    }
  }
  auto next = existing ? std::make_shared<Topic>(*existing) : std::make_shared<Topic>();
  if (!existing) {
    next->name = std::string(name);
    next->configs = configs;
  }
  if (next->id.is_zero()) next->id = id.is_zero() ? replication::random_topic_id() : id;
  auto log = logs_.create(storage::TopicPartition{next->name, index}, next->id, log_config(next->configs), now_ms);
  if (!log.is_ok()) {
    out.error = {ErrorCode::KAFKA_STORAGE_ERROR, log.status().to_string()};
    return out;
  }
  if (next->partitions.size() <= static_cast<size_t>(index)) next->partitions.resize(static_cast<size_t>(index) + 1);
  auto p = make_partition(*next, index, log.value());
  next->partitions[static_cast<size_t>(index)] = p;
  publish_locked(next);
  if (storage::Status s = persist_locked(); !s.is_ok()) {
    out.error = {ErrorCode::KAFKA_STORAGE_ERROR, s.to_string()};
    return out;
  }
  out.partition = std::move(p);
  out.created = true;
  return out;
}

TopicError TopicTable::remove_partition(std::string_view name, int32_t index) {
  std::lock_guard<std::mutex> wlock(write_mu_);
  auto topic = find(name);
  if (!topic || !topic->partition(index))
    return {ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this partition."};
  auto next = std::make_shared<Topic>(*topic);
  next->partitions[static_cast<size_t>(index)] = nullptr;
  while (!next->partitions.empty() && !next->partitions.back()) next->partitions.pop_back();
  if (next->partitions.empty()) {
    unpublish_locked(next->name);
  } else {
    publish_locked(next);
  }
  TopicError err;
  if (storage::Status s = logs_.remove(storage::TopicPartition{next->name, index}); !s.is_ok())
    err = {ErrorCode::KAFKA_STORAGE_ERROR, s.to_string()};
  if (storage::Status s = persist_locked(); !s.is_ok() && err.ok()) err = {ErrorCode::KAFKA_STORAGE_ERROR, s.to_string()};
  return err;
}

}  // namespace ciuickafka::broker
