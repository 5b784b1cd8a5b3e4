// storage/checkpoint.cc: reading and writing Kafka's checkpoint files.
#include "storage/checkpoint.h"

#include <charconv>
#include <set>

namespace ciuickafka::storage {

namespace {

// Walks a text file line by line, numbering lines from 1. A final line
// without '\n' counts; a trailing '\r' (CRLF files) is dropped.
class Lines {
 public:
  Lines(std::string_view text, std::string_view file) : text_(text), file_(file) {}

  bool next(std::string_view* line) {
    if (pos_ >= text_.size()) return false;
    auto nl = text_.find('\n', pos_);
    if (nl == std::string_view::npos) nl = text_.size();
    *line = text_.substr(pos_, nl - pos_);
    if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
    pos_ = nl + 1;
    ++line_no_;
    return true;
  }
  Status error(const std::string& what) const {
    return Status::corruption(std::string(file_) + ":" + std::to_string(line_no_) + ": " + what);
  }
  Status eof_error(const std::string& what) const {
    return Status::corruption(std::string(file_) + ":" + std::to_string(line_no_ + 1) + ": " + what);
  }

 private:
  std::string_view text_;
  std::string_view file_;
  size_t pos_ = 0;
  int line_no_ = 0;
};

std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

template <class Int>
bool parse_int(std::string_view s, Int* out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

std::string quote(std::string_view s) {
  constexpr size_t kMax = 60;
  std::string q = "'";
  q += s.size() > kMax ? std::string(s.substr(0, kMax)) + "..." : std::string(s);
  q += "'";
  return q;
}

// Reads the "0" and "<n>" header lines; returns n.
Result<size_t> parse_header(Lines& lines) {
  std::string_view line;
  if (!lines.next(&line)) return lines.eof_error("empty file, expected version line '0'");
  int version;
  if (!parse_int(line, &version)) return lines.error("expected version number, got " + quote(line));
  if (version != 0) return lines.error("unsupported checkpoint version " + std::to_string(version));
  if (!lines.next(&line)) return lines.eof_error("file ends before the entry count");
  int64_t count;
  if (!parse_int(line, &count) || count < 0)
    return lines.error("expected a non-negative entry count, got " + quote(line));
  return static_cast<size_t>(count);
}

// After the last entry only end of file is allowed.
Status expect_end(Lines& lines, size_t count) {
  std::string_view line;
  if (lines.next(&line))
    return lines.error("expected end of file after " + std::to_string(count) + " entries, got " + quote(line));
  return Status::ok();
}

Result<std::string> read_text(io::FileSystem& fs, const std::string& path) {
  auto bytes = io::read_file(fs, path);
  if (!bytes) return bytes.status();
  return std::string(bytes->begin(), bytes->end());
}

Status write_text(io::FileSystem& fs, const std::string& path, const std::string& text) {
  return io::write_file_atomically(
      fs, path, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

}  // namespace

// --- offset checkpoints ---

std::string format_offset_checkpoint(std::span<const PartitionOffset> entries) {
  std::string out = "0\n" + std::to_string(entries.size()) + "\n";
  for (const auto& e : entries) {
    out += e.tp.topic;
    out += ' ';
    out += std::to_string(e.tp.partition);
    out += ' ';
    out += std::to_string(e.offset);
    out += '\n';
  }
  return out;
}

Result<std::vector<PartitionOffset>> parse_offset_checkpoint(std::string_view text, std::string_view file_name) {
  Lines lines(text, file_name);
  auto count = parse_header(lines);
  if (!count) return count.status();
  std::vector<PartitionOffset> out;
  std::set<TopicPartition> seen;
  std::string_view line;
  for (size_t i = 0; i < *count; ++i) {
    if (!lines.next(&line))
      return lines.eof_error("expected " + std::to_string(*count) + " entries, found " + std::to_string(i));
    auto f = fields(line);
    if (f.size() != 3) return lines.error("expected '<topic> <partition> <offset>', got " + quote(line));
    PartitionOffset e;
    if (!is_valid_topic_name(f[0])) return lines.error("invalid topic name " + quote(f[0]));
    e.tp.topic = std::string(f[0]);
    if (!parse_int(f[1], &e.tp.partition) || e.tp.partition < 0)
      return lines.error("invalid partition " + quote(f[1]));
    if (!parse_int(f[2], &e.offset) || e.offset < 0) return lines.error("invalid offset " + quote(f[2]));
    if (!seen.insert(e.tp).second)
      return lines.error("duplicate entry for " + e.tp.topic + "-" + std::to_string(e.tp.partition));
    out.push_back(std::move(e));
  }
  CK_RETURN_IF_ERROR(expect_end(lines, *count));
  return out;
}

Status write_offset_checkpoint(io::FileSystem& fs, const std::string& path,
                               std::span<const PartitionOffset> entries) {
  std::set<TopicPartition> seen;
  for (const auto& e : entries) {
    if (!is_valid_topic_name(e.tp.topic) || e.tp.partition < 0 || e.offset < 0 || !seen.insert(e.tp).second)
      return Status::invalid_argument(path + ": refusing to write a bad entry for " + e.tp.topic + "-" +
                                      std::to_string(e.tp.partition) + " offset " + std::to_string(e.offset));
  }
  return write_text(fs, path, format_offset_checkpoint(entries));
}

Result<std::vector<PartitionOffset>> read_offset_checkpoint(io::FileSystem& fs, const std::string& path) {
  auto text = read_text(fs, path);
  if (!text) return text.status();
  return parse_offset_checkpoint(*text, path);
}

// --- leader epoch checkpoint ---

std::string format_leader_epoch_checkpoint(std::span<const EpochEntry> entries) {
  std::string out = "0\n" + std::to_string(entries.size()) + "\n";
  for (const auto& e : entries) {
    out += std::to_string(e.epoch);
    out += ' ';
    out += std::to_string(e.start_offset);
    out += '\n';
  }
  return out;
}

namespace {
// Epochs strictly increase, start offsets never decrease.
std::string epoch_order_problem(const EpochEntry& prev, const EpochEntry& e) {
  if (e.epoch <= prev.epoch)
    return "epoch " + std::to_string(e.epoch) + " is not above the previous epoch " + std::to_string(prev.epoch);
  if (e.start_offset < prev.start_offset)
    return "start offset " + std::to_string(e.start_offset) + " is below the previous start offset " +
           std::to_string(prev.start_offset);
  return "";
}
}  // namespace

Result<std::vector<EpochEntry>> parse_leader_epoch_checkpoint(std::string_view text, std::string_view file_name) {
  Lines lines(text, file_name);
  auto count = parse_header(lines);
  if (!count) return count.status();
  std::vector<EpochEntry> out;
  std::string_view line;
  for (size_t i = 0; i < *count; ++i) {
    if (!lines.next(&line))
      return lines.eof_error("expected " + std::to_string(*count) + " entries, found " + std::to_string(i));
    auto f = fields(line);
    if (f.size() != 2) return lines.error("expected '<epoch> <startOffset>', got " + quote(line));
    EpochEntry e;
    if (!parse_int(f[0], &e.epoch) || e.epoch < 0) return lines.error("invalid epoch " + quote(f[0]));
    if (!parse_int(f[1], &e.start_offset) || e.start_offset < 0)
      return lines.error("invalid start offset " + quote(f[1]));
    if (!out.empty()) {
      auto problem = epoch_order_problem(out.back(), e);
      if (!problem.empty()) return lines.error(problem);
    }
    out.push_back(e);
  }
  CK_RETURN_IF_ERROR(expect_end(lines, *count));
  return out;
}

Status write_leader_epoch_checkpoint(io::FileSystem& fs, const std::string& path,
                                     std::span<const EpochEntry> entries) {
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    std::string problem;
    if (e.epoch < 0 || e.start_offset < 0) problem = "negative epoch or start offset";
    if (problem.empty() && i > 0) problem = epoch_order_problem(entries[i - 1], e);
    if (!problem.empty())
      return Status::invalid_argument(path + ": refusing to write entry " + std::to_string(i) + ": " + problem);
  }
  return write_text(fs, path, format_leader_epoch_checkpoint(entries));
}

Result<std::vector<EpochEntry>> read_leader_epoch_checkpoint(io::FileSystem& fs, const std::string& path) {
  auto text = read_text(fs, path);
  if (!text) return text.status();
  return parse_leader_epoch_checkpoint(*text, path);
}

// --- partition.metadata ---

namespace {

constexpr char kBase64Url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int base64url_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

// "key: value" (Kafka splits on ':' and optional whitespace).
bool parse_key_value(std::string_view line, std::string_view key, std::string_view* value) {
  if (!line.starts_with(key) || line.size() <= key.size() || line[key.size()] != ':') return false;
  std::string_view v = line.substr(key.size() + 1);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  *value = v;
  return true;
}

}  // namespace

std::string uuid_to_string(const protocol::Uuid& id) {
  std::string out;
  const auto& b = id.bytes;
  size_t i = 0;
  for (; i + 3 <= b.size(); i += 3) {
    uint32_t v = (uint32_t{b[i]} << 16) | (uint32_t{b[i + 1]} << 8) | b[i + 2];
    out += kBase64Url[(v >> 18) & 63];
    out += kBase64Url[(v >> 12) & 63];
    out += kBase64Url[(v >> 6) & 63];
    out += kBase64Url[v & 63];
  }
  // 16 = 5 x 3 + 1: one byte left, two characters, no padding.
  uint32_t v = uint32_t{b[i]} << 16;
  out += kBase64Url[(v >> 18) & 63];
  out += kBase64Url[(v >> 12) & 63];
  return out;
}

Result<protocol::Uuid> uuid_from_string(std::string_view text) {
  if (text.size() != 22) return Status::invalid_argument("topic id " + quote(text) + " is not 22 characters");
  uint8_t out[18] = {};
  size_t n = 0;
  for (size_t i = 0; i < 24; i += 4) {
    uint32_t v = 0;
    for (size_t j = 0; j < 4; ++j) {
      int d = 0;
      if (i + j < text.size()) {
        d = base64url_value(text[i + j]);
        if (d < 0) return Status::invalid_argument("topic id " + quote(text) + " is not URL-safe base64");
      }
      v = (v << 6) | static_cast<uint32_t>(d);
    }
    out[n++] = static_cast<uint8_t>(v >> 16);
    out[n++] = static_cast<uint8_t>(v >> 8);
    out[n++] = static_cast<uint8_t>(v);
  }
  // The last character carries 6 bits of which only the top 2 belong to the
  // 16th byte; non-zero low bits mean a non-canonical encoding.
  if ((base64url_value(text[21]) & 0x0f) != 0)
    return Status::invalid_argument("topic id " + quote(text) + " has trailing bits set");
  protocol::Uuid id;
  for (size_t i = 0; i < 16; ++i) id.bytes[i] = out[i];
  return id;
}

std::string format_partition_metadata(const protocol::Uuid& topic_id) {
  return "version: 0\ntopic_id: " + uuid_to_string(topic_id) + "\n";
}

Result<protocol::Uuid> parse_partition_metadata(std::string_view text, std::string_view file_name) {
  Lines lines(text, file_name);
  std::string_view line, value;
  if (!lines.next(&line)) return lines.eof_error("empty file, expected 'version: 0'");
  if (!parse_key_value(line, "version", &value)) return lines.error("expected 'version: 0', got " + quote(line));
  int version;
  if (!parse_int(value, &version)) return lines.error("invalid version " + quote(value));
  if (version != 0) return lines.error("unsupported partition.metadata version " + std::to_string(version));
  if (!lines.next(&line)) return lines.eof_error("file ends before 'topic_id: <uuid>'");
  if (!parse_key_value(line, "topic_id", &value))
    return lines.error("expected 'topic_id: <uuid>', got " + quote(line));
  auto id = uuid_from_string(value);
  if (!id) return lines.error(id.status().message());
  while (lines.next(&line))
    if (!fields(line).empty()) return lines.error("unexpected line after topic_id: " + quote(line));
  return id;
}

Status write_partition_metadata(io::FileSystem& fs, const std::string& path, const protocol::Uuid& topic_id) {
  return write_text(fs, path, format_partition_metadata(topic_id));
}

Result<protocol::Uuid> read_partition_metadata(io::FileSystem& fs, const std::string& path) {
  auto text = read_text(fs, path);
  if (!text) return text.status();
  return parse_partition_metadata(*text, path);
}

}  // namespace ciuickafka::storage
