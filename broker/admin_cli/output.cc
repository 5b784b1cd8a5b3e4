// broker/admin_cli/output.cc: table and JSON rendering (see output.h).
// Pure; thread-safe.
#include "broker/admin_cli/output.h"

#include <algorithm>
#include <cstdio>

namespace ciuickafka::broker::admin_cli {
namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 when it is not one.
size_t utf8_len(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  if (n == 2 && c < 0xc2) return 0;  // overlong
  return n;
}

std::string json_value(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kNull: return "null";
    case Value::Kind::kString: return json_quote(v.s);
    case Value::Kind::kInt: return std::to_string(v.i);
    case Value::Kind::kBool: return v.b ? "true" : "false";
    case Value::Kind::kIntList: {
      std::string s = "[";
      for (size_t i = 0; i < v.list.size(); ++i) s += (i ? "," : "") + std::to_string(v.list[i]);
      return s + "]";
    }
  }
  return "null";
}

std::string json_table(const Table& t) {
  std::string out = "[";
  for (size_t r = 0; r < t.rows.size(); ++r) {
    out += r ? ",\n  {" : "\n  {";
    for (size_t c = 0; c < t.columns.size(); ++c) {
      if (c) out += ", ";
      out += json_quote(t.columns[c]) + ": " + (c < t.rows[r].size() ? json_value(t.rows[r][c]) : "null");
    }
    out += "}";
  }
  out += t.rows.empty() ? "]" : "\n]";
  return out;
}

std::string text_table(const Table& t) {
  std::vector<size_t> width(t.columns.size());
  for (size_t c = 0; c < t.columns.size(); ++c) width[c] = t.columns[c].size();
  std::vector<std::vector<std::string>> cells;
  for (const auto& row : t.rows) {
    std::vector<std::string> line;
    for (size_t c = 0; c < t.columns.size(); ++c) {
      line.push_back(c < row.size() ? row[c].text() : "-");
      width[c] = std::max(width[c], line.back().size());
    }
    cells.push_back(std::move(line));
  }
  auto emit = [&](const std::vector<std::string>& line) {
    std::string s;
    for (size_t c = 0; c < line.size(); ++c) {
      if (c + 1 == line.size()) {
        s += line[c];
      } else {
        s += line[c];
        s.append(width[c] - line[c].size() + 2, ' ');
      }
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  std::string out = emit(t.columns);
  for (const auto& line : cells) out += emit(line);
  return out;
}

}  // namespace

std::string Value::text() const {
  switch (kind) {
    case Kind::kNull: return "-";
    case Kind::kString: return s;
    case Kind::kInt: return std::to_string(i);
    case Kind::kBool: return b ? "true" : "false";
    case Kind::kIntList: return join_ids(list);
  }
  return "-";
}

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      out += b;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else {
      const size_t n = utf8_len(s, i);
      if (n == 0) {
        out += "\xef\xbf\xbd";  // U+FFFD
        ++i;
        continue;
      }
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    ++i;
  }
  return out + "\"";
}

std::string join_ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s.empty() ? "-" : s;
}

std::string render(const std::vector<Table>& tables, Format format) {
  std::string out;
  if (format == Format::kJson) {
    if (tables.size() == 1) return json_table(tables[0]) + "\n";
    out = "{";
    for (size_t i = 0; i < tables.size(); ++i) {
      out += (i ? ",\n" : "\n") + json_quote(tables[i].name) + ": " + json_table(tables[i]);
    }
    return out + "\n}\n";
  }
  for (size_t i = 0; i < tables.size(); ++i) {
    if (i) out += "\n";
    if (tables.size() > 1 && !tables[i].name.empty()) out += tables[i].name + ":\n";
    out += text_table(tables[i]);
  }
  return out;
}

}  // namespace ciuickafka::broker::admin_cli
