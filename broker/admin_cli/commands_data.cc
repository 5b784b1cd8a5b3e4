// broker/admin_cli/commands_data.cc: `produce` and `consume`, quick checks
// of a topic from the command line (see commands.h).
//
// produce: one record per stdin line (the newline removed; with
// --key-separator S the text before the first S is the key), acks=all,
// sent in batches of up to 1,000 lines per request to each partition's
// leader. The partition is --partition P, else Kafka's default for a keyed
// record (murmur2 of the key), else round-robin. Prints records and offsets
// per partition.
//
// consume: reads from the log end (or --from-beginning) of every partition
// (or --partition P) with sessionless Fetch requests to each leader, and
// prints each record's value on its own line ("null" for a null value); with
// --format json one JSON object per record and line. Stops after
// --max-messages records or after --timeout-ms without a new record, else
// runs until interrupted. Control batches (transaction markers) are skipped.
// A partition whose leader moves or dies is followed to its new leader
// (metadata refreshed every 200 ms, for up to request.timeout.ms).
//
// One thread.
#include <chrono>
#include <thread>
#include <istream>
#include <ostream>

#include "broker/admin_cli/commands.h"
#include "protocol/generated/fetch.h"
#include "protocol/generated/produce.h"
#include "protocol/records/batch_builder.h"
#include "protocol/records/record_batch.h"

namespace ciuickafka::broker::admin_cli {

namespace proto = ciuickafka::protocol;

// Kafka's murmur2 (the Java client's default partitioner for keyed records).
uint32_t kafka_murmur2(std::string_view data) {
  const uint32_t m = 0x5bd1e995;
  const int r = 24;
  const auto len = static_cast<uint32_t>(data.size());
  uint32_t h = 0x9747b28c ^ len;
  const auto* d = reinterpret_cast<const uint8_t*>(data.data());
  const uint32_t len4 = len / 4;
  for (uint32_t i = 0; i < len4; ++i) {
    const uint32_t i4 = i * 4;
    uint32_t k = d[i4] | (uint32_t{d[i4 + 1]} << 8) | (uint32_t{d[i4 + 2]} << 16) | (uint32_t{d[i4 + 3]} << 24);
    k *= m;
    k ^= k >> r;
    k *= m;
    h *= m;
    h ^= k;
  }
  const uint32_t tail = len & ~3u;
  switch (len % 4) {
    case 3: h ^= uint32_t{d[tail + 2]} << 16; [[fallthrough]];
    case 2: h ^= uint32_t{d[tail + 1]} << 8; [[fallthrough]];
    case 1:
      h ^= d[tail];
      h *= m;
  }
  h ^= h >> 13;
  h *= m;
  h ^= h >> 15;
  return h;
}

namespace {

// Errors after which a partition is fetched again from whatever the
// metadata names as its leader now.
bool is_leader_change(int16_t code) {
  return code == 5 /* LEADER_NOT_AVAILABLE */ || code == 6 /* NOT_LEADER_OR_FOLLOWER */ ||
         code == 74 /* FENCED_LEADER_EPOCH */ || code == 76 /* UNKNOWN_LEADER_EPOCH */;
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Line {
  std::optional<std::string> key;
  std::string value;
};

struct PartitionTotals {
  int64_t records = 0, first = -1, last = -1;
};

void send_chunk(Ctx& c, const proto::MetadataResponse::MetadataResponseTopic& mt, const std::string& topic,
                std::map<int32_t, std::vector<Line>>& chunk, std::map<int32_t, PartitionTotals>& totals) {
  std::map<int32_t, std::vector<int32_t>> by_leader;
  for (const auto& [part, lines] : chunk) {
    int32_t leader = -1;
    for (const auto& p : mt.partitions)
      if (p.partition_index == part) leader = p.leader_id;
    if (leader < 0) throw_kafka_error("produce to " + topic + "-" + std::to_string(part), 5);
    by_leader[leader].push_back(part);
  }
  for (const auto& [leader, parts] : by_leader) {
    std::vector<proto::Bytes> batches;
    proto::ProduceRequest req;
    req.acks = -1;
    req.timeout_ms = c.client.props().request_timeout_ms;
    proto::ProduceRequest::TopicProduceData td;
    td.name = topic;
    batches.reserve(parts.size());
    for (int32_t part : parts) {
      proto::BatchBuilder b(proto::BatchOptions{});
      const int64_t ts = now_ms();
      for (const auto& l : chunk[part]) {
        std::optional<std::span<const uint8_t>> key;
        if (l.key) key = proto::as_bytes(*l.key);
        b.add(ts, key, proto::as_bytes(l.value));
      }
      auto built = b.build();
      if (!built.ok()) throw CliError(kExitKafkaError, "cannot build a record batch: " + std::string(proto::to_string(built.error())));
      batches.push_back(std::move(built.value()));
      proto::ProduceRequest::PartitionProduceData pd;
      pd.index = part;
      pd.records = proto::Records(std::span<const uint8_t>(batches.back()));
      td.partition_data.push_back(pd);
    }
    req.topic_data.push_back(td);
    const auto v = c.client.supported(leader, proto::ProduceRequest::kApiKey, 3, proto::ProduceRequest::kHighestVersion);
    if (!v) throw CliError(kExitKafkaError, "broker " + std::to_string(leader) + " does not support Produce v3+ (record batches)");
    proto::ProduceResponse resp;
    c.client.call(leader, req, &resp);
    for (const auto& tr : resp.responses)
      for (const auto& pr : tr.partition_responses) {
        if (pr.error_code != 0)
          throw_kafka_error("produce to " + tr.name + "-" + std::to_string(pr.index), pr.error_code, pr.error_message);
        auto& t = totals[pr.index];
        const auto n = static_cast<int64_t>(chunk[pr.index].size());
        if (t.first < 0) t.first = pr.base_offset;
        t.last = pr.base_offset + n - 1;
        t.records += n;
      }
  }
  chunk.clear();
}

}  // namespace

void cmd_produce(Ctx& c) {
  const std::string topic = c.inv.positional[0];
  auto md = c.client.metadata(std::vector<std::string>{topic});
  const auto& mt = find_topic(md, topic);
  const auto nparts = static_cast<int32_t>(mt.partitions.size());
  if (nparts == 0) throw_kafka_error("produce to " + topic, 5);
  int64_t fixed = -1;
  if (c.inv.has("partition")) {
    parse_int(c.inv.get("partition"), 0, INT32_MAX, &fixed);
    if (fixed >= nparts) throw_kafka_error("produce to " + topic + "-" + std::to_string(fixed), 3);
  }
  const std::string sep = c.inv.get("key-separator");
  std::map<int32_t, std::vector<Line>> chunk;
  std::map<int32_t, PartitionTotals> totals;
  size_t in_chunk = 0;
  int32_t next = 0;
  std::string text;
  while (std::getline(c.in, text)) {
    Line l;
    if (!sep.empty() && text.find(sep) != std::string::npos) {
      const size_t at = text.find(sep);
      l.key = text.substr(0, at);
      l.value = text.substr(at + sep.size());
    } else {
      l.value = text;
    }
    int32_t part;
    if (fixed >= 0) part = static_cast<int32_t>(fixed);
    else if (l.key) part = static_cast<int32_t>((kafka_murmur2(*l.key) & 0x7fffffff) % static_cast<uint32_t>(nparts));
    else part = next++ % nparts;
    chunk[part].push_back(std::move(l));
    if (++in_chunk == 1000) {
      send_chunk(c, mt, topic, chunk, totals);
      in_chunk = 0;
    }
  }
  if (in_chunk > 0) send_chunk(c, mt, topic, chunk, totals);
  Table t{"", {"topic", "partition", "records", "first_offset", "last_offset"}, {}};
  for (const auto& [part, tot] : totals) t.add({topic, part, tot.records, tot.first, tot.last});
  c.print({t});
}

void cmd_consume(Ctx& c) {
  const std::string topic = c.inv.positional[0];
  auto md = c.client.metadata(std::vector<std::string>{topic});
  const auto& mt = find_topic(md, topic);
  std::vector<std::pair<std::string, int32_t>> parts;
  int64_t only = -1;
  if (c.inv.has("partition")) parse_int(c.inv.get("partition"), 0, INT32_MAX, &only);
  for (const auto& p : mt.partitions)
    if (only < 0 || p.partition_index == only) parts.emplace_back(topic, p.partition_index);
  if (parts.empty()) throw_kafka_error("consume " + topic + "-" + std::to_string(only), 3);
  auto position = list_offsets(c.client, md, parts, c.inv.has("from-beginning") ? -2 : -1);
  int64_t max_messages = -1, timeout_ms = -1, printed = 0;
  if (c.inv.has("max-messages")) parse_int(c.inv.get("max-messages"), 1, INT64_MAX, &max_messages);
  if (c.inv.has("timeout-ms")) parse_int(c.inv.get("timeout-ms"), 0, INT32_MAX, &timeout_ms);
  std::map<int32_t, std::vector<int32_t>> by_leader;
  auto route = [&](const proto::MetadataResponse::MetadataResponseTopic& t) {
    by_leader.clear();
    for (const auto& p : t.partitions)
      if (position.count({topic, p.partition_index})) by_leader[p.leader_id].push_back(p.partition_index);
  };
  route(mt);
  auto last_record = std::chrono::steady_clock::now();
  // Since when some partition has had no reachable leader (nullopt: all fine).
  std::optional<std::chrono::steady_clock::time_point> leaderless_since;
  const auto leader_wait = std::chrono::milliseconds(c.client.props().request_timeout_ms);
  const bool json = c.inv.format == Format::kJson;
  while (true) {
    bool reroute = by_leader.count(-1) > 0;
    for (const auto& [leader, ps] : by_leader) {
      if (leader < 0) continue;  // no leader now: routed again below
      proto::FetchRequest req;
      req.replica_id = -1;
      req.max_wait_ms = 200;
      req.min_bytes = 1;
      req.max_bytes = 16 << 20;
      req.session_id = 0;
      req.session_epoch = -1;  // sessionless full fetch
      proto::FetchRequest::FetchTopic ft;
      ft.topic = topic;
      for (int32_t p : ps) {
        proto::FetchRequest::FetchPartition fp;
        fp.partition = p;
        fp.fetch_offset = position[{topic, p}];
        fp.partition_max_bytes = 4 << 20;
        ft.partitions.push_back(fp);
      }
      req.topics.push_back(ft);
      proto::FetchResponse resp;
      // v13+ names topics by id only; we fetch by name.
      try {
        c.client.call(leader, req, &resp, int16_t{12});
      } catch (const CliError& e) {
        // The leader went away: follow the partitions to their new leaders.
        if (e.exit_code != kExitConnect) throw;
        c.client.forget(leader);
        reroute = true;
        continue;
      }
      if (resp.error_code != 0) throw_kafka_error("fetch " + topic, resp.error_code);
      for (const auto& tr : resp.responses)
        for (const auto& pd : tr.partitions) {
          if (is_leader_change(pd.error_code)) {
            reroute = true;
            continue;
          }
          if (pd.error_code != 0)
            throw_kafka_error("fetch " + tr.topic + "-" + std::to_string(pd.partition_index), pd.error_code);
          int64_t& pos = position[{topic, pd.partition_index}];
          proto::BatchSplitter split(pd.records);
          proto::RecordsEntry e;
          while (split.next(&e) == proto::SplitStatus::kEntry) {
            if (e.magic < 2) {  // an old message set: skip it
              pos = std::max(pos, e.offset + 1);
              continue;
            }
            auto batch = proto::RecordBatchView::parse(e.bytes);
            if (!batch.ok()) break;
            if (batch->is_control()) {
              pos = std::max(pos, batch->next_offset());
              continue;
            }
            auto decoded = proto::decode_records(*batch, 256u << 20);
            if (!decoded.ok())
              throw CliError(kExitKafkaError, "cannot read a batch of " + topic + "-" +
                                                  std::to_string(pd.partition_index) + ": " +
                                                  std::string(proto::to_string(decoded.error())));
            auto reader = decoded->reader();
            proto::RecordView r;
            while (reader.next(&r)) {
              if (r.offset < pos) continue;
              pos = r.offset + 1;
              auto text = [](const std::optional<std::span<const uint8_t>>& b) -> std::optional<std::string> {
                if (!b) return std::nullopt;
                return std::string(reinterpret_cast<const char*>(b->data()), b->size());
              };
              const auto value = text(r.value);
              if (json) {
                const auto key = text(r.key);
                c.out << "{\"topic\": " << json_quote(topic) << ", \"partition\": " << pd.partition_index
                      << ", \"offset\": " << r.offset << ", \"timestamp\": " << r.timestamp
                      << ", \"key\": " << (key ? json_quote(*key) : "null")
                      << ", \"value\": " << (value ? json_quote(*value) : "null") << "}\n";
              } else {
                c.out << (value ? *value : "null") << "\n";
              }
              last_record = std::chrono::steady_clock::now();
              if (max_messages > 0 && ++printed >= max_messages) {
                c.out << std::flush;
                return;
              }
            }
            pos = std::max(pos, batch->next_offset());
          }
        }
    }
    c.out << std::flush;
    if (timeout_ms >= 0 &&
        std::chrono::steady_clock::now() - last_record >= std::chrono::milliseconds(timeout_ms))
      return;
    if (!reroute) {
      leaderless_since.reset();
      continue;
    }
    const auto now = std::chrono::steady_clock::now();
    if (!leaderless_since) leaderless_since = now;
    if (now - *leaderless_since >= leader_wait)
      throw CliError(kExitKafkaError, "consume " + topic + ": no reachable leader for every partition within " +
                                          std::to_string(leader_wait.count()) + " ms (request.timeout.ms)");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // polling with a deadline
    try {
      auto fresh = c.client.metadata(std::vector<std::string>{topic});
      route(find_topic(fresh, topic));
    } catch (const CliError& e) {
      if (e.exit_code != kExitConnect) throw;  // the bootstrap broker itself is gone: retry until the deadline
    }
  }
}

}  // namespace ciuickafka::broker::admin_cli
