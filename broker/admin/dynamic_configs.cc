// broker/admin/dynamic_configs.cc: see dynamic_configs.h.
#include "broker/admin/dynamic_configs.h"

#include "broker/admin/dynamic_configs.pb.h"
#include "broker/broker.h"
#include "metrics/log/log.h"

namespace ciuickafka::broker::admin {
namespace {

using protocol::ErrorCode;

std::string path_in(const std::string& dir) { return dir + "/" + kDynamicConfigsFile; }

storage::Status persist(storage::io::FileSystem& fs, const std::string& dir, const config::DynamicMap& dflt,
                        const config::DynamicMap& mine) {
  pb::DynamicBrokerConfigs m;
  m.set_version(1);
  for (const auto& [k, v] : dflt) (*m.mutable_cluster_default())[k] = v;
  for (const auto& [k, v] : mine) (*m.mutable_this_broker())[k] = v;
  std::string bytes;
  if (!m.SerializeToString(&bytes)) return storage::Status::corruption("cannot serialise the dynamic broker configs");
  return storage::io::write_file_atomically(
      fs, path_in(dir), std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

// "a=1, b=2" for log lines.
std::string text(const config::DynamicMap& m) {
  std::string out;
  for (const auto& [k, v] : m) out += (out.empty() ? "" : ", ") + k + "=" + v;
  return "{" + out + "}";
}

}  // namespace

config::DynamicMap DynamicConfigs::current(bool cluster_default) const {
  return cluster_default ? broker_.config().dynamic_default() : broker_.config().dynamic_broker();
}

TopicError DynamicConfigs::replace(bool cluster_default, const config::DynamicMap& configs, bool validate_only) {
  if (broker_.cluster() != nullptr)
    return {ErrorCode::INVALID_REQUEST,
            "Dynamic broker configs are not supported in cluster mode yet: set broker configs in server.properties, "
            "--override or KAFKA_* environment variables and restart the broker."};
  // Kafka answers INVALID_REQUEST for a static key and for a bad value (its
  // ConfigException becomes an InvalidRequestException). An unknown key is
  // refused too, where Kafka stores it as a custom config (README).
  for (const auto& [name, value] : configs) {
    const config::KeyDef* k = config::find_key(name);
    if (k == nullptr) return {ErrorCode::INVALID_REQUEST, "Unknown broker configuration '" + name + "'."};
    if (auto why = config::not_dynamic_reason(*k))
      return {ErrorCode::INVALID_REQUEST, "Cannot update " + name + " dynamically: " + *why};
  }
  std::lock_guard<std::mutex> lock(mu_);
  config::BrokerConfig& cfg = broker_.config_for_dynamic_update();
  const config::DynamicMap old_default = cfg.dynamic_default(), old_mine = cfg.dynamic_broker();
  const config::DynamicMap& next_default = cluster_default ? configs : old_default;
  const config::DynamicMap& next_mine = cluster_default ? old_mine : configs;
  {
    config::BrokerConfig probe = cfg;
    if (auto r = probe.set_dynamic(next_default, next_mine); !r.is_ok())
      return {ErrorCode::INVALID_REQUEST, r.error().message};
  }
  if (validate_only) return {};
  const std::string dir = cfg.log_dirs().front();
  if (storage::Status s = persist(broker_.fs(), dir, next_default, next_mine); !s.is_ok())
    return {ErrorCode::KAFKA_STORAGE_ERROR, "cannot write " + path_in(dir) + ": " + s.to_string()};
  if (auto r = cfg.set_dynamic(next_default, next_mine); !r.is_ok())  // validated above: cannot fail
    return {ErrorCode::INVALID_REQUEST, r.error().message};
  broker_.topics().refresh_log_configs();
  CK_LOG_INFO("config", "dynamic broker configs (%s) set to %s", cluster_default ? "cluster default" : "this broker",
              text(configs).c_str());
  return {};
}

storage::Status DynamicConfigs::load(storage::io::FileSystem& fs, const std::string& dir,
                                     config::BrokerConfig& config) {
  const std::string path = path_in(dir);
  auto type = fs.file_type(path);
  if (!type.is_ok() || type.value() != storage::io::FileType::kFile) return storage::Status::ok();
  auto data = storage::io::read_file(fs, path);
  if (!data.is_ok()) return data.status();
  pb::DynamicBrokerConfigs m;
  if (!m.ParseFromArray(data.value().data(), static_cast<int>(data.value().size())))
    return storage::Status::corruption(path + ": not a valid dynamic broker config file");
  const config::DynamicMap dflt(m.cluster_default().begin(), m.cluster_default().end());
  const config::DynamicMap mine(m.this_broker().begin(), m.this_broker().end());
  if (auto r = config.set_dynamic(dflt, mine); !r.is_ok())
    return storage::Status::corruption(path + ": " + r.error().message);
  if (!dflt.empty() || !mine.empty())
    CK_LOG_INFO("config", "dynamic broker configs from %s: cluster default %s, this broker %s", path.c_str(),
                text(dflt).c_str(), text(mine).c_str());
  return storage::Status::ok();
}

}  // namespace ciuickafka::broker::admin
