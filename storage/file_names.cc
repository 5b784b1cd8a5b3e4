// storage/file_names.cc: building and parsing segment and partition names.
#include "storage/file_names.h"

#include <charconv>
#include <cstdio>

namespace ciuickafka::storage {

namespace {

constexpr std::pair<SegmentFileKind, std::string_view> kKinds[] = {
    {SegmentFileKind::kLog, ".log"},
    {SegmentFileKind::kIndex, ".index"},
    {SegmentFileKind::kTimeIndex, ".timeindex"},
    {SegmentFileKind::kTxnIndex, ".txnindex"},
    {SegmentFileKind::kProducerSnapshot, ".snapshot"},
};
constexpr std::pair<FileSuffix, std::string_view> kSuffixes[] = {
    {FileSuffix::kDeleted, ".deleted"},
    {FileSuffix::kCleaned, ".cleaned"},
    {FileSuffix::kSwap, ".swap"},
};

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

template <class Int>
std::optional<Int> parse_digits(std::string_view s) {
  if (!all_digits(s)) return std::nullopt;
  Int v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::string_view extension(SegmentFileKind kind) {
  for (const auto& [k, ext] : kKinds)
    if (k == kind) return ext;
  return "";
}

std::string_view suffix_text(FileSuffix s) {
  for (const auto& [k, text] : kSuffixes)
    if (k == s) return text;
  return "";
}

std::string segment_file_name(int64_t base_offset, SegmentFileKind kind, FileSuffix suffix) {
  char digits[32];
  std::snprintf(digits, sizeof digits, "%020lld", static_cast<long long>(base_offset));
  std::string name = digits;
  name += extension(kind);
  name += suffix_text(suffix);
  return name;
}

std::optional<SegmentFileName> parse_segment_file_name(std::string_view name) {
  SegmentFileName out;
  for (const auto& [s, text] : kSuffixes) {
    if (name.size() > text.size() && name.ends_with(text)) {
      out.suffix = s;
      name.remove_suffix(text.size());
      break;
    }
  }
  const auto dot = name.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const std::string_view ext = name.substr(dot);
  bool known = false;
  for (const auto& [k, e] : kKinds) {
    if (ext == e) {
      out.kind = k;
      known = true;
    }
  }
  if (!known) return std::nullopt;
  auto base = parse_digits<int64_t>(name.substr(0, dot));
  if (!base) return std::nullopt;
  out.base_offset = *base;
  return out;
}

bool is_valid_topic_name(std::string_view name) {
  if (name.empty() || name.size() > 249 || name == "." || name == "..") return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string partition_dir_name(const TopicPartition& tp) {
  return tp.topic + "-" + std::to_string(tp.partition);
}

Result<TopicPartition> parse_partition_dir_name(std::string_view name) {
  const auto dash = name.rfind('-');
  if (dash == std::string_view::npos)
    return Status::invalid_argument("partition directory name '" + std::string(name) +
                                    "' is not <topic>-<partition>");
  const std::string_view topic = name.substr(0, dash);
  auto partition = parse_digits<int32_t>(name.substr(dash + 1));
  if (!partition)
    return Status::invalid_argument("partition directory name '" + std::string(name) +
                                    "' does not end in a partition number");
  if (!is_valid_topic_name(topic))
    return Status::invalid_argument("partition directory name '" + std::string(name) + "' has an invalid topic '" +
                                    std::string(topic) + "'");
  return TopicPartition{std::string(topic), *partition};
}

}  // namespace ciuickafka::storage
