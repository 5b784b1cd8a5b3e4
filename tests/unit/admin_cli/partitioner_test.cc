// `produce --key-separator`: keyed records land where Kafka's clients put
// them. Expected partitions (of 5) were observed from librdkafka's
// murmur2_random partitioner, which matches the Java client's default.
#include <catch2/catch.hpp>

#include "broker/admin_cli/commands.h"

using ciuickafka::broker::admin_cli::kafka_murmur2;

TEST_CASE("admin produce: murmur2 partitioning matches Kafka's clients") {
  auto part = [](std::string_view key, uint32_t n) { return (kafka_murmur2(key) & 0x7fffffff) % n; };
  CHECK(part("k1", 5) == 2);
  CHECK(part("k2", 5) == 3);
  CHECK(part("abc", 5) == 2);
  CHECK(part("hello-world-key", 5) == 0);
  // Every tail length (len % 4 = 0..3) goes through the same mixing.
  CHECK(kafka_murmur2("") != kafka_murmur2("a"));
  CHECK(kafka_murmur2("abcd") != kafka_murmur2("abcde"));
}
