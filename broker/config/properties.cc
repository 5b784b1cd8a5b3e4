// broker/config/properties.cc: java.util.Properties.load, as a pure function.
#include "broker/config/properties.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "protocol/wire/utf8.h"

namespace ciuickafka::broker::config {
namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\f'; }
bool is_eol(char c) { return c == '\n' || c == '\r'; }


std::optional<uint32_t> hex4(std::string_view s, size_t at) {
  if (at + 4 > s.size()) return std::nullopt;
  uint32_t v = 0;
  for (size_t i = at; i < at + 4; ++i) {
    char c = s[i];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= static_cast<uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f') v |= static_cast<uint32_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= static_cast<uint32_t>(c - 'A' + 10);
    else return std::nullopt;
  }
  return v;
}

// Java's loadConvert: resolves escapes. nullopt on a malformed \uXXXX.
std::optional<std::string> unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c != '\\') {
      out += c;
      continue;
    }
    if (++i == s.size()) break;  // a lone backslash at the end stands for nothing
    c = s[i];
    switch (c) {
      case 't': out += '\t'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 'f': out += '\f'; break;
      case 'u': {
        auto cp = hex4(s, i + 1);
        if (!cp) return std::nullopt;
        i += 4;
        // A surrogate pair written as two escapes is one code point.
        if (*cp >= 0xD800 && *cp < 0xDC00 && s.substr(i + 1, 2) == "\\u") {
          auto lo = hex4(s, i + 3);
          if (lo && *lo >= 0xDC00 && *lo < 0xE000) {
            protocol::append_utf8(out, 0x10000 + ((*cp - 0xD800) << 10) + (*lo - 0xDC00));
            i += 6;
            break;
          }
        }
        protocol::append_utf8(out, (*cp >= 0xD800 && *cp < 0xE000) ? 0xFFFD : *cp);
        break;
      }
      default: out += c; break;
    }
  }
  return out;
}

}  // namespace

Result<std::vector<Property>> parse_properties(std::string_view text, std::string_view origin) {
  std::vector<Property> out;
  size_t pos = 0;
  int line_no = 1;
  const size_t n = text.size();
  // At a line terminator: steps over \n, \r or \r\n.
  auto consume_eol = [&] {
    if (text[pos++] == '\r' && pos < n && text[pos] == '\n') ++pos;
    ++line_no;
  };
  while (pos < n) {
    while (pos < n && is_ws(text[pos])) ++pos;
    if (pos >= n) break;
    if (is_eol(text[pos])) {
      consume_eol();
      continue;
    }
    if (text[pos] == '#' || text[pos] == '!') {
      while (pos < n && !is_eol(text[pos])) ++pos;
      if (pos < n) consume_eol();
      continue;
    }
    // One logical line, joining continuations.
    const int start_line = line_no;
    std::string line;
    while (true) {
      size_t begin = pos;
      while (pos < n && !is_eol(text[pos])) ++pos;
      std::string_view seg = text.substr(begin, pos - begin);
      size_t backslashes = 0;
      while (backslashes < seg.size() && seg[seg.size() - 1 - backslashes] == '\\') ++backslashes;
      bool continues = backslashes % 2 == 1;
      if (continues) seg.remove_suffix(1);
      line += seg;
      if (pos < n) consume_eol();
      if (!continues || pos >= n) break;
      while (pos < n && is_ws(text[pos])) ++pos;
    }
    // Split the key from the value.
    size_t key_len = 0, value_start = line.size();
    bool has_sep = false, escaped = false;
    for (; key_len < line.size(); ++key_len) {
      char c = line[key_len];
      if ((c == '=' || c == ':') && !escaped) {
        value_start = key_len + 1;
        has_sep = true;
        break;
      }
      if (is_ws(c) && !escaped) {
        value_start = key_len + 1;
        break;
      }
      escaped = c == '\\' ? !escaped : false;
    }
    while (value_start < line.size()) {
      char c = line[value_start];
      if (!is_ws(c)) {
        if (has_sep || (c != '=' && c != ':')) break;
        has_sep = true;
      }
      ++value_start;
    }
    auto key = unescape(std::string_view(line).substr(0, key_len));
    auto value = unescape(std::string_view(line).substr(value_start));
    if (!key || !value)
      return ConfigError{std::string(origin) + ":" + std::to_string(start_line) + ": malformed \\uXXXX escape"};
    out.push_back(Property{std::move(*key), std::move(*value), start_line});
  }
  return out;
}

Result<std::vector<Property>> read_properties_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ConfigError{"cannot read config file " + path + ": " + std::strerror(errno)};
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return ConfigError{"cannot read config file " + path + ": " + std::strerror(errno)};
  return parse_properties(text.str(), path);
}

}  // namespace ciuickafka::broker::config
