// broker/quotas/quota_table.h: client quotas as data (KIP-546): which
// entities have which quotas, how AlterClientQuotas changes them, how
// DescribeClientQuotas filters them, and which quota applies to a client.
//
// An entity names one or two entity types, each with a name or the default
// (a null name, `<default>` in ZooKeeper): {user}, {client-id},
// {user, client-id}, or {ip} alone. Keys, as Kafka's QuotaConfig:
//   user / client-id entities: producer_byte_rate, consumer_byte_rate (LONG,
//     bytes per second), request_percentage (DOUBLE, percent of one
//     request thread's time), controller_mutation_rate (DOUBLE, partition
//     mutations per second);
//   ip entities: connection_creation_rate (INT, connections per second).
// Validation follows Kafka 3.9's controller (ClientQuotaControlManager):
// an empty entity, an unknown entity type, an empty name, ip with user or
// client-id, an ip that is not an address (or a name that resolves), an
// unknown key, a value <= 0, a fractional value for an integral key:
// INVALID_REQUEST for that entity, whose other ops are then not applied. A
// key twice in one entry, or an entity named twice in one request:
// INVALID_REQUEST "Ignoring duplicate entity" (Kafka's controller words
// both so; what the first entry of a twice-named entity changed stands, as
// in Kafka). Removing a key that is not set is a no-op.
//
// Which quota applies to a client (user, client-id), for one key: the first
// entity of Kafka's precedence that sets that key:
//   {user, client-id}, {user, client-id default}, {user},
//   {user default, client-id}, {user default, client-id default},
//   {user default}, {client-id}, {client-id default}.
// The match also says which clients share the quota's rate: the (user,
// client-id) tags Kafka's DefaultQuotaCallback gives its sensor (a {user}
// quota is shared by every client-id of the user, a {client-id default}
// one is per client-id).
//
// ZooKeeper names (Kafka's Sanitizer): a name is URL-encoded (UTF-8 bytes,
// [A-Za-z0-9._~-] kept, a space as %20, `*` as %2A), the default is
// `<default>`; entity paths "users/<u>", "users/<u>/clients/<c>",
// "clients/<c>", "ips/<ip>" under /config.
//
// Pure: no I/O except that an ip entity's name that is not a literal
// address is resolved (getaddrinfo), as Kafka's isValidIpEntity and
// ConnectionQuotas do (alter, resolve_ip_rates).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/error_code.h"

namespace ciuickafka::broker::quotas {

inline constexpr const char* kUser = "user";
inline constexpr const char* kClientId = "client-id";
inline constexpr const char* kIp = "ip";

inline constexpr const char* kProducerByteRate = "producer_byte_rate";
inline constexpr const char* kConsumerByteRate = "consumer_byte_rate";
inline constexpr const char* kRequestPercentage = "request_percentage";
inline constexpr const char* kControllerMutationRate = "controller_mutation_rate";
inline constexpr const char* kConnectionCreationRate = "connection_creation_rate";

// Entity type -> name (nullopt: the default entity of that type).
using Entity = std::map<std::string, std::optional<std::string>>;
using Values = std::map<std::string, double>;
using Table = std::map<Entity, Values>;

struct Error {
  protocol::ErrorCode code = protocol::ErrorCode::NONE;
  std::string message;
  bool ok() const { return code == protocol::ErrorCode::NONE; }
};

struct Op {
  std::string key;
  std::optional<double> value;  // nullopt: remove the key
};

struct Alteration {
  Entity entity;
  std::vector<Op> ops;
};

struct AlterResult {
  Entity entity;
  Error error;
};

// Applies alterations to *table (in request order, each entry all or
// nothing); one result per distinct entity, in order of first appearance.
// Entities left with no key are dropped from the table.
std::vector<AlterResult> alter(Table* table, const std::vector<Alteration>& alterations);

// One result per distinct entity of alterations, each with error (a
// change that could not be made at all: ZooKeeper down, shutting down).
std::vector<AlterResult> fail_each(const std::vector<Alteration>& alterations, const Error& error);

// DescribeClientQuotas' filter.
inline constexpr int8_t kMatchExact = 0;
inline constexpr int8_t kMatchDefault = 1;
inline constexpr int8_t kMatchAny = 2;  // "specified": any name, the default included
struct FilterComponent {
  std::string entity_type;
  int8_t match_type = kMatchExact;
  std::optional<std::string> match;
};

// The entities matching the filter (Kafka's ClientQuotasImage.describe):
// each component asks an entity to have that type (with that name, or the
// default, or any); strict: the entity has no other type. Errors:
// INVALID_REQUEST (an empty type, a type twice, a match string where none
// belongs or none where one does, ip with user or client-id, an unknown
// match type), UNSUPPORTED_VERSION (an unknown entity type).
Error describe(const Table& table, const std::vector<FilterComponent>& components, bool strict,
               std::vector<std::pair<Entity, Values>>* out);

// The quota for a client on `key`, with the tags of the rate it shares.
struct Match {
  double limit = 0;
  std::string user_tag;
  std::string client_tag;
};
std::optional<Match> find(const Table& table, std::string_view key, const std::string& user,
                          const std::string& client_id);
// The connection_creation_rate quotas by address, as Kafka's
// ConnectionQuotas keeps them by InetAddress: an {ip} entity named by a
// literal address counts for that address (in its canonical text, so
// "::0001" is "::1"); one named by a host name for every address the name
// resolves to when the quotas are applied (getaddrinfo: this blocks, so it
// runs where changes are applied, never on a network thread; a literal
// entity wins over a name for the same address); {ip default} for every
// other address.
struct IpRates {
  std::map<std::string, double> by_address;
  std::optional<double> fallback;  // {ip default}
  bool empty() const { return by_address.empty() && !fallback; }
};
IpRates resolve_ip_rates(const Table& table);
// The rate for a connection from `address` (canonical text): its own, or
// the default.
std::optional<double> find_ip(const IpRates& rates, const std::string& address);
// An address's canonical text ("::ffff:1.2.3.4" stays as it is); nullopt
// when text is not a literal address.
std::optional<std::string> canonical_address(const std::string& text);

// Kafka's type of a key for an entity, or nullopt when the key is not one
// of that entity's.
enum class KeyType { kLong, kInt, kDouble };
std::optional<KeyType> key_type(const Entity& entity, std::string_view key);

// ZooKeeper: sanitized names and entity paths.
std::string sanitize(std::string_view name);
std::optional<std::string> desanitize(std::string_view sanitized);  // nullopt: a bad %-escape
// "users/<u>", "users/<u>/clients/<c>", "clients/<c>" or "ips/<ip>";
// nullopt for an entity that is not one of the four shapes.
std::optional<std::string> zk_entity_path(const Entity& entity);
// The entity of a path as zk_entity_path writes it; nullopt when the path
// is not one.
std::optional<Entity> entity_of_zk_path(std::string_view path);

// "user=alice, client-id=<default>" for logs and messages.
std::string to_string(const Entity& entity);
// A value as Kafka writes it into ZooKeeper: integral keys without a
// fraction ("1024"), doubles with one ("200.0").
std::string value_text(KeyType type, double value);

}  // namespace ciuickafka::broker::quotas
