// broker/config/docs.cc: --help and server.properties from the registry.
#include "broker/config/docs.h"

#include <string_view>
#include <vector>

#include "broker/config/registry.h"

namespace ciuickafka::broker::config {
namespace {

constexpr size_t kWidth = 80;

// Greedy word wrap; every line starts with `prefix`.
std::string wrap(std::string_view text, std::string_view prefix) {
  std::string out, line(prefix);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view word = text.substr(pos, end - pos);
    pos = end + 1;
    if (word.empty()) continue;
    if (line.size() > prefix.size() && line.size() + 1 + word.size() > kWidth) {
      out += line + "\n";
      line = prefix;
    }
    if (line.size() > prefix.size()) line += ' ';
    line += word;
  }
  if (line.size() > prefix.size()) out += line + "\n";
  return out;
}

std::string default_text(const KeyDef& k) {
  if (!k.default_value) return "none";
  if (k.default_value->empty()) return "empty";
  return std::string(*k.default_value);
}

// "Type: int. Valid: ... Topic-level: ... Synonyms: ..." for one key.
std::string facts(const KeyDef& k, bool with_default) {
  std::string s = "Type: " + std::string(to_string(k.type)) + ".";
  if (with_default) s += " Default: " + default_text(k) + ".";
  if (k.type != ConfigType::kPassword && k.type != ConfigType::kClass) s += " Valid: " + k.expected() + ".";
  if (!k.topic_name.empty()) s += " Topic-level: " + std::string(k.topic_name) + ".";
  auto group = synonym_keys(k.name);
  if (group.size() > 1) {
    s += " Synonyms, first set wins:";
    for (size_t i = 0; i < group.size(); ++i) {
      s += i ? ", " : " ";
      s += group[i]->name;
    }
    s += ".";
  }
  if (!k.ignored_because.empty()) s += " Accepted but ignored: " + std::string(k.ignored_because) + ".";
  return s;
}

}  // namespace

std::string help_text() {
  std::string s =
      "Usage: ciuickafka [--config FILE | FILE] [--override key=value ...]\n"
      "       ciuickafka --help | --version\n"
      "       ciuickafka admin COMMAND ...   (admin client; `ciuickafka admin --help`)\n"
      "\n"
      "A single-node broker that speaks the Apache Kafka protocol.\n"
      "\n"
      "Options:\n"
      "  --config FILE         read configuration from a Java properties file\n"
      "  --override key=value  set one key; repeatable; wins over the file\n"
      "  --help                print this text and exit\n"
      "  --version             print the version and exit\n"
      "\n"
      "Configuration sources, highest first: the environment (KAFKA_FOO_BAR sets\n"
      "foo.bar, __ stands for _ and ___ for -; KAFKA_CFG_FOO_BAR too; CLUSTER_ID sets\n"
      "cluster.id), --override, the file, the defaults below.\n";
  bool first = true;
  Section section{};
  for (const KeyDef& k : all_keys()) {
    if (first || k.section != section) {
      s += '\n';
      s += section_title(k.section);
      s += ":\n";
      section = k.section;
      first = false;
    }
    s += "  ";
    s += k.name;
    s += " (default " + default_text(k) + ")\n";
    s += wrap(std::string(k.doc) + ' ' + facts(k, false), "      ");
  }
  return s;
}

std::string example_server_properties() {
  std::string s;
  s += wrap("CiuicKafka example configuration: every key the broker knows, commented out at its default. "
            "Uncomment a line to change it. Names, formats and units are Apache Kafka's.",
            "# ");
  s += "#\n";
  s += wrap("Sources, highest first: the environment (KAFKA_FOO_BAR sets foo.bar; __ stands for _ and ___ "
            "for -; Bitnami's KAFKA_CFG_ prefix too), --override key=value, this file, the defaults.",
            "# ");
  s += "#\n";
  s += wrap("Generated from broker/config/keys.cc by example_server_properties(); do not edit by hand "
            "(a unit test checks this file matches; see broker/README.md).",
            "# ");
  bool first = true;
  Section section{};
  for (const KeyDef& k : all_keys()) {
    if (first || k.section != section) {
      std::string_view title = section_title(k.section);
      s += "\n### ";
      s += title;
      s += ' ';
      s.append(title.size() + 2 < 70 ? 70 - title.size() - 2 : 3, '#');
      s += '\n';
      section = k.section;
      first = false;
    }
    s += '\n';
    s += wrap(std::string(k.doc) + ' ' + facts(k, true), "# ");
    s += '#';
    s += k.name;
    s += '=';
    s += k.default_value.value_or("");
    s += '\n';
  }
  return s;
}

}  // namespace ciuickafka::broker::config
