// tests/unit/broker/test_hooks_test.cc: the test-only in-memory file system
// mode of the broker (broker/test_hooks.h, CK_TEST_HOOKS builds): its helpers,
// and a Broker on it through a power cut and a restart, as main.cc's
// power_cut() does it (without the network).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "broker/broker.h"
#include "broker/config/broker_config.h"
#include "broker/test_hooks.h"
#include "tests/unit/storage/log_test_util.h"
#include "tests/unit/storage/temp_dir.h"

namespace ck = ciuickafka;
using ck::broker::Broker;
using ck::storage::io::FileType;
using ck::storage::io::MemFileSystem;
using ck::storage::io::OpenMode;

namespace {

std::unique_ptr<Broker> open_broker(const std::string& dir) {
  ck::broker::config::ConfigInput in;
  in.overrides = {"listeners=PLAINTEXT://127.0.0.1:0", "log.dirs=" + dir};
  auto loaded = ck::broker::config::load_config(in);
  REQUIRE(loaded.is_ok());
  std::string err;
  auto b = Broker::open(std::move(loaded.value().config), &err);
  INFO(err);
  REQUIRE(b);
  return b;
}

}  // namespace

TEST_CASE("test hooks: create_dirs makes every missing parent", "[broker][test_hooks]") {
  MemFileSystem fs;
  REQUIRE(ck::broker::test_hooks::create_dirs(fs, "/a/b/c/").is_ok());
  CHECK(fs.file_type("/a").value() == FileType::kDirectory);
  CHECK(fs.file_type("/a/b").value() == FileType::kDirectory);
  CHECK(fs.file_type("/a/b/c").value() == FileType::kDirectory);
  REQUIRE(ck::broker::test_hooks::create_dirs(fs, "/a/b/c").is_ok());  // already there: fine
  REQUIRE(ck::broker::test_hooks::create_dirs(fs, "rel/x").is_ok());
  CHECK(fs.file_type("rel/x").value() == FileType::kDirectory);
}

TEST_CASE("test hooks: a borrowed file system is the same file system", "[broker][test_hooks]") {
  MemFileSystem fs;
  {
    auto b = ck::broker::test_hooks::borrow(fs);
    CHECK(std::string(b->name()) == "memory");
    REQUIRE(b->create_dir("/d").is_ok());
    auto f = b->open("/d/f", OpenMode::kCreate);
    REQUIRE(f.is_ok());
    const std::vector<uint8_t> data{1, 2, 3};
    REQUIRE(f.value()->append(data).is_ok());
  }  // the borrower goes, the file system stays
  CHECK(fs.contents("/d/f").value() == std::vector<uint8_t>{1, 2, 3});
}

TEST_CASE("test hooks: CK_TEST_MEMFS=1 keeps the broker's dirs in memory - a power cut keeps what was synced",
          "[broker][test_hooks]") {
  // Before the first memfs() call of this process (no other test makes one).
  REQUIRE(::setenv(ck::broker::test_hooks::kMemFsEnv, "1", 1) == 0);
  MemFileSystem* mem = ck::broker::test_hooks::memfs();
  REQUIRE(mem != nullptr);
  ck::storage::test::TempDir dir;

  auto b1 = open_broker(dir.path());
  const std::string cluster_id = b1->cluster_id();
  // meta.properties is in memory, not on the disk.
  CHECK(mem->file_type(dir.path() + "/meta.properties").value() == FileType::kFile);
  CHECK_FALSE(std::filesystem::exists(dir.path() + "/meta.properties"));

  REQUIRE(b1->topics().create("t", 1, 1, {}, false, Broker::now_ms()).error.ok());
  ck::storage::Log& log1 = b1->topics().partition("t", 0)->log();
  auto synced = ck::storage::test::make_batch(3, Broker::now_ms(), 10);
  REQUIRE(log1.append(synced, 0, Broker::now_ms()).is_ok());
  REQUIRE(log1.sync_data().is_ok());
  auto unsynced = ck::storage::test::make_batch(2, Broker::now_ms(), 10);
  REQUIRE(log1.append(unsynced, 0, Broker::now_ms()).is_ok());
  REQUIRE(log1.log_end_offset() == 5);

  // The cut: nothing the dying broker does on its way down is kept (its
  // shutdown reports the refused writes; no clean-shutdown marker).
  mem->power_off();
  CHECK_FALSE(b1->shutdown());
  b1.reset();
  mem->power_on();

  auto b2 = open_broker(dir.path());
  CHECK(b2->cluster_id() == cluster_id);
  CHECK(b2->logs().open_stats().dirs_clean == 0);  // recovered, as after a power loss
  REQUIRE(b2->topics().partition("t", 0) != nullptr);
  CHECK(b2->topics().partition("t", 0)->log().log_end_offset() == 3);
  // A clean stop after that is clean again.
  CHECK(b2->shutdown());
  b2.reset();
  auto b3 = open_broker(dir.path());
  CHECK(b3->logs().open_stats().dirs_clean == 1);
  CHECK(b3->topics().partition("t", 0)->log().log_end_offset() == 3);
  CHECK(b3->shutdown());
}

TEST_CASE("test hooks: CK_TEST_MEMFS_TORN keeps a repeatable random prefix of each unsynced tail",
          "[broker][test_hooks]") {
  std::string what;
  REQUIRE(::unsetenv(ck::broker::test_hooks::kTornEnv) == 0);
  CHECK_FALSE(ck::broker::test_hooks::power_cut_keep(1, &what));  // unset: nothing of the tail survives
  CHECK(what.empty());

  REQUIRE(::setenv(ck::broker::test_hooks::kTornEnv, "42", 1) == 0);
  auto a = ck::broker::test_hooks::power_cut_keep(1, &what);
  auto b = ck::broker::test_hooks::power_cut_keep(1, &what);
  REQUIRE(a);
  CHECK(what.find("CK_TEST_MEMFS_TORN=42") != std::string::npos);
  std::vector<size_t> ka, kb;
  for (int i = 0; i < 50; ++i) {
    ka.push_back(a("/d/f", 1000));
    kb.push_back(b("/d/f", 1000));
  }
  CHECK(ka == kb);  // same seed and cut: the same prefixes
  CHECK(*std::max_element(ka.begin(), ka.end()) <= 1000);
  CHECK(*std::max_element(ka.begin(), ka.end()) != *std::min_element(ka.begin(), ka.end()));
  // In a MemFileSystem's crash: a prefix of the unsynced tail, never more.
  MemFileSystem fs;
  REQUIRE(fs.create_dir("/d").is_ok());
  auto f = fs.open("/d/f", OpenMode::kCreate);
  REQUIRE(f.is_ok());
  REQUIRE(fs.sync_dir("/d").is_ok());
  const std::vector<uint8_t> synced(10, 's'), dirty(1000, 'd');
  REQUIRE(f.value()->append(synced).is_ok());
  REQUIRE(f.value()->sync().is_ok());
  REQUIRE(f.value()->append(dirty).is_ok());
  fs.power_off(ck::broker::test_hooks::power_cut_keep(2, &what));
  fs.power_on();
  const auto kept = fs.contents("/d/f").value();
  REQUIRE(kept.size() >= 10);
  REQUIRE(kept.size() <= 1010);
  CHECK(std::vector<uint8_t>(kept.begin(), kept.begin() + 10) == synced);
  REQUIRE(::unsetenv(ck::broker::test_hooks::kTornEnv) == 0);
}
