// broker/cluster/controlled_shutdown.h: the broker side of a controlled
// shutdown (Kafka's KafkaServer.controlledShutdown in ZooKeeper mode).
//
// Before a SIGTERM'd broker in cluster mode stops its listeners and logs, it
// asks the current controller (from the cluster view: /controller and the
// controller's registration) to move its leaderships away, sending
// ControlledShutdown v3 (or the highest both know) with its broker epoch
// over a fresh inter-broker connection on the inter-broker listener. It
// tries up to controlled.shutdown.max.retries times; an attempt fails when
// no controller is known, the connection or request fails, the answer has
// an error (NOT_CONTROLLER, STALE_BROKER_EPOCH ...) or partitions remain; the
// next attempt comes controlled.shutdown.retry.backoff.ms later and looks the
// controller up again. The listeners keep serving meanwhile, so followers of
// the moving partitions keep fetching and the new leaders catch up.
//
// When no other broker is registered the step is skipped (nothing can take
// the leaderships; Kafka would retry until it gives up).
//
// Bounded: every attempt (connect, ApiVersions, the request) gets at most
// controller.socket.timeout.ms, and the whole step never runs past
// bound_ms() = max_retries * socket_timeout_ms + (max_retries - 1) *
// retry_backoff_ms (defaults: 3 * 30 s + 2 * 5 s = 100 s); the broker then
// stops anyway, as Kafka does.
//
// Thread-safety: run_controlled_shutdown blocks the calling thread; it reads
// the view through the given function only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "replication/membership.h"

namespace ciuickafka::broker {

struct ControlledShutdownSettings {
  int32_t broker_id = -1;
  int32_t max_retries = 3;            // controlled.shutdown.max.retries
  int64_t retry_backoff_ms = 5000;    // controlled.shutdown.retry.backoff.ms
  int32_t socket_timeout_ms = 30000;  // controller.socket.timeout.ms
  std::string listener = "PLAINTEXT";  // the inter-broker listener
  int64_t bound_ms() const;
};

struct ControlledShutdownReport {
  bool succeeded = false;  // the controller answered NONE with nothing remaining
  int32_t attempts = 0;
  int64_t elapsed_ms = 0;
  std::string last;  // what the last attempt got
};

using ViewFn = std::function<std::shared_ptr<const replication::ClusterView>()>;

ControlledShutdownReport run_controlled_shutdown(const ControlledShutdownSettings& settings, const ViewFn& view);

// After the move, before the listeners stop: asks every other live broker in
// the view (on the inter-broker listener) for the Metadata of `topics` until
// each names a leader other than this broker for all their partitions, or
// bound_ms passes; a broker is asked again every 10 ms. The controller sends
// the UpdateMetadata of the move to every broker at once, after it answered
// the ControlledShutdown: a client that loses its connection here asks
// another broker where the partitions went, and one asked before its
// UpdateMetadata arrived sends them back here. librdkafka 2.0 then waits on
// this dead broker for minutes (it asks again only while it is trying to
// connect to it). A broker that cannot be reached is not waited for (it
// answers no client either). Returns whether every broker answered so;
// *what says which one did not.
bool wait_others_routed_off(const ControlledShutdownSettings& settings, const replication::ClusterView& view,
                            const std::vector<std::string>& topics, int64_t bound_ms, std::string* what);

}  // namespace ciuickafka::broker
