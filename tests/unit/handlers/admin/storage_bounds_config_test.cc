// tests/unit/handlers/admin/storage_bounds_config_test.cc: broker keys that
// bound storage are applied when the broker opens: ciuic.log.max.open.files
// sets the process's segment-file cache (storage/fd_cache.h), 0 restores
// the RLIMIT_NOFILE default.
#include <catch2/catch.hpp>

#include "storage/fd_cache.h"
#include "tests/unit/handlers/broker_fixture.h"

using ciuickafka::broker::test::BrokerFixture;
using ciuickafka::storage::FdCache;

TEST_CASE("ciuic.log.max.open.files bounds the segment files from broker start") {
  {
    BrokerFixture f({"ciuic.log.max.open.files=5"});
    CHECK(FdCache::process_default().capacity() == 5);
  }
  {
    BrokerFixture f({"ciuic.log.max.open.files=0"});
    CHECK(FdCache::process_default().capacity() == FdCache::capacity_for_limit());
  }
  {
    BrokerFixture f;  // the default is 0
    CHECK(FdCache::process_default().capacity() == FdCache::capacity_for_limit());
  }
}
