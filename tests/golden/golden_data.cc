// tests/golden/golden_data.cc: see golden_data.h.
#include "tests/golden/golden_data.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>
#include <stdexcept>

namespace ciuickafka::golden {

namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "02_Produce_v7.hex" -> 7.
int16_t version_from_name(const std::string& name) {
  auto v = name.rfind("_v");
  auto dot = name.rfind(".hex");
  if (v == std::string::npos || dot == std::string::npos || dot <= v + 2)
    throw std::runtime_error("bad golden file name " + name);
  return static_cast<int16_t>(std::stoi(name.substr(v + 2, dot - v - 2)));
}

// "record <key> <value> [<hkey>=<hvalue> ...]" and "<word> <value>" lines.
Expectation parse_expect(const std::string& text, const std::string& where) {
  Expectation e;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string word;
    words >> word;
    if (word == "record") {
      ExpectedRecord r;
      if (!(words >> r.key >> r.value)) throw std::runtime_error(where + ": bad record line");
      std::string h;
      while (words >> h) {
        auto eq = h.find('=');
        if (eq == std::string::npos) throw std::runtime_error(where + ": bad header " + h);
        r.headers.emplace_back(h.substr(0, eq), h.substr(eq + 1));
      }
      e.records.push_back(std::move(r));
    } else if (word == "client") {
      words >> e.client;
    } else if (word == "scenario") {
      words >> e.scenario;
    } else if (word == "topic") {
      words >> e.topic;
    } else if (word == "codec") {
      words >> e.codec;
    } else if (word == "magic") {
      words >> e.magic;
    } else if (word == "producer_id") {
      int64_t id = 0;
      words >> id;
      e.producer_id = id;
    } else {
      throw std::runtime_error(where + ": unknown line: " + line);
    }
  }
  return e;
}

std::vector<Scenario> load() {
  const fs::path root = CK_GOLDEN_DIR;
  std::vector<Scenario> out;
  for (const auto& client : fs::directory_iterator(root)) {
    if (!client.is_directory()) continue;
    for (const auto& dir : fs::directory_iterator(client.path())) {
      if (!dir.is_directory()) continue;
      Scenario s;
      s.client = client.path().filename().string();
      s.scenario = dir.path().filename().string();
      for (const auto& f : fs::directory_iterator(dir.path())) {
        const std::string name = f.path().filename().string();
        if (name == "expect.txt") {
          s.expect = parse_expect(read_text(f.path()), f.path().string());
        } else if (f.path().extension() == ".hex") {
          Frame fr;
          fr.client = s.client;
          fr.scenario = s.scenario;
          fr.file = name;
          fr.bytes = parse_hex(read_text(f.path()));
          fr.file_version = version_from_name(name);
          s.frames.push_back(std::move(fr));
        }
      }
      std::sort(s.frames.begin(), s.frames.end(),
                [](const Frame& a, const Frame& b) { return a.file < b.file; });
      out.push_back(std::move(s));
    }
  }
  std::sort(out.begin(), out.end(), [](const Scenario& a, const Scenario& b) {
    return std::tie(a.client, a.scenario) < std::tie(b.client, b.scenario);
  });
  return out;
}

}  // namespace

int16_t Frame::api_key() const {
  return bytes.size() < 2 ? -1 : static_cast<int16_t>((bytes[0] << 8) | bytes[1]);
}

int16_t Frame::api_version() const {
  return bytes.size() < 4 ? -1 : static_cast<int16_t>((bytes[2] << 8) | bytes[3]);
}

std::vector<uint8_t> parse_hex(const std::string& text) {
  std::vector<uint8_t> out;
  int high = -1;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    int d = hex_digit(c);
    if (d < 0) throw std::runtime_error(std::string("bad hex digit '") + c + "'");
    if (high < 0) {
      high = d;
    } else {
      out.push_back(static_cast<uint8_t>(high << 4 | d));
      high = -1;
    }
  }
  if (high >= 0) throw std::runtime_error("odd number of hex digits");
  return out;
}

const std::vector<Scenario>& scenarios() {
  static const std::vector<Scenario> all = load();
  return all;
}

std::vector<const Frame*> all_frames() {
  std::vector<const Frame*> out;
  for (const auto& s : scenarios())
    for (const auto& f : s.frames) out.push_back(&f);
  return out;
}

}  // namespace ciuickafka::golden
