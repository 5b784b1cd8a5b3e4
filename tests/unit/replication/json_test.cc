// tests/unit/replication/json_test.cc: the JSON value type behind the znode
// payloads: strict parsing (errors with byte offsets, never a crash), compact
// output as Jackson writes it, and the field decoders' error messages.
#include <catch2/catch.hpp>
#include <random>
#include <string>

#include "replication/json.h"

using namespace ciuickafka::replication;

namespace {

std::string roundtrip(std::string_view text) {
  auto v = parse_json(text);
  REQUIRE(v.ok());
  return to_json(*v);
}

std::string error_of(std::string_view text, size_t depth = kDefaultJsonMaxDepth) {
  auto v = parse_json(text, depth);
  REQUIRE_FALSE(v.ok());
  return v.error().message;
}

}  // namespace

TEST_CASE("json: compact output keeps member order and drops whitespace") {
  CHECK(roundtrip(" { \"version\" : 5 ,\n \"host\":\"h\", \"port\":9092 } ") ==
        R"({"version":5,"host":"h","port":9092})");
  CHECK(roundtrip(R"({"b":1,"a":[true,false,null,[],{}]})") == R"({"b":1,"a":[true,false,null,[],{}]})");
  CHECK(roundtrip("-0") == "0");
  CHECK(roundtrip("9223372036854775807") == "9223372036854775807");
  CHECK(roundtrip("-9223372036854775808") == "-9223372036854775808");
}

TEST_CASE("json: integers and doubles are told apart") {
  auto i = parse_json("42");
  REQUIRE(i.ok());
  CHECK(i->is_int());
  CHECK(*i->if_int() == 42);
  auto d = parse_json("1.5e2");
  REQUIRE(d.ok());
  CHECK(d->is_double());
  CHECK(*d->if_double() == 150.0);
  auto big = parse_json("9223372036854775808");  // past int64: a double
  REQUIRE(big.ok());
  CHECK(big->is_double());
  CHECK(to_json(Json::number(0.25)) == "0.25");
}

TEST_CASE("json: string escapes, u-escapes and surrogate pairs decode to UTF-8") {
  auto v = parse_json(R"("a\"b\\c\/d\b\f\n\r\t\u0041\u00e9\u20ac\ud83d\ude00")");
  REQUIRE(v.ok());
  CHECK(*v->if_string() == "a\"b\\c/d\b\f\n\r\tA\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  // Output escapes like Jackson: short forms, \u00XX for other controls, UTF-8 as is.
  CHECK(to_json(*v) == "\"a\\\"b\\\\c/d\\b\\f\\n\\r\\tA\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"");
  CHECK(to_json(Json::string(std::string("\x01\x1f", 2))) == R"("\u0001\u001F")");
}

TEST_CASE("json: malformed input is an error naming the byte offset") {
  CHECK(error_of("") == "json: unexpected end of input at byte 0");
  CHECK(error_of(R"({"a" 1})") == "json: expected ':' at byte 5");
  CHECK(error_of("[1,2") == "json: unterminated array at byte 4");
  CHECK(error_of("[1 2]") == "json: expected ',' or ']' at byte 3");
  CHECK(error_of("{1:2}") == "json: expected a string key at byte 1");
  CHECK(error_of("01") == "json: leading zero in number at byte 1");
  CHECK(error_of("1.") == "json: invalid number at byte 2");
  CHECK(error_of("-") == "json: invalid number at byte 1");
  CHECK(error_of("+1") == "json: unexpected character at byte 0");
  CHECK(error_of("tru") == "json: invalid literal at byte 0");
  CHECK(error_of("1 2") == "json: unexpected data after the value at byte 2");
  CHECK(error_of("\"abc") == "json: unterminated string at byte 4");
  CHECK(error_of("\"a\nb\"") == "json: control character in string at byte 2");
  CHECK(error_of(R"("\x")") == "json: invalid escape at byte 2");
  CHECK(error_of(R"("\u12g4")") == "json: invalid \\u escape at byte 3");
  CHECK(error_of(R"("\u12")") == "json: truncated \\u escape at byte 3");
  CHECK(error_of(R"("\ud83d")") == "json: unpaired high surrogate at byte 7");
  CHECK(error_of(R"("\ud83d\u0041")") == "json: invalid low surrogate at byte 13");
  CHECK(error_of(R"("\ude00")") == "json: unpaired low surrogate at byte 7");
  CHECK(error_of("\"\xC0\xAF\"") == "json: invalid UTF-8 at byte 1");      // overlong '/'
  CHECK(error_of("\"\xED\xA0\x80\"") == "json: invalid UTF-8 at byte 1");  // encoded surrogate
  CHECK(error_of("\"\xF4\x90\x80\x80\"") == "json: invalid UTF-8 at byte 1");  // past U+10FFFF
  CHECK(error_of("\"\xE2\x82\"") == "json: invalid UTF-8 at byte 1");
  CHECK(error_of("\"\xE2\x82") == "json: truncated UTF-8 at byte 1");
}

TEST_CASE("json: nesting deeper than the limit is an error, not a stack overflow") {
  CHECK(parse_json("[[[]]]", 3).ok());
  CHECK(error_of("[[[[]]]]", 3) == "json: nesting too deep at byte 3");
  std::string deep(100000, '[');
  CHECK(error_of(deep) == "json: nesting too deep at byte 64");
}

TEST_CASE("json: find returns the last duplicate, as Jackson's tree keeps it") {
  auto v = parse_json(R"({"a":1,"a":2})");
  REQUIRE(v.ok());
  REQUIRE(v->find("a") != nullptr);
  CHECK(*v->find("a")->if_int() == 2);
  CHECK(v->find("b") == nullptr);
  CHECK(Json::integer(1).find("a") == nullptr);
}

TEST_CASE("json: field decoders say which field is wrong") {
  auto v = parse_json(R"({"i":7,"big":4294967296,"s":"x","n":null,"o":{},"a":[1,"2"],"l":[1,2]})");
  REQUIRE(v.ok());
  CHECK(*field_int32(*v, "i") == 7);
  CHECK(field_int32(*v, "big").error().message == "field 'big': out of int32 range");
  CHECK(*field_int64(*v, "big") == 4294967296);
  CHECK(field_int32(*v, "s").error().message == "field 's': expected an integer");
  CHECK(field_int32(*v, "zz").error().message == "field 'zz': missing");
  CHECK(*field_string(*v, "s") == "x");
  CHECK(field_string(*v, "n").error().message == "field 'n': expected a string");
  CHECK_FALSE(optional_string(*v, "n")->has_value());
  CHECK_FALSE(optional_string(*v, "zz")->has_value());
  CHECK(optional_string(*v, "i").error().message == "field 'i': expected a string");
  CHECK(**optional_int32(*v, "i") == 7);
  CHECK(field_object(*v, "a").error().message == "field 'a': expected an object");
  CHECK(field_array(*v, "o").error().message == "field 'o': expected an array");
  CHECK(int32_list(*v->find("a"), "a").error().message == "field 'a': expected an array of int32");
  CHECK(*int32_list(*v->find("l"), "l") == std::vector<int32_t>{1, 2});
  CHECK(payload_version(*v, 1, 1).error().message == "field 'version': missing");
  CHECK(payload_version(Json::integer(3), 1, 1).error().message == "payload: expected a JSON object");
  auto ver = parse_json(R"({"version":9})");
  CHECK(payload_version(*ver, 1, 5).error().message == "field 'version': unsupported version 9 (expected 1..5)");
}

TEST_CASE("json: random and mutated inputs never crash and valid output re-parses") {
  std::mt19937 rng(12345);
  const std::string seeds[] = {
      R"({"version":5,"host":"h","port":9092,"endpoints":["PLAINTEXT://h:9092"],"features":{}})",
      R"({"a":[1,-2.5e3,"\u00e9\ud83d\ude00",true,null,{"b":[]}]})",
  };
  const char alphabet[] = "{}[]\":,\\u0123456789abcdefeE+-. \t\n\x80\xC3\xA9\xED\xF0tnrl";
  for (int round = 0; round < 20000; ++round) {
    std::string s = seeds[round % 2];
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !s.empty(); ++e) {
      size_t at = rng() % s.size();
      char c = alphabet[rng() % (sizeof alphabet - 1)];
      switch (rng() % 3) {
        case 0: s[at] = c; break;
        case 1: s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), c); break;
        default: s.erase(at, 1 + rng() % 3); break;
      }
    }
    auto v = parse_json(s);
    if (v.ok()) {
      auto again = parse_json(to_json(*v));
      REQUIRE(again.ok());
      CHECK(to_json(*again) == to_json(*v));
    } else {
      CHECK(v.error().message.rfind("json: ", 0) == 0);
    }
  }
}
