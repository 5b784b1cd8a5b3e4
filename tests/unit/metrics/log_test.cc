// tests/unit/metrics/log_test.cc: the operator log. Level names and
// thresholds, the text and JSON line formats (escaping of quotes, control
// characters and invalid UTF-8), one sink call per line from many threads,
// lazy argument evaluation when a level is off, and the per-key rate limiter
// with its suppressed count.
#include "metrics/log/log.h"

#include <catch2/catch.hpp>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "metrics/log/rate_limit.h"

namespace lg = ciuickafka::metrics::log;
using lg::Level;

namespace {

// Captures lines for one test and restores stderr, INFO and text after.
struct Capture {
  Capture() {
    lg::set_sink([this](std::string_view line) { lines.emplace_back(line); });
  }
  ~Capture() {
    lg::set_sink({});
    lg::set_level(Level::kInfo);
    lg::set_format(lg::Format::kText);
  }
  std::vector<std::string> lines;
};

}  // namespace

TEST_CASE("level names parse case-insensitively, as log4j spells them") {
  CHECK(lg::parse_level("TRACE") == Level::kTrace);
  CHECK(lg::parse_level("debug") == Level::kDebug);
  CHECK(lg::parse_level("Info") == Level::kInfo);
  CHECK(lg::parse_level("WARN") == Level::kWarn);
  CHECK(lg::parse_level("warning") == Level::kWarn);
  CHECK(lg::parse_level("ERROR") == Level::kError);
  CHECK(lg::parse_level("FATAL") == Level::kFatal);
  CHECK(lg::parse_level("OFF") == Level::kOff);
  CHECK(lg::parse_level("ALL") == Level::kTrace);
  CHECK_FALSE(lg::parse_level("LOUD").has_value());
  CHECK_FALSE(lg::parse_level("").has_value());
  for (Level l : {Level::kTrace, Level::kDebug, Level::kInfo, Level::kWarn, Level::kError, Level::kFatal, Level::kOff})
    CHECK(lg::parse_level(lg::level_name(l)) == l);
  CHECK(lg::parse_format("JSON") == lg::Format::kJson);
  CHECK(lg::parse_format("text") == lg::Format::kText);
  CHECK_FALSE(lg::parse_format("xml").has_value());
}

TEST_CASE("the threshold drops lower levels and OFF drops everything") {
  Capture cap;
  lg::set_level(Level::kWarn);
  CK_LOG_INFO("t", "info %d", 1);
  CK_LOG_WARN("t", "warn %d", 2);
  CK_LOG_ERROR("t", "error %d", 3);
  REQUIRE(cap.lines.size() == 2);
  CHECK(cap.lines[0] == "[ciuickafka] WARN warn 2\n");
  CHECK(cap.lines[1] == "[ciuickafka] ERROR error 3\n");
  lg::set_level(Level::kOff);
  CK_LOG_FATAL("t", "fatal");
  lg::write(Level::kFatal, "t", "fatal too");
  CHECK(cap.lines.size() == 2);
  CHECK_FALSE(lg::enabled(Level::kOff));
}

TEST_CASE("a disabled level does not evaluate its arguments") {
  Capture cap;
  lg::set_level(Level::kInfo);
  int evaluated = 0;
  auto cost = [&] { return ++evaluated; };
  CK_LOG_DEBUG("t", "value %d", cost());
  CHECK(evaluated == 0);
  CK_LOG_INFO("t", "value %d", cost());
  CHECK(evaluated == 1);
  CHECK(cap.lines.size() == 1);
}

TEST_CASE("text lines keep the [ciuickafka] LEVEL prefix and append fields") {
  const std::string line = lg::format_line(lg::Format::kText, Level::kInfo, "broker", "topic created",
                                           {{"topic", "orders"}, {"partitions", 3}, {"why", "two words"}}, 0);
  CHECK(line == "[ciuickafka] INFO topic created topic=orders partitions=3 why=\"two words\"");
  CHECK(lg::format_line(lg::Format::kText, Level::kWarn, "x", "a\nb", {}, 0) == "[ciuickafka] WARN a b");
  CHECK(lg::format_line(lg::Format::kText, Level::kInfo, "x", "m", {{"empty", ""}}, 0) ==
        "[ciuickafka] INFO m empty=\"\"");
}

TEST_CASE("JSON lines carry ts, level, logger, msg and typed fields") {
  // 2026-12-01T18:40:00.123Z
  const int64_t ms = 1796150400123;
  const std::string line = lg::format_line(lg::Format::kJson, Level::kError, "storage", "disk \"full\"",
                                           {{"bytes", int64_t{42}}, {"ok", false}, {"dir", "/d"}, {"msg", "x"}}, ms);
  CHECK(line ==
        "{\"ts\":\"2026-12-01T18:40:00.123Z\",\"level\":\"ERROR\",\"logger\":\"storage\",\"msg\":\"disk "
        "\\\"full\\\"\",\"bytes\":42,\"ok\":false,\"dir\":\"/d\",\"field.msg\":\"x\"}");
}

TEST_CASE("json_quote escapes quotes, backslashes, control characters and bad UTF-8") {
  CHECK(lg::json_quote("plain") == "\"plain\"");
  CHECK(lg::json_quote("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(lg::json_quote("t\tn\nr\r") == "\"t\\tn\\nr\\r\"");
  CHECK(lg::json_quote(std::string_view("\x01\x1f\x7f", 3)) == "\"\\u0001\\u001f\\u007f\"");
  CHECK(lg::json_quote(std::string_view("nul\0end", 7)) == "\"nul\\u0000end\"");
  CHECK(lg::json_quote("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80") == "\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\"");
  // A lone continuation byte, a truncated sequence, an overlong '/', a surrogate.
  CHECK(lg::json_quote("\x80") == "\"\xEF\xBF\xBD\"");
  CHECK(lg::json_quote("\xE2\x82") == "\"\xEF\xBF\xBD\xEF\xBF\xBD\"");
  CHECK(lg::json_quote("\xC0\xAF") == "\"\xEF\xBF\xBD\xEF\xBF\xBD\"");
  CHECK(lg::json_quote("\xED\xA0\x80") == "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");
}

TEST_CASE("the JSON format applies to every line once set") {
  Capture cap;
  lg::set_format(lg::Format::kJson);
  CK_LOG_INFO("broker", "started %s", "ok");
  REQUIRE(cap.lines.size() == 1);
  const std::string& l = cap.lines[0];
  CHECK(l.starts_with("{\"ts\":\""));
  CHECK(l.find("\"level\":\"INFO\",\"logger\":\"broker\",\"msg\":\"started ok\"}\n") != std::string::npos);
}

TEST_CASE("long messages are not cut") {
  Capture cap;
  const std::string big(5000, 'x');
  CK_LOG_INFO("t", "%s", big.c_str());
  REQUIRE(cap.lines.size() == 1);
  CHECK(cap.lines[0] == "[ciuickafka] INFO " + big + "\n");
}

TEST_CASE("lines from many threads arrive whole, one sink call each") {
  Capture cap;
  constexpr int kThreads = 8, kLines = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t] {
      for (int i = 0; i < kLines; ++i) CK_LOG_INFO("t", "thread %d line %d end", t, i);
    });
  for (auto& th : threads) th.join();
  REQUIRE(cap.lines.size() == static_cast<size_t>(kThreads * kLines));
  for (const std::string& l : cap.lines) {
    CHECK(l.starts_with("[ciuickafka] INFO thread "));
    CHECK(l.ends_with(" end\n"));
  }
}

TEST_CASE("the rate limiter passes N lines per key per interval and counts the rest") {
  using namespace std::chrono_literals;
  lg::RateLimiter rl(2, 1000ms);
  const auto t0 = lg::RateLimiter::Clock::time_point{} + 1h;
  CHECK(rl.admit("a", t0).admitted);
  CHECK(rl.admit("a", t0 + 1ms).admitted);
  CHECK_FALSE(rl.admit("a", t0 + 2ms).admitted);
  CHECK_FALSE(rl.admit("a", t0 + 3ms).admitted);
  CHECK_FALSE(rl.admit("a", t0 + 4ms).admitted);
  // Another key has its own budget.
  auto b = rl.admit("b", t0 + 5ms);
  CHECK(b.admitted);
  CHECK(b.suppressed == 0);
  // Next interval: the first line of "a" reports the three dropped.
  auto next = rl.admit("a", t0 + 1000ms);
  CHECK(next.admitted);
  CHECK(next.suppressed == 3);
  CHECK(rl.admit("a", t0 + 1001ms).suppressed == 0);
  CHECK(lg::suppressed_note(3) == " (suppressed 3 similar)");
  CHECK(lg::suppressed_note(0).empty());
}

TEST_CASE("the rate limiter's key table stays bounded") {
  using namespace std::chrono_literals;
  lg::RateLimiter rl(1, 1000ms, 4);
  const auto t0 = lg::RateLimiter::Clock::time_point{} + 1h;
  for (int i = 0; i < 4; ++i) CHECK(rl.admit("k" + std::to_string(i), t0).admitted);
  // Full and nothing expired: new keys share the overflow key.
  CHECK(rl.admit("k4", t0).admitted);
  CHECK_FALSE(rl.admit("k5", t0).admitted);
  CHECK(rl.tracked_keys() == 5);
  // Once the interval passed, old keys are forgotten to make room.
  CHECK(rl.admit("k9", t0 + 2000ms).admitted);
  CHECK(rl.tracked_keys() <= 5);
}
