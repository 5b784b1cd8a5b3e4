// broker/server/dispatch.h: from a request frame to its handler.
//
// dispatch_frame() decodes the request header, finds the handler the
// registry holds for the API key and calls it. What Kafka does with
// requests it cannot serve, we do too:
//   - a frame whose header does not decode, or an API key we do not
//     implement: the connection is closed (Kafka cannot parse it either);
//   - ApiVersions at a version we lack: answered at v0 with
//     UNSUPPORTED_VERSION and our version ranges (KIP-511: clients then
//     retry at a version we support);
//   - another API at a version outside what we advertise: closed, as Kafka
//     does (a client only sends versions from our ApiVersions answer).
// It also wraps respond() to count requests, errors and latency per API.
//
// Thread-safety: called on the connection's thread; handlers may respond
// from any thread.
#pragma once

#include "broker/server/request_context.h"

namespace ciuickafka::broker {

// ctx has everything but header/header_version/body, which this fills in.
void dispatch_frame(RequestContext ctx);

}  // namespace ciuickafka::broker
