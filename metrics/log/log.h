// metrics/log/log.h: the process's operator log (stderr), used by every layer.
//
// log4j-style levels (TRACE < DEBUG < INFO < WARN < ERROR < FATAL; OFF
// silences everything) and two formats:
//   text (default):  [ciuickafka] INFO <message> key=value key="two words"
//   json:            {"ts":"2026-12-01T18:40:00.123Z","level":"INFO",
//                     "logger":"broker","msg":"<message>","key":"value"}
// one object per line, every string escaped (RFC 8259: quotes, backslash,
// control characters as \uXXXX; invalid UTF-8 bytes become U+FFFD), so each
// line parses on its own. The logger names the component ("broker",
// "storage", "controller", ...); in text it is left out (the message reads
// on its own, as the lines always have).
//
// Guarantees: one line is one write(2) of a fully built buffer (lines of
// concurrent threads never interleave; a partial write is continued), and a
// disabled level costs one relaxed atomic load: CK_LOG_* evaluate their
// arguments only when the level is enabled. Levels and the format are set
// once at start-up (main.cc, from log.level / ciuic.log.format) and may be
// changed at any time.
//
// This module knows nobody: storage/, replication/ and broker/ all link it
// (ciuickafka_log), and it links nothing of ours.
//
// Thread-safety: every function may be called from any thread.
#pragma once

#include <atomic>
#include <concepts>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace ciuickafka::metrics::log {

enum class Level : int { kTrace = 0, kDebug, kInfo, kWarn, kError, kFatal, kOff };
enum class Format { kText, kJson };

// Case-insensitive: TRACE DEBUG INFO WARN (also WARNING) ERROR FATAL OFF,
// and ALL (= TRACE). nullopt for anything else.
std::optional<Level> parse_level(std::string_view name);
// "TRACE" ... "OFF".
std::string_view level_name(Level level);
// "text" or "json" (case-insensitive).
std::optional<Format> parse_format(std::string_view name);

namespace detail {
extern std::atomic<int> g_threshold;
}  // namespace detail

void set_level(Level level);
Level level();
void set_format(Format format);
Format format();

// True when lines at `level` are written. OFF is never "enabled".
inline bool enabled(Level level) {
  return level != Level::kOff && static_cast<int>(level) >= detail::g_threshold.load(std::memory_order_relaxed);
}

// One structured field: a key and a value kept as text; numbers and
// booleans are written unquoted in JSON.
struct Field {
  Field(std::string_view k, std::string_view v) : key(k), value(v) {}
  Field(std::string_view k, const std::string& v) : key(k), value(v) {}
  Field(std::string_view k, const char* v) : key(k), value(v ? v : "") {}
  Field(std::string_view k, bool v) : key(k), value(v ? "true" : "false"), bare(true) {}
  template <std::integral T>
    requires(!std::same_as<T, bool> && !std::same_as<T, char>)
  Field(std::string_view k, T v) : key(k), value(std::to_string(v)), bare(true) {}
  std::string_view key;
  std::string value;
  bool bare = false;  // JSON: written without quotes
};

// Writes one line (if `level` is enabled). `fields` follow the message.
void write(Level level, std::string_view logger, std::string_view msg, std::initializer_list<Field> fields = {});
// printf-style message, no fields.
void writef(Level level, std::string_view logger, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

// The line write() would produce, without the trailing newline (tests; the
// JSON timestamp comes from `now_ms`, milliseconds since the epoch).
std::string format_line(Format format, Level level, std::string_view logger, std::string_view msg,
                        std::initializer_list<Field> fields, int64_t now_ms);
// `s` as a JSON string literal, quotes included.
std::string json_quote(std::string_view s);

// Where lines go; default (an empty function) writes to stderr (fd 2).
// Tests capture lines with it. The sink is called with the full line,
// newline included, under the log's mutex.
void set_sink(std::function<void(std::string_view line)> sink);

}  // namespace ciuickafka::metrics::log

// The cheap forms: the arguments are evaluated only when the level is on.
#define CK_LOG(level, logger, ...)                                                    \
  do {                                                                                \
    if (::ciuickafka::metrics::log::enabled(level))                                   \
      ::ciuickafka::metrics::log::writef(level, logger, __VA_ARGS__);                 \
  } while (0)
#define CK_LOG_TRACE(logger, ...) CK_LOG(::ciuickafka::metrics::log::Level::kTrace, logger, __VA_ARGS__)
#define CK_LOG_DEBUG(logger, ...) CK_LOG(::ciuickafka::metrics::log::Level::kDebug, logger, __VA_ARGS__)
#define CK_LOG_INFO(logger, ...) CK_LOG(::ciuickafka::metrics::log::Level::kInfo, logger, __VA_ARGS__)
#define CK_LOG_WARN(logger, ...) CK_LOG(::ciuickafka::metrics::log::Level::kWarn, logger, __VA_ARGS__)
#define CK_LOG_ERROR(logger, ...) CK_LOG(::ciuickafka::metrics::log::Level::kError, logger, __VA_ARGS__)
#define CK_LOG_FATAL(logger, ...) CK_LOG(::ciuickafka::metrics::log::Level::kFatal, logger, __VA_ARGS__)
// With structured fields: CK_LOG_FIELDS(kWarn, "produce", msg, {{"k", v}, ...}).
#define CK_LOG_FIELDS(level, logger, msg, ...)                                        \
  do {                                                                                \
    if (::ciuickafka::metrics::log::enabled(level))                                   \
      ::ciuickafka::metrics::log::write(level, logger, msg, __VA_ARGS__);             \
  } while (0)
