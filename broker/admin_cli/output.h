// broker/admin_cli/output.h: what an admin command prints, as tables.
//
// A command builds one or more named Tables of Values; render() prints them
// as aligned text (a header line, then rows; several tables separated by a
// blank line, each under its name) or as one JSON document: a single table
// is an array of objects keyed by column name, several tables are an object
// of table name -> array. Numbers stay numbers, id lists (replicas,
// ISR) are arrays in JSON and "1,2,3" in text, and null stays null in JSON;
// text output shows null as "-". JSON strings are escaped per RFC 8259
// (control characters as \u00XX; bytes that are not valid UTF-8 are
// replaced by U+FFFD, so the document always parses).
//
// Thread-safety: values; render is a pure function.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/admin_cli/args.h"

namespace ciuickafka::broker::admin_cli {

struct Value {
  enum class Kind { kNull, kString, kInt, kBool, kIntList };
  Kind kind = Kind::kNull;
  std::string s;
  int64_t i = 0;
  bool b = false;
  std::vector<int32_t> list;

  Value() = default;
  Value(std::string v) : kind(Kind::kString), s(std::move(v)) {}           // NOLINT: implicit by design
  Value(const char* v) : kind(Kind::kString), s(v) {}                      // NOLINT
  Value(int64_t v) : kind(Kind::kInt), i(v) {}                             // NOLINT
  Value(int32_t v) : kind(Kind::kInt), i(v) {}                             // NOLINT
  static Value boolean(bool v) {
    Value x;
    x.kind = Kind::kBool;
    x.b = v;
    return x;
  }
  static Value ids(std::vector<int32_t> v) {
    Value x;
    x.kind = Kind::kIntList;
    x.list = std::move(v);
    return x;
  }
  static Value opt(const std::optional<std::string>& v) { return v ? Value(*v) : Value(); }
  std::string text() const;  // table form
};

struct Table {
  std::string name;  // section name (JSON key when there are several)
  std::vector<std::string> columns;
  std::vector<std::vector<Value>> rows;
  void add(std::vector<Value> row) { rows.push_back(std::move(row)); }
};

std::string render(const std::vector<Table>& tables, Format format);

// A JSON string literal (quotes included).
std::string json_quote(std::string_view s);

// "1,2,3" for a list of ids (table cells for replicas, ISR); "-" when empty.
std::string join_ids(const std::vector<int32_t>& ids);

}  // namespace ciuickafka::broker::admin_cli
