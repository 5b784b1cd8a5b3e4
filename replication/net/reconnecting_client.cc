// replication/net/reconnecting_client.cc: see reconnecting_client.h.
#include "replication/net/reconnecting_client.h"

#include <algorithm>

namespace ciuickafka::replication::net {

ReconnectingClient::ReconnectingClient(std::string host, uint16_t port, ClientOptions options,
                                       BackoffOptions backoff)
    : host_(std::move(host)), port_(port), options_(std::move(options)), backoff_(backoff) {
  if (!options_.interrupter) options_.interrupter = Interrupter::create(&init_error_);
}

void ReconnectingClient::close() {
  if (options_.interrupter) options_.interrupter->trigger();
}

void ReconnectingClient::note_failure() {
  current_backoff_ms_ = current_backoff_ms_ == 0
                            ? std::max<int32_t>(backoff_.backoff_ms, 0)
                            : std::min<int32_t>(current_backoff_ms_ * 2, backoff_.backoff_max_ms);
  retry_at_ = Clock::now() + std::chrono::milliseconds(current_backoff_ms_);
}

NetResult<BrokerClient*> ReconnectingClient::client() {
  if (!options_.interrupter) return NetError{NetErrorKind::kConnectFailed, init_error_};
  const std::string peer = host_ + ":" + std::to_string(port_);
  if (options_.interrupter->triggered()) return NetError{NetErrorKind::kClosed, peer + ": client closed"};
  if (client_ && client_->ok()) return client_.get();
  client_.reset();
  if (options_.interrupter->wait_until(retry_at_))
    return NetError{NetErrorKind::kClosed, peer + ": client closed"};
  NetResult<std::unique_ptr<BrokerClient>> c = BrokerClient::connect(host_, port_, options_);
  if (!c) {
    note_failure();
    return c.error();
  }
  client_ = std::move(c.value());
  current_backoff_ms_ = 0;
  ++connects_;
  return client_.get();
}

NetResult<RawResponse> ReconnectingClient::call_raw(int16_t api_key, int16_t version,
                                                    std::span<const uint8_t> body) {
  NetResult<BrokerClient*> c = client();
  if (!c) return c.error();
  NetResult<RawResponse> r = c.value()->call_raw(api_key, version, body);
  if (!r && !c.value()->ok()) note_failure();
  return r;
}

}  // namespace ciuickafka::replication::net
