// broker/config/keys.cc: the table of every configuration key.
//
// Names, types, defaults and units are Apache Kafka's (3.9); the docs are
// ours. To add a key: one entry here, in its section, then regenerate
// deploy/server.properties (see broker/README.md). Within a synonym group the
// first key listed wins (Kafka's ms over minutes over hours).
#include <charconv>

#include "broker/config/listeners.h"
#include "broker/config/registry.h"
#include "metrics/log/log.h"

namespace ciuickafka::broker::config {
namespace {

using T = ConfigType;
using S = Section;
using V = Validator;

constexpr const char* kNull = nullptr;
constexpr int64_t kMsPerMinute = 60'000;
constexpr int64_t kMsPerHour = 3'600'000;

constexpr std::string_view kSingleNode = "KRaft is not implemented: a cluster uses ZooKeeper (zookeeper.connect)";
constexpr std::string_view kNoJava = "CiuicKafka loads no Java classes";
constexpr std::string_view kNoTls = "TLS is not implemented yet";

bool valid_port(std::string_view p) {
  int port = -1;
  auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
  return !p.empty() && ec == std::errc() && end == p.data() + p.size() && port >= 0 && port <= 65535;
}

// host:port, host empty (all interfaces), a name, IPv4, or [IPv6].
bool valid_host_port(std::string_view hp) {
  size_t colon = hp.rfind(':');
  if (colon == std::string_view::npos) return false;
  std::string_view host = hp.substr(0, colon);
  if (host.find_first_of(" \t/") != std::string_view::npos) return false;
  if (!host.empty() && host.front() == '[' && host.back() != ']') return false;
  return valid_port(hp.substr(colon + 1));
}

bool valid_listener_name(std::string_view n) {
  if (n.empty()) return false;
  for (char c : n)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
      return false;
  return true;
}

// Splits on commas with surrounding whitespace dropped; "" gives no items.
List split_list(std::string_view s) {
  List out;
  size_t start = 0;
  if (s.find_first_not_of(" \t") == std::string_view::npos) return out;
  while (true) {
    size_t comma = s.find(',', start);
    std::string_view item = s.substr(start, comma == std::string_view::npos ? s.npos : comma - start);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    out.emplace_back(item);
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

// NAME://host:port,... (Kafka's listeners format).
V listeners_validator(bool allow_empty) {
  return V::custom("a comma-separated list of NAME://host:port", [allow_empty](const Value& v) {
    const auto* s = std::get_if<std::string>(&v);
    if (!s) return false;
    List items = split_list(*s);
    if (items.empty()) return allow_empty;
    for (const auto& item : items) {
      size_t sep = item.find("://");
      if (sep == std::string::npos || !valid_listener_name(std::string_view(item).substr(0, sep)) ||
          !valid_host_port(std::string_view(item).substr(sep + 3)))
        return false;
    }
    return true;
  });
}

V protocol_map_validator() {
  return V::custom(
      "a comma-separated list of NAME:PROTOCOL, PROTOCOL one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL",
      [](const Value& v) {
        const auto* s = std::get_if<std::string>(&v);
        if (!s) return false;
        for (const auto& item : split_list(*s)) {
          size_t colon = item.find(':');
          if (colon == std::string::npos || !valid_listener_name(std::string_view(item).substr(0, colon)))
            return false;
          std::string_view proto = std::string_view(item).substr(colon + 1);
          if (proto != "PLAINTEXT" && proto != "SSL" && proto != "SASL_PLAINTEXT" && proto != "SASL_SSL")
            return false;
        }
        return true;
      });
}

// zookeeper.connect: hosts, then an optional absolute chroot.
Validator zookeeper_connect_validator() {
  return Validator::custom("a host:port[,host:port...][/chroot] list", [](const Value& v) {
    const auto* s = std::get_if<std::string>(&v);
    if (s == nullptr) return true;  // null: single node
    std::string_view text = *s;
    const size_t slash = text.find('/');
    std::string_view hosts = text.substr(0, slash);
    if (hosts.empty()) return false;
    if (slash != std::string_view::npos) {
      std::string_view chroot = text.substr(slash);
      if (chroot.size() > 1 && (chroot.back() == '/' || chroot.find("//") != std::string_view::npos)) return false;
    }
    size_t start = 0;
    while (start <= hosts.size()) {
      size_t comma = hosts.find(',', start);
      std::string_view hp = hosts.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      const size_t colon = hp.rfind(':');
      if (hp.empty() || colon == 0 || colon == std::string_view::npos || !valid_port(hp.substr(colon + 1))) return false;
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    return true;
  });
}

V host_port_validator() {
  return V::custom("an address host:port (empty host: all interfaces)", [](const Value& v) {
    const auto* s = std::get_if<std::string>(&v);
    return s && valid_host_port(*s);
  });
}

// Kafka's MetadataVersionValidator (MetadataVersion.fromVersionString, 3.9):
// a version "0.x.y[-IVn]" is read by its first three dot-separated parts,
// any other by its first two ("2.8.1" is 2.8, "0.8.0.x" is 0.8.0), and the
// result must be a known inter-broker protocol version: a release
// ("0.10.2", "2.8", "3.9") or one of its internal versions ("3.0-IV1").
bool valid_kafka_version(std::string_view v) {
  static constexpr std::string_view kReleases[] = {
      "0.8.0", "0.8.1", "0.8.2", "0.9.0", "0.10.0", "0.10.1", "0.10.2", "0.11.0", "1.0", "1.1",
      "2.0",   "2.1",   "2.2",   "2.3",   "2.4",    "2.5",    "2.6",    "2.7",    "2.8", "3.0",
      "3.1",   "3.2",   "3.3",   "3.4",   "3.5",    "3.6",    "3.7",    "3.8",    "3.9"};
  static constexpr std::string_view kInternal[] = {
      "0.10.0-IV0", "0.10.0-IV1", "0.10.1-IV0", "0.10.1-IV1", "0.10.1-IV2", "0.10.2-IV0", "0.11.0-IV0",
      "0.11.0-IV1", "0.11.0-IV2", "1.0-IV0",    "1.1-IV0",    "2.0-IV0",    "2.0-IV1",    "2.1-IV0",
      "2.1-IV1",    "2.1-IV2",    "2.2-IV0",    "2.2-IV1",    "2.3-IV0",    "2.3-IV1",    "2.4-IV0",
      "2.4-IV1",    "2.5-IV0",    "2.6-IV0",    "2.7-IV0",    "2.7-IV1",    "2.7-IV2",    "2.8-IV0",
      "2.8-IV1",    "3.0-IV0",    "3.0-IV1",    "3.1-IV0",    "3.2-IV0",    "3.3-IV0",    "3.3-IV1",
      "3.3-IV2",    "3.3-IV3",    "3.4-IV0",    "3.5-IV0",    "3.5-IV1",    "3.5-IV2",    "3.6-IV0",
      "3.6-IV1",    "3.6-IV2",    "3.7-IV0",    "3.7-IV1",    "3.7-IV2",    "3.7-IV3",    "3.7-IV4",
      "3.8-IV0",    "3.9-IV0"};
  const size_t parts = v.starts_with("0.") ? 3 : 2;
  size_t end = 0;
  for (size_t i = 0; i < parts && end != std::string_view::npos; ++i) {
    end = v.find('.', i == 0 ? 0 : end + 1);
  }
  std::string_view key = end == std::string_view::npos ? v : v.substr(0, end);
  for (std::string_view r : kReleases)
    if (key == r) return true;
  for (std::string_view r : kInternal)
    if (key == r) return true;
  return false;
}

V kafka_version_validator() {
  return V::custom("a Kafka version from 0.8.0 to 3.9 (such as 2.8 or 3.0-IV1)", [](const Value& v) {
    const auto* s = std::get_if<std::string>(&v);
    return s && valid_kafka_version(*s);
  });
}

V log_level_validator() {
  return V::custom("one of TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF (any case)", [](const Value& v) {
    const auto* s = std::get_if<std::string>(&v);
    return s && metrics::log::parse_level(*s).has_value();
  });
}

V log_format_validator() {
  return V::custom("text or json", [](const Value& v) {
    const auto* s = std::get_if<std::string>(&v);
    return s && metrics::log::parse_format(*s).has_value();
  });
}

V gzip_level_validator() {
  return V::custom("-1 or an integer in [1, 9]", [](const Value& v) {
    const auto* i = std::get_if<int32_t>(&v);
    return i && (*i == -1 || (*i >= 1 && *i <= 9));
  });
}

}  // namespace

std::vector<KeyDef> detail::make_key_table() {
  std::vector<KeyDef> k;
  // --- Server basics
  k.push_back(key("node.id", T::kInt, "-1", S::kServer,
                  "This broker's id. -1 means unset. broker.id is the older name of the same setting; "
                  "if both are set they must agree.")
                  .valid(V::at_least(-1)));
  k.push_back(key("broker.id", T::kInt, "-1", S::kServer, "The older name of node.id.")
                  .valid(V::at_least(-1))
                  .synonym_of("node.id"));
  k.push_back(key("auto.create.topics.enable", T::kBoolean, "true", S::kServer,
                  "Create a topic with the default settings when a client asks Metadata for a topic that does "
                  "not exist."));
  k.push_back(key("delete.topic.enable", T::kBoolean, "true", S::kServer,
                  "Allow DeleteTopics. When false, deleting a topic fails."));
  k.push_back(key("background.threads", T::kInt, "10", S::kServer,
                  "Threads of the maintenance pool: the periodic disk work (log flushes by time, retention, "
                  "checkpoints, producer snapshots at each roll, producer expiry), as Kafka's scheduler threads. "
                  "The group and transaction coordinators keep a thread of their own. A dynamic broker config, "
                  "within half and double the current value.")
                  .valid(V::at_least(1)));
  k.push_back(key("num.recovery.threads.per.data.dir", T::kInt, "1", S::kServer,
                  "Threads per log directory that open (and, after a crash, recover) the logs at start-up. A "
                  "dynamic broker config: a change is used by the next start-up, within half and double the "
                  "current value.")
                  .valid(V::at_least(1)));

  // --- Listeners
  k.push_back(key("listeners", T::kString, "PLAINTEXT://:9092", S::kListeners,
                  "Where the broker accepts connections: NAME://host:port entries, comma-separated. An empty "
                  "host binds all interfaces; port 0 picks a free port. Changed live as a dynamic config of "
                  "the broker's own id (with advertised.listeners and listener.security.protocol.map); in a "
                  "cluster the inter-broker listener needs a restart to move.")
                  .valid(listeners_validator(false)));
  k.push_back(key("advertised.listeners", T::kString, kNull, S::kListeners,
                  "The addresses given to clients in Metadata, in the same format as listeners. Unset: the "
                  "listeners themselves.")
                  .valid(listeners_validator(true)));
  k.push_back(key("listener.security.protocol.map", T::kString,
                  "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", S::kListeners,
                  "The security protocol of each listener name, NAME:PROTOCOL entries. Only PLAINTEXT is "
                  "served so far.")
                  .valid(protocol_map_validator()));
  k.push_back(key("inter.broker.listener.name", T::kString, kNull, S::kListeners,
                  "The listener other brokers use to reach this one. Unset: the listener named PLAINTEXT if "
                  "advertised, else the first advertised listener."));

  // --- Socket server and request handling
  k.push_back(key("num.network.threads", T::kInt, "3", S::kSocket,
                  "Threads that accept connections, read requests and write responses. A dynamic broker "
                  "config, within half and double the current value: new threads take new connections at "
                  "once; when lowered, the connections of the threads that leave are answered what they are "
                  "owed and closed (clients reconnect), as Kafka closes a removed processor's connections.")
                  .valid(V::at_least(1)));
  k.push_back(key("num.io.threads", T::kInt, "8", S::kSocket,
                  "Threads for the request work that must not run on a network thread: creating and deleting "
                  "topics and changing configs on one node (CreateTopics, CreatePartitions, DeleteTopics, "
                  "AlterConfigs, IncrementalAlterConfigs, a Metadata request that auto-creates). Other requests "
                  "are handled on the network threads, log writes go through each network thread's io_uring. "
                  "A dynamic broker config: a change takes effect at once, within half and double the "
                  "current value.")
                  .valid(V::at_least(1)));
  k.push_back(key("socket.send.buffer.bytes", T::kInt, "102400", S::kSocket,
                  "SO_SNDBUF of each accepted connection (bytes); -1 keeps the operating system's default "
                  "(Linux doubles the value and caps it at net.core.wmem_max)."));
  // Kafka's default is 102400. A fixed 100 KiB receive buffer turns off
  // Linux's receive autotuning: the client sends in small windows and the
  // broker wakes per window. With the kernel's default, produce costs 35-50 %
  // less broker CPU per GB (broker/README.md).
  k.push_back(key("socket.receive.buffer.bytes", T::kInt, "-1", S::kSocket,
                  "SO_RCVBUF of each accepted connection (bytes); -1 keeps the operating system's default, "
                  "which autotunes (Linux doubles a value set here and caps it at net.core.rmem_max). "
                  "Kafka's default is 102400."));
  k.push_back(key("socket.request.max.bytes", T::kInt, "104857600", S::kSocket,
                  "The largest request frame accepted; a larger size prefix closes the connection.")
                  .valid(V::at_least(1)));
  k.push_back(key("fetch.max.bytes", T::kInt, "57671680", S::kSocket,
                  "The most record bytes one Fetch response carries (a consumer's fetch.max.bytes is capped "
                  "to it; the first batch is sent even if larger). Fetch v0-v2 have no limit of their own, and "
                  "their down-converted records are built in memory: this bounds them too.")
                  .valid(V::at_least(1024)));
  k.push_back(key("queued.max.requests", T::kInt, "500", S::kSocket,
                  "Requests read but not yet answered, across all connections, beyond the one request every "
                  "connection may always have in flight. When reached, connections with a request in flight "
                  "pause reading (nothing is dropped; TCP pushes back) until answers free room. Kafka's bound "
                  "on its request queue; here handlers run on the network threads, so the requests held are "
                  "those being handled or waiting (a long-polling Fetch, a JoinGroup).")
                  .valid(V::at_least(1)));
  k.push_back(key("queued.max.request.bytes", T::kLong, "268435456", S::kSocket,
                  "Bytes of requests read but not yet answered, across all connections, before reading pauses; "
                  "-1 means no limit beyond queued.max.requests. A frame larger than the whole budget is read "
                  "when nothing else is held; a frame over a quarter of it may fill only seven eighths, so "
                  "small requests keep flowing. Kafka's default is -1 (no limit: up to queued.max.requests x "
                  "socket.request.max.bytes, 50 GB); CiuicKafka defaults to 256 MiB so memory is bounded "
                  "out of the box.")
                  .valid(V::custom("-1 or an integer >= 1", [](const Value& v) {
                    const auto* i = std::get_if<int64_t>(&v);
                    return i && (*i == -1 || *i >= 1);
                  })));
  k.push_back(key("max.connections", T::kInt, "2147483647", S::kSocket,
                  "Client connections the broker holds at once, all listeners together. When reached, the "
                  "broker stops accepting (new connections wait in the listen backlog) until one closes, as "
                  "Kafka's acceptor does. With more than one listener, the inter-broker listener is not held "
                  "back by this limit (its connections still count); while more than this many are open (its "
                  "connections, or a lower value set live), the least recently active connections of the other "
                  "listeners are closed, as Kafka's do. Each listener is also limited to this "
                  "many connections of its own, or to listener.name.<listener>.max.connections (the "
                  "listener's name in lower case) where that is set.")
                  .valid(V::at_least(0)));
  k.push_back(key("max.connections.per.ip", T::kInt, "2147483647", S::kSocket,
                  "Connections one IP address may hold at once. A connection over the limit is closed as "
                  "soon as it is accepted. 0 is allowed only with max.connections.per.ip.overrides.")
                  .valid(V::at_least(0)));
  k.push_back(key("max.connections.per.ip.overrides", T::kString, "", S::kSocket,
                  "Per-address exceptions to max.connections.per.ip: comma-separated host:count entries, "
                  "host an IP address or a name resolved at start-up, e.g. \"127.0.0.1:200,build-host:50\".")
                  .valid(V::custom("a comma-separated list of host:count, count an integer >= 0",
                                   [](const Value& v) {
                                     const auto* s = std::get_if<std::string>(&v);
                                     return s && parse_ip_overrides(*s).has_value();
                                   })));
  k.push_back(key("max.connection.creation.rate", T::kInt, "2147483647", S::kSocket,
                  "New connections per second the broker accepts, on each listener and on all together "
                  "(KIP-612), measured over quota.window.num windows of quota.window.size.seconds. A "
                  "connection that puts the rate over it is held (and nothing else accepted; new connections "
                  "wait in the listen backlog) for as long as brings the rate back, at most one window, then "
                  "served. With more than one listener, the inter-broker listener counts only against its own "
                  "rate. listener.name.<listener>.max.connection.creation.rate sets one listener's own rate.")
                  .valid(V::at_least(0)));
  k.push_back(key("quota.window.num", T::kInt, "11", S::kSocket,
                  "Samples kept in memory for rate quotas (max.connection.creation.rate and the client "
                  "quotas producer_byte_rate, consumer_byte_rate, request_percentage, "
                  "connection_creation_rate).")
                  .valid(V::at_least(1)));
  k.push_back(key("quota.window.size.seconds", T::kInt, "1", S::kSocket,
                  "The time span of each sample of a rate quota; also the longest a connection is held "
                  "for max.connection.creation.rate.")
                  .valid(V::at_least(1)));
  k.push_back(key("controller.quota.window.num", T::kInt, "11", S::kSocket,
                  "For the controller_mutation_rate client quota: the token bucket holds at most the quota "
                  "times this many windows of controller.quota.window.size.seconds.")
                  .valid(V::at_least(1)));
  k.push_back(key("controller.quota.window.size.seconds", T::kInt, "1", S::kSocket,
                  "For the controller_mutation_rate client quota: the window size (seconds), see "
                  "controller.quota.window.num.")
                  .valid(V::at_least(1)));
  k.push_back(key("connections.max.idle.ms", T::kLong, "600000", S::kSocket,
                  "Close a connection idle for this long (milliseconds)."));

  // --- Log basics
  k.push_back(key("log.dirs", T::kString, kNull, S::kLog,
                  "Comma-separated directories that hold the partition logs. Unset: log.dir."));
  k.push_back(key("log.dir", T::kString, "/tmp/kafka-logs", S::kLog,
                  "The log directory, used when log.dirs is unset.")
                  .synonym_of("log.dirs"));
  k.push_back(key("log.segment.bytes", T::kInt, "1073741824", S::kLog, "The largest size of one segment file.")
                  .valid(V::at_least(14))
                  .topic("segment.bytes"));
  k.push_back(key("log.roll.ms", T::kLong, kNull, S::kLog,
                  "Roll a new segment when the active one is this old (milliseconds). Unset: log.roll.hours.")
                  .valid(V::at_least(1))
                  .topic("segment.ms"));
  k.push_back(key("log.roll.hours", T::kInt, "168", S::kLog,
                  "Roll a new segment when the active one is this old (hours), used when log.roll.ms is unset.")
                  .valid(V::at_least(1))
                  .synonym_of("log.roll.ms", kMsPerHour));
  k.push_back(key("log.index.interval.bytes", T::kInt, "4096", S::kLog,
                  "Bytes of records between two offset index entries.")
                  .valid(V::at_least(0))
                  .topic("index.interval.bytes"));
  k.push_back(key("log.index.size.max.bytes", T::kInt, "10485760", S::kLog,
                  "The largest size of an offset or time index; a full index rolls the segment.")
                  .valid(V::at_least(4))
                  .topic("segment.index.bytes"));
  k.push_back(key("log.preallocate", T::kBoolean, "false", S::kLog, "Preallocate a new segment's file.")
                  .topic("preallocate"));
  k.push_back(key("log.segment.delete.delay.ms", T::kLong, "60000", S::kLog,
                  "How long a deleted segment's files stay on disk before removal (milliseconds).")
                  .valid(V::at_least(0))
                  .topic("file.delete.delay.ms"));
  k.push_back(key("log.message.format.version", T::kString, "3.0-IV1", S::kLog,
                  "Deprecated (Kafka 3.x): the message format version for new segments. Kafka 3.0 and later "
                  "ignore it and always write record batches v2; kept so that existing configs load.")
                  .valid(kafka_version_validator())
                  .topic("message.format.version")
                  .ignored("every log is written in the 3.0 message format (record batches v2)"));
  k.push_back(key("log.message.timestamp.type", T::kString, "CreateTime", S::kLog,
                  "Keep the producer's timestamp (CreateTime) or stamp the broker's time (LogAppendTime).")
                  .valid(V::one_of({"CreateTime", "LogAppendTime"}))
                  .topic("message.timestamp.type"));
  k.push_back(key("log.message.timestamp.before.max.ms", T::kLong, "9223372036854775807", S::kLog,
                  "Reject a CreateTime record timestamp further than this in the past (milliseconds).")
                  .valid(V::at_least(0))
                  .topic("message.timestamp.before.max.ms"));
  k.push_back(key("log.message.timestamp.after.max.ms", T::kLong, "9223372036854775807", S::kLog,
                  "Reject a CreateTime record timestamp further than this in the future (milliseconds).")
                  .valid(V::at_least(0))
                  .topic("message.timestamp.after.max.ms"));

  // --- Log retention and flush
  k.push_back(key("log.retention.ms", T::kLong, kNull, S::kLogRetention,
                  "Delete segments older than this (milliseconds); -1 keeps them forever. Wins over "
                  "log.retention.minutes and log.retention.hours.")
                  .topic("retention.ms"));
  k.push_back(key("log.retention.minutes", T::kInt, kNull, S::kLogRetention,
                  "Retention in minutes, used when log.retention.ms is unset.")
                  .synonym_of("log.retention.ms", kMsPerMinute));
  k.push_back(key("log.retention.hours", T::kInt, "168", S::kLogRetention,
                  "Retention in hours, used when log.retention.ms and log.retention.minutes are unset.")
                  .synonym_of("log.retention.ms", kMsPerHour));
  k.push_back(key("log.retention.bytes", T::kLong, "-1", S::kLogRetention,
                  "Delete the oldest segments while a partition is larger than this; -1 means no size limit.")
                  .topic("retention.bytes"));
  k.push_back(key("log.retention.check.interval.ms", T::kLong, "300000", S::kLogRetention,
                  "How often retention is checked (milliseconds).")
                  .valid(V::at_least(1)));
  k.push_back(key("log.cleanup.policy", T::kList, "delete", S::kLogRetention,
                  "What happens to old segments: delete them, compact them, or both.")
                  .valid(V::list_of({"compact", "delete"}))
                  .topic("cleanup.policy"));
  k.push_back(key("log.flush.interval.messages", T::kLong, "9223372036854775807", S::kLogRetention,
                  "fsync a partition after this many messages. The default leaves it to the page cache "
                  "(acks=all durability comes from ciuic.acks.all.fsync).")
                  .valid(V::at_least(1))
                  .topic("flush.messages"));
  k.push_back(key("log.flush.interval.ms", T::kLong, kNull, S::kLogRetention,
                  "fsync a partition when its oldest unflushed message is this old (milliseconds). Unset: "
                  "log.flush.scheduler.interval.ms.")
                  .topic("flush.ms"));
  k.push_back(key("log.flush.scheduler.interval.ms", T::kLong, "9223372036854775807", S::kLogRetention,
                  "How often the flusher checks for logs to fsync (milliseconds), and the flush interval when "
                  "log.flush.interval.ms is unset.")
                  .synonym_of("log.flush.interval.ms", 1));
  k.push_back(key("log.flush.offset.checkpoint.interval.ms", T::kInt, "60000", S::kLogRetention,
                  "How often the recovery-point checkpoint is written (milliseconds).")
                  .valid(V::at_least(0)));
  k.push_back(key("log.flush.start.offset.checkpoint.interval.ms", T::kInt, "60000", S::kLogRetention,
                  "How often the log-start-offset checkpoint is written (milliseconds).")
                  .valid(V::at_least(0))
                  .ignored("the log-start-offset checkpoint is written together with the recovery-point "
                           "checkpoint, every log.flush.offset.checkpoint.interval.ms"));

  // --- Log cleaner
  k.push_back(key("log.cleaner.enable", T::kBoolean, "true", S::kLogCleaner,
                  "Run the log cleaner, which compacts topics whose cleanup.policy includes compact."));
  k.push_back(key("log.cleaner.threads", T::kInt, "1", S::kLogCleaner,
                  "Log cleaner threads: they share each pass, cleaning different logs at once, and split "
                  "log.cleaner.dedupe.buffer.size between them. 0 turns the cleaner off (read at start-up). A "
                  "dynamic broker config, within half and double the current value and at least 1: new threads "
                  "join at once, a thread that leaves finishes the log it is cleaning first.")
                  .valid(V::at_least(0)));
  k.push_back(key("log.cleaner.dedupe.buffer.size", T::kLong, "134217728", S::kLogCleaner,
                  "Memory for the cleaner's key map, across all cleaner threads (bytes)."));
  k.push_back(key("log.cleaner.io.buffer.size", T::kInt, "524288", S::kLogCleaner,
                  "The cleaner's read and write buffer memory, across all cleaner threads (bytes): each "
                  "thread reads segments in chunks of half its share (at least 4 KiB; a larger batch is read "
                  "whole). A dynamic broker config.")
                  .valid(V::at_least(0)));
  k.push_back(key("log.cleaner.io.buffer.load.factor", T::kDouble, "0.9", S::kLogCleaner,
                  "How full the cleaner's key map may get, as a fraction of its share of "
                  "log.cleaner.dedupe.buffer.size, before a pass cleans what it has mapped. A dynamic broker "
                  "config.")
                  .valid(V::custom("a number > 0 and <= 1", [](const Value& v) {
                    const auto* d = std::get_if<double>(&v);
                    return d != nullptr && *d > 0 && *d <= 1;
                  })));
  k.push_back(key("log.cleaner.io.max.bytes.per.second", T::kDouble, "1.7976931348623157E308", S::kLogCleaner,
                  "Cap on the cleaner's read plus write rate (bytes per second; the default, Double.MAX_VALUE, "
                  "is unthrottled).")
                  .valid(V::custom("a number > 0", [](const Value& v) {
                    const auto* d = std::get_if<double>(&v);
                    return d && *d > 0;
                  })));
  k.push_back(key("log.cleaner.backoff.ms", T::kLong, "15000", S::kLogCleaner,
                  "Sleep when there is nothing to clean (milliseconds).")
                  .valid(V::at_least(0)));
  k.push_back(key("log.cleaner.min.cleanable.ratio", T::kDouble, "0.5", S::kLogCleaner,
                  "Clean a log when its uncleaned part is at least this fraction of it.")
                  .valid(V::between_double(0, 1))
                  .topic("min.cleanable.dirty.ratio"));
  k.push_back(key("log.cleaner.delete.retention.ms", T::kLong, "86400000", S::kLogCleaner,
                  "How long tombstones stay in a compacted log (milliseconds).")
                  .valid(V::at_least(0))
                  .topic("delete.retention.ms"));
  k.push_back(key("log.cleaner.min.compaction.lag.ms", T::kLong, "0", S::kLogCleaner,
                  "A message stays uncompacted at least this long (milliseconds).")
                  .valid(V::at_least(0))
                  .topic("min.compaction.lag.ms"));
  k.push_back(key("log.cleaner.max.compaction.lag.ms", T::kLong, "9223372036854775807", S::kLogCleaner,
                  "A message stays uncompacted at most this long (milliseconds).")
                  .valid(V::at_least(1))
                  .topic("max.compaction.lag.ms"));

  // --- Topic defaults
  k.push_back(key("num.partitions", T::kInt, "1", S::kTopicDefaults,
                  "Partitions of an automatically created topic, and of CreateTopics asking for the default.")
                  .valid(V::at_least(1)));
  k.push_back(key("default.replication.factor", T::kInt, "1", S::kTopicDefaults,
                  "Replication factor of automatically created topics (1 on a single node)."));
  k.push_back(key("message.max.bytes", T::kInt, "1048588", S::kTopicDefaults,
                  "The largest record batch the broker accepts, after compression.")
                  .valid(V::at_least(0))
                  .topic("max.message.bytes"));
  k.push_back(key("compression.type", T::kString, "producer", S::kTopicDefaults,
                  "How batches are stored: as the producer sent them (producer) or recompressed with a codec.")
                  .valid(V::one_of({"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}))
                  .topic("compression.type"));
  k.push_back(key("compression.gzip.level", T::kInt, "-1", S::kTopicDefaults,
                  "gzip level when the broker recompresses with gzip; -1 is zlib's default.")
                  .valid(gzip_level_validator())
                  .topic("compression.gzip.level"));
  k.push_back(key("compression.lz4.level", T::kInt, "9", S::kTopicDefaults,
                  "lz4 level when the broker recompresses with lz4.")
                  .valid(V::between(1, 17))
                  .topic("compression.lz4.level"));
  k.push_back(key("compression.zstd.level", T::kInt, "3", S::kTopicDefaults,
                  "zstd level when the broker recompresses with zstd.")
                  .valid(V::between(-131072, 22))
                  .topic("compression.zstd.level"));

  // --- Offsets and consumer groups
  k.push_back(key("offsets.topic.num.partitions", T::kInt, "50", S::kGroups,
                  "Partitions of __consumer_offsets (fixed once it exists).")
                  .valid(V::at_least(1)));
  k.push_back(key("offsets.topic.replication.factor", T::kInt, "3", S::kGroups,
                  "Replication factor of __consumer_offsets (a single node uses 1).")
                  .valid(V::between(1, 32767)));
  k.push_back(key("offsets.topic.segment.bytes", T::kInt, "104857600", S::kGroups,
                  "Segment size of __consumer_offsets.")
                  .valid(V::at_least(1)));
  k.push_back(key("offsets.retention.minutes", T::kInt, "10080", S::kGroups,
                  "Committed offsets of an empty group are dropped after this long (minutes).")
                  .valid(V::at_least(1)));
  k.push_back(key("offsets.retention.check.interval.ms", T::kLong, "600000", S::kGroups,
                  "How often expired offsets are looked for (milliseconds).")
                  .valid(V::at_least(1)));
  k.push_back(key("offsets.commit.timeout.ms", T::kInt, "5000", S::kGroups,
                  "How long an offset commit waits to be written (milliseconds).")
                  .valid(V::at_least(1)));
  k.push_back(key("offset.metadata.max.bytes", T::kInt, "4096", S::kGroups,
                  "The largest metadata string stored with a committed offset."));
  k.push_back(key("group.initial.rebalance.delay.ms", T::kInt, "3000", S::kGroups,
                  "How long a new group waits for more members before its first rebalance (milliseconds)."));
  k.push_back(key("group.min.session.timeout.ms", T::kInt, "6000", S::kGroups,
                  "The smallest session timeout a member may ask for (milliseconds)."));
  k.push_back(key("group.max.session.timeout.ms", T::kInt, "1800000", S::kGroups,
                  "The largest session timeout a member may ask for (milliseconds)."));
  k.push_back(key("group.max.size", T::kInt, "2147483647", S::kGroups, "The most members one group may have.")
                  .valid(V::at_least(1)));

  // --- Transactions
  k.push_back(key("transaction.state.log.num.partitions", T::kInt, "50", S::kTransactions,
                  "Partitions of __transaction_state.")
                  .valid(V::at_least(1)));
  k.push_back(key("transaction.state.log.replication.factor", T::kInt, "3", S::kTransactions,
                  "Replication factor of __transaction_state (a single node uses 1).")
                  .valid(V::between(1, 32767)));
  k.push_back(key("transaction.state.log.segment.bytes", T::kInt, "104857600", S::kTransactions,
                  "Segment size of __transaction_state.")
                  .valid(V::at_least(1)));
  k.push_back(key("transaction.state.log.min.isr", T::kInt, "2", S::kTransactions,
                  "min.insync.replicas of __transaction_state, set on the topic when a cluster creates it (a "
                  "single node has one replica and no such check).")
                  .valid(V::at_least(1)));
  k.push_back(key("transaction.max.timeout.ms", T::kInt, "900000", S::kTransactions,
                  "The longest transaction timeout a producer may ask for (milliseconds).")
                  .valid(V::at_least(1)));
  k.push_back(key("transactional.id.expiration.ms", T::kInt, "604800000", S::kTransactions,
                  "Forget a transactional id unused for this long (milliseconds).")
                  .valid(V::at_least(1)));
  k.push_back(key("transaction.partition.verification.enable", T::kBoolean, "true", S::kTransactions,
                  "Before a producer's first transactional batch opens a transaction on a partition, the partition's "
                  "leader has the transaction coordinator confirm the partition was added to it (KIP-890); off, the "
                  "batch is written unchecked. Dynamic."));
  k.push_back(key("producer.id.expiration.ms", T::kInt, "86400000", S::kTransactions,
                  "Forget an idempotent producer's sequence state on a partition this long (milliseconds) after its "
                  "last write there, unless it has a transaction open there; a batch it sends later starts anew. "
                  "Dynamic.")
                  .valid(V::at_least(1)));
  k.push_back(key("producer.id.expiration.check.interval.ms", T::kInt, "600000", S::kTransactions,
                  "How often producers idle for producer.id.expiration.ms are looked for and forgotten "
                  "(milliseconds).")
                  .valid(V::at_least(1)));
  k.push_back(key("transaction.abort.timed.out.transaction.cleanup.interval.ms", T::kInt, "10000", S::kTransactions,
                  "How often transactions open longer than their timeout are looked for and aborted (milliseconds).")
                  .valid(V::at_least(1)));

  // --- Replication
  k.push_back(key("min.insync.replicas", T::kInt, "1", S::kReplication,
                  "Replicas that must have a batch before acks=all succeeds.")
                  .valid(V::at_least(1))
                  .topic("min.insync.replicas"));
  k.push_back(key("unclean.leader.election.enable", T::kBoolean, "false", S::kReplication,
                  "Allow a replica outside the ISR to become leader, losing data.")
                  .topic("unclean.leader.election.enable"));
  k.push_back(key("replica.lag.time.max.ms", T::kLong, "30000", S::kReplication,
                  "A follower that has not caught up for this long leaves the ISR (milliseconds)."));
  k.push_back(key("num.replica.fetchers", T::kInt, "1", S::kReplication,
                  "Fetcher threads per leader broker that copy its partitions to this follower.")
                  .valid(V::at_least(1)));
  k.push_back(key("replica.fetch.max.bytes", T::kInt, "1048576", S::kReplication,
                  "Bytes a follower fetch asks for per partition (the first batch is sent even if larger).")
                  .valid(V::at_least(0)));
  k.push_back(key("replica.fetch.response.max.bytes", T::kInt, "10485760", S::kReplication,
                  "Bytes a follower fetch asks for in all (the first batch is sent even if larger).")
                  .valid(V::at_least(0)));
  k.push_back(key("replica.fetch.wait.max.ms", T::kInt, "500", S::kReplication,
                  "How long the leader may hold a follower fetch waiting for data (milliseconds).")
                  .valid(V::at_least(0)));
  k.push_back(key("replica.fetch.min.bytes", T::kInt, "1", S::kReplication,
                  "Bytes a follower fetch waits for before the leader answers.")
                  .valid(V::at_least(1)));
  k.push_back(key("replica.fetch.backoff.ms", T::kInt, "1000", S::kReplication,
                  "How long a fetcher waits after a failed fetch or a fenced partition (milliseconds).")
                  .valid(V::at_least(0)));
  k.push_back(key("replica.high.watermark.checkpoint.interval.ms", T::kLong, "5000", S::kReplication,
                  "How often each log dir's replication-offset-checkpoint is written (milliseconds).")
                  .valid(V::at_least(1)));
  k.push_back(key("broker.rack", T::kString, kNull, S::kReplication,
                  "The rack of this broker, registered in ZooKeeper and answered in Metadata."));
  k.push_back(key("replica.selector.class", T::kClass, kNull, S::kReplication,
                  "Fetch from follower (KIP-392): with Kafka's RackAwareReplicaSelector, a leader names the "
                  "most caught-up in-sync replica in a consumer's client.rack as its preferred read replica; "
                  "unset, consumers read from leaders. No other class can be loaded.")
                  .valid(V::custom("org.apache.kafka.common.replica.RackAwareReplicaSelector or empty",
                                   [](const Value& v) {
                                     const auto* s = std::get_if<std::string>(&v);
                                     return s != nullptr &&
                                            (s->empty() ||
                                             *s == "org.apache.kafka.common.replica.RackAwareReplicaSelector");
                                   })));
  k.push_back(key("controlled.shutdown.enable", T::kBoolean, "true", S::kReplication,
                  "Cluster mode: on SIGTERM/SIGINT ask the controller to move this broker's leaderships away "
                  "(ControlledShutdown) before stopping."));
  k.push_back(key("controlled.shutdown.max.retries", T::kInt, "3", S::kReplication,
                  "ControlledShutdown attempts before the broker stops anyway (a failure, or partitions still "
                  "led).")
                  .valid(V::at_least(0)));
  k.push_back(key("controlled.shutdown.retry.backoff.ms", T::kLong, "5000", S::kReplication,
                  "Wait between ControlledShutdown attempts (milliseconds).")
                  .valid(V::at_least(0)));
  k.push_back(key("controller.socket.timeout.ms", T::kInt, "30000", S::kReplication,
                  "Timeout of one ControlledShutdown attempt: connecting to the controller and its answer "
                  "(milliseconds).")
                  .valid(V::at_least(1)));
  k.push_back(key("auto.leader.rebalance.enable", T::kBoolean, "true", S::kReplication,
                  "The controller moves leadership back to preferred replicas when a broker's share of "
                  "partitions led elsewhere exceeds leader.imbalance.per.broker.percentage."));
  k.push_back(key("leader.imbalance.check.interval.seconds", T::kLong, "300", S::kReplication,
                  "How often the controller checks the leader imbalance (seconds).")
                  .valid(V::at_least(1)));
  k.push_back(key("leader.imbalance.per.broker.percentage", T::kInt, "10", S::kReplication,
                  "Per broker, the percentage of its preferred partitions led elsewhere above which the "
                  "controller runs preferred elections for them.")
                  .valid(V::at_least(0)));

  // --- ZooKeeper and KRaft
  k.push_back(key("zookeeper.connect", T::kString, kNull, S::kQuorum,
                  "ZooKeeper connection string host:port[,host:port...][/chroot]. Unset: a single node, no "
                  "ZooKeeper; set: this broker joins the cluster registered there (a missing chroot is created).")
                  .valid(zookeeper_connect_validator()));
  k.push_back(key("zookeeper.session.timeout.ms", T::kInt, "18000", S::kQuorum,
                  "ZooKeeper session timeout: a broker that ZooKeeper has not heard from for this long is "
                  "considered gone (milliseconds; the server may clamp it to 2-20 ticks).")
                  .valid(V::at_least(1)));
  k.push_back(key("zookeeper.connection.timeout.ms", T::kInt, kNull, S::kQuorum,
                  "How long startup waits for the first ZooKeeper connection (milliseconds; unset: "
                  "zookeeper.session.timeout.ms).")
                  .valid(V::at_least(1)));
  k.push_back(key("process.roles", T::kList, "", S::kQuorum, "KRaft roles of this process: broker, controller.")
                  .valid(V::list_of({"broker", "controller"}))
                  .ignored(kSingleNode));
  k.push_back(key("controller.quorum.voters", T::kList, "", S::kQuorum, "KRaft voters, id@host:port entries.")
                  .ignored(kSingleNode));
  k.push_back(key("controller.listener.names", T::kString, kNull, S::kQuorum,
                  "Listener names the KRaft controller uses.")
                  .ignored(kSingleNode));
  k.push_back(key("cluster.id", T::kString, kNull, S::kQuorum,
                  "The cluster id a KRaft log directory is formatted with (the images' CLUSTER_ID).")
                  .ignored(kSingleNode));

  // --- Java classes and secrets
  k.push_back(key("authorizer.class.name", T::kClass, "", S::kIgnored, "Authorizer class.").ignored(kNoJava));
  k.push_back(key("principal.builder.class", T::kClass,
                  "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder", S::kIgnored,
                  "Principal builder class.")
                  .ignored(kNoJava));
  k.push_back(key("create.topic.policy.class.name", T::kClass, kNull, S::kIgnored, "CreateTopics policy class.")
                  .ignored(kNoJava));
  k.push_back(key("alter.config.policy.class.name", T::kClass, kNull, S::kIgnored, "AlterConfigs policy class.")
                  .ignored(kNoJava));
  k.push_back(key("ssl.keystore.password", T::kPassword, kNull, S::kIgnored, "Key store password.")
                  .ignored(kNoTls));
  k.push_back(key("ssl.key.password", T::kPassword, kNull, S::kIgnored, "Private key password.").ignored(kNoTls));
  k.push_back(key("ssl.truststore.password", T::kPassword, kNull, S::kIgnored, "Trust store password.")
                  .ignored(kNoTls));

  // --- CiuicKafka
  k.push_back(key("ciuic.metrics.listener", T::kString, "0.0.0.0:9644", S::kCiuic,
                  "Where Prometheus metrics are served (path /metrics).")
                  .valid(host_port_validator()));
  k.push_back(key("ciuic.acks.all.fsync", T::kBoolean, "true", S::kCiuic,
                  "acks=all produce waits for a group-commit fsync of its batch before answering (in a cluster: on the "
                  "leader, and followers sync what they fetched before reporting it)."));
  k.push_back(key("ciuic.produce.validate.compressed", T::kBoolean, "true", S::kCiuic,
                  "Compressed batches kept as sent (compression.type=producer) are decompressed and every record "
                  "checked (structure, offset deltas, timestamps), as Kafka's LogValidator does; false checks only "
                  "their headers (cheaper, but a malformed inner batch is acknowledged and reaches consumers)."));
  k.push_back(key("ciuic.group.disconnect.grace.ms", T::kInt, "3000", S::kCiuic,
                  "A dynamic group member whose connection closed is evicted after at most this long unless it "
                  "speaks again from a new connection (milliseconds; -1: only session.timeout.ms evicts, as Kafka).")
                  .valid(V::at_least(-1)));
  k.push_back(key("ciuic.log.max.open.files", T::kInt, "0", S::kCiuic,
                  "At most this many segment .log files are held open (least recently used closed first; a "
                  "file being read or written stays open until done). 0: half the soft RLIMIT_NOFILE.")
                  .valid(V::between(0, 1 << 20)));
  k.push_back(key("ciuic.log.index.cache.bytes", T::kLong, "67108864", S::kCiuic,
                  "The memory the offset and time indexes of inactive segments may hold, all logs together: past "
                  "it the least recently used are unloaded, and reloaded from their files when next looked up "
                  "(bytes; each log's active segment is not counted; Kafka has no such bound, it mmaps every index).")
                  .valid(V::at_least(0)));
  k.push_back(key("log.level", T::kString, "INFO", S::kCiuic,
                  "The least severe operator log line written to stderr, as log4j's root logger level (TRACE, "
                  "DEBUG, INFO, WARN, ERROR, FATAL, OFF; any case). KAFKA_LOG4J_ROOT_LOGLEVEL sets it too.")
                  .valid(log_level_validator()));
  k.push_back(key("ciuic.log.format", T::kString, "text", S::kCiuic,
                  "The operator log's format: text ([ciuickafka] LEVEL message key=value) or json (one object a "
                  "line: ts, level, logger, msg and the line's fields).")
                  .valid(log_format_validator()));
  return k;
}

}  // namespace ciuickafka::broker::config
