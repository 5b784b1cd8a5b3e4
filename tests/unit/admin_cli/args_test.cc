// The admin command line: commands, positional arguments, options (both
// spellings, repeatable ones), global options anywhere, and the one-line
// usage errors (exit status 2) for everything else; client properties.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "broker/admin_cli/args.h"

using namespace ciuickafka::broker::admin_cli;

namespace {

ParseOutcome parse(std::vector<std::string_view> a) { return parse_admin_args(a); }

Invocation ok(std::vector<std::string_view> a) {
  auto o = parse(a);
  INFO(o.error);
  REQUIRE(o.invocation);
  return *o.invocation;
}

std::string bad(std::vector<std::string_view> a) {
  auto o = parse(a);
  REQUIRE_FALSE(o.invocation);
  REQUIRE_FALSE(o.error.empty());
  CHECK(o.error.find('\n') == std::string::npos);
  return o.error;
}

}  // namespace

TEST_CASE("admin args: commands, positionals and defaults") {
  auto i = ok({"topics", "create", "orders", "--partitions", "3", "--replication-factor=2", "--config",
               "cleanup.policy=compact", "--config", "retention.ms=1000", "--if-not-exists"});
  CHECK(i.command == "topics create");
  CHECK(i.positional == std::vector<std::string>{"orders"});
  CHECK(i.get("partitions") == "3");
  CHECK(i.get("replication-factor") == "2");
  CHECK(i.all("config") == std::vector<std::string>{"cleanup.policy=compact", "retention.ms=1000"});
  CHECK(i.has("if-not-exists"));
  CHECK(i.bootstrap == "localhost:9092");
  CHECK(i.format == Format::kTable);

  auto l = ok({"--bootstrap-server", "10.0.0.1:19092", "topics", "list", "--format", "json"});
  CHECK(l.command == "topics list");
  CHECK(l.bootstrap == "10.0.0.1:19092");
  CHECK(l.format == Format::kJson);

  CHECK(ok({"produce", "t"}).command == "produce");
  CHECK(ok({"topics", "describe"}).positional.empty());
  CHECK(ok({"groups", "reset-offsets", "g", "--topic", "t", "--to-offset", "5"}).get("to-offset") == "5");
  CHECK(ok({"configs", "describe", "--broker", "0"}).get("broker") == "0");
  CHECK(ok({"--connect-wait-ms", "5000", "cluster", "info"}).get("connect-wait-ms") == "5000");
  CHECK(ok({"--help"}).help);
  CHECK(ok({"help"}).help);
  CHECK(ok({"topics", "create", "-h"}).help);
}

TEST_CASE("admin args: usage errors name what is wrong") {
  CHECK(bad({}).find("no command") != std::string::npos);
  CHECK(bad({"topics", "frobnicate"}).find("unknown command 'topics frobnicate'") != std::string::npos);
  CHECK(bad({"topics", "create"}).find("missing argument NAME") != std::string::npos);
  CHECK(bad({"topics", "delete", "a", "b"}).find("unexpected argument 'b'") != std::string::npos);
  CHECK(bad({"topics", "list", "--partitions", "3"}).find("--partitions does not apply") != std::string::npos);
  CHECK(bad({"topics", "create", "t", "--partitions"}).find("needs a value") != std::string::npos);
  CHECK(bad({"topics", "create", "t", "--partitions", "zero"}).find("'zero' is not a number") != std::string::npos);
  CHECK(bad({"topics", "create", "t", "--partitions", "0"}).find("not a number in [1,") != std::string::npos);
  CHECK(bad({"topics", "create", "t", "--config", "novalue"}).find("not key=value") != std::string::npos);
  CHECK(bad({"topics", "create", "t", "--partitions", "1", "--partitions", "2"}).find("more than once") !=
        std::string::npos);
  CHECK(bad({"topics", "list", "--bogus"}).find("unknown option --bogus") != std::string::npos);
  CHECK(bad({"topics", "list", "--if-not-exists=yes"}).find("takes no value") != std::string::npos);
  CHECK(ok({"--bootstrap-server", "a:1", "topics", "list", "--bootstrap-server", "b:2"}).bootstrap == "b:2");
  CHECK(bad({"--bootstrap-server", "nohost", "topics", "list"}).find("not HOST:PORT") != std::string::npos);
  CHECK(bad({"--connect-wait-ms", "-1", "topics", "list"}).find("--connect-wait-ms") != std::string::npos);
  CHECK(bad({"--format", "xml", "topics", "list"}).find("not table or json") != std::string::npos);
  CHECK(bad({"topics", "add-partitions", "t"}).find("--partitions N is required") != std::string::npos);
  CHECK(bad({"topics", "alter-config", "t"}).find("--set") != std::string::npos);
  CHECK(bad({"configs", "describe"}).find("exactly one of --broker") != std::string::npos);
  CHECK(bad({"configs", "describe", "--broker", "1", "--topic", "t"}).find("exactly one of") != std::string::npos);
  CHECK(bad({"groups", "reset-offsets", "g", "--topic", "t"}).find("exactly one of --to-earliest") !=
        std::string::npos);
  CHECK(bad({"groups", "reset-offsets", "g", "--to-latest"}).find("--topic T is required") != std::string::npos);
  CHECK(bad({"groups", "reset-offsets", "g", "--topic", "t", "--to-latest", "--to-earliest"})
            .find("exactly one") != std::string::npos);
}

TEST_CASE("admin args: host:port, integers, key=value") {
  std::string h;
  uint16_t p = 0;
  CHECK(split_host_port("localhost:9092", &h, &p));
  CHECK(h == "localhost");
  CHECK(p == 9092);
  CHECK(split_host_port("[::1]:19092", &h, &p));
  CHECK(h == "::1");
  CHECK(p == 19092);
  CHECK_FALSE(split_host_port("localhost", &h, &p));
  CHECK_FALSE(split_host_port(":9092", &h, &p));
  CHECK_FALSE(split_host_port("h:0", &h, &p));
  CHECK_FALSE(split_host_port("h:70000", &h, &p));
  CHECK_FALSE(split_host_port("::1:9092", &h, &p));
  auto list = parse_bootstrap("a:1, b:2,[::1]:3");
  REQUIRE(list);
  REQUIRE(list->size() == 3);
  CHECK((*list)[0].host == "a");
  CHECK((*list)[1].port == 2);
  CHECK((*list)[2].host == "::1");
  CHECK_FALSE(parse_bootstrap("a:1,"));
  CHECK_FALSE(parse_bootstrap("a:1,nohost"));
  CHECK(ok({"--bootstrap-server", "a:1,b:2", "topics", "list"}).bootstrap == "a:1,b:2");
  int64_t n = 0;
  CHECK(parse_int("42", 0, 100, &n));
  CHECK(n == 42);
  CHECK_FALSE(parse_int("42x", 0, 100, &n));
  CHECK_FALSE(parse_int("", 0, 100, &n));
  CHECK_FALSE(parse_int("101", 0, 100, &n));
  std::string k, v;
  CHECK(split_key_value("a=b=c", &k, &v));
  CHECK(k == "a");
  CHECK(v == "b=c");
  CHECK(split_key_value("a=", &k, &v));
  CHECK(v.empty());
  CHECK_FALSE(split_key_value("=b", &k, &v));
}

TEST_CASE("admin args: client properties") {
  ClientProperties p;
  CHECK(parse_client_properties("# comment\nclient.id = ops-tool\nrequest.timeout.ms=5000\nretries=3\n", &p).empty());
  CHECK(p.client_id == "ops-tool");
  CHECK(p.request_timeout_ms == 5000);
  ClientProperties q;
  CHECK(parse_client_properties("security.protocol=PLAINTEXT\n", &q).empty());
  CHECK(parse_client_properties("request.timeout.ms=soon\n", &q).find("request.timeout.ms") != std::string::npos);
  CHECK(parse_client_properties("security.protocol=SASL_SSL\n", &q).find("not supported") != std::string::npos);
  CHECK(parse_client_properties("sasl.mechanism=PLAIN\n", &q).find("sasl.mechanism") != std::string::npos);
  CHECK(parse_client_properties("ssl.truststore.location=/x\n", &q).find("not supported") != std::string::npos);
}

TEST_CASE("admin args: the usage text lists every command") {
  const std::string u = usage_text();
  for (const char* c : {"topics create", "topics list", "topics describe", "topics delete", "topics add-partitions",
                        "topics alter-config", "cluster info", "configs describe", "configs alter", "groups list",
                        "groups describe", "groups reset-offsets", "groups delete", "produce", "consume",
                        "--bootstrap-server", "--command-config", "--format"})
    CHECK(u.find(c) != std::string::npos);
}
