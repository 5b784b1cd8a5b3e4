// tests/unit/handlers/groups/groups_test_util.h: helpers for the group
// tests: requests whose answers are held (JoinGroup, SyncGroup) sent
// without waiting, so that two members can be driven from one thread, and
// small builders for the common requests.
//
// Thread-safety: one test thread; answers may arrive from broker threads.
#pragma once

#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "broker/groups/coordinator.h"
#include "broker/server/dispatch.h"
#include "protocol/generated/api_keys.h"
#include "protocol/generated/headers.h"
#include "protocol/generated/join_group.h"
#include "protocol/generated/offset_commit.h"
#include "protocol/generated/offset_fetch.h"
#include "protocol/generated/sync_group.h"
#include "protocol/wire/reader.h"
#include "protocol/wire/writer.h"
#include "tests/unit/handlers/broker_fixture.h"

namespace ciuickafka::broker::test {

// A request in flight; get() waits for and decodes its answer.
template <class Resp>
class Pending {
 public:
  Pending(std::future<Response> f, int16_t api_key, int16_t version)
      : future_(std::move(f)), api_key_(api_key), version_(version) {}
  bool ready(int ms = 0) { return future_.wait_for(std::chrono::milliseconds(ms)) == std::future_status::ready; }
  Resp get(int timeout_ms = 10000) {
    if (!ready(timeout_ms)) throw std::runtime_error("no answer in time");
    Response r = future_.get();
    if (r.action != Response::Action::kSend) throw std::runtime_error("connection closed");
    protocol::Reader rd(r.bytes);
    rd.read_int32();
    protocol::ResponseHeader h;
    h.decode(rd, protocol::response_header_version(api_key_, version_));
    Resp resp;
    resp.decode(rd, version_);
    if (!rd.ok()) throw std::runtime_error("response does not decode");
    return resp;
  }

 private:
  std::future<Response> future_;
  int16_t api_key_;
  int16_t version_;
};

// Sends req through dispatch_frame without waiting for the answer, as if on
// connection connection_id (BrokerFixture::call uses 1).
template <class Resp, class Req>
Pending<Resp> send(BrokerFixture& f, const Req& req, int16_t version, const std::string& client_id = "tester",
                   uint64_t connection_id = 2) {
  protocol::Writer w;
  protocol::RequestHeader h;
  h.request_api_key = Req::kApiKey;
  h.request_api_version = version;
  h.correlation_id = 7;
  h.client_id = client_id;
  int16_t hv = protocol::request_header_version(Req::kApiKey, version);
  if (hv < 0) hv = 1;
  h.encode(w, hv);
  req.encode(w, version);
  const std::vector<uint8_t> bytes = w.release();
  auto frame = std::make_shared<FrameBytes>(bytes.begin(), bytes.end());
  auto promise = std::make_shared<std::promise<Response>>();
  auto fut = promise->get_future();
  RequestContext ctx;
  ctx.broker = &f.broker();
  ctx.frame = frame;
  ctx.executor = f.io().get_executor();
  ctx.listener = "PLAINTEXT";
  ctx.peer = "127.0.0.1:5555";
  ctx.connection_id = connection_id;
  ctx.received = std::chrono::steady_clock::now();
  ctx.respond = [promise](Response r) { promise->set_value(std::move(r)); };
  dispatch_frame(std::move(ctx));
  return Pending<Resp>(std::move(fut), Req::kApiKey, version);
}

inline groups::GroupCoordinator& coordinator(BrokerFixture& f) {
  auto& c = f.broker().service<groups::GroupCoordinator>();
  if (!c.wait_loaded(10000)) throw std::runtime_error("coordinator did not load");
  return c;
}

inline protocol::JoinGroupRequest join_request(const std::string& group, const std::string& member_id,
                                               int32_t session_ms = 10000, const std::string& protocol = "range",
                                               std::string metadata = "meta") {
  protocol::JoinGroupRequest j;
  j.group_id = group;
  j.session_timeout_ms = session_ms;
  j.rebalance_timeout_ms = session_ms;
  j.member_id = member_id;
  j.protocol_type = "consumer";
  protocol::JoinGroupRequest::JoinGroupRequestProtocol p;
  p.name = protocol;
  p.metadata.assign(metadata.begin(), metadata.end());
  j.protocols.push_back(p);
  return j;
}

inline protocol::OffsetCommitRequest commit_request(const std::string& group, const std::string& topic,
                                                    int32_t partition, int64_t offset,
                                                    std::optional<std::string> metadata = std::string("m")) {
  protocol::OffsetCommitRequest r;
  r.group_id = group;
  protocol::OffsetCommitRequest::OffsetCommitRequestTopic t;
  t.name = topic;
  protocol::OffsetCommitRequest::OffsetCommitRequestPartition p;
  p.partition_index = partition;
  p.committed_offset = offset;
  p.committed_metadata = std::move(metadata);
  t.partitions.push_back(p);
  r.topics.push_back(t);
  return r;
}

inline protocol::OffsetFetchRequest fetch_request(const std::string& group, const std::string& topic,
                                                  std::vector<int32_t> partitions) {
  protocol::OffsetFetchRequest r;
  r.group_id = group;
  protocol::OffsetFetchRequest::OffsetFetchRequestTopic t;
  t.name = topic;
  t.partition_indexes = std::move(partitions);
  r.topics = std::vector<protocol::OffsetFetchRequest::OffsetFetchRequestTopic>{t};
  return r;
}

}  // namespace ciuickafka::broker::test
