// tests/unit/metrics/text_lines.h: helpers that look at a text exposition
// line by line, so tests can assert exact series lines.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace ck_metrics_test {

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

inline bool has_line(const std::string& text, const std::string& line) {
  for (const auto& l : lines_of(text)) {
    if (l == line) return true;
  }
  return false;
}

// True when some line starts with `prefix` (a series name plus labels).
inline bool has_series(const std::string& text, const std::string& prefix) {
  for (const auto& l : lines_of(text)) {
    if (l.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

}  // namespace ck_metrics_test
