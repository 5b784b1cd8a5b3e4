// storage/compact_swap.h: the files of a compaction swap, and recovery of
// a swap that a crash interrupted (Kafka's protocol; storage/FORMAT.md 6).
//
// Cleaning segment B (one old segment is replaced by exactly one cleaned
// segment with the same base offset; we never merge segments):
//   1. write B.log.cleaned, B.index.cleaned, B.timeindex.cleaned; fdatasync
//      all three, fsync the directory                        (cleaner)
//   2. rename the indexes, then the .log, from .cleaned to .swap; fsync the
//      directory                                             (promote_to_swap)
//   3. under the log's lock: rename the old B.log/.index/.timeindex to
//      .deleted, rename the .swap files (indexes, then .log) to their final
//      names, fsync the directory, publish the new segment list (Log)
//   4. unlink the .deleted files after file.delete.delay.ms  (Log)
// Recovery at open (recover_swap_files), before segments are listed:
//   * every `.cleaned` file is deleted: step 1 or 2 was cut short and the old
//     segment is intact;
//   * for every B.log.swap: the old B.log/.index/.timeindex (if still there)
//     are deleted and each B.*.swap is renamed to its final name: step 2
//     completed, so the swap segment is whole and durable. B is reported so
//     that the log rescans it and rebuilds its indexes;
//   * an index `.swap` without its `.log.swap` (the .log already renamed) is
//     renamed when the final index is missing and deleted otherwise; B is
//     reported too;
//   * `.deleted` files are left to the caller (the log deletes them).
//
// Thread-safety: free functions; the caller serialises work on one directory.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>

#include "storage/io/file.h"
#include "storage/status.h"

namespace ciuickafka::storage {

// Points of the swap at which a test hook may stop the work as a crash would.
enum class SwapStep {
  kCleanedWritten,   // step 1 done (.cleaned files durable)
  kSwapRenamed,      // step 2 done (.swap files durable)
  kOldRenamed,       // step 3: old files renamed to .deleted, .swap not yet final
  kSwapRenamedFinal, // step 3: .swap renamed to final names, directory not yet synced
};
// Returns false to stop at that step (the work then ends with kAborted-like
// status and no cleanup, exactly as a crash would leave it).
using SwapHook = std::function<bool(SwapStep step, int64_t base_offset)>;

// Step 2 for the segment at base.
Status promote_to_swap(io::FileSystem& fs, const std::string& dir, int64_t base);
// Step 3's renames (without the directory sync). hook may stop between them.
Status swap_in(io::FileSystem& fs, const std::string& dir, int64_t base, const SwapHook& hook);
// Removes whatever .cleaned and .swap files of base exist (a clean that gave up).
void remove_cleaner_files(io::FileSystem& fs, const std::string& dir, int64_t base);

// Recovery at open; returns the base offsets whose segments were swapped in
// (rescan them). Syncs the directory when it changed anything.
Result<std::set<int64_t>> recover_swap_files(io::FileSystem& fs, const std::string& dir);

// The error a hook's stop produces (tests recognise it by message).
Status stopped_by_hook(SwapStep step);

}  // namespace ciuickafka::storage
