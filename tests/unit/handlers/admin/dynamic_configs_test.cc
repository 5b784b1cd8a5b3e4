// tests/unit/handlers/admin/dynamic_configs_test.cc: dynamic broker configs
// on a single node (admin/dynamic_configs.h): AlterConfigs and
// IncrementalAlterConfigs on BROKER resources ("" for every broker, the node
// id for this one), what DescribeConfigs reports, that the values take
// effect (a topic's logs and Produce) and survive a restart, and the errors.
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>
#include <string>
#include <vector>

#include "protocol/generated/alter_configs.h"
#include "protocol/generated/describe_configs.h"
#include "protocol/generated/incremental_alter_configs.h"
#include "protocol/generated/produce.h"
#include "protocol/records/batch_builder.h"
#include "broker/server/io_pool.h"
#include "storage/log.h"
#include "storage/log_manager.h"
#include "tests/unit/handlers/admin/admin_test_util.h"

using namespace ciuickafka;
using namespace ciuickafka::broker;
using protocol::ErrorCode;
using test::code;

namespace CK_UNITY_ID {
namespace {

constexpr int8_t kTopic = 2, kBroker = 4;
constexpr int8_t kSet = 0, kDelete = 1, kAppend = 2;

struct Op {
  std::string name;
  int8_t op;
  std::optional<std::string> value;
};

protocol::IncrementalAlterConfigsResponse inc(test::BrokerFixture& f, int8_t type, const std::string& name,
                                              std::vector<Op> ops, bool validate_only = false) {
  protocol::IncrementalAlterConfigsRequest req;
  auto& r = req.resources.emplace_back();
  r.resource_type = type;
  r.resource_name = name;
  for (auto& o : ops) {
    auto& c = r.configs.emplace_back();
    c.name = o.name;
    c.config_operation = o.op;
    c.value = o.value;
  }
  req.validate_only = validate_only;
  return f.call<protocol::IncrementalAlterConfigsResponse>(req, 1);
}

protocol::DescribeConfigsResponse::DescribeConfigsResult describe(test::BrokerFixture& f, int8_t type,
                                                                   const std::string& name,
                                                                   std::optional<std::vector<std::string>> keys) {
  protocol::DescribeConfigsRequest req;
  auto& r = req.resources.emplace_back();
  r.resource_type = type;
  r.resource_name = name;
  r.configuration_keys = std::move(keys);
  req.include_synonyms = true;
  auto resp = f.call<protocol::DescribeConfigsResponse>(req, 4);
  REQUIRE(resp.results.size() == 1);
  return resp.results[0];
}

// (value, source) of one key of a DescribeConfigs result.
std::pair<std::string, int8_t> value_of(const protocol::DescribeConfigsResponse::DescribeConfigsResult& r,
                                        const std::string& key) {
  const auto* c = test::find_config(r, key);
  REQUIRE(c != nullptr);
  return {c->value.value_or("<null>"), c->config_source};
}

int16_t produce_value_of(test::BrokerFixture& f, const std::string& topic, size_t bytes) {
  protocol::BatchBuilder b(protocol::BatchOptions{});
  const std::string value(bytes, 'v');
  REQUIRE(b.add(Broker::now_ms(), std::nullopt, protocol::as_bytes(value)));
  auto built = b.build();
  REQUIRE(built.ok());
  protocol::Bytes records = built.value();
  protocol::ProduceRequest req;
  req.acks = 1;
  req.timeout_ms = 30000;
  auto& td = req.topic_data.emplace_back();
  td.name = topic;
  auto& pd = td.partition_data.emplace_back();
  pd.index = 0;
  pd.records = protocol::Records(std::span<const uint8_t>(records));
  auto resp = f.call<protocol::ProduceResponse>(req, 9);
  REQUIRE(resp.responses.size() == 1);
  REQUIRE(resp.responses[0].partition_responses.size() == 1);
  return resp.responses[0].partition_responses[0].error_code;
}

}  // namespace

TEST_CASE("dynamic broker configs: set per broker and for all, described, in effect, kept across a restart",
          "[admin][dynamic_configs]") {
  test::BrokerFixture f;
  const std::string me = std::to_string(f.broker().node_id());
  REQUIRE(test::create_topic(f, "t").error_code == 0);
  REQUIRE(test::create_topic(f, "own", 1, {{"retention.ms", "5000"}}).error_code == 0);
  CHECK(value_of(describe(f, kTopic, "t", {{"retention.ms"}}), "retention.ms").second == 5);  // DEFAULT_CONFIG
  CHECK(produce_value_of(f, "t", 4000) == 0);

  // Every broker: log.retention.ms; this one: message.max.bytes.
  REQUIRE(inc(f, kBroker, "", {{"log.retention.ms", kSet, "3600000"}, {"message.max.bytes", kSet, "4096"}})
              .responses[0]
              .error_code == 0);
  REQUIRE(inc(f, kBroker, me, {{"message.max.bytes", kSet, "2048"}}).responses[0].error_code == 0);

  auto check_state = [&] {
    // A topic without overrides inherits them, and says from where.
    auto t = describe(f, kTopic, "t", {{"retention.ms", "max.message.bytes"}});
    CHECK(value_of(t, "retention.ms") == std::pair<std::string, int8_t>{"3600000", 3});      // DYNAMIC_DEFAULT
    CHECK(value_of(t, "max.message.bytes") == std::pair<std::string, int8_t>{"2048", 2});    // DYNAMIC_BROKER
    // A topic's own override still wins.
    CHECK(value_of(describe(f, kTopic, "own", {{"retention.ms"}}), "retention.ms") ==
          std::pair<std::string, int8_t>{"5000", 1});
    // The logs took the new default; the override kept its own.
    CHECK(f.broker().topics().partition("t", 0)->log().config().retention_ms == 3600000);
    CHECK(f.broker().topics().partition("own", 0)->log().config().retention_ms == 5000);
    // The broker resource: value, source, writable, and Kafka's synonym order.
    auto b = describe(f, kBroker, me, {{"message.max.bytes", "num.partitions"}});
    const auto* mmb = test::find_config(b, "message.max.bytes");
    REQUIRE(mmb != nullptr);
    CHECK(mmb->value == std::optional<std::string>("2048"));
    CHECK(mmb->config_source == 2);
    CHECK_FALSE(mmb->read_only);
    REQUIRE(mmb->synonyms.size() == 3);
    CHECK(mmb->synonyms[0].source == 2);
    CHECK(mmb->synonyms[0].value == std::optional<std::string>("2048"));
    CHECK(mmb->synonyms[1].source == 3);
    CHECK(mmb->synonyms[1].value == std::optional<std::string>("4096"));
    CHECK(mmb->synonyms[2].source == 5);
    CHECK(test::find_config(b, "num.partitions")->read_only);
    // The default resource lists only what was set for it.
    auto d = describe(f, kBroker, "", std::nullopt);
    CHECK(d.error_code == 0);
    REQUIRE(d.configs.size() == 2);
    CHECK(value_of(d, "log.retention.ms") == std::pair<std::string, int8_t>{"3600000", 3});
    CHECK(value_of(d, "message.max.bytes") == std::pair<std::string, int8_t>{"4096", 3});
    REQUIRE(test::find_config(d, "message.max.bytes")->synonyms.size() == 1);  // the dynamic default only
    // Kafka's synonym order: retention.hours, after a dynamic retention.ms, lists only itself.
    auto h = describe(f, kBroker, me, {{"log.retention.hours", "log.retention.ms"}});
    REQUIRE(test::find_config(h, "log.retention.hours")->synonyms.size() == 1);
    CHECK(test::find_config(h, "log.retention.hours")->synonyms[0].name == "log.retention.hours");
    // Produce enforces the broker's own limit.
    CHECK(produce_value_of(f, "t", 4000) == code(ErrorCode::MESSAGE_TOO_LARGE));
    CHECK(produce_value_of(f, "t", 1000) == 0);
  };
  check_state();
  f.restart();
  check_state();

  // DELETE returns this broker to the cluster default, then to the default.
  REQUIRE(inc(f, kBroker, me, {{"message.max.bytes", kDelete, std::nullopt}}).responses[0].error_code == 0);
  CHECK(value_of(describe(f, kTopic, "t", {{"max.message.bytes"}}), "max.message.bytes") ==
        std::pair<std::string, int8_t>{"4096", 3});
  CHECK(produce_value_of(f, "t", 3000) == 0);
  // The legacy AlterConfigs replaces the whole set: an empty one clears it.
  protocol::AlterConfigsRequest clear;
  auto& r = clear.resources.emplace_back();
  r.resource_type = kBroker;
  r.resource_name = "";
  REQUIRE(f.call<protocol::AlterConfigsResponse>(clear, 1).responses[0].error_code == 0);
  CHECK(describe(f, kBroker, "", std::nullopt).configs.empty());
  CHECK(value_of(describe(f, kTopic, "t", {{"retention.ms"}}), "retention.ms").second == 5);
  CHECK(f.broker().topics().partition("t", 0)->log().config().retention_ms ==
        f.broker().config().log_retention_ms());
  f.restart();
  CHECK(describe(f, kBroker, "", std::nullopt).configs.empty());
}

TEST_CASE("dynamic broker configs: refused keys and values change nothing", "[admin][dynamic_configs]") {
  test::BrokerFixture f;
  const std::string me = std::to_string(f.broker().node_id());
  REQUIRE(inc(f, kBroker, me, {{"log.retention.ms", kSet, "7200000"}}).responses[0].error_code == 0);
  auto refused = [&](std::vector<Op> ops, ErrorCode want, const std::string& mentions) {
    auto resp = inc(f, kBroker, me, std::move(ops));
    CHECK(resp.responses[0].error_code == code(want));
    CHECK_THAT(resp.responses[0].error_message.value_or(""), Catch::Contains(mentions));
    CHECK(f.broker().config().dynamic_broker() == config::DynamicMap{{"log.retention.ms", "7200000"}});
  };
  refused({{"num.partitions", kSet, "3"}}, ErrorCode::INVALID_REQUEST, "num.partitions");   // static
  refused({{"socket.request.max.bytes", kSet, "4096"}}, ErrorCode::INVALID_REQUEST, "socket.request.max.bytes");  // start-up only
  refused({{"no.such.key", kSet, "1"}}, ErrorCode::INVALID_REQUEST, "no.such.key");
  // A bad value: INVALID_REQUEST, as Kafka answers (not INVALID_CONFIG as for topics).
  refused({{"log.retention.ms", kSet, "soon"}}, ErrorCode::INVALID_REQUEST, "soon");
  refused({{"log.retention.ms", kSet, "0"}}, ErrorCode::INVALID_REQUEST, "log.retention.ms");
  refused({{"log.cleanup.policy", kAppend, "bogus"}}, ErrorCode::INVALID_REQUEST, "bogus");
  refused({{"message.max.bytes", kSet, "1"}, {"num.partitions", kSet, "2"}}, ErrorCode::INVALID_REQUEST,
          "num.partitions");
  // Another broker's id, and validate_only.
  CHECK(inc(f, kBroker, "77", {{"log.retention.ms", kSet, "1"}}).responses[0].error_code ==
        code(ErrorCode::INVALID_REQUEST));
  CHECK(inc(f, kBroker, me, {{"log.retention.ms", kSet, "60000"}}, true).responses[0].error_code == 0);
  CHECK(f.broker().config().dynamic_broker() == config::DynamicMap{{"log.retention.ms", "7200000"}});
  // APPEND starts from the effective list.
  REQUIRE(inc(f, kBroker, me, {{"log.cleanup.policy", kAppend, "compact"}}).responses[0].error_code == 0);
  CHECK(f.broker().config().dynamic_broker().at("log.cleanup.policy") == "delete,compact");
}

TEST_CASE("dynamic broker configs: listener overrides of the connection limits are set, described and kept",
          "[admin][dynamic_configs]") {
  test::BrokerFixture f;
  const std::string me = std::to_string(f.broker().node_id());
  const std::string key = "listener.name.plaintext.max.connections";
  REQUIRE(inc(f, kBroker, "", {{key, kSet, "40"}}).responses[0].error_code == 0);
  REQUIRE(inc(f, kBroker, me, {{key, kSet, "30"}, {"max.connections", kSet, "100"}}).responses[0].error_code == 0);
  auto check_state = [&] {
    CHECK(f.broker().config().listener_int("PLAINTEXT", "max.connections") == 30);
    auto b = describe(f, kBroker, me, std::nullopt);
    const auto* c = test::find_config(b, key);
    REQUIRE(c != nullptr);
    CHECK(c->value == std::optional<std::string>("30"));
    CHECK(c->config_source == 2);  // DYNAMIC_BROKER_CONFIG
    CHECK(c->read_only);           // as Kafka 3.9 says (the differential test compares)
    // Kafka's order: the override and its base key at each source in turn.
    REQUIRE(c->synonyms.size() == 4);
    CHECK(c->synonyms[0].name == key);
    CHECK(c->synonyms[1].name == "max.connections");
    CHECK(c->synonyms[1].value == std::optional<std::string>("100"));
    CHECK(c->synonyms[2].name == key);
    CHECK(c->synonyms[2].source == 3);  // DYNAMIC_DEFAULT_BROKER_CONFIG
    CHECK(c->synonyms[3].source == 5);  // the base key's default
    auto d = describe(f, kBroker, "", std::nullopt);
    REQUIRE(d.configs.size() == 1);
    CHECK(value_of(d, key) == std::pair<std::string, int8_t>{"40", 3});
  };
  check_state();
  f.restart();
  check_state();
  // Refused, naming the key: a value below 1, an APPEND to a number, and a
  // key no listener override has.
  auto bad = inc(f, kBroker, me, {{key, kSet, "0"}});
  CHECK(bad.responses[0].error_code == code(ErrorCode::INVALID_REQUEST));
  CHECK_THAT(bad.responses[0].error_message.value_or(""), Catch::Contains(key) && Catch::Contains("\"0\""));
  CHECK(inc(f, kBroker, me, {{key, kAppend, "1"}}).responses[0].error_code == code(ErrorCode::INVALID_CONFIG));
  CHECK(inc(f, kBroker, me, {{"listener.name.plaintext.num.io.threads", kSet, "4"}}).responses[0].error_code ==
        code(ErrorCode::INVALID_REQUEST));
  CHECK(f.broker().config().listener_int("plaintext", "max.connections") == 30);
  // Deleted here: the cluster default applies.
  REQUIRE(inc(f, kBroker, me, {{key, kDelete, std::nullopt}}).responses[0].error_code == 0);
  CHECK(f.broker().config().listener_int("plaintext", "max.connections") == 40);
}

TEST_CASE("dynamic broker configs: num.io.threads resizes the request handler pool within Kafka's rule",
          "[admin][dynamic_configs]") {
  test::BrokerFixture f;
  const std::string me = std::to_string(f.broker().node_id());
  IoPool& pool = f.broker().service<IoPool>();
  REQUIRE(pool.size() == 8);
  auto set = [&](const std::string& name, const std::string& v) {
    return inc(f, kBroker, name, {{"num.io.threads", kSet, v}}).responses[0];
  };
  // Kafka's DynamicThreadPool: at most double, at least half of the current value.
  auto r = set(me, "17");
  CHECK(r.error_code == code(ErrorCode::INVALID_REQUEST));
  CHECK_THAT(r.error_message.value_or(""), Catch::Contains("num.io.threads=17") &&
                                               Catch::Contains("not be greater than double the current value 8"));
  r = set("", "3");
  CHECK(r.error_code == code(ErrorCode::INVALID_REQUEST));
  CHECK_THAT(r.error_message.value_or(""), Catch::Contains("at least half the current value 8"));
  CHECK(pool.size() == 8);
  CHECK(f.broker().config().dynamic_broker().empty());
  CHECK(f.broker().config().dynamic_default().empty());

  REQUIRE(set(me, "16").error_code == 0);
  CHECK(pool.size() == 16);
  CHECK(pool.running() == 16);
  const auto d = describe(f, kBroker, me, std::vector<std::string>{"num.io.threads"});
  CHECK(value_of(d, "num.io.threads") == std::make_pair(std::string("16"), int8_t{2}));  // DYNAMIC_BROKER_CONFIG
  REQUIRE(test::find_config(d, "num.io.threads") != nullptr);
  CHECK_FALSE(test::find_config(d, "num.io.threads")->read_only);

  // Shrunk: the surplus threads finish and exit; the pool still serves
  // (this very AlterConfigs ran on it, as does CreateTopics).
  REQUIRE(set(me, "8").error_code == 0);
  CHECK(pool.size() == 8);
  CHECK(pool.wait_running(8, std::chrono::seconds(10)));
  REQUIRE(set(me, "4").error_code == 0);
  CHECK(pool.wait_running(4, std::chrono::seconds(10)));
  CHECK(test::create_topic(f, "after-shrink").error_code == 0);
  // Deleting the broker's value returns to the default resource's, then the static 8.
  REQUIRE(inc(f, kBroker, me, {{"num.io.threads", kDelete, std::nullopt}}).responses[0].error_code == 0);
  CHECK(pool.size() == 8);
}

bool wait_until(const std::function<bool()>& cond) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!cond()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // polling an event, not timing one
  }
  return true;
}

// n tasks posted to the maintenance pool, each waiting (up to 10 s) for all
// n to have started: true when the pool ran them all at once.
bool run_at_once(Broker& b, int n) {
  std::mutex mu;
  std::condition_variable cv;
  int started = 0, finished = 0, saw_all = 0;
  for (int i = 0; i < n; ++i)
    asio::post(b.maintenance(), [&] {
      std::unique_lock<std::mutex> lock(mu);
      ++started;
      cv.notify_all();
      if (cv.wait_for(lock, std::chrono::seconds(10), [&] { return started == n; })) ++saw_all;
      ++finished;
      cv.notify_all();
    });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return finished == n; });
  return saw_all == n;
}

TEST_CASE("dynamic broker configs: background.threads sizes the maintenance pool within Kafka's rule",
          "[admin][dynamic_configs]") {
  test::BrokerFixture f;
  const std::string me = std::to_string(f.broker().node_id());
  MaintenancePool& pool = f.broker().maintenance_pool();
  CHECK(pool.threads() == 10);  // Kafka's default
  CHECK(run_at_once(f.broker(), 10));
  auto set = [&](const std::string& v) { return inc(f, kBroker, me, {{"background.threads", kSet, v}}).responses[0]; };
  auto r = set("21");
  CHECK(r.error_code == code(ErrorCode::INVALID_REQUEST));
  CHECK_THAT(r.error_message.value_or(""), Catch::Contains("background.threads=21") &&
                                               Catch::Contains("not be greater than double the current value 10"));
  CHECK(set("4").error_code == code(ErrorCode::INVALID_REQUEST));
  CHECK(pool.threads() == 10);
  REQUIRE(set("13").error_code == 0);
  CHECK(pool.threads() == 13);
  CHECK(run_at_once(f.broker(), 13));
  const auto d = describe(f, kBroker, me, std::vector<std::string>{"background.threads"});
  CHECK(value_of(d, "background.threads") == std::make_pair(std::string("13"), int8_t{2}));
  CHECK_FALSE(test::find_config(d, "background.threads")->read_only);
  // Shrunk: the surplus threads leave; the pool still runs its work.
  REQUIRE(set("7").error_code == 0);
  CHECK(pool.threads() == 7);
  CHECK(wait_until([&] { return pool.alive() == 7; }));
  CHECK(run_at_once(f.broker(), 7));
  f.restart();  // kept, and used at start-up
  CHECK(f.broker().maintenance_pool().threads() == 7);
  config::ConfigInput bad;
  bad.overrides = {"background.threads=0"};
  auto loaded = config::load_config(bad);
  REQUIRE_FALSE(loaded);
  CHECK_THAT(loaded.error().message, Catch::Contains("background.threads") && Catch::Contains("\"0\""));
}

TEST_CASE("dynamic broker configs: num.replica.fetchers changes live within Kafka's rule", "[admin][dynamic_configs]") {
  // The fetchers resize only in cluster mode (replica/fetcher_manager.h; the
  // resize itself is in replica_test); here the key's rule and source.
  test::BrokerFixture f;
  const std::string me = std::to_string(f.broker().node_id());
  auto set = [&](const std::string& v) { return inc(f, kBroker, me, {{"num.replica.fetchers", kSet, v}}).responses[0]; };
  auto r = set("3");
  CHECK(r.error_code == code(ErrorCode::INVALID_REQUEST));
  CHECK_THAT(r.error_message.value_or(""), Catch::Contains("num.replica.fetchers=3") &&
                                               Catch::Contains("not be greater than double the current value 1"));
  r = set("0");
  CHECK(r.error_code == code(ErrorCode::INVALID_REQUEST));
  CHECK_THAT(r.error_message.value_or(""), Catch::Contains("num.replica.fetchers"));
  CHECK(f.broker().config().dynamic_broker().empty());
  REQUIRE(set("2").error_code == 0);
  CHECK(f.broker().config().get_int("num.replica.fetchers") == 2);
  const auto d = describe(f, kBroker, me, std::vector<std::string>{"num.replica.fetchers"});
  CHECK(value_of(d, "num.replica.fetchers") == std::make_pair(std::string("2"), int8_t{2}));  // DYNAMIC_BROKER_CONFIG
  REQUIRE(test::find_config(d, "num.replica.fetchers") != nullptr);
  CHECK_FALSE(test::find_config(d, "num.replica.fetchers")->read_only);
}

TEST_CASE("dynamic broker configs: unclean.leader.election.enable is accepted as a topic default", "[admin][dynamic_configs]") {
  // In a cluster the controller takes it at once (controller_runtime_test);
  // on one node it is stored, described and each topic's default.
  test::BrokerFixture f;
  REQUIRE(test::create_topic(f, "t").error_code == 0);
  REQUIRE(inc(f, kBroker, "", {{"unclean.leader.election.enable", kSet, "true"}}).responses[0].error_code == 0);
  CHECK(f.broker().config().get_bool("unclean.leader.election.enable"));
  CHECK(value_of(describe(f, kTopic, "t", {{"unclean.leader.election.enable"}}), "unclean.leader.election.enable") ==
        std::make_pair(std::string("true"), int8_t{3}));  // DYNAMIC_DEFAULT_BROKER_CONFIG
}

TEST_CASE("dynamic broker configs: num.recovery.threads.per.data.dir is used by the next start-up's log recovery",
          "[admin][dynamic_configs]") {
  test::BrokerFixture f;
  const std::string me = std::to_string(f.broker().node_id());
  REQUIRE(test::create_topic(f, "four", 4).error_code == 0);
  auto set = [&](const std::string& v) {
    return inc(f, kBroker, me, {{"num.recovery.threads.per.data.dir", kSet, v}}).responses[0];
  };
  auto r = set("3");  // Kafka's DynamicThreadPool rule: at most double the current 1
  CHECK(r.error_code == code(ErrorCode::INVALID_REQUEST));
  CHECK_THAT(r.error_message.value_or(""), Catch::Contains("num.recovery.threads.per.data.dir=3") &&
                                               Catch::Contains("not be greater than double the current value 1"));
  REQUIRE(set("2").error_code == 0);
  CHECK(value_of(describe(f, kBroker, me, std::vector<std::string>{"num.recovery.threads.per.data.dir"}),
                 "num.recovery.threads.per.data.dir") == std::make_pair(std::string("2"), int8_t{2}));
  f.restart();
  // The four logs were opened by two threads: the stored value, read before the logs open.
  CHECK(f.broker().config().get_int("num.recovery.threads.per.data.dir") == 2);
  CHECK(f.broker().logs().open_stats().recovery_threads == 2);
  REQUIRE(inc(f, kBroker, me, {{"num.recovery.threads.per.data.dir", kDelete, std::nullopt}}).responses[0].error_code ==
          0);
  f.restart();
  CHECK(f.broker().logs().open_stats().recovery_threads == 1);
}

TEST_CASE("dynamic broker configs: the log cleaner takes its backoff, offset-map size and I/O rate at once",
          "[admin][dynamic_configs]") {
  // Before the broker opens: its first cleaner pass at the start-up backoff
  // comes 15 s after open, so one seen before started + 14 s is the new one's.
  const auto started = std::chrono::steady_clock::now();
  test::BrokerFixture f;
  const std::string me = std::to_string(f.broker().node_id());
  storage::LogManager& logs = f.broker().logs();
  const auto [backoff0, cleaner0] = logs.cleaner_settings();
  CHECK(backoff0 == 15000);
  CHECK(cleaner0.dedupe_buffer_bytes == size_t{134217728});
  CHECK(cleaner0.io_max_bytes_per_second == std::numeric_limits<double>::max());
  CHECK(logs.cleaner_stats().passes == 0);

  // Kafka's LogCleaner reconfigurable keys: accepted, described, in effect.
  CHECK(cleaner0.io_buffer_bytes == size_t{524288});
  CHECK(cleaner0.dedupe_load_factor == 0.9);
  // A load factor outside (0, 1] is refused, naming it.
  auto bad = inc(f, kBroker, me, {{"log.cleaner.io.buffer.load.factor", kSet, "90"}});
  CHECK(bad.responses[0].error_code == code(ErrorCode::INVALID_REQUEST));
  CHECK_THAT(bad.responses[0].error_message.value_or(""), Catch::Contains("log.cleaner.io.buffer.load.factor"));
  REQUIRE(inc(f, kBroker, me,
              {{"log.cleaner.backoff.ms", kSet, "200"},
               {"log.cleaner.dedupe.buffer.size", kSet, "8388608"},
               {"log.cleaner.io.max.bytes.per.second", kSet, "1048576"},
               {"log.cleaner.io.buffer.size", kSet, "1048576"},
               {"log.cleaner.io.buffer.load.factor", kSet, "0.5"}})
              .responses[0]
              .error_code == 0);
  auto check_set = [&] {
    const auto [backoff, cleaner] = f.broker().logs().cleaner_settings();
    CHECK(backoff == 200);
    CHECK(cleaner.dedupe_buffer_bytes == size_t{8388608});
    CHECK(cleaner.io_max_bytes_per_second == 1048576.0);
    CHECK(cleaner.io_buffer_bytes == size_t{1048576});
    CHECK(cleaner.dedupe_load_factor == 0.5);
    const auto d = describe(f, kBroker, me, std::vector<std::string>{"log.cleaner.backoff.ms"});
    CHECK(value_of(d, "log.cleaner.backoff.ms") == std::make_pair(std::string("200"), int8_t{2}));
    CHECK_FALSE(test::find_config(d, "log.cleaner.backoff.ms")->read_only);
  };
  check_set();
  // The new backoff drives the ticks: a pass runs before the 15 s the broker
  // started with could have brought one (bounded wait on the pass counter).
  const auto end = started + std::chrono::seconds(14);
  while (f.broker().logs().cleaner_stats().passes == 0 && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(f.broker().logs().cleaner_stats().passes >= 1);

  // Persisted with the other dynamic configs, and applied again at open.
  f.restart();
  check_set();

  // Deleting the values returns the cleaner to the start-up settings.
  REQUIRE(inc(f, kBroker, me,
              {{"log.cleaner.backoff.ms", kDelete, std::nullopt},
               {"log.cleaner.dedupe.buffer.size", kDelete, std::nullopt},
               {"log.cleaner.io.max.bytes.per.second", kDelete, std::nullopt},
               {"log.cleaner.io.buffer.size", kDelete, std::nullopt},
               {"log.cleaner.io.buffer.load.factor", kDelete, std::nullopt}})
              .responses[0]
              .error_code == 0);
  const auto [backoff1, cleaner1] = f.broker().logs().cleaner_settings();
  CHECK(cleaner1.io_buffer_bytes == size_t{524288});
  CHECK(cleaner1.dedupe_load_factor == 0.9);
  CHECK(backoff1 == 15000);
  CHECK(cleaner1.dedupe_buffer_bytes == size_t{134217728});
  CHECK(cleaner1.io_max_bytes_per_second == std::numeric_limits<double>::max());

  // log.cleaner.threads: Kafka's LogCleaner rule and text, then live.
  auto refused = inc(f, kBroker, me, {{"log.cleaner.threads", kSet, "3"}});
  CHECK(refused.responses[0].error_code == code(ErrorCode::INVALID_REQUEST));
  CHECK_THAT(refused.responses[0].error_message.value_or(""),
             Catch::Contains("Log cleaner threads cannot be increased to more than double the current value 1"));
  CHECK(f.broker().logs().cleaner_stats().threads == 1);
  REQUIRE(inc(f, kBroker, me, {{"log.cleaner.threads", kSet, "2"}}).responses[0].error_code == 0);
  CHECK(f.broker().logs().cleaner_stats().threads == 2);
  // The configured offset map stays whole; each pass splits it between the threads.
  CHECK(f.broker().logs().cleaner_settings().second.dedupe_buffer_bytes == size_t{134217728});
  REQUIRE(inc(f, kBroker, me, {{"log.cleaner.threads", kSet, "4"}}).responses[0].error_code == 0);
  refused = inc(f, kBroker, me, {{"log.cleaner.threads", kSet, "1"}});
  CHECK_THAT(refused.responses[0].error_message.value_or(""),
             Catch::Contains("Log cleaner threads cannot be reduced to less than half the current value 4"));
  refused = inc(f, kBroker, me, {{"log.cleaner.threads", kSet, "0"}});
  CHECK_THAT(refused.responses[0].error_message.value_or(""), Catch::Contains("Log cleaner threads should be at least 1"));
  CHECK(f.broker().logs().cleaner_stats().threads == 4);
  f.restart();  // persisted: the cleaner starts with 4
  CHECK(f.broker().logs().cleaner_stats().threads == 4);
}

}  // namespace CK_UNITY_ID
