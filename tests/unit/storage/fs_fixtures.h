// tests/unit/storage/fs_fixtures.h: the three FileSystem implementations as
// test fixtures, so one test body runs against each (TEMPLATE_TEST_CASE).
//
// Where io_uring cannot be set up, the io_uring fixture prints why and ends
// the test process (tests/skip.h): a failure unless CK_ALLOW_SKIPS=1 lets
// ctest report "Skipped", never a pass. CK_TEST_REFUSE_IO_URING=1 makes it
// act as if io_uring were refused, to prove that rule.
#pragma once

#include <cstdlib>
#include <memory>
#include <string>

#include "storage/io/mem_file.h"
#include "storage/io/posix_file.h"
#include "storage/io/ring.h"
#include "storage/io/uring_file.h"
#include "temp_dir.h"
#include "tests/skip.h"

namespace ciuickafka::storage::test {

inline void require_io_uring() {
  if (const char* refuse = std::getenv("CK_TEST_REFUSE_IO_URING"); refuse && std::string(refuse) == "1")
    ciuickafka::test::skip_process("io_uring is unavailable here: refused by CK_TEST_REFUSE_IO_URING=1");
  auto ring = io::Ring::create(8);
  if (!ring)
    ciuickafka::test::skip_process(("io_uring is unavailable here: " + ring.status().to_string()).c_str());
}

struct PosixFs {
  TempDir dir;
  io::PosixFileSystem fs;
  std::string root() const { return dir.path(); }
};

struct UringFs {
  UringFs() { require_io_uring(); }
  TempDir dir;
  io::UringFileSystem fs;
  std::string root() const { return dir.path(); }
};

struct MemFs {
  MemFs() {
    if (!fs.create_dir("/t").is_ok()) std::abort();
  }
  io::MemFileSystem fs;
  std::string root() const { return "/t"; }
};

}  // namespace ciuickafka::storage::test
