// storage/log_txn_index.cc: the Log's aborted-transaction index files (see
// log.h and txn_index.h).
#include <algorithm>
#include <set>

#include "storage/file_names.h"
#include "storage/log.h"

namespace ciuickafka::storage {

Status Log::append_aborted_txn(const TxnIndexEntry& e) {
  std::lock_guard lock(txn_index_mu_);
  auto list = segments();
  // The segment holding the marker: the last whose base is at or below it.
  const auto by_base = [](int64_t o, const std::shared_ptr<Segment>& s) { return o < s->base_offset(); };
  auto it = std::upper_bound(list->begin(), list->end(), e.last_offset, by_base);
  if (it == list->begin() || e.last_offset < log_start_offset()) return Status::ok();
  const int64_t base = (*std::prev(it))->base_offset();
  const std::string path = dir_ + "/" + segment_file_name(base, SegmentFileKind::kTxnIndex);
  auto tail = txn_index_tails_.find(base);
  if (tail == txn_index_tails_.end()) {
    auto entries = read_txn_index(fs_, path);
    if (!entries) return entries.status();
    TxnIndexTail t;
    t.count = entries->size();
    if (!entries->empty()) t.last_offset = entries->back().last_offset;
    tail = txn_index_tails_.emplace(base, t).first;
  }
  if (e.last_offset <= tail->second.last_offset)
    return Status::invalid_argument(path + ": aborted transaction at " + std::to_string(e.last_offset) +
                                    " is not after the last entry's " + std::to_string(tail->second.last_offset));
  const bool created = tail->second.count == 0;
  Status s = write_txn_index_entry(fs_, path, tail->second.count, e);
  if (!s.is_ok()) {
    txn_index_tails_.erase(tail);  // what the file holds now is unknown: read it again
    return s;
  }
  ++tail->second.count;
  tail->second.last_offset = e.last_offset;
  if (std::find(txn_index_unsynced_.begin(), txn_index_unsynced_.end(), path) == txn_index_unsynced_.end())
    txn_index_unsynced_.push_back(path);
  txn_index_dir_unsynced_ |= created;
  return Status::ok();
}

Result<std::vector<TxnIndexEntry>> Log::aborted_txns_below(int64_t end) const {
  std::lock_guard lock(txn_index_mu_);
  // Few segments have a .txnindex: one listing finds them, rather than an
  // open attempt per segment.
  auto names = fs_.list_dir(dir_);
  if (!names) return names.status();
  std::set<int64_t> indexed;
  for (const auto& n : *names) {
    auto f = parse_segment_file_name(n);
    if (f && f->kind == SegmentFileKind::kTxnIndex && f->suffix == FileSuffix::kNone) indexed.insert(f->base_offset);
  }
  std::vector<TxnIndexEntry> out;
  for (const auto& seg : *segments()) {
    if (seg->base_offset() >= end) break;
    if (!indexed.contains(seg->base_offset())) continue;
    auto entries = read_txn_index(fs_, dir_ + "/" + segment_file_name(seg->base_offset(), SegmentFileKind::kTxnIndex));
    if (!entries) return entries.status();
    for (const auto& e : *entries) {
      // A file whose segment was cut and rebuilt may repeat or precede
      // what came before it: keep the list strictly increasing.
      if (e.last_offset >= end || (!out.empty() && e.last_offset <= out.back().last_offset)) continue;
      out.push_back(e);
    }
  }
  return out;
}

Status Log::truncate_aborted_txns(int64_t offset) {
  std::lock_guard lock(txn_index_mu_);
  auto list = segments();
  for (auto it = list->rbegin(); it != list->rend(); ++it) {
    bool changed = false;
    const std::string path = dir_ + "/" + segment_file_name((*it)->base_offset(), SegmentFileKind::kTxnIndex);
    txn_index_tails_.erase((*it)->base_offset());
    CK_RETURN_IF_ERROR(truncate_txn_index(fs_, path, offset, &changed));
    // Segments wholly below offset hold no entry at or past it (an entry
    // lives with its marker); the one holding offset is the last to look at.
    if ((*it)->base_offset() <= offset) break;
  }
  return Status::ok();
}

Status Log::sync_aborted_txns() {
  std::vector<std::string> paths;
  bool dir = false;
  {
    std::lock_guard lock(txn_index_mu_);
    paths.swap(txn_index_unsynced_);
    std::swap(dir, txn_index_dir_unsynced_);
  }
  Status result;
  for (const auto& p : paths) {
    auto f = fs_.open(p, io::OpenMode::kReadWrite);
    if (!f) {
      if (f.status().code() == StatusCode::kNotFound) continue;  // retired or truncated away meanwhile
      result = f.status();
      continue;
    }
    Status s = (*f)->sync();
    (void)(*f)->close();
    if (!s.is_ok()) result = s;
  }
  if (dir) {
    Status s = fs_.sync_dir(dir_);
    if (!s.is_ok()) result = s;
  }
  if (!result.is_ok()) {
    // Not durable: the next call tries again.
    std::lock_guard lock(txn_index_mu_);
    for (auto& p : paths) txn_index_unsynced_.push_back(std::move(p));
    txn_index_dir_unsynced_ |= dir;
  }
  return result;
}

Status Log::remove_producer_snapshots_above(int64_t offset) {
  auto names = fs_.list_dir(dir_);
  if (!names) return names.status();
  bool removed = false;
  for (const auto& n : *names) {
    auto f = parse_segment_file_name(n);
    if (!f || f->kind != SegmentFileKind::kProducerSnapshot || f->base_offset <= offset) continue;
    Status s = fs_.remove_file(dir_ + "/" + n);
    if (!s.is_ok() && s.code() != StatusCode::kNotFound) return s;
    removed = true;
  }
  return removed ? fs_.sync_dir(dir_) : Status::ok();
}

}  // namespace ciuickafka::storage
