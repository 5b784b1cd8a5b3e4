// Table and JSON rendering of admin command results: alignment, null,
// numbers, id lists, several sections, and JSON escaping that always
// yields a valid document.
#include <catch2/catch.hpp>

#include "broker/admin_cli/output.h"

using namespace ciuickafka::broker::admin_cli;

TEST_CASE("admin output: aligned text table") {
  Table t{"", {"topic", "partitions", "replicas"}, {}};
  t.add({"a", 1, Value::ids({0, 1, 2})});
  t.add({"longer-name", 12, Value()});
  CHECK(render({t}, Format::kTable) ==
        "topic        partitions  replicas\n"
        "a            1           0,1,2\n"
        "longer-name  12          -\n");
}

TEST_CASE("admin output: JSON array of objects with typed values") {
  Table t{"", {"name", "n", "ok", "ids", "none"}, {}};
  t.add({"x", int64_t{-5}, Value::boolean(true), Value::ids({3, 4}), Value()});
  CHECK(render({t}, Format::kJson) == "[\n  {\"name\": \"x\", \"n\": -5, \"ok\": true, \"ids\": [3,4], \"none\": null}\n]\n");
  Table empty{"", {"a"}, {}};
  CHECK(render({empty}, Format::kJson) == "[]\n");
}

TEST_CASE("admin output: several sections") {
  Table a{"cluster", {"id"}, {}};
  a.add({"c1"});
  Table b{"brokers", {"id", "host"}, {}};
  b.add({0, "h"});
  CHECK(render({a, b}, Format::kJson) ==
        "{\n\"cluster\": [\n  {\"id\": \"c1\"}\n],\n\"brokers\": [\n  {\"id\": 0, \"host\": \"h\"}\n]\n}\n");
  CHECK(render({a, b}, Format::kTable) == "cluster:\nid\nc1\n\nbrokers:\nid  host\n0   h\n");
}

TEST_CASE("admin output: JSON string escaping") {
  CHECK(json_quote("plain") == "\"plain\"");
  CHECK(json_quote("q\"b\\n\nt\tc\x01") == "\"q\\\"b\\\\n\\nt\\tc\\u0001\"");
  CHECK(json_quote("caf\xc3\xa9") == "\"caf\xc3\xa9\"");                // valid UTF-8 kept
  CHECK(json_quote("bad\xff\xc3") == "\"bad\xef\xbf\xbd\xef\xbf\xbd\"");  // invalid bytes replaced
  CHECK(join_ids({}) == "-");
  CHECK(join_ids({7}) == "7");
}
