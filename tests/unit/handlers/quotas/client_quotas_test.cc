// tests/unit/handlers/quotas/client_quotas_test.cc: client quotas
// (broker/quotas/): the model (AlterClientQuotas' validation,
// DescribeClientQuotas' filters, Kafka's precedence and the rate a client
// shares, ZooKeeper names), the two APIs on a single node (persisted across
// a restart, validate_only, the key refused), and the enforcement of
// producer_byte_rate and consumer_byte_rate through Produce and Fetch
// (throttle_time_ms, a throttled fetch answered empty, a fetch capped at
// one window's bytes), of request_percentage on any response, and of
// controller_mutation_rate through CreateTopics, CreatePartitions and
// DeleteTopics (strict and permissive versions). The connection's muting is proven with a real
// socket by the integration test (tests/integration/test_quotas.py).
#include <catch2/catch.hpp>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "broker/handlers/codec.h"
#include "broker/quotas/client_quotas.h"
#include "broker/quotas/quota_table.h"
#include "protocol/generated/alter_client_quotas.h"
#include "protocol/generated/create_partitions.h"
#include "protocol/generated/create_topics.h"
#include "protocol/generated/delete_topics.h"
#include "protocol/generated/describe_client_quotas.h"
#include "protocol/generated/describe_cluster.h"
#include "protocol/generated/describe_user_scram_credentials.h"
#include "protocol/generated/produce.h"
#include "tests/unit/handlers/fetch/fetch_helpers.h"

using namespace ciuickafka;
using namespace ciuickafka::broker;
using namespace ciuickafka::broker::quotas;
using protocol::ErrorCode;

namespace CK_UNITY_ID {
namespace {

const std::optional<std::string> kDefault = std::nullopt;

Entity client(std::optional<std::string> c) { return Entity{{kClientId, std::move(c)}}; }
Entity user(std::optional<std::string> u) { return Entity{{kUser, std::move(u)}}; }
Entity user_client(std::optional<std::string> u, std::optional<std::string> c) {
  return Entity{{kUser, std::move(u)}, {kClientId, std::move(c)}};
}
Entity ip(std::optional<std::string> a) { return Entity{{kIp, std::move(a)}}; }

Alteration set(Entity e, std::string key, double v) { return Alteration{std::move(e), {Op{std::move(key), v}}}; }

Error one(Table* t, Alteration a) {
  auto r = alter(t, {std::move(a)});
  REQUIRE(r.size() == 1);
  return r[0].error;
}

}  // namespace

TEST_CASE("quota model: AlterClientQuotas validation as Kafka 3.9's controller") {
  Table t;
  SECTION("a valid set and remove") {
    REQUIRE(one(&t, set(client("c1"), kProducerByteRate, 1024)).ok());
    REQUIRE(one(&t, set(client("c1"), kConsumerByteRate, 2048)).ok());
    CHECK(t.at(client("c1")) == Values{{kConsumerByteRate, 2048}, {kProducerByteRate, 1024}});
    REQUIRE(one(&t, Alteration{client("c1"), {Op{kProducerByteRate, std::nullopt}}}).ok());
    CHECK(t.at(client("c1")) == Values{{kConsumerByteRate, 2048}});
    // Removing the last key drops the entity; removing an unset key is a no-op.
    REQUIRE(one(&t, Alteration{client("c1"), {Op{kConsumerByteRate, std::nullopt}, Op{"nope", std::nullopt}}}).ok());
    CHECK(t.empty());
  }
  SECTION("errors: INVALID_REQUEST for the entity, nothing of it applied") {
    struct Case {
      Alteration a;
      std::string message;
    };
    const std::vector<Case> cases = {
        {Alteration{Entity{}, {Op{kProducerByteRate, 1}}}, "Invalid empty client quota entity"},
        {Alteration{Entity{{"group", std::string("g")}}, {Op{kProducerByteRate, 1}}},
         "Unhandled client quota entity type: group"},
        {Alteration{client(std::string()), {Op{kProducerByteRate, 1}}}, "Empty client-id not supported"},
        {Alteration{Entity{{kIp, std::string("1.2.3.4")}, {kUser, std::string("u")}}, {Op{kConnectionCreationRate, 1}}},
         "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"},
        // (a name with an empty label fails to resolve without asking a server)
        {Alteration{ip(std::string("a..b")), {Op{kConnectionCreationRate, 1}}},
         "a..b is not a valid IP or resolvable host."},
        {set(client("c"), "producer_rate", 1), "Invalid configuration key producer_rate"},
        {set(ip(std::string("1.2.3.4")), kProducerByteRate, 1), "Invalid configuration key producer_byte_rate"},
        {set(client("c"), kConnectionCreationRate, 1), "Invalid configuration key connection_creation_rate"},
        {set(client("c"), kProducerByteRate, 0), "Quota producer_byte_rate must be greater than 0"},
        {set(client("c"), kProducerByteRate, -5), "Quota producer_byte_rate must be greater than 0"},
        {set(client("c"), kProducerByteRate, 10.5), "producer_byte_rate cannot be a fractional value."},
        {set(ip(kDefault), kConnectionCreationRate, 3e9), "Proposed value for connection_creation_rate is too large for an INT."},
    };
    for (const Case& c : cases) {
      Table before;
      REQUIRE(one(&before, set(client("keep"), kProducerByteRate, 7)).ok());
      Table after = before;
      // A valid op beside the bad one is not applied either.
      Alteration a = c.a;
      if (!a.entity.empty() && a.entity.count(kIp) == 0) a.ops.insert(a.ops.begin(), Op{kConsumerByteRate, 99});
      const Error e = one(&after, a);
      INFO(c.message);
      CHECK(e.code == ErrorCode::INVALID_REQUEST);
      CHECK(e.message == c.message);
      CHECK(after == before);
    }
  }
  SECTION("a double key takes a fraction; an integral one within 1e-6 of an integer passes") {
    REQUIRE(one(&t, set(user("u"), kRequestPercentage, 12.5)).ok());
    REQUIRE(one(&t, set(user("u"), kProducerByteRate, 1000.0000001)).ok());
    CHECK(t.at(user("u")).at(kRequestPercentage) == 12.5);
  }
  SECTION("a key twice, or an entity twice: 'Ignoring duplicate entity' (the first entry of the entity stands)") {
    auto r = alter(&t, {Alteration{client("a"), {Op{kProducerByteRate, 1}, Op{kProducerByteRate, 2}}}});
    REQUIRE(r.size() == 1);
    CHECK(r[0].error.message == "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=a})");
    CHECK(t.empty());
    r = alter(&t, {set(client("b"), kProducerByteRate, 5), set(client("c"), kProducerByteRate, 6),
                   set(client("b"), kProducerByteRate, 9)});
    REQUIRE(r.size() == 2);
    CHECK(r[0].entity == client("b"));
    CHECK(r[0].error.message == "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=b})");
    CHECK(r[1].error.ok());
    CHECK(t.at(client("b")).at(kProducerByteRate) == 5);
    CHECK(t.at(client("c")).at(kProducerByteRate) == 6);
  }
  SECTION("ip entities: a literal address, the default, or a name that resolves") {
    CHECK(one(&t, set(ip(std::string("10.1.2.3")), kConnectionCreationRate, 5)).ok());
    CHECK(one(&t, set(ip(std::string("::1")), kConnectionCreationRate, 5)).ok());
    CHECK(one(&t, set(ip(kDefault), kConnectionCreationRate, 5)).ok());
    CHECK(one(&t, set(ip(std::string("localhost")), kConnectionCreationRate, 5)).ok());
    REQUIRE(one(&t, set(ip(std::string("10.1.2.4")), kConnectionCreationRate, 7)).ok());
    REQUIRE(one(&t, set(ip(std::string("::0:2")), kConnectionCreationRate, 8)).ok());
    const IpRates rates = resolve_ip_rates(t);
    CHECK(find_ip(rates, "10.1.2.3") == 5.0);
    CHECK(find_ip(rates, "10.1.2.4") == 7.0);
    CHECK(find_ip(rates, "::2") == 8.0);  // canonical text
    CHECK(find_ip(rates, "10.9.9.9") == 5.0);  // the default
    // A host name counts for the addresses it resolves to.
    CHECK(rates.by_address.count("127.0.0.1") == 1);
    CHECK(canonical_address("::0001") == "::1");
    CHECK_FALSE(canonical_address("localhost"));
  }
}

TEST_CASE("quota model: DescribeClientQuotas filters as Kafka's ClientQuotasImage") {
  Table t;
  for (const Entity& e : {user("u1"), user(kDefault), client("c1"), client(kDefault), user_client("u1", "c1"),
                          user_client("u1", kDefault), ip(std::string("1.2.3.4"))})
    REQUIRE(one(&t, e.count(kIp) ? set(e, kConnectionCreationRate, 1) : set(e, kProducerByteRate, 1)).ok());
  auto entities = [&](std::vector<FilterComponent> f, bool strict) {
    std::vector<std::pair<Entity, Values>> out;
    const Error e = describe(t, f, strict, &out);
    INFO(e.message);
    REQUIRE(e.ok());
    std::vector<Entity> es;
    for (auto& [entity, v] : out) es.push_back(entity);
    return es;
  };
  using V = std::vector<Entity>;
  CHECK(entities({}, false).size() == 7);
  CHECK(entities({}, true).empty());
  CHECK(entities({{kUser, kMatchExact, std::string("u1")}}, true) == V{user("u1")});
  CHECK(entities({{kUser, kMatchExact, std::string("u1")}}, false) ==
        V{user_client("u1", kDefault), user_client("u1", "c1"), user("u1")});
  CHECK(entities({{kUser, kMatchDefault, std::nullopt}}, true) == V{user(kDefault)});
  CHECK(entities({{kClientId, kMatchAny, std::nullopt}}, true) == V{client(kDefault), client("c1")});
  CHECK(entities({{kUser, kMatchExact, std::string("u1")}, {kClientId, kMatchDefault, std::nullopt}}, true) ==
        V{user_client("u1", kDefault)});
  CHECK(entities({{kIp, kMatchAny, std::nullopt}}, false) == V{ip(std::string("1.2.3.4"))});
  CHECK(entities({{kUser, kMatchExact, std::string("nobody")}}, false).empty());

  auto error = [&](std::vector<FilterComponent> f) {
    std::vector<std::pair<Entity, Values>> out;
    return describe(t, f, false, &out);
  };
  CHECK(error({{"", kMatchAny, std::nullopt}}).message == "Invalid empty entity type.");
  CHECK(error({{kUser, kMatchAny, std::nullopt}, {kUser, kMatchDefault, std::nullopt}}).message ==
        "Entity type user cannot appear more than once in the filter.");
  CHECK(error({{"group", kMatchAny, std::nullopt}}).code == ErrorCode::UNSUPPORTED_VERSION);
  CHECK(error({{kUser, kMatchExact, std::nullopt}}).message ==
        "Request specified MATCH_TYPE_EXACT, but set match string to null.");
  CHECK(error({{kUser, kMatchDefault, std::string("x")}}).message ==
        "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.");
  CHECK(error({{kUser, kMatchAny, std::string("x")}}).message ==
        "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.");
  CHECK(error({{kUser, 7, std::nullopt}}).message == "Unknown match type 7");
  CHECK(error({{kIp, kMatchAny, std::nullopt}, {kClientId, kMatchAny, std::nullopt}}).code ==
        ErrorCode::INVALID_REQUEST);
}

TEST_CASE("quota model: Kafka's precedence, and which clients share a rate") {
  Table t;
  auto limit = [&](const std::string& u, const std::string& c) -> std::optional<Match> {
    return find(t, kProducerByteRate, u, c);
  };
  CHECK_FALSE(limit("u", "c"));
  // Added from the least to the most specific: each one wins from then on.
  struct Step {
    Entity entity;
    double value;
    std::string user_tag, client_tag;
  };
  const std::vector<Step> steps = {
      {client(kDefault), 8, "", "c"},          {client("c"), 7, "", "c"},
      {user(kDefault), 6, "u", ""},            {user_client(kDefault, kDefault), 5, "u", "c"},
      {user_client(kDefault, "c"), 4, "u", "c"}, {user("u"), 3, "u", ""},
      {user_client("u", kDefault), 2, "u", "c"}, {user_client("u", "c"), 1, "u", "c"},
  };
  for (const Step& s : steps) {
    REQUIRE(one(&t, set(s.entity, kProducerByteRate, s.value)).ok());
    auto m = limit("u", "c");
    INFO(to_string(s.entity));
    REQUIRE(m);
    CHECK(m->limit == s.value);
    CHECK(m->user_tag == s.user_tag);
    CHECK(m->client_tag == s.client_tag);
  }
  // Another key is looked up on its own: none set.
  CHECK_FALSE(find(t, kConsumerByteRate, "u", "c"));
  // Another client of user u: {u, default client} (2) applies, per client id.
  auto other = limit("u", "d");
  REQUIRE(other);
  CHECK(other->limit == 2);
  CHECK(other->client_tag == "d");
}

TEST_CASE("quota model: ZooKeeper names as Kafka's Sanitizer and entity paths") {
  CHECK(sanitize("alice") == "alice");
  CHECK(sanitize("a b*c/d+e~f.g-h_i") == "a%20b%2Ac%2Fd%2Be~f.g-h_i");
  CHECK(sanitize("Ü") == "%C3%9C");
  CHECK(desanitize("a%20b%2Ac%2Fd%2Be") == "a b*c/d+e");
  CHECK(desanitize("a+b") == "a b");
  CHECK_FALSE(desanitize("bad%2"));
  CHECK_FALSE(desanitize("bad%zz"));
  CHECK(zk_entity_path(user_client("a/b", kDefault)) == "users/a%2Fb/clients/<default>");
  CHECK(zk_entity_path(client("c1")) == "clients/c1");
  CHECK(zk_entity_path(ip(kDefault)) == "ips/<default>");
  CHECK_FALSE(zk_entity_path(Entity{{kIp, kDefault}, {kUser, kDefault}}));
  for (const Entity& e : {user_client("a/b", kDefault), user(kDefault), client("x y"), ip(std::string("::1"))}) {
    auto back = entity_of_zk_path(*zk_entity_path(e));
    REQUIRE(back);
    CHECK(*back == e);
  }
  CHECK_FALSE(entity_of_zk_path("brokers/1"));
  CHECK_FALSE(entity_of_zk_path("users/u/topics/t"));
  CHECK(value_text(KeyType::kLong, 1024) == "1024");
  CHECK(value_text(KeyType::kDouble, 200) == "200.0");
  CHECK(value_text(KeyType::kDouble, 12.5) == "12.5");
  CHECK(value_text(KeyType::kDouble, 0.000001) == "1e-06");
}

namespace quota_handlers {

using test::FetchFixture;

protocol::AlterClientQuotasResponse alter_quota(test::BrokerFixture& f, const std::string& type,
                                                std::optional<std::string> name, const std::string& key,
                                                std::optional<double> value, bool validate_only = false) {
  protocol::AlterClientQuotasRequest req;
  auto& e = req.entries.emplace_back();
  auto& d = e.entity.emplace_back();
  d.entity_type = type;
  d.entity_name = std::move(name);
  auto& op = e.ops.emplace_back();
  op.key = key;
  op.value = value.value_or(0);
  op.remove = !value.has_value();
  req.validate_only = validate_only;
  return f.call<protocol::AlterClientQuotasResponse>(req, 1);
}

std::vector<protocol::DescribeClientQuotasResponse::EntryData> describe_all(test::BrokerFixture& f) {
  protocol::DescribeClientQuotasRequest req;
  req.strict = false;
  auto resp = f.call<protocol::DescribeClientQuotasResponse>(req, 1);
  REQUIRE(resp.error_code == 0);
  REQUIRE(resp.entries);
  return *resp.entries;
}

TEST_CASE("AlterClientQuotas and DescribeClientQuotas on a single node: persisted, validate_only, refused values") {
  FetchFixture f;
  CHECK(describe_all(f).empty());
  CHECK_FALSE(f.broker().service<ClientQuotas>().enabled());

  auto r = alter_quota(f, kClientId, std::string("c1"), kProducerByteRate, 1024, true);
  REQUIRE(r.entries.size() == 1);
  CHECK(r.entries[0].error_code == 0);
  CHECK_FALSE(r.entries[0].error_message.has_value());
  CHECK(describe_all(f).empty());  // validate_only changed nothing

  r = alter_quota(f, kClientId, std::string("c1"), kProducerByteRate, 1024);
  CHECK(r.entries[0].error_code == 0);
  REQUIRE(r.entries[0].entity.size() == 1);
  CHECK(r.entries[0].entity[0].entity_type == kClientId);
  CHECK(r.entries[0].entity[0].entity_name == "c1");
  r = alter_quota(f, kUser, std::nullopt, kConsumerByteRate, 4096);
  CHECK(r.entries[0].error_code == 0);
  CHECK(f.broker().service<ClientQuotas>().enabled());

  r = alter_quota(f, kClientId, std::string("c1"), kProducerByteRate, -1);
  CHECK(r.entries[0].error_code == protocol::to_wire(ErrorCode::INVALID_REQUEST));
  CHECK(r.entries[0].error_message == "Quota producer_byte_rate must be greater than 0");

  auto check_state = [&] {
    auto entries = describe_all(f);
    REQUIRE(entries.size() == 2);
    // client-id c1 first (the table's order), then the default user (a null name).
    CHECK(entries[0].entity.size() == 1);
    CHECK(entries[0].entity[0].entity_name == "c1");
    REQUIRE(entries[0].values.size() == 1);
    CHECK(entries[0].values[0].key == kProducerByteRate);
    CHECK(entries[0].values[0].value == 1024);
    CHECK(entries[1].entity[0].entity_type == kUser);
    CHECK_FALSE(entries[1].entity[0].entity_name.has_value());
    CHECK(entries[1].values[0].value == 4096);
  };
  check_state();
  f.restart();
  check_state();
  CHECK(f.broker().service<ClientQuotas>().enabled());

  // A bad filter: the error and null entries.
  protocol::DescribeClientQuotasRequest bad;
  auto& comp = bad.components.emplace_back();
  comp.entity_type = kUser;
  comp.match_type = kMatchExact;
  comp.match = std::nullopt;
  auto resp = f.call<protocol::DescribeClientQuotasResponse>(bad, 0);
  CHECK(resp.error_code == protocol::to_wire(ErrorCode::INVALID_REQUEST));
  CHECK_FALSE(resp.entries.has_value());

  // Removing both leaves nothing, also after a restart.
  alter_quota(f, kClientId, std::string("c1"), kProducerByteRate, std::nullopt);
  alter_quota(f, kUser, std::nullopt, kConsumerByteRate, std::nullopt);
  CHECK(describe_all(f).empty());
  f.restart();
  CHECK(describe_all(f).empty());
}

TEST_CASE("DescribeUserScramCredentials: no user has credentials here") {
  FetchFixture f;
  protocol::DescribeUserScramCredentialsRequest req;
  auto resp = f.call<protocol::DescribeUserScramCredentialsResponse>(req, 0);
  CHECK(resp.error_code == 0);
  CHECK(resp.results.empty());
  req.users.emplace();
  for (const char* name : {"alice", "bob", "alice"}) req.users->emplace_back().name = name;
  resp = f.call<protocol::DescribeUserScramCredentialsResponse>(req, 0);
  REQUIRE(resp.results.size() == 2);
  CHECK(resp.results[0].user == "alice");
  CHECK(resp.results[0].error_code == protocol::to_wire(ErrorCode::DUPLICATE_RESOURCE));
  CHECK(resp.results[1].user == "bob");
  CHECK(resp.results[1].error_code == protocol::to_wire(ErrorCode::RESOURCE_NOT_FOUND));
  CHECK(resp.results[1].error_message == "Attempt to describe a user credential that does not exist: bob");
}

// quota.window.num=2 of 10 s: a rate is bytes / 10 s until 10 s have passed,
// so the test's own pace does not move it.
class QuotaFixture : public test::BrokerFixture {
 public:
  QuotaFixture()
      : BrokerFixture({"ciuic.metrics.listener=127.0.0.1:0", "quota.window.num=2", "quota.window.size.seconds=10"}) {}
};

protocol::ProduceResponse produce(test::BrokerFixture& f, const std::string& topic, const std::vector<uint8_t>& batch) {
  protocol::ProduceRequest req;
  req.acks = 1;
  req.timeout_ms = 5000;
  auto& t = req.topic_data.emplace_back();
  t.name = topic;
  auto& p = t.partition_data.emplace_back();
  p.index = 0;
  p.records = protocol::Records(std::span<const uint8_t>(batch));
  return f.call<protocol::ProduceResponse>(req, 9);
}

TEST_CASE("producer_byte_rate: over the quota the answer carries the throttle, and the records are kept") {
  QuotaFixture f;
  test::create_topic(f, "q");
  // No quota: never throttled.
  for (int i = 0; i < 3; ++i) CHECK(produce(f, "q", test::make_batch(10, 200)).throttle_time_ms == 0);
  CHECK(f.broker().service<ClientQuotas>().throttled(Kind::kProduce) == 0);
  // The fixture's client id is "fixture": 200 B/s, 2,000 B in the first 10 s.
  REQUIRE(alter_quota(f, kClientId, std::string("fixture"), kProducerByteRate, 200).entries[0].error_code == 0);
  auto r = produce(f, "q", test::make_batch(2, 100));  // well under 2,000 bytes
  CHECK(r.throttle_time_ms == 0);
  CHECK(r.responses[0].partition_responses[0].error_code == 0);
  // ~2,300 more bytes: over. throttle = (rate - 200) / 200 * 10 s.
  const std::vector<uint8_t> big = test::make_batch(10, 200);
  r = produce(f, "q", big);
  CHECK(r.responses[0].partition_responses[0].error_code == 0);
  CHECK(r.responses[0].partition_responses[0].base_offset == 32);
  CHECK(r.throttle_time_ms > 0);
  CHECK(r.throttle_time_ms <= 10000);
  auto& q = f.broker().service<ClientQuotas>();
  CHECK(q.throttled(Kind::kProduce) == 1);
  CHECK(q.throttled_ms(Kind::kProduce) == static_cast<uint64_t>(r.throttle_time_ms));
  // Another client id has no quota (no default set).
  CHECK(q.record(Kind::kProduce, "someone-else", 1e9, steady_ms()) == 0);
  // The records of the throttled request are in the log.
  auto topic = f.broker().topics().find("q");
  REQUIRE(topic);
  CHECK(topic->partitions[0]->log().next_offset() == 42);
}

TEST_CASE("consumer_byte_rate: a fetch capped at one window's bytes, then throttled and answered empty") {
  QuotaFixture f;
  auto topic = test::create_topic(f, "q");
  Partition& p = *topic->partitions[0];
  std::vector<uint64_t> sizes;
  for (int i = 0; i < 20; ++i) {
    auto b = test::make_batch(1, 200);
    sizes.push_back(b.size());
    test::append(p, std::move(b));
  }
  // 100 B/s over 2 windows of 10 s: one fetch may take 100 * 1 * 10 = 1,000 bytes.
  REQUIRE(alter_quota(f, kClientId, std::string("fixture"), kConsumerByteRate, 100).entries[0].error_code == 0);
  auto& q = f.broker().service<ClientQuotas>();
  CHECK(q.max_value_in_window(Kind::kFetch, "fixture") == 1000);

  auto req = test::fetch_request("q", {{0, 0}});
  auto r = f.call<protocol::FetchResponse>(req, 12);
  CHECK(r.throttle_time_ms == 0);
  REQUIRE(r.responses.size() == 1);
  const uint64_t first = r.responses[0].partitions[0].records.bytes.size();
  CHECK(first > 0);
  CHECK(first <= 1000);  // the cap, not the request's 50 MiB
  // The next fetch puts the client over: no records, the throttle time.
  int64_t next = 0;
  {
    uint64_t n = 0;
    for (uint64_t s : sizes) {
      if (n + s > first) break;
      n += s;
      ++next;
    }
    REQUIRE(n == first);
  }
  req = test::fetch_request("q", {{0, next}});
  r = f.call<protocol::FetchResponse>(req, 12);
  CHECK(r.throttle_time_ms > 0);
  CHECK(r.responses.empty());
  CHECK(r.error_code == 0);
  CHECK(q.throttled(Kind::kFetch) == 1);
  // A throttled fetch's bytes were taken back: a fetch of nothing (past
  // the end) is not throttled, the rate is still only the first fetch's.
  req = test::fetch_request("q", {{0, 20}});
  r = f.call<protocol::FetchResponse>(req, 12);
  CHECK(r.throttle_time_ms == 0);
  REQUIRE(r.responses.size() == 1);
}

TEST_CASE("request_percentage: a client over it is throttled (at most one window), a fetch answered empty") {
  QuotaFixture f;
  auto topic = test::create_topic(f, "q");
  test::append(*topic->partitions[0], test::make_batch(3, 100));
  protocol::DescribeClusterRequest dc;
  dc.endpoint_type = 1;
  // No quota: not throttled.
  CHECK(f.call<protocol::DescribeClusterResponse>(dc, 1).throttle_time_ms == 0);
  // 1e-9 percent of a thread: any request's time puts the client over;
  // the throttle is capped at one window (10 s here), as Kafka's.
  REQUIRE(alter_quota(f, kClientId, std::string("fixture"), kRequestPercentage, 1e-9).entries[0].error_code == 0);
  auto& q = f.broker().client_quotas();
  const uint64_t before = q.throttled(Kind::kRequest);
  auto r = f.call<protocol::DescribeClusterResponse>(dc, 1);
  CHECK(r.throttle_time_ms == 10000);
  CHECK(r.error_code == 0);
  CHECK(r.brokers.size() == 1);  // answered in full
  CHECK(q.throttled(Kind::kRequest) == before + 1);
  // A fetch over it is answered empty (as Kafka's), counted once.
  auto fr = f.call<protocol::FetchResponse>(test::fetch_request("q", {{0, 0}}), 12);
  CHECK(fr.throttle_time_ms == 10000);
  CHECK(fr.responses.empty());
  CHECK(q.throttled(Kind::kRequest) == before + 2);
  CHECK(q.throttled(Kind::kFetch) == 0);
  // Another client id has no quota.
  CHECK(q.record(Kind::kRequest, "someone-else", 1e6, steady_ms()) == 0);
  // Removed: no throttle from then on (the rate is still measured only
  // where a quota applies).
  REQUIRE(alter_quota(f, kClientId, std::string("fixture"), kRequestPercentage, std::nullopt).entries[0].error_code ==
          0);
  CHECK(f.call<protocol::DescribeClusterResponse>(dc, 1).throttle_time_ms == 0);
}


// controller.quota.window.num=2 of 10 s: a controller_mutation_rate of 1
// per second fills a bucket of 20 partitions, and refills 1 per second, so
// the test's own pace moves it by little against the margins below (a
// few seconds of a slow sanitizer run still leave every check true).
class MutationQuotaFixture : public test::BrokerFixture {
 public:
  MutationQuotaFixture()
      : BrokerFixture({"controller.quota.window.num=2", "controller.quota.window.size.seconds=10"}) {}
};

protocol::CreateTopicsResponse create_topics(test::BrokerFixture& f, const std::vector<std::pair<std::string, int>>& ts,
                                             int16_t version, bool validate_only = false) {
  protocol::CreateTopicsRequest req;
  req.timeout_ms = 5000;
  req.validate_only = validate_only;
  for (const auto& [name, parts] : ts) {
    auto& t = req.topics.emplace_back();
    t.name = name;
    t.num_partitions = parts;
    t.replication_factor = 1;
  }
  return f.call<protocol::CreateTopicsResponse>(req, version);
}

protocol::CreatePartitionsResponse grow(test::BrokerFixture& f, const std::string& name, int count, int16_t version) {
  protocol::CreatePartitionsRequest req;
  req.timeout_ms = 5000;
  auto& t = req.topics.emplace_back();
  t.name = name;
  t.count = count;
  t.assignments = std::nullopt;
  return f.call<protocol::CreatePartitionsResponse>(req, version);
}

protocol::DeleteTopicsResponse delete_topic(test::BrokerFixture& f, const std::string& name, int16_t version) {
  protocol::DeleteTopicsRequest req;
  req.timeout_ms = 5000;
  req.topic_names.push_back(name);
  return f.call<protocol::DeleteTopicsResponse>(req, version);
}

size_t partitions_of(test::BrokerFixture& f, const std::string& name) {
  auto t = f.broker().topics().find(name);
  return t ? t->partitions.size() : 0;
}

TEST_CASE("controller_mutation_rate: strict from CreateTopics v6 - CreatePartitions v3 - DeleteTopics v5 - permissive before") {
  MutationQuotaFixture f;
  auto& q = f.broker().client_quotas();
  const auto throttled = protocol::to_wire(ErrorCode::THROTTLING_QUOTA_EXCEEDED);
  // No quota: nothing measured.
  CHECK_FALSE(q.mutation_quota("fixture", true).active());
  auto r = create_topics(f, {{"m0", 40}}, 6);
  CHECK(r.topics[0].error_code == 0);
  CHECK(r.throttle_time_ms == 0);

  REQUIRE(alter_quota(f, kClientId, std::string("fixture"), kControllerMutationRate, 1.0).entries[0].error_code == 0);
  CHECK(q.mutation_quota("fixture", true).active());
  CHECK_FALSE(q.mutation_quota("someone-else", true).active());  // no default set
  // validate_only records nothing.
  r = create_topics(f, {{"v", 100}}, 6, true);
  CHECK(r.topics[0].error_code == 0);
  CHECK(r.throttle_time_ms == 0);

  // The bucket holds 20: m1 (15) passes (5 left), m2 (30) passes because the
  // bucket was not below zero (-25 left), m3 is refused; m4's own error
  // comes first (checked before the quota); strict: no throttle until a
  // topic is refused, then the time to reach zero again (25 s less the
  // time since).
  r = create_topics(f, {{"m1", 15}, {"m2", 30}, {"m3", 1}, {"m4", 0}}, 6);
  REQUIRE(r.topics.size() == 4);
  CHECK(r.topics[0].error_code == 0);
  CHECK(r.topics[1].error_code == 0);
  CHECK(r.topics[2].error_code == throttled);
  CHECK(r.topics[2].error_message == "The throttling quota has been exceeded.");
  CHECK(r.topics[3].error_code == protocol::to_wire(ErrorCode::INVALID_PARTITIONS));
  CHECK(r.throttle_time_ms > 10000);
  CHECK(r.throttle_time_ms <= 25000);
  CHECK(partitions_of(f, "m1") == 15);
  CHECK(partitions_of(f, "m2") == 30);
  CHECK_FALSE(f.broker().topics().find("m3"));
  CHECK(q.throttled(Kind::kMutation) == 1);
  CHECK(q.throttled_ms(Kind::kMutation) == static_cast<uint64_t>(r.throttle_time_ms));

  // Strict CreatePartitions and DeleteTopics: refused, nothing changed; an
  // unknown topic still gets its own error.
  auto g = grow(f, "m1", 16, 3);
  CHECK(g.results[0].error_code == throttled);
  CHECK(g.throttle_time_ms > 10000);
  CHECK(partitions_of(f, "m1") == 15);
  CHECK(grow(f, "nope", 2, 3).results[0].error_code == protocol::to_wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  auto d = delete_topic(f, "m2", 5);
  CHECK(d.responses[0].error_code == throttled);
  CHECK(d.responses[0].error_message == "The throttling quota has been exceeded.");
  CHECK(partitions_of(f, "m2") == 30);
  CHECK(q.throttled(Kind::kMutation) == 3);

  // Permissive versions (older clients do not know the error): done, and
  // throttled by the bucket's debt after each record.
  g = grow(f, "m1", 16, 2);
  CHECK(g.results[0].error_code == 0);
  CHECK(partitions_of(f, "m1") == 16);
  CHECK(g.throttle_time_ms > 10000);  // -26 after it (less the test's time)
  d = delete_topic(f, "m2", 4);
  CHECK(d.responses[0].error_code == 0);
  CHECK_FALSE(f.broker().topics().find("m2"));
  CHECK(d.throttle_time_ms > 40000);  // -56
  CHECK(d.throttle_time_ms <= 56000);
  r = create_topics(f, {{"m5", 2}}, 5);
  CHECK(r.topics[0].error_code == 0);
  CHECK(r.throttle_time_ms > 40000);  // -58

  // Removed: no quota, nothing refused or throttled.
  REQUIRE(alter_quota(f, kClientId, std::string("fixture"), kControllerMutationRate, std::nullopt).entries[0]
              .error_code == 0);
  r = create_topics(f, {{"m6", 3}}, 7);
  CHECK(r.topics[0].error_code == 0);
  CHECK(r.throttle_time_ms == 0);
  CHECK(delete_topic(f, "m6", 5).responses[0].error_code == 0);
}

TEST_CASE("request_percentage counts the time a request's work held an I/O pool or admin worker thread") {
  QuotaFixture f;  // two windows of 10 s
  REQUIRE(alter_quota(f, kClientId, std::nullopt, kRequestPercentage, 1.0).entries[0].error_code == 0);
  using Clock = std::chrono::steady_clock;
  // A Metadata request that returned from its handler at once (no network
  // thread time), its work then 500 ms on a worker: 50 units over 10 s is 5
  // percent, over the quota of 1, so the answer is throttled (one window).
  auto request = [&](const std::string& client, int64_t worker_ns, bool running) {
    RequestContext ctx;
    ctx.broker = &f.broker();
    ctx.header.request_api_key = 3;
    ctx.header.request_api_version = 12;
    ctx.header.client_id = client;
    const Clock::time_point now = Clock::now();
    ctx.dispatched = now;
    ctx.handler_returned = std::make_shared<std::atomic<Clock::rep>>(now.time_since_epoch().count());
    ctx.worker_span = std::make_shared<WorkerSpan>();
    if (running) {
      ctx.worker_span->running_since.store((now - std::chrono::nanoseconds(worker_ns)).time_since_epoch().count());
    } else {
      ctx.worker_span->done_ns.store(worker_ns);
    }
    return request_quota_throttle(ctx);
  };
  CHECK(request("idle", 0, false) == 0);
  CHECK(request("pooled", 500'000'000, false) == 10000);
  // A task still running when the answer is made counts up to then.
  CHECK(request("running", 500'000'000, true) == 10000);
  // WorkerTimer: a running task counts up to the time asked about; once it
  // ends, its time is in the finished total and no longer grows.
  WorkerSpan span;
  {
    WorkerTimer t(&span);
    CHECK(span.running_since.load() != 0);
    CHECK(span.ns(Clock::now() + std::chrono::seconds(1)) >= 1'000'000'000);
  }
  CHECK(span.running_since.load() == 0);
  const int64_t finished = span.done_ns.load();
  CHECK(span.ns(Clock::now() + std::chrono::hours(1)) == finished);
  CHECK(finished < 1'000'000'000);
}

}  // namespace quota_handlers

}  // namespace CK_UNITY_ID
