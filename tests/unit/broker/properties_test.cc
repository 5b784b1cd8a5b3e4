// Java .properties parsing: separators, comments, whitespace, continuations,
// escapes, line numbers.
#include <catch2/catch.hpp>

#include "broker/config/properties.h"

using namespace ciuickafka::broker::config;

namespace {

std::vector<Property> parse(std::string_view text) {
  auto r = parse_properties(text, "t.properties");
  REQUIRE(r);
  return r.value();
}

using P = Property;

}  // namespace

TEST_CASE("separators: =, :, whitespace, and whitespace around them") {
  CHECK(parse("a=1\nb: 2\nc 3\nd\t=\t4\ne = = 5\nf::6\n") ==
        std::vector<P>{{"a", "1", 1}, {"b", "2", 2}, {"c", "3", 3}, {"d", "4", 4}, {"e", "= 5", 5}, {"f", ":6", 6}});
}

TEST_CASE("comments and blank lines") {
  CHECK(parse("# comment\n  ! also a comment\n\n   \n\tkey=value # not a comment\n") ==
        std::vector<P>{{"key", "value # not a comment", 5}});
}

TEST_CASE("a key alone has an empty value - trailing whitespace of a value is kept") {
  CHECK(parse("lonely\nspaced   \nv=x  ") == std::vector<P>{{"lonely", "", 1}, {"spaced", "", 2}, {"v", "x  ", 3}});
}

TEST_CASE("line terminators: LF, CRLF, CR and no final newline") {
  CHECK(parse("a=1\r\nb=2\rc=3\nd=4") == std::vector<P>{{"a", "1", 1}, {"b", "2", 2}, {"c", "3", 3}, {"d", "4", 4}});
}

TEST_CASE("backslash continues a line - the next line's leading whitespace is dropped") {
  CHECK(parse("listeners=PLAINTEXT://:9092,\\\n    SSL://:9093\nnext=1\n") ==
        std::vector<P>{{"listeners", "PLAINTEXT://:9092,SSL://:9093", 1}, {"next", "1", 3}});
  // An even number of trailing backslashes is an escaped backslash, not a continuation.
  CHECK(parse("path=C:\\\\\nx=1") == std::vector<P>{{"path", "C:\\", 1}, {"x", "1", 2}});
  // A continued line that starts with # is not a comment.
  CHECK(parse("a=1\\\n#2\n") == std::vector<P>{{"a", "1#2", 1}});
  // A comment line is never continued.
  CHECK(parse("# c \\\nb=2\n") == std::vector<P>{{"b", "2", 2}});
  // Continuation at end of input.
  CHECK(parse("a=1\\") == std::vector<P>{{"a", "1", 1}});
}

TEST_CASE("escapes in keys and values") {
  CHECK(parse("my\\ key=a\\tb\\nc\nk\\=eq=v\\:w\nu=\\u0041\\u00e9\\uD83D\\uDE00\nz=\\q\n") ==
        std::vector<P>{{"my key", "a\tb\nc", 1},
                       {"k=eq", "v:w", 2},
                       {"u", "A\xc3\xa9\xf0\x9f\x98\x80", 3},
                       {"z", "q", 4}});
}

TEST_CASE("a malformed u-escape is an error naming the line") {
  auto r = parse_properties("a=1\nb=\\u12G4\n", "server.properties");
  REQUIRE_FALSE(r);
  CHECK(r.error().message == "server.properties:2: malformed \\uXXXX escape");
  CHECK_FALSE(parse_properties("b=\\u12", "x"));
}

TEST_CASE("duplicate keys are all returned in order") {
  CHECK(parse("a=1\na=2\n") == std::vector<P>{{"a", "1", 1}, {"a", "2", 2}});
}

TEST_CASE("reading a missing file names it") {
  auto r = read_properties_file("/nonexistent/dir/server.properties");
  REQUIRE_FALSE(r);
  CHECK(r.error().message.starts_with("cannot read config file /nonexistent/dir/server.properties: "));
}
