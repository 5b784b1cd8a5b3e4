// broker/handlers/describe_log_dirs.cc: DescribeLogDirs (key 35), versions 0-4.
//
// One result per configured log dir (log.dirs), listing the partitions whose
// log lives there: their size on disk (the segments' bytes, Log::size_bytes),
// offset_lag 0 (no future replicas are ever being moved) and is_future_key
// false. topics null = every partition; otherwise the named partitions that
// we host (others are left out, as Kafka does). v4 adds each dir's total and
// usable bytes (statvfs; -1 when it fails). A log dir that cannot be
// examined is KAFKA_STORAGE_ERROR for that dir.
#include <sys/statvfs.h>

#include <filesystem>
#include <map>
#include <set>

#include "broker/broker.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/error_code.h"
#include "protocol/generated/describe_log_dirs.h"

namespace ciuickafka::broker {
namespace {

using protocol::DescribeLogDirsRequest;
using protocol::DescribeLogDirsResponse;
using protocol::ErrorCode;
using protocol::to_wire;

std::string normal_dir(const std::string& p) {
  return std::filesystem::path(p).lexically_normal().string();
}

std::string strip_slash(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

void handle_describe_log_dirs(RequestContext&& ctx) {
  DescribeLogDirsRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  Broker& broker = *ctx.broker;
  std::map<std::string, std::set<int32_t>> wanted;
  if (req.topics)
    for (const auto& t : *req.topics) wanted[t.topic].insert(t.partitions.begin(), t.partitions.end());

  DescribeLogDirsResponse resp;
  std::map<std::string, size_t> by_dir;  // normalised dir -> index into resp.results
  for (const std::string& d : broker.logs().log_dirs()) {
    DescribeLogDirsResponse::DescribeLogDirsResult r;
    r.log_dir = d;
    struct statvfs vfs {};
    if (::statvfs(d.c_str(), &vfs) == 0) {
      r.total_bytes = static_cast<int64_t>(vfs.f_blocks) * static_cast<int64_t>(vfs.f_frsize);
      r.usable_bytes = static_cast<int64_t>(vfs.f_bavail) * static_cast<int64_t>(vfs.f_frsize);
    } else {
      r.error_code = to_wire(ErrorCode::KAFKA_STORAGE_ERROR);
    }
    by_dir[strip_slash(normal_dir(d))] = resp.results.size();
    resp.results.push_back(std::move(r));
  }

  // Topics in name order, partitions in index order, each under its dir.
  for (const auto& topic : broker.topics().list()) {
    std::set<int32_t>* only = nullptr;
    if (req.topics) {
      auto it = wanted.find(topic->name);
      if (it == wanted.end()) continue;
      only = &it->second;
    }
    std::map<size_t, DescribeLogDirsResponse::DescribeLogDirsTopic> per_dir;
    for (const auto& p : topic->partitions) {
      if (!p || (only && !only->count(p->index()))) continue;
      const std::string parent = strip_slash(normal_dir(std::filesystem::path(p->log().dir()).parent_path().string()));
      auto d = by_dir.find(parent);
      if (d == by_dir.end()) continue;
      DescribeLogDirsResponse::DescribeLogDirsPartition dp;
      dp.partition_index = p->index();
      dp.partition_size = static_cast<int64_t>(p->log().size_bytes());
      auto& t = per_dir[d->second];
      t.name = topic->name;
      t.partitions.push_back(dp);
    }
    for (auto& [dir, t] : per_dir) resp.results[dir].topics.push_back(std::move(t));
  }
  ctx.respond(make_response(ctx, resp));
}

}  // namespace

CK_REGISTER_HANDLER(protocol::DescribeLogDirsRequest, 0, 4, handle_describe_log_dirs);

}  // namespace ciuickafka::broker
