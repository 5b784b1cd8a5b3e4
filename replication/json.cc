// replication/json.cc: see json.h.
#include "replication/json.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "protocol/wire/utf8.h"

namespace ciuickafka::replication {

const Json* Json::find(std::string_view key) const {
  const Object* o = if_object();
  if (o == nullptr) return nullptr;
  for (auto it = o->rbegin(); it != o->rend(); ++it)
    if (it->first == key) return &it->second;
  return nullptr;
}

Json& Json::add(std::string key, Json value) {
  if (Object* o = if_object()) o->emplace_back(std::move(key), std::move(value));
  return *this;
}

Json& Json::push(Json value) {
  if (Array* a = if_array()) a->push_back(std::move(value));
  return *this;
}

namespace {

class Parser {
 public:
  Parser(std::string_view text, size_t max_depth) : s_(text), max_depth_(max_depth) {}

  Result<Json> run() {
    Json v;
    if (!value(v, 0)) return Error{error_};
    skip_ws();
    if (pos_ != s_.size()) return fail("unexpected data after the value"), Error{error_};
    return v;
  }

 private:
  bool fail(const char* what) {
    if (error_.empty()) error_ = "json: " + std::string(what) + " at byte " + std::to_string(pos_);
    return false;
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return fail("invalid literal");
    pos_ += word.size();
    return true;
  }

  bool value(Json& out, size_t depth) {
    skip_ws();
    if (pos_ >= s_.size()) return fail("unexpected end of input");
    char c = s_[pos_];
    switch (c) {
      case 'n': out = Json::null(); return literal("null");
      case 't': out = Json::boolean(true); return literal("true");
      case 'f': out = Json::boolean(false); return literal("false");
      case '"': {
        std::string str;
        if (!string(str)) return false;
        out = Json::string(std::move(str));
        return true;
      }
      case '[': case '{':
        if (depth >= max_depth_) return fail("nesting too deep");
        return c == '[' ? array(out, depth + 1) : object(out, depth + 1);
      default:
        if (c == '-' || (c >= '0' && c <= '9')) return number(out);
        return fail("unexpected character");
    }
  }

  bool array(Json& out, size_t depth) {
    ++pos_;  // '['
    Json::Array items;
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      out = Json::array(std::move(items));
      return true;
    }
    for (;;) {
      Json item;
      if (!value(item, depth)) return false;
      items.push_back(std::move(item));
      skip_ws();
      if (pos_ >= s_.size()) return fail("unterminated array");
      if (s_[pos_] == ',') { ++pos_; continue; }
      if (s_[pos_] == ']') { ++pos_; break; }
      return fail("expected ',' or ']'");
    }
    out = Json::array(std::move(items));
    return true;
  }

  bool object(Json& out, size_t depth) {
    ++pos_;  // '{'
    Json::Object members;
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      out = Json::object(std::move(members));
      return true;
    }
    for (;;) {
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != '"') return fail("expected a string key");
      std::string key;
      if (!string(key)) return false;
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != ':') return fail("expected ':'");
      ++pos_;
      Json v;
      if (!value(v, depth)) return false;
      members.emplace_back(std::move(key), std::move(v));
      skip_ws();
      if (pos_ >= s_.size()) return fail("unterminated object");
      if (s_[pos_] == ',') { ++pos_; continue; }
      if (s_[pos_] == '}') { ++pos_; break; }
      return fail("expected ',' or '}'");
    }
    out = Json::object(std::move(members));
    return true;
  }

  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  bool hex4(uint32_t& out) {
    if (s_.size() - pos_ < 4) return fail("truncated \\u escape");
    out = 0;
    for (int i = 0; i < 4; ++i) {
      int h = hex(s_[pos_ + i]);
      if (h < 0) return fail("invalid \\u escape");
      out = out * 16 + static_cast<uint32_t>(h);
    }
    pos_ += 4;
    return true;
  }
  static void put_utf8(std::string& out, uint32_t cp) { protocol::append_utf8(out, cp); }
  // One raw UTF-8 sequence starting at pos_ (first byte >= 0x80), validated.
  bool utf8(std::string& out) {
    auto b = [&](size_t i) { return static_cast<uint8_t>(s_[pos_ + i]); };
    uint8_t lead = b(0);
    size_t len;
    uint32_t cp, min;
    if (lead >= 0xC2 && lead <= 0xDF) { len = 2; cp = lead & 0x1F; min = 0x80; }
    else if (lead >= 0xE0 && lead <= 0xEF) { len = 3; cp = lead & 0x0F; min = 0x800; }
    else if (lead >= 0xF0 && lead <= 0xF4) { len = 4; cp = lead & 0x07; min = 0x10000; }
    else return fail("invalid UTF-8");
    if (s_.size() - pos_ < len) return fail("truncated UTF-8");
    for (size_t i = 1; i < len; ++i) {
      if ((b(i) & 0xC0) != 0x80) return fail("invalid UTF-8");
      cp = (cp << 6) | (b(i) & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return fail("invalid UTF-8");
    out.append(s_.substr(pos_, len));
    pos_ += len;
    return true;
  }

  bool string(std::string& out) {
    ++pos_;  // opening quote
    for (;;) {
      if (pos_ >= s_.size()) return fail("unterminated string");
      auto c = static_cast<uint8_t>(s_[pos_]);
      if (c == '"') { ++pos_; return true; }
      if (c < 0x20) return fail("control character in string");
      if (c >= 0x80) {
        if (!utf8(out)) return false;
        continue;
      }
      if (c != '\\') { out += static_cast<char>(c); ++pos_; continue; }
      ++pos_;
      if (pos_ >= s_.size()) return fail("unterminated escape");
      char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = 0;
          if (!hex4(cp)) return false;
          if (cp >= 0xDC00 && cp <= 0xDFFF) return fail("unpaired low surrogate");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (s_.substr(pos_, 2) != "\\u") return fail("unpaired high surrogate");
            pos_ += 2;
            uint32_t lo = 0;
            if (!hex4(lo)) return false;
            if (lo < 0xDC00 || lo > 0xDFFF) return fail("invalid low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          put_utf8(out, cp);
          break;
        }
        default: --pos_; return fail("invalid escape");
      }
    }
  }

  bool number(Json& out) {
    size_t start = pos_;
    bool integral = true;
    auto digit = [&] { return pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9'; };
    if (s_[pos_] == '-') ++pos_;
    if (!digit()) return fail("invalid number");
    if (s_[pos_] == '0') {
      ++pos_;
      if (digit()) return fail("leading zero in number");
    } else {
      while (digit()) ++pos_;
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      integral = false;
      ++pos_;
      if (!digit()) return fail("invalid number");
      while (digit()) ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      integral = false;
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (!digit()) return fail("invalid number");
      while (digit()) ++pos_;
    }
    const char* first = s_.data() + start;
    const char* last = s_.data() + pos_;
    if (integral) {
      int64_t i = 0;
      auto r = std::from_chars(first, last, i);
      if (r.ec == std::errc() && r.ptr == last) {
        out = Json::integer(i);
        return true;
      }
    }
    // A fraction, an exponent or an integer past int64: a double.
    std::string copy(first, last);
    char* end = nullptr;
    double d = std::strtod(copy.c_str(), &end);
    if (end != copy.c_str() + copy.size()) return fail("invalid number");
    out = Json::number(d);
    return true;
  }

  std::string_view s_;
  size_t max_depth_;
  size_t pos_ = 0;
  std::string error_;
};

void write(std::string& out, const Json& v) {
  switch (v.kind()) {
    case Json::Kind::kNull: out += "null"; break;
    case Json::Kind::kBool: out += *v.if_bool() ? "true" : "false"; break;
    case Json::Kind::kInt: out += std::to_string(*v.if_int()); break;
    case Json::Kind::kDouble: {
      double d = *v.if_double();
      if (!std::isfinite(d)) { out += "null"; break; }
      char buf[32];
      auto r = std::to_chars(buf, buf + sizeof buf, d);
      out.append(buf, r.ptr);
      break;
    }
    case Json::Kind::kString: append_json_string(out, *v.if_string()); break;
    case Json::Kind::kArray: {
      out += '[';
      bool first = true;
      for (const Json& e : *v.if_array()) {
        if (!first) out += ',';
        first = false;
        write(out, e);
      }
      out += ']';
      break;
    }
    case Json::Kind::kObject: {
      out += '{';
      bool first = true;
      for (const auto& [k, e] : *v.if_object()) {
        if (!first) out += ',';
        first = false;
        append_json_string(out, k);
        out += ':';
        write(out, e);
      }
      out += '}';
      break;
    }
  }
}

}  // namespace

Result<Json> parse_json(std::string_view text, size_t max_depth) { return Parser(text, max_depth).run(); }

std::string to_json(const Json& value) {
  std::string out;
  write(out, value);
  return out;
}

void append_json_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  out += '"';
  for (char ch : s) {
    auto c = static_cast<uint8_t>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xF];
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

}  // namespace ciuickafka::replication
