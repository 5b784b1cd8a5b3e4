// storage/compact_swap.cc: renames of the compaction swap and their recovery.
#include "storage/compact_swap.h"

#include "storage/file_names.h"

namespace ciuickafka::storage {

namespace {

constexpr SegmentFileKind kKinds[] = {SegmentFileKind::kIndex, SegmentFileKind::kTimeIndex,
                                      SegmentFileKind::kLog};  // the .log last

std::string path(const std::string& dir, int64_t base, SegmentFileKind k, FileSuffix s = FileSuffix::kNone) {
  return dir + "/" + segment_file_name(base, k, s);
}

Status remove_if_present(io::FileSystem& fs, const std::string& p) {
  Status s = fs.remove_file(p);
  return s.code() == StatusCode::kNotFound ? Status::ok() : s;
}

}  // namespace

Status stopped_by_hook(SwapStep step) {
  return Status::invalid_argument("compaction stopped by a test hook at step " +
                                  std::to_string(static_cast<int>(step)));
}

Status promote_to_swap(io::FileSystem& fs, const std::string& dir, int64_t base) {
  for (auto k : kKinds)
    CK_RETURN_IF_ERROR(fs.rename(path(dir, base, k, FileSuffix::kCleaned), path(dir, base, k, FileSuffix::kSwap)));
  return fs.sync_dir(dir);
}

Status swap_in(io::FileSystem& fs, const std::string& dir, int64_t base, const SwapHook& hook) {
  for (auto k : kKinds) {
    Status s = fs.rename(path(dir, base, k), path(dir, base, k, FileSuffix::kDeleted));
    if (!s.is_ok() && s.code() != StatusCode::kNotFound) return s;
  }
  if (hook && !hook(SwapStep::kOldRenamed, base)) return stopped_by_hook(SwapStep::kOldRenamed);
  for (auto k : kKinds) CK_RETURN_IF_ERROR(fs.rename(path(dir, base, k, FileSuffix::kSwap), path(dir, base, k)));
  if (hook && !hook(SwapStep::kSwapRenamedFinal, base)) return stopped_by_hook(SwapStep::kSwapRenamedFinal);
  return Status::ok();
}

void remove_cleaner_files(io::FileSystem& fs, const std::string& dir, int64_t base) {
  for (auto k : kKinds)
    for (auto s : {FileSuffix::kCleaned, FileSuffix::kSwap}) (void)fs.remove_file(path(dir, base, k, s));
}

Result<std::set<int64_t>> recover_swap_files(io::FileSystem& fs, const std::string& dir) {
  auto names = fs.list_dir(dir);
  if (!names) return names.status();
  std::set<int64_t> swapped_logs, swapped_indexes;
  bool changed = false;
  for (const auto& n : *names) {
    auto f = parse_segment_file_name(n);
    if (!f) continue;
    if (f->suffix == FileSuffix::kCleaned) {
      CK_RETURN_IF_ERROR(remove_if_present(fs, dir + "/" + n));
      changed = true;
    } else if (f->suffix == FileSuffix::kSwap) {
      if (f->kind == SegmentFileKind::kLog) swapped_logs.insert(f->base_offset);
      if (f->kind == SegmentFileKind::kIndex || f->kind == SegmentFileKind::kTimeIndex)
        swapped_indexes.insert(f->base_offset);
    }
  }
  std::set<int64_t> out;
  for (int64_t base : swapped_logs) {
    // Step 2 completed: the swap segment is whole. Finish step 3.
    for (auto k : kKinds) {
      const std::string swap = path(dir, base, k, FileSuffix::kSwap);
      auto type = fs.file_type(swap);
      if (!type) return type.status();
      CK_RETURN_IF_ERROR(remove_if_present(fs, path(dir, base, k)));
      if (*type == io::FileType::kFile) CK_RETURN_IF_ERROR(fs.rename(swap, path(dir, base, k)));
    }
    out.insert(base);
    changed = true;
  }
  for (int64_t base : swapped_indexes) {
    if (swapped_logs.count(base)) continue;
    // The .log already has its final name; these indexes belong to it.
    for (auto k : {SegmentFileKind::kIndex, SegmentFileKind::kTimeIndex}) {
      const std::string swap = path(dir, base, k, FileSuffix::kSwap);
      auto swap_type = fs.file_type(swap);
      if (!swap_type) return swap_type.status();
      if (*swap_type != io::FileType::kFile) continue;
      auto final_type = fs.file_type(path(dir, base, k));
      if (!final_type) return final_type.status();
      if (*final_type == io::FileType::kMissing) {
        CK_RETURN_IF_ERROR(fs.rename(swap, path(dir, base, k)));
      } else {
        CK_RETURN_IF_ERROR(remove_if_present(fs, swap));
      }
    }
    out.insert(base);
    changed = true;
  }
  if (changed) CK_RETURN_IF_ERROR(fs.sync_dir(dir));
  return out;
}

}  // namespace ciuickafka::storage
