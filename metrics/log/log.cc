// metrics/log/log.cc: level and format state, line formatting (text and
// JSON, with escaping and UTF-8 repair) and the one-write sink.
#include "metrics/log/log.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace ciuickafka::metrics::log {
namespace detail {
std::atomic<int> g_threshold{static_cast<int>(Level::kInfo)};
}  // namespace detail

namespace {

std::atomic<int> g_format{static_cast<int>(Format::kText)};

std::mutex& sink_mu() {
  static std::mutex mu;
  return mu;
}
std::function<void(std::string_view)>& sink() {
  static std::function<void(std::string_view)> s;
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i] >= 'a' && a[i] <= 'z' ? static_cast<char>(a[i] - 'a' + 'A') : a[i];
    char y = b[i] >= 'a' && b[i] <= 'z' ? static_cast<char>(b[i] - 'a' + 'A') : b[i];
    if (x != y) return false;
  }
  return true;
}

// Length of the valid UTF-8 sequence starting at s[i], 0 if invalid.
size_t utf8_length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n = 0;
  uint32_t cp = 0;
  if (c >= 0xC2 && c <= 0xDF) n = 2, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, cp = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, cp = c & 0x07;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are invalid.
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}

// Text format: bare when it has no space, quote, '=' or control character.
void append_text_value(std::string& out, std::string_view v) {
  bool plain = !v.empty();
  for (char c : v)
    if (c == ' ' || c == '"' || c == '=' || static_cast<unsigned char>(c) < 0x20) plain = false;
  if (plain) {
    out += v;
  } else {
    out += json_quote(v);
  }
}

void append_timestamp(std::string& out, int64_t now_ms) {
  const std::time_t secs = static_cast<std::time_t>(now_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(now_ms % 1000));
  out += buf;
}

// Writes the whole buffer to fd 2, continuing after partial writes and EINTR.
void write_stderr(std::string_view line) {
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(2, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // nowhere left to report it
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

void emit(std::string line) {
  line.push_back('\n');
  std::lock_guard lock(sink_mu());
  if (sink()) {
    sink()(line);
  } else {
    write_stderr(line);
  }
}

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::optional<Level> parse_level(std::string_view name) {
  static constexpr std::pair<std::string_view, Level> kNames[] = {
      {"TRACE", Level::kTrace}, {"ALL", Level::kTrace},    {"DEBUG", Level::kDebug}, {"INFO", Level::kInfo},
      {"WARN", Level::kWarn},   {"WARNING", Level::kWarn}, {"ERROR", Level::kError}, {"FATAL", Level::kFatal},
      {"OFF", Level::kOff}};
  for (const auto& [n, l] : kNames)
    if (iequals(name, n)) return l;
  return std::nullopt;
}

std::string_view level_name(Level level) {
  switch (level) {
    case Level::kTrace: return "TRACE";
    case Level::kDebug: return "DEBUG";
    case Level::kInfo: return "INFO";
    case Level::kWarn: return "WARN";
    case Level::kError: return "ERROR";
    case Level::kFatal: return "FATAL";
    case Level::kOff: return "OFF";
  }
  return "INFO";
}

std::optional<Format> parse_format(std::string_view name) {
  if (iequals(name, "text")) return Format::kText;
  if (iequals(name, "json")) return Format::kJson;
  return std::nullopt;
}

void set_level(Level level) { detail::g_threshold.store(static_cast<int>(level), std::memory_order_relaxed); }
Level level() { return static_cast<Level>(detail::g_threshold.load(std::memory_order_relaxed)); }
void set_format(Format format) { g_format.store(static_cast<int>(format), std::memory_order_relaxed); }
Format format() { return static_cast<Format>(g_format.load(std::memory_order_relaxed)); }

std::string json_quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const size_t n = utf8_length(s, i);
      if (n == 0) {
        out += "\xEF\xBF\xBD";  // U+FFFD for a byte that is not UTF-8
        ++i;
      } else {
        out.append(s.substr(i, n));
        i += n;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20 || c == 0x7F) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
  out.push_back('"');
  return out;
}

std::string format_line(Format format, Level level, std::string_view logger, std::string_view msg,
                        std::initializer_list<Field> fields, int64_t now_ms) {
  std::string out;
  out.reserve(64 + msg.size());
  if (format == Format::kJson) {
    out += "{\"ts\":\"";
    append_timestamp(out, now_ms);
    out += "\",\"level\":\"";
    out += level_name(level);
    out += "\",\"logger\":";
    out += json_quote(logger);
    out += ",\"msg\":";
    out += json_quote(msg);
    for (const Field& f : fields) {
      // The fixed members keep their meaning: a field named like one is prefixed.
      const bool clash = f.key == "ts" || f.key == "level" || f.key == "logger" || f.key == "msg";
      out.push_back(',');
      out += json_quote(clash ? "field." + std::string(f.key) : std::string(f.key));
      out.push_back(':');
      out += f.bare ? f.value : json_quote(f.value);
    }
    out.push_back('}');
    return out;
  }
  out += "[ciuickafka] ";
  out += level_name(level);
  out.push_back(' ');
  // A message is one line: embedded line breaks would split it.
  for (char c : msg) out.push_back(c == '\n' || c == '\r' ? ' ' : c);
  for (const Field& f : fields) {
    out.push_back(' ');
    out += f.key;
    out.push_back('=');
    append_text_value(out, f.value);
  }
  return out;
}

void write(Level level, std::string_view logger, std::string_view msg, std::initializer_list<Field> fields) {
  if (!enabled(level)) return;
  emit(format_line(format(), level, logger, msg, fields, wall_ms()));
}

void writef(Level level, std::string_view logger, const char* fmt, ...) {
  if (!enabled(level)) return;
  char stack[512];
  va_list ap;
  va_start(ap, fmt);
  va_list copy;
  va_copy(copy, ap);
  const int n = std::vsnprintf(stack, sizeof stack, fmt, ap);
  va_end(ap);
  std::string msg;
  if (n < 0) {
    msg = fmt;
  } else if (static_cast<size_t>(n) < sizeof stack) {
    msg.assign(stack, static_cast<size_t>(n));
  } else {
    msg.resize(static_cast<size_t>(n) + 1);
    std::vsnprintf(msg.data(), msg.size(), fmt, copy);
    msg.resize(static_cast<size_t>(n));
  }
  va_end(copy);
  emit(format_line(format(), level, logger, msg, {}, wall_ms()));
}

void set_sink(std::function<void(std::string_view line)> s) {
  std::lock_guard lock(sink_mu());
  sink() = std::move(s);
}

}  // namespace ciuickafka::metrics::log
