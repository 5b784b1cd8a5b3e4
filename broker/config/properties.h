// broker/config/properties.h: a reader for Java .properties text.
//
// Follows java.util.Properties.load: natural lines end at \n, \r or \r\n;
// leading whitespace (space, tab, form feed) is skipped; a line whose first
// non-whitespace character is '#' or '!' is a comment; a line ending in an odd
// number of backslashes continues on the next one, whose leading whitespace is
// dropped. The key ends at the first unescaped '=', ':' or whitespace; then
// whitespace, at most one '=' or ':', and more whitespace are skipped; the
// rest of the line is the value (trailing whitespace kept, as Java does; the
// registry trims when it parses). Escapes: \t \n \r \f, \uXXXX (written out as
// UTF-8) and backslash before any other character stands for that character.
// One difference: Java reads a stream as ISO-8859-1; we pass bytes through, so
// UTF-8 files keep their text.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "broker/config/types.h"

namespace ciuickafka::broker::config {

struct Property {
  std::string key;
  std::string value;
  int line = 0;  // 1-based line where the logical line starts

  bool operator==(const Property&) const = default;
};

// Every key=value in order, duplicates included (the last one wins when
// loaded). Fails only on a malformed \uXXXX escape, naming the line.
Result<std::vector<Property>> parse_properties(std::string_view text, std::string_view origin = "properties");

// Reads `path` and parses it; the error names the path (and line).
Result<std::vector<Property>> read_properties_file(const std::string& path);

}  // namespace ciuickafka::broker::config
