// replication/controller/controller_requests.cc: ControlledShutdown and
// ElectLeaders on the controller's event thread, and the auto leader
// rebalance timer (Kafka's KafkaController.processControlledShutdown,
// processReplicaLeaderElection and processAutoPreferredReplicaLeaderElection
// in ZooKeeper mode). See controller.h.
//
// Every request is queued with generation 0 so it is always answered:
// NOT_CONTROLLER when the activation it was queued under has ended.
#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>

#include "protocol/error_code.h"
#include "replication/controller/controller.h"
#include "replication/controller/controller_log.h"
#include "replication/controller/leader_rebalance.h"

namespace ciuickafka::replication::controller {

using protocol::ControlledShutdownRequest;
using protocol::ControlledShutdownResponse;
using protocol::ElectLeadersRequest;
using protocol::ElectLeadersResponse;
using protocol::ErrorCode;
using protocol::to_wire;

namespace {

constexpr int8_t kPreferred = 0;
constexpr int8_t kUnclean = 1;

struct PartitionAnswer {
  ErrorCode code = ErrorCode::NONE;
  std::optional<std::string> message;  // null when there is no error, as Kafka
};

ElectLeadersResponse build_elect_response(const std::map<TopicPartitionRef, PartitionAnswer>& answers,
                                          ErrorCode top) {
  ElectLeadersResponse resp;
  resp.error_code = to_wire(top);
  std::map<std::string, ElectLeadersResponse::ReplicaElectionResult> by_topic;
  for (const auto& [tp, a] : answers) {
    auto& t = by_topic[tp.topic];
    t.topic = tp.topic;
    ElectLeadersResponse::PartitionResult pr;
    pr.partition_id = tp.partition;
    pr.error_code = to_wire(a.code);
    pr.error_message = a.message;
    t.partition_result.push_back(std::move(pr));
  }
  for (auto& [name, t] : by_topic) resp.replica_election_results.push_back(std::move(t));
  return resp;
}

std::vector<TopicPartitionRef> requested_partitions(const ElectLeadersRequest& req) {
  std::vector<TopicPartitionRef> out;
  if (!req.topic_partitions) return out;
  for (const auto& t : *req.topic_partitions)
    for (int32_t p : t.partitions) out.push_back({t.topic, p});
  return out;
}

}  // namespace

// ---- ControlledShutdown

void Controller::controlled_shutdown(ControlledShutdownRequest request, int16_t /*version*/,
                                     ControlledShutdownDone done) {
  const uint64_t gen = generation_.load();
  auto not_controller = [](const ControlledShutdownDone& d) {
    ControlledShutdownResponse resp;
    resp.error_code = to_wire(ErrorCode::NOT_CONTROLLER);
    d(std::move(resp));
  };
  if (!active_.load()) return not_controller(done);
  auto shared_done = std::make_shared<ControlledShutdownDone>(std::move(done));
  const bool queued = post(0, [this, gen, req = std::move(request), shared_done] {
    do_controlled_shutdown(gen, req, *shared_done);
  });
  if (!queued) not_controller(*shared_done);
}

void Controller::do_controlled_shutdown(uint64_t gen, const ControlledShutdownRequest& req,
                                        const ControlledShutdownDone& done) {
  ControlledShutdownResponse resp;
  if (!current(gen) || !psm_ || psm_->resigned()) {
    resp.error_code = to_wire(ErrorCode::NOT_CONTROLLER);
    done(std::move(resp));
    return;
  }
  log_info("controlled shutdown of broker " + std::to_string(req.broker_id) + " (epoch " +
           std::to_string(req.broker_epoch) + ")");
  StepResult result;
  const bool ran = run_step(gen, "controlled shutdown", [&] {
    result = psm_->controlled_shutdown(req.broker_id, req.broker_epoch);
    return result;
  });
  if (!ran) {
    resp.error_code = to_wire(ErrorCode::NOT_CONTROLLER);
  } else {
    resp.error_code = result.error_code;
    if (result.error_code != 0) log_info("controlled shutdown refused: " + result.message);
    for (const auto& tp : result.remaining) {
      ControlledShutdownResponse::RemainingPartition rp;
      rp.topic_name = tp.topic;
      rp.partition_index = tp.partition;
      resp.remaining_partitions.push_back(std::move(rp));
    }
    if (result.error_code == 0)
      log_info("broker " + std::to_string(req.broker_id) + " shutting down; " +
               std::to_string(result.remaining.size()) + " partition(s) remaining");
  }
  done(std::move(resp));
}

// ---- ElectLeaders

void Controller::elect_leaders(ElectLeadersRequest request, int16_t version, ElectLeadersDone done) {
  const uint64_t gen = generation_.load();
  auto not_controller = [](const ElectLeadersRequest& req, const ElectLeadersDone& d) {
    std::map<TopicPartitionRef, PartitionAnswer> answers;
    for (const auto& tp : requested_partitions(req)) answers[tp] = {ErrorCode::NOT_CONTROLLER, std::nullopt};
    d(build_elect_response(answers, req.topic_partitions ? ErrorCode::NONE : ErrorCode::NOT_CONTROLLER));
  };
  if (!active_.load()) return not_controller(request, done);
  auto shared = std::make_shared<std::pair<ElectLeadersRequest, ElectLeadersDone>>(std::move(request), std::move(done));
  const bool queued = post(0, [this, gen, version, shared] { do_elect_leaders(gen, shared->first, version, shared->second); });
  if (!queued) not_controller(shared->first, shared->second);
}

void Controller::do_elect_leaders(uint64_t gen, const ElectLeadersRequest& req, int16_t version,
                                  const ElectLeadersDone& done) {
  std::map<TopicPartitionRef, PartitionAnswer> answers;
  const bool active = current(gen) && psm_ && !psm_->resigned();
  std::vector<TopicPartitionRef> partitions = requested_partitions(req);
  if (!req.topic_partitions && active)
    for (const auto& [topic, t] : psm_->context().topics)
      for (const auto& [p, info] : t.partitions) partitions.push_back({topic, p});
  const int8_t type = version >= 1 ? req.election_type : kPreferred;
  if (!active || (type != kPreferred && type != kUnclean)) {
    const ErrorCode code = active ? ErrorCode::INVALID_REQUEST : ErrorCode::NOT_CONTROLLER;
    for (const auto& tp : partitions) answers[tp] = {code, std::nullopt};
    done(build_elect_response(answers, req.topic_partitions && !active ? ErrorCode::NONE : code));
    return;
  }
  // Classify as Kafka does before electing.
  const ControllerContext& ctx = psm_->context();
  const BrokerSet online = ctx.online();
  std::vector<TopicPartitionRef> electable;
  for (const auto& tp : partitions) {
    const PartitionInfo* info = ctx.partition(tp.topic, tp.partition);
    if (!info) {
      answers[tp] = {ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."};
      continue;
    }
    if (ctx.topics.at(tp.topic).deleting || ctx.pending_deletions.contains(tp.topic)) {
      answers[tp] = {ErrorCode::INVALID_TOPIC_EXCEPTION, "The topic is being deleted"};
      continue;
    }
    const int32_t leader = info->state ? info->state->leader : kNoLeader;
    const bool valid = type == kPreferred ? (!info->assignment.replicas.empty() &&
                                             leader == info->assignment.replicas.front())
                                          : (leader >= 0 && online.contains(leader));
    if (valid) {
      answers[tp] = {ErrorCode::ELECTION_NOT_NEEDED, std::nullopt};
      continue;
    }
    electable.push_back(tp);
  }
  if (!electable.empty()) {
    StepResult result;
    const bool ran = run_step(gen, type == kPreferred ? "preferred election" : "unclean election", [&] {
      result = type == kPreferred ? psm_->elect_preferred(electable) : psm_->elect_unclean(electable);
      return result;
    });
    for (const auto& tp : electable) answers[tp] = {ran ? ErrorCode::NONE : ErrorCode::NOT_CONTROLLER, std::nullopt};
    if (ran) {
      const ErrorCode failed_code =
          type == kPreferred ? ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE : ErrorCode::ELIGIBLE_LEADERS_NOT_AVAILABLE;
      for (const auto& f : result.failed) answers[f.partition] = {failed_code, f.reason};
      for (const auto& tp : result.not_needed) answers[tp] = {ErrorCode::ELECTION_NOT_NEEDED, std::nullopt};
    }
  }
  done(build_elect_response(answers, ErrorCode::NONE));
}

// ---- auto leader rebalance

void Controller::check_leader_rebalance() {
  const uint64_t gen = generation_.load();
  if (!active_.load()) return;
  post(gen, [this, gen] { do_rebalance(gen); });
}

void Controller::do_rebalance(uint64_t gen) {
  if (!current(gen) || !psm_ || psm_->resigned()) return;
  std::vector<TopicPartitionRef> candidates =
      rebalance_candidates(psm_->context(), options_.leader_imbalance_per_broker_percentage);
  if (candidates.empty()) return;
  log_info("auto leader rebalance: preferred election for " + std::to_string(candidates.size()) + " partition(s)");
  rebalance_elections_ += candidates.size();
  run_step(gen, "auto leader rebalance", [&] { return psm_->elect_preferred(candidates); });
}

void Controller::run_timer() {
  std::unique_lock<std::mutex> lock(timer_mu_);
  while (!timer_stopping_) {
    const auto deadline = next_rebalance_;
    if (deadline == std::chrono::steady_clock::time_point::max()) {
      timer_cv_.wait(lock, [&] { return timer_stopping_ || next_rebalance_ != deadline; });
      continue;
    }
    if (timer_cv_.wait_until(lock, deadline, [&] { return timer_stopping_ || next_rebalance_ != deadline; }))
      continue;  // stopping, or re-armed by an activation
    next_rebalance_ = std::chrono::steady_clock::now() +
                      std::chrono::milliseconds(std::max<int64_t>(options_.leader_imbalance_check_interval_ms, 1));
    lock.unlock();
    if (active_.load()) check_leader_rebalance();
    lock.lock();
  }
}

}  // namespace ciuickafka::replication::controller
