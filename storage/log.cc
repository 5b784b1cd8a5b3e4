// storage/log.cc: opening, appending to and reading one partition's log.
#include "storage/log.h"

#include <algorithm>

#include "protocol/records/record_batch.h"
#include "storage/file_names.h"

namespace ciuickafka::storage {

namespace {

// Checks the records of an append; fills the batches' spans.
Status validate_records(std::span<uint8_t> records, std::vector<std::span<uint8_t>>* batches) {
  if (records.empty()) return Status::corrupt_records("an append holds no record batch");
  protocol::BatchSplitter split(std::span<const uint8_t>(records.data(), records.size()));
  protocol::RecordsEntry e;
  protocol::SplitStatus st;
  while ((st = split.next(&e)) == protocol::SplitStatus::kEntry) {
    if (e.magic != protocol::batch_v2::kMagic)
      return Status::corrupt_records("record batch with magic " + std::to_string(e.magic) +
                                     " (only v2 is stored)");
    auto view = protocol::RecordBatchView::parse_and_validate(e.bytes);
    if (!view)
      return Status::corrupt_records(std::string("record batch: ") + std::string(to_string(view.error())));
    if (view->last_offset_delta() < 0)
      return Status::corrupt_records("record batch with a negative lastOffsetDelta");
    const size_t at = static_cast<size_t>(e.bytes.data() - records.data());
    batches->push_back(records.subspan(at, e.bytes.size()));
  }
  if (st != protocol::SplitStatus::kEnd)
    return Status::corrupt_records(st == protocol::SplitStatus::kPartial
                                       ? "the last record batch is truncated"
                                       : "record batch framing is corrupt");
  return Status::ok();
}

}  // namespace

Log::Log(io::FileSystem& fs, std::string dir, LogConfig config)
    : fs_(fs), dir_(std::move(dir)), config_(config), segments_(std::make_shared<const SegmentList>()) {}

Log::~Log() {
  if (!closed_) (void)close();
}

Result<std::unique_ptr<Log>> Log::open(io::FileSystem& fs, const std::string& dir, const LogConfig& config,
                                       int64_t now_ms) {
  CK_RETURN_IF_ERROR(fs.create_dir(dir));
  std::unique_ptr<Log> log(new Log(fs, dir, config));
  Status s = log->load(now_ms);
  if (!s.is_ok()) {
    log->closed_ = true;  // nothing to flush: the segments opened so far just close
    return s;
  }
  return log;
}

Status Log::load(int64_t now_ms) {
  auto names = fs_.list_dir(dir_);
  if (!names) return names.status();
  std::vector<int64_t> bases;
  for (const auto& n : *names) {
    auto f = parse_segment_file_name(n);
    // .deleted/.cleaned/.swap files and stray indexes: retention and
    // compaction recovery (later) deal with them.
    if (f && f->kind == SegmentFileKind::kLog && f->suffix == FileSuffix::kNone)
      bases.push_back(f->base_offset);
  }
  std::sort(bases.begin(), bases.end());
  auto list = std::make_shared<SegmentList>();
  if (bases.empty()) {
    auto s = Segment::open(fs_, dir_, 0, config_.segment, true);
    if (!s) return s.status();
    CK_RETURN_IF_ERROR(fs_.sync_dir(dir_));
    list->push_back(std::move(s).value());
  }
  for (size_t i = 0; i < bases.size(); ++i) {
    auto s = Segment::open(fs_, dir_, bases[i], config_.segment, false);
    if (!s) return s.status();
    if (i + 1 == bases.size()) {
      auto cut = (*s)->recover();
      if (!cut) return cut.status();
      truncated_bytes_ = *cut;
    } else {
      CK_RETURN_IF_ERROR((*s)->check_indexes());
    }
    list->push_back(std::move(s).value());
  }
  Segment& active = *list->back();
  next_offset_ = active.next_offset().value_or(active.base_offset());
  active.start_roll_clock(now_ms);
  log_start_offset_.store(list->front()->base_offset(), std::memory_order_release);
  publish_segments(std::move(list));
  log_end_offset_.store(next_offset_, std::memory_order_release);
  return Status::ok();
}

void Log::publish_segments(std::shared_ptr<const SegmentList> list) {
  std::lock_guard lock(segments_mu_);
  segments_ = std::move(list);
}

std::shared_ptr<const Log::SegmentList> Log::segments() const {
  std::lock_guard lock(segments_mu_);
  return segments_;
}

Status Log::roll(int64_t new_base_offset) {
  auto current = segments();
  CK_RETURN_IF_ERROR(current->back()->on_become_inactive());
  auto s = Segment::open(fs_, dir_, new_base_offset, config_.segment, true);
  if (!s) return s.status();
  CK_RETURN_IF_ERROR(fs_.sync_dir(dir_));
  auto next = std::make_shared<SegmentList>(*current);
  next->push_back(std::move(s).value());
  publish_segments(std::move(next));
  return Status::ok();
}

Result<AppendResult> Log::append(std::span<uint8_t> records, int32_t leader_epoch, int64_t now_ms) {
  std::vector<std::span<uint8_t>> batches;
  CK_RETURN_IF_ERROR(validate_records(records, &batches));

  std::lock_guard lock(append_mu_);
  if (closed_) return Status::invalid_argument(dir_ + ": append to a closed log");
  AppendResult r;
  r.base_offset = next_offset_;
  int64_t next = next_offset_;
  for (auto b : batches) {
    auto view = protocol::RecordBatchView::parse(b);
    const int32_t delta = view->last_offset_delta();
    if (next > std::numeric_limits<int64_t>::max() - delta - 1)
      return Status::invalid_argument(dir_ + ": offsets would overflow");
    protocol::set_base_offset(b, next);
    protocol::set_partition_leader_epoch(b, leader_epoch);
    if (view->max_timestamp() > r.max_timestamp) {
      r.max_timestamp = view->max_timestamp();
      r.offset_of_max_timestamp = next + delta;
    }
    next += int64_t{delta} + 1;
  }
  r.last_offset = next - 1;
  if (r.max_timestamp == kNoTimestamp) r.offset_of_max_timestamp = r.base_offset;

  auto list = segments();
  if (list->back()->should_roll(records.size(), r.last_offset, now_ms)) {
    CK_RETURN_IF_ERROR(roll(r.base_offset));
    list = segments();
  }
  Segment& active = *list->back();
  if (active.should_roll(records.size(), r.last_offset, now_ms))  // still: offsets span more than 2^31
    return Status::invalid_argument(dir_ + ": one append spans more offsets than a segment can index");
  auto pos = active.append(records, now_ms);
  if (!pos) return pos.status();
  r.segment_base_offset = active.base_offset();
  r.position = *pos;
  next_offset_ = next;
  log_end_offset_.store(next, std::memory_order_release);  // readers may now see the batches
  return r;
}

Result<ReadResult> Log::read(int64_t offset, uint64_t max_bytes, int64_t upper_bound_offset) const {
  const int64_t end = log_end_offset();
  const int64_t start = log_start_offset();
  if (offset < start || offset > end)
    return Status::offset_out_of_range(dir_ + ": offset " + std::to_string(offset) + " is outside [" +
                                       std::to_string(start) + ", " + std::to_string(end) + "]");
  const int64_t upper = std::min(upper_bound_offset, end);
  ReadResult out;
  if (offset >= upper) return out;
  auto list = segments();
  // The segment holding offset: the last one whose base is <= it.
  auto it =
      std::upper_bound(list->begin(), list->end(), offset,
                       [](int64_t o, const std::shared_ptr<Segment>& s) { return o < s->base_offset(); });
  if (it != list->begin()) --it;
  for (; it != list->end(); ++it) {
    const Segment& seg = **it;
    const int64_t from = std::max(offset, seg.base_offset());
    if (from >= upper) break;
    const uint64_t size = seg.published_size();
    auto slice = seg.read(from, max_bytes - out.bytes, size, upper, out.slices.empty());
    if (!slice) return slice.status();
    if (!*slice) {
      if (!out.slices.empty()) break;  // the budget is spent
      continue;                        // an empty segment: try the next one
    }
    out.bytes += (*slice)->length;
    const bool reached_end = (*slice)->position + (*slice)->length == size;
    out.slices.push_back(LogSlice{*it, **slice});
    if (!reached_end || out.bytes >= max_bytes) break;
  }
  return out;
}

Status Log::flush() {
  std::lock_guard lock(append_mu_);
  if (closed_) return Status::invalid_argument(dir_ + ": flush of a closed log");
  return segments()->back()->flush();
}

Status Log::close() {
  std::lock_guard lock(append_mu_);
  if (closed_) return Status::ok();
  closed_ = true;
  // The files themselves close with their Segment, when the last reference
  // (a reader's slice included) goes: closing them here could let a reader
  // sendfile from a descriptor number the kernel has already reused.
  auto list = segments();
  return list->empty() ? Status::ok() : list->back()->flush();
}

Result<std::vector<uint8_t>> read_slices(const ReadResult& r) {
  std::vector<uint8_t> out(r.bytes);
  size_t at = 0;
  for (const auto& s : r.slices) {
    auto n = s.slice.file->read_at(s.slice.position, std::span<uint8_t>(out.data() + at, s.slice.length));
    if (!n) return n.status();
    if (*n != s.slice.length) return Status::corruption(s.slice.file->path() + ": short read of a slice");
    at += s.slice.length;
  }
  return out;
}

}  // namespace ciuickafka::storage
