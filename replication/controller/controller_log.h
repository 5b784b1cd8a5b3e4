// replication/controller/controller_log.h: the controller's log lines
// (logger "controller", text prefixed "controller: ").
#pragma once

#include <string>

#include "metrics/log/log.h"

namespace ciuickafka::replication::controller {

inline void log_info(const std::string& what) { CK_LOG_INFO("controller", "controller: %s", what.c_str()); }
inline void log_warn(const std::string& what) { CK_LOG_WARN("controller", "controller: %s", what.c_str()); }

}  // namespace ciuickafka::replication::controller
