// replication/jvm_order.cc: see jvm_order.h.
#include "replication/jvm_order.h"

#include <algorithm>
#include <numeric>

namespace ciuickafka::replication {

namespace {

// Decodes one UTF-8 code point (input is valid UTF-8 from the JSON parser or
// our own strings; a stray byte counts as itself).
uint32_t next_code_point(std::string_view s, size_t& i) {
  auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  uint8_t c = b(i);
  size_t len = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
  if (i + len > s.size()) len = 1;
  uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1Fu) : len == 3 ? (c & 0x0Fu) : (c & 0x07u);
  for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (b(i + k) & 0x3Fu);
  i += len;
  return cp;
}

uint32_t spread16(int32_t h) {
  auto u = static_cast<uint32_t>(h);
  return u ^ (u >> 16);
}

// scala.collection.Hashing.improve
uint32_t improve(int32_t hcode) {
  auto h = static_cast<uint32_t>(hcode);
  h = h + ~(h << 9);
  h = h ^ (h >> 14);
  h = h + (h << 4);
  return h ^ (h >> 10);
}

void champ(const std::vector<std::string>& keys, std::vector<size_t> idx, unsigned shift, std::vector<size_t>& out) {
  if (shift >= 32) {  // a full hash collision: a collision node keeps insertion order
    out.insert(out.end(), idx.begin(), idx.end());
    return;
  }
  std::vector<std::vector<size_t>> slots(32);
  for (size_t i : idx) slots[(improve(java_string_hash(keys[i])) >> shift) & 31].push_back(i);
  for (auto& s : slots)
    if (s.size() == 1) out.push_back(s[0]);
  for (auto& s : slots)
    if (s.size() > 1) champ(keys, s, shift + 5, out);
}

}  // namespace

int32_t java_string_hash(std::string_view s) {
  uint32_t h = 0;
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = next_code_point(s, i);
    if (cp >= 0x10000) {  // a surrogate pair in UTF-16
      cp -= 0x10000;
      h = 31 * h + (0xD800 + (cp >> 10));
      h = 31 * h + (0xDC00 + (cp & 0x3FF));
    } else {
      h = 31 * h + cp;
    }
  }
  return static_cast<int32_t>(h);
}

size_t scala_mutable_table_size(size_t count, size_t initial_table) {
  size_t table = initial_table;
  for (size_t size = 0; size < count; ++size)
    if (size + 1 >= static_cast<size_t>(static_cast<double>(table) * 0.75)) table *= 2;
  return table;
}

std::vector<size_t> scala_mutable_hash_map_order(const std::vector<std::string>& keys, size_t table_size) {
  std::vector<size_t> order(keys.size());
  std::iota(order.begin(), order.end(), size_t{0});
  auto key = [&](size_t i) {
    uint32_t h = spread16(java_string_hash(keys[i]));
    return std::pair<uint32_t, int32_t>(h & static_cast<uint32_t>(table_size - 1), static_cast<int32_t>(h));
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  return order;
}

std::vector<size_t> scala_immutable_map_order(const std::vector<std::string>& keys) {
  std::vector<size_t> all(keys.size());
  std::iota(all.begin(), all.end(), size_t{0});
  if (keys.size() <= 4) return all;
  std::vector<size_t> out;
  champ(keys, all, 0, out);
  return out;
}

std::vector<size_t> java_properties_order(const std::vector<std::string>& keys) {
  size_t n = 16;
  while (keys.size() >= n - n / 4) n *= 2;  // ConcurrentHashMap resizes at 3/4 full
  std::vector<size_t> order(keys.size());
  std::iota(order.begin(), order.end(), size_t{0});
  auto bin = [&](size_t i) { return (spread16(java_string_hash(keys[i])) & 0x7fffffffu) & (n - 1); };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bin(a) < bin(b); });
  return order;
}

}  // namespace ciuickafka::replication
