// tests/unit/server/request_budget_test.cc: queued.max.request.bytes and
// queued.max.requests accounting: admit within the limits, park waiters
// beyond them, wake them on release, admit an oversized frame when nothing
// else is queued, keep room for small frames, count only pipelined requests.
#include <catch2/catch.hpp>

#include "broker/server/request_budget.h"

namespace ciuickafka::broker {
namespace {

TEST_CASE("RequestBudget admits up to its limit and wakes waiters on release") {
  RequestBudget b(100);
  int woken = 0;
  auto waiter = [&] { ++woken; };
  // Frames of at most a quarter of the limit may fill all of it (see below
  // for bigger ones).
  for (int i = 0; i < 4; ++i) CHECK(b.try_acquire(25, waiter));
  CHECK_FALSE(b.try_acquire(1, waiter));
  CHECK(b.waiting() == 1);
  b.release(0);  // still at the limit: nobody woken
  CHECK(woken == 0);
  b.release(25);
  CHECK(woken == 1);
  CHECK(b.waiting() == 0);
  CHECK(b.in_use() == 75);
  CHECK(b.try_acquire(25, waiter));
}

TEST_CASE("RequestBudget admits a frame larger than the limit when nothing is queued") {
  RequestBudget b(10);
  CHECK(b.try_acquire(1000, [] {}));
  CHECK_FALSE(b.try_acquire(1, [] {}));
  b.release(1000);
  CHECK(b.in_use() == 0);
}

TEST_CASE("RequestBudget with limit -1 never waits") {
  RequestBudget b(-1);
  for (int i = 0; i < 100; ++i) CHECK(b.try_acquire(1u << 30, [] {}));
  CHECK(b.waiting() == 0);
}

TEST_CASE("RequestBudget bounds counted requests - uncounted ones and bytes pass") {
  RequestBudget b(-1, 2);
  int woken = 0;
  auto waiter = [&] { ++woken; };
  CHECK(b.try_acquire(10, true, waiter));
  CHECK(b.try_acquire(10, true, waiter));
  CHECK_FALSE(b.try_acquire(10, true, waiter));  // a third pipelined request waits
  CHECK(b.try_acquire(10, false, waiter));       // a connection's only request never does
  CHECK(b.requests_in_use() == 2);
  CHECK(b.waiting() == 1);
  CHECK(b.waits() == 1);
  b.release(10, false);  // an uncounted answer frees no request slot
  CHECK(woken == 0);
  b.release(10, true);
  CHECK(woken == 1);
  CHECK(b.requests_in_use() == 1);
  CHECK(b.try_acquire(10, true, waiter));
  CHECK(b.in_use() == 20);
}

TEST_CASE("RequestBudget keeps the last eighth for frames up to a quarter of the budget") {
  RequestBudget b(800);
  auto waiter = [] {};
  CHECK(b.try_acquire(300, waiter));        // big (over 800 / 4): 300 <= 700
  CHECK(b.try_acquire(300, waiter));        // big: 600 <= 700
  CHECK_FALSE(b.try_acquire(250, waiter));  // big: 850 > 700
  CHECK(b.try_acquire(200, waiter));        // small (a quarter): the whole 800 is open to it
  CHECK(b.in_use() == 800);
  b.release(300);
  CHECK_FALSE(b.try_acquire(250, waiter));  // big: 750 > 700
  CHECK(b.try_acquire(100, waiter));        // small: 600
  CHECK(b.try_acquire(110, waiter));        // small: 710
  CHECK_FALSE(b.try_acquire(201, waiter));  // big: 911 > 700
  CHECK(b.waiting() == 2);  // the release woke the first 250, which tried again
}

}  // namespace
}  // namespace ciuickafka::broker
