// tests/skip.h: ending a test process that cannot run on this machine.
//
// A unit test that needs what the machine lacks (io_uring refused by the
// kernel or a sandbox, no java for a real ZooKeeper) calls skip_process().
// By default that is a FAILURE (exit 1): on CI's machine everything works,
// and a silent skip would leave the default append path untested. With
// CK_ALLOW_SKIPS=1 in the environment (a machine known to lack it) the
// process exits 77, which ctest reports as skipped (SKIP_RETURN_CODE,
// tests/CMakeLists.txt), never as passed. The whole process ends: run per
// executable, the cases after it do not run.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ciuickafka::test {

inline constexpr int kSkipExitCode = 77;

[[noreturn]] inline void skip_process(const char* why) {
  const char* allow = std::getenv("CK_ALLOW_SKIPS");
  const bool allowed = allow != nullptr && std::strcmp(allow, "1") == 0;
  std::printf("SKIPPED: %s\n", why);
  if (!allowed) std::printf("counted as a failure: CK_ALLOW_SKIPS=1 reports it as skipped\n");
  std::fflush(stdout);
  std::exit(allowed ? kSkipExitCode : 1);
}

}  // namespace ciuickafka::test
