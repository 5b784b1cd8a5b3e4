// replication/jvm_order.h: the order in which Kafka's JSON maps come out.
//
// Kafka builds most znode payloads as Scala maps and hands them to Jackson,
// which writes members in the map's iteration order. That order is a
// function of the keys' Java String.hashCode and the collection used; to
// write the same bytes as Kafka we reproduce it:
// - scala.collection.mutable.HashMap (2.13): buckets by
//   (h ^ h>>>16) & (table size - 1), each bucket sorted by that value
//   (signed); the table starts at 16 slots (or the size hint of
//   HashMap.from), doubling before an insert that would reach 3/4 full.
// - scala.collection.immutable.Map (2.13): Map1..Map4 keep insertion order;
//   from 5 keys a CHAMP trie, iterated depth first, each node's own entries
//   (by 5-bit hash slice, low bits first, of Hashing.improve(h)) before its
//   sub-nodes.
// - java.util.Properties (a ConcurrentHashMap since Java 9): bins by
//   (h ^ h>>>16) & (n - 1), 16 bins up to 11 keys; within a bin in insertion
//   order. Exact up to 11 keys; past that a resize may reorder a bin (the
//   lastRun split), which we do not model.
// Each function returns the keys' indices in iteration order.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ciuickafka::replication {

int32_t java_string_hash(std::string_view s);  // String.hashCode of the UTF-16 text of s

// The table size of a Scala mutable.HashMap after `count` single inserts
// into one that started with `initial_table` slots.
size_t scala_mutable_table_size(size_t count, size_t initial_table = 16);
std::vector<size_t> scala_mutable_hash_map_order(const std::vector<std::string>& keys, size_t table_size);
std::vector<size_t> scala_immutable_map_order(const std::vector<std::string>& keys);
std::vector<size_t> java_properties_order(const std::vector<std::string>& keys);

}  // namespace ciuickafka::replication
