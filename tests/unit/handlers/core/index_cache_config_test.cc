// tests/unit/handlers/core/index_cache_config_test.cc: the broker applies
// ciuic.log.index.cache.bytes to the process's IndexCache
// (storage/index_cache.h) before its logs open, and exports the cache's
// figures on /metrics.
#include <catch2/catch.hpp>

#include <string>

#include "storage/index_cache.h"
#include "tests/unit/handlers/broker_fixture.h"

using ciuickafka::broker::test::BrokerFixture;
using ciuickafka::storage::IndexCache;

TEST_CASE("ciuic.log.index.cache.bytes sets the index budget at broker start and is exported") {
  IndexCache& cache = IndexCache::process_default();
  const size_t before = cache.capacity();
  {
    BrokerFixture f({"ciuic.log.index.cache.bytes=123456"});
    CHECK(cache.capacity() == 123456);
    const std::string text = f.broker().metrics_registry().text();
    CHECK(text.find("\nciuic_log_index_cache_capacity_bytes 123456\n") != std::string::npos);
    CHECK(text.find("\nciuic_log_index_cache_bytes ") != std::string::npos);
    CHECK(text.find("\nciuic_log_index_cache_evictions_total ") != std::string::npos);
    CHECK(text.find("\nciuic_log_index_cache_rebuilds_total ") != std::string::npos);
  }
  {
    BrokerFixture f;  // the default
    CHECK(cache.capacity() == IndexCache::kDefaultCapacityBytes);
  }
  cache.set_capacity(before);
}
