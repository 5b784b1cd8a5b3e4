// broker/test_hooks.h: test-only broker modes, compiled into test builds only.
//
// This file and test_hooks.cc exist in a build only when CMake's
// CK_TEST_HOOKS is ON (the default for Debug and sanitizer builds, OFF for
// Release and RelWithDebInfo: the production image has none of it). The
// code that consults them (broker.cc, main.cc) is inside #ifdef
// CK_TEST_HOOKS, a definition CMake gives those files alone.
//
// CK_TEST_MEMFS=1 in the broker's environment: every file the broker's
// storage persists (the logs, their indexes and checkpoints, topic
// metadata, meta.properties, the clean-shutdown marker) lives on one
// in-memory crash-model file system (storage/io/mem_file.h) instead of the
// disk, and SIGUSR2 cuts the power: main.cc stops serving abruptly,
// MemFileSystem::power_off() keeps only what a completed sync covered, the
// dying broker's shutdown fails harmlessly (every call is refused), then a
// new Broker starts in the same process on what survived, with recovery as
// after a real power loss (CK_TEST_MEMFS_TORN: see power_cut_keep).
// tests/integration/test_power_cut.py drives it.
// The log dirs' lock files (dir_lock.h) stay on the disk: they guard the
// directories, whichever file system holds their contents.
//
// Thread-safety: memfs() may be called from any thread.
#pragma once

#include <memory>
#include <string>

#include "storage/io/file.h"
#include "storage/io/mem_file.h"

namespace ciuickafka::broker::test_hooks {

// The environment variable that selects the in-memory file system.
inline constexpr char kMemFsEnv[] = "CK_TEST_MEMFS";

// The process's in-memory file system when CK_TEST_MEMFS=1, made on the
// first call and kept until exit (it outlives every Broker that uses it);
// null otherwise.
storage::io::MemFileSystem* memfs();

// A FileSystem that forwards every call to fs without owning it, for a
// Broker (which owns its file system) over the process's memfs().
std::unique_ptr<storage::io::FileSystem> borrow(storage::io::FileSystem& fs);

// CK_TEST_MEMFS_TORN=SEED as well: what a power cut keeps of each file's
// unsynced tail, a prefix of pseudo-random length (from SEED and the cut's
// number, so a run can be repeated), as a disk that wrote part of its cache
// back on its own would; its description in *what. Unset: nothing of the
// tail survives (a null function), *what empty.
inline constexpr char kTornEnv[] = "CK_TEST_MEMFS_TORN";
// CK_TEST_MEMFS_SYNC_BPS=N as well: a slow disk, each fdatasync taking the
// bytes it syncs / N seconds (storage::io::MemFileSystem::set_sync_bandwidth).
inline constexpr char kSyncBandwidthEnv[] = "CK_TEST_MEMFS_SYNC_BPS";
// CK_TEST_MEMFS_SYNC_US=N as well: every file and directory sync first takes
// N microseconds (storage::io::MemFileSystem::set_sync_latency_us).
inline constexpr char kSyncLatencyEnv[] = "CK_TEST_MEMFS_SYNC_US";
// CK_TEST_MEMFS_READ_BPS=N as well: reads take the bytes they read / N
// seconds (storage::io::MemFileSystem::set_read_bandwidth).
inline constexpr char kReadBandwidthEnv[] = "CK_TEST_MEMFS_READ_BPS";
storage::io::MemFileSystem::KeepFn power_cut_keep(int cut, std::string* what);

// Creates dir and its missing parents on fs.
storage::Status create_dirs(storage::io::FileSystem& fs, const std::string& dir);

}  // namespace ciuickafka::broker::test_hooks
