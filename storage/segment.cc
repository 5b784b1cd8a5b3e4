// storage/segment.cc: append, lookup, read and recovery of one segment.
#include "storage/segment.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

#include "protocol/records/legacy.h"
#include "protocol/records/record_batch.h"
#include "storage/file_names.h"
#include "storage/page_cache.h"

namespace ciuickafka::storage {

namespace v2 = protocol::batch_v2;

namespace {

int64_t load_offset(const uint8_t* p) { return static_cast<int64_t>(load_be64(p)); }
int32_t load_int32(const uint8_t* p) { return static_cast<int32_t>(load_be32(p)); }

std::string at(const std::string& path, uint64_t position) {
  return path + " at position " + std::to_string(position);
}

}  // namespace

Segment::Segment(int64_t base, SegmentConfig config, std::unique_ptr<LazyFile> log, OffsetIndex oi,
                 TimeIndex ti, uint64_t size)
    : base_offset_(base),
      config_(config),
      path_(log->path()),
      log_(std::move(log)),
      offset_index_(std::move(oi)),
      time_index_(std::move(ti)),
      size_(size),
      reserved_to_(size),
      published_size_(size),
      offset_of_max_timestamp_(base) {
  // A segment opened without recovery: its largest timestamp is the time
  // index's last entry (exact for a segment that rolled normally).
  if (time_index_.entries() > 0) {
    auto last = time_index_.last_entry();
    max_timestamp_ = last.timestamp;
    offset_of_max_timestamp_ = last.offset;
  }
}

Result<std::unique_ptr<Segment>> Segment::open(io::FileSystem& fs, const std::string& dir,
                                               int64_t base_offset, const SegmentConfig& config,
                                               bool create) {
  if (config.segment_bytes > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
    return Status::invalid_argument("segment.bytes " + std::to_string(config.segment_bytes) +
                                    " is above 2^31 - 1");
  const auto name = [&](SegmentFileKind k) { return dir + "/" + segment_file_name(base_offset, k); };
  auto log = fs.open(name(SegmentFileKind::kLog),
                     create ? io::OpenMode::kCreateExclusive : io::OpenMode::kReadWrite);
  if (!log) return log.status();
  auto size = (*log)->size();
  if (!size) return size.status();
  if (*size > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
    return Status::corruption(name(SegmentFileKind::kLog) + " is larger than 2^31 - 1 bytes");
  auto oi = OffsetIndex::open(fs, name(SegmentFileKind::kIndex), base_offset, config.max_index_bytes);
  if (!oi) return oi.status();
  auto ti = TimeIndex::open(fs, name(SegmentFileKind::kTimeIndex), base_offset, config.max_index_bytes);
  if (!ti) return ti.status();
  if (create) {  // index files left by an older segment at this base are stale
    oi->clear();
    ti->clear();
    if (config.preallocate) CK_RETURN_IF_ERROR((*log)->preallocate(0, config.segment_bytes));
  }
  const bool preallocated = create && config.preallocate;
  FdCache& cache = config.fd_cache != nullptr ? *config.fd_cache : FdCache::process_default();
  auto lazy = std::make_unique<LazyFile>(fs, cache, std::move(log).value());
  std::unique_ptr<Segment> seg(
      new Segment(base_offset, config, std::move(lazy), std::move(oi).value(), std::move(ti).value(), *size));
  seg->fs_ = &fs;
  if (preallocated) seg->reserved_to_ = std::max(*size, config.segment_bytes);
  seg->index_cache_ = config.index_cache != nullptr ? config.index_cache : &IndexCache::process_default();
  seg->index_key_ = seg->index_cache_->new_key();
  seg->index_path_ = name(SegmentFileKind::kIndex);
  seg->time_index_path_ = name(SegmentFileKind::kTimeIndex);
  return seg;
}

Segment::~Segment() { index_cache_->erase(index_key_); }

bool Segment::should_roll(uint64_t batch_bytes, int64_t last_offset, int64_t now_ms) const {
  if (!offset_index_.can_hold(last_offset)) return true;
  if (size_ == 0) return false;
  if (size_ + batch_bytes > config_.segment_bytes) return true;
  if (offset_index_.full() || time_index_.full()) return true;
  return first_append_ms_ && now_ms - *first_append_ms_ >= config_.segment_ms;
}

void Segment::index_batch(uint64_t position, uint64_t size, int64_t last_offset, int64_t max_timestamp) {
  if (max_timestamp > max_timestamp_) {
    std::lock_guard lock(index_mu_);
    max_timestamp_ = max_timestamp;
    offset_of_max_timestamp_ = last_offset;
  }
  if (bytes_since_index_entry_ > config_.index_interval_bytes) {
    std::lock_guard lock(index_mu_);
    // A full index (possible inside one multi-batch append) only makes the
    // index sparser; should_roll() rolls before the next append.
    if (!offset_index_.full()) (void)offset_index_.append(last_offset, static_cast<uint32_t>(position));
    if (max_timestamp_ != kNoTimestamp && !time_index_.full())
      (void)time_index_.maybe_append(max_timestamp_, offset_of_max_timestamp_);
    bytes_since_index_entry_ = 0;
  }
  bytes_since_index_entry_ += size;
  next_offset_ = last_offset + 1;
}

uint64_t Segment::reserve(uint64_t len, int64_t now_ms) {
  const uint64_t position = size_;
  if (!first_append_ms_) first_append_ms_ = now_ms;
  size_ = position + len;
  return position;
}

void Segment::unreserve(uint64_t position) { size_ = position; }

std::optional<Segment::Range> Segment::preallocation_due() {
  if (!config_.preallocate_ahead) return std::nullopt;
  const uint64_t chunk = std::clamp(size_, kPreallocateMin, kPreallocateMax);
  if (reserved_to_ >= size_ + chunk / 2) return std::nullopt;
  const uint64_t from = std::max(reserved_to_, size_);
  const uint64_t to = std::min(from + chunk, std::max(config_.segment_bytes, size_));
  if (to <= from) return std::nullopt;
  reserved_to_ = to;
  return Range{from, to - from};
}

Status Segment::trim_preallocation() {
  if (reserved_to_ <= size_) return Status::ok();
  auto file = log_->get();
  if (!file) return file.status();
  CK_RETURN_IF_ERROR((*file)->truncate(size_));
  reserved_to_ = size_;
  return Status::ok();
}

void Segment::publish(std::span<const BatchMeta> batches, uint64_t end) {
  for (const BatchMeta& b : batches) index_batch(b.position, b.size, b.last_offset, b.max_timestamp);
  if (next_offset_) published_next_offset_.store(*next_offset_, std::memory_order_release);
  published_size_.store(end, std::memory_order_release);
}

Result<uint64_t> Segment::append(std::span<const uint8_t> batches, int64_t now_ms) {
  auto file = log_->get();
  if (!file) return file.status();
  const uint64_t position = reserve(batches.size(), now_ms);
  Status written = (*file)->write_at(position, batches);
  if (!written.is_ok()) {
    unreserve(position);
    return written;
  }
  std::vector<BatchMeta> metas;
  protocol::BatchSplitter split(batches);
  protocol::RecordsEntry e;
  while (split.next(&e) == protocol::SplitStatus::kEntry) {
    auto view = protocol::RecordBatchView::parse(e.bytes);
    if (!view) break;  // the caller validated every batch; cannot happen
    metas.push_back(BatchMeta{position + static_cast<uint64_t>(e.bytes.data() - batches.data()), e.bytes.size(),
                              view->last_offset(), view->max_timestamp()});
  }
  publish(metas, position + batches.size());
  return position;
}

Result<BatchLocation> Segment::read_header(io::File& f, uint64_t position, uint64_t max_position) const {
  uint8_t h[v2::kHeaderSize];
  if (position + v2::kHeaderSize > max_position)
    return Status::corruption(at(path(), position) + ": a batch header runs past the end " +
                              std::to_string(max_position));
  auto n = f.read_at(position, h);
  if (!n) return n.status();
  if (*n < v2::kHeaderSize)
    return Status::corruption(at(path(), position) + ": short read of a batch header");
  const int32_t length = load_int32(h + v2::kBatchLengthOffset);
  BatchLocation loc{position, v2::kLogOverhead + static_cast<uint64_t>(std::max(length, 0)),
                    load_offset(h + v2::kBaseOffsetOffset), 0};
  if (length < v2::kMinBatchLength || position + loc.size > max_position ||
      static_cast<int8_t>(h[v2::kMagicOffset]) != v2::kMagic)
    return Status::corruption(at(path(), position) + ": batch length " + std::to_string(length) +
                              " or magic " + std::to_string(h[v2::kMagicOffset]) + " breaks the format");
  loc.last_offset = loc.base_offset + load_int32(h + v2::kLastOffsetDeltaOffset);
  return loc;
}

Result<std::optional<BatchLocation>> Segment::find_offset_position(int64_t offset,
                                                                   uint64_t max_position) const {
  auto file = log_->get();
  if (!file) return file.status();
  io::File& f = **file;
  return find_position(f, offset, max_position);
}

Result<std::optional<BatchLocation>> Segment::find_position(io::File& f, int64_t offset,
                                                            uint64_t max_position) const {
  OffsetPosition start;
  {
    auto pin = pin_indexes();
    if (!pin) return pin.status();
    start = pin->offset->lookup(offset);
  }
  // One read of the 61-byte header per batch: the 12-byte offset/length
  // prefix alone cannot tell the batch's last offset.
  for (uint64_t pos = start.position; pos < max_position;) {
    auto loc = read_header(f, pos, max_position);
    if (!loc) return loc.status();
    if (loc->last_offset >= offset) return std::optional<BatchLocation>(*loc);
    pos += loc->size;
  }
  return std::optional<BatchLocation>();
}

Result<uint64_t> Segment::last_boundary(io::File& f, uint64_t from, uint64_t budget_end,
                                        uint64_t max_position) const {
  uint64_t pos = from;
  {
    // Index positions are batch starts: jump to the furthest one in range.
    auto pin = pin_indexes();
    if (!pin) return pin.status();
    const OffsetIndex& oi = *pin->offset;
    long slot = largest_lower_bound(
        oi.entries(), [&oi](size_t i) { return uint64_t{oi.entry(i).position}; }, budget_end);
    if (slot >= 0) pos = std::max<uint64_t>(pos, oi.entry(static_cast<size_t>(slot)).position);
  }
  while (pos + v2::kLogOverhead <= max_position) {
    uint8_t h[v2::kLogOverhead];
    auto n = f.read_at(pos, h);
    if (!n) return n.status();
    const int32_t length = load_int32(h + v2::kBatchLengthOffset);
    if (*n < v2::kLogOverhead || length < v2::kMinBatchLength)
      return Status::corruption(at(path(), pos) + ": bad batch length " + std::to_string(length));
    const uint64_t end = pos + v2::kLogOverhead + static_cast<uint64_t>(length);
    if (end > budget_end || end > max_position) break;
    pos = end;
  }
  return pos;
}

Result<std::optional<FileSlice>> Segment::read(int64_t start_offset, uint64_t max_bytes,
                                               uint64_t max_position, int64_t upper_bound_offset,
                                               bool min_one_batch) const {
  using Out = std::optional<FileSlice>;
  max_position = std::min(max_position, published_size());
  auto file = log_->get();
  if (!file) return file.status();
  io::File& f = **file;
  auto first = find_position(f, start_offset, max_position);
  if (!first) return first.status();
  if (!*first || (*first)->last_offset >= upper_bound_offset) return Out();
  const BatchLocation& b = **first;
  uint64_t limit = max_position;
  // An upper bound at or past the end of what is published (the HW of a
  // single node, or a follower that has caught up) stops nothing: no scan of
  // the tail's batch headers for it. published_next_offset_ is loaded after
  // max_position was bounded by published_size(), so it is at least as new.
  const int64_t published_next = published_next_offset_.load(std::memory_order_acquire);
  if (upper_bound_offset != std::numeric_limits<int64_t>::max() &&
      (published_next < 0 || upper_bound_offset < published_next)) {
    auto stop = find_position(f, upper_bound_offset, max_position);
    if (!stop) return stop.status();
    if (*stop) limit = (*stop)->position;
  }
  uint64_t end = limit;
  if (limit - b.position > max_bytes) {
    if (b.size > max_bytes) {
      if (!min_one_batch) return Out();
      end = b.position + b.size;
    } else {
      auto e = last_boundary(f, b.position + b.size, b.position + max_bytes, limit);
      if (!e) return e.status();
      end = *e;
    }
  }
  return Out(FileSlice{&f, f.fd(), std::move(file).value(), b.position, end - b.position, b.base_offset});
}

bool Segment::read_may_block(int64_t start_offset, uint64_t max_bytes) const {
  std::optional<uint64_t> position;
  {
    std::lock_guard lock(index_mu_);
    if (!released_) position = offset_index_.lookup(start_offset).position;
  }
  if (!position) {
    auto held = index_cache_->lookup(index_key_);
    if (!held) return true;  // a reload would read the index files
    position = held->offset.lookup(start_offset).position;
  }
  const uint64_t size = published_size();
  if (*position >= size) return false;
  auto file = log_->get();
  if (!file) return true;  // the read will meet the error, off the network thread
  const int fd = (**file).fd();
  if (fd < 0) return false;  // in memory
  const uint64_t last = std::min(size, *position + std::max<uint64_t>(max_bytes, 1)) - 1;
  return !byte_cached(fd, *position) || !byte_cached(fd, last);
}

Result<uint64_t> Segment::recover() {
  CK_RETURN_IF_ERROR(reclaim_indexes());
  auto file = log_->get();
  if (!file) return file.status();
  io::File& f = **file;
  auto file_size = f.size();
  if (!file_size) return file_size.status();
  ++recover_count_;
  {
    std::lock_guard lock(index_mu_);
    offset_index_.clear();
    time_index_.clear();
    max_timestamp_ = kNoTimestamp;
    offset_of_max_timestamp_ = base_offset_;
  }
  bytes_since_index_entry_ = 0;
  next_offset_ = base_offset_;
  std::vector<uint8_t> buf;
  uint64_t pos = 0;
  while (pos + v2::kMagicOffset + 1 <= *file_size) {
    uint8_t h[v2::kMagicOffset + 1];
    auto n = f.read_at(pos, h);
    if (!n) return n.status();
    const int32_t length = load_int32(h + v2::kBatchLengthOffset);
    const int8_t magic = static_cast<int8_t>(h[v2::kMagicOffset]);
    if (length < 0 || pos + v2::kLogOverhead + static_cast<uint64_t>(length) > *file_size) break;
    buf.resize(v2::kLogOverhead + static_cast<size_t>(length));
    n = f.read_at(pos, buf);
    if (!n) return n.status();
    if (*n != buf.size()) break;
    if (magic == 0 || magic == 1) {
      // A v0/v1 message set (an old Kafka wrote this segment) is data, not a
      // torn tail: refuse to open rather than truncate it away. Garbage
      // passes the legacy CRC check with odds of 2^-32.
      auto legacy = protocol::decode_message_set(buf);
      if (legacy.ok() && !legacy->partial && !legacy->messages.empty())
        return Status::unsupported(0, at(path(), pos) + ": a magic v" + std::to_string(magic) +
                                          " message set; segments holding v0/v1 data are not supported yet");
      break;
    }
    if (length < v2::kMinBatchLength) break;
    auto view = protocol::RecordBatchView::parse_and_validate(buf);
    if (!view) break;
    // Offsets must start at the base and increase from batch to batch.
    if (view->base_offset() < *next_offset_ || view->last_offset_delta() < 0 ||
        !offset_index_.can_hold(view->last_offset()))
      break;
    index_batch(pos, buf.size(), view->last_offset(), view->max_timestamp());
    pos += buf.size();
  }
  // As when a segment rolls: once these indexes are trusted again (a later
  // open below the recovery point, or after a clean shutdown) the max
  // timestamp is read from their last entry; without it ListOffsets would
  // skip the segment.
  CK_RETURN_IF_ERROR(index_max_timestamp());
  const uint64_t truncated = *file_size - pos;
  if (truncated > 0) CK_RETURN_IF_ERROR(f.truncate(pos));
  size_ = pos;
  reserved_to_ = pos;
  published_next_offset_.store(*next_offset_, std::memory_order_release);
  published_size_.store(pos, std::memory_order_release);
  return truncated;
}

Status Segment::check_indexes() {
  if (released_) return Status::ok();  // checked (or built) before they were released
  if (!offset_index_.sanity_check().is_ok() || !time_index_.sanity_check().is_ok()) {
    auto r = recover();
    if (!r) return r.status();
  }
  return release_indexes();
}

Status Segment::load_tail() {
  auto file = log_->get();
  if (!file) return file.status();
  io::File& f = **file;
  OffsetPosition start;
  {
    std::lock_guard lock(index_mu_);
    start = offset_index_.entries() > 0 ? offset_index_.entry(offset_index_.entries() - 1)
                                        : OffsetPosition{base_offset_, 0};
  }
  next_offset_ = base_offset_;
  for (uint64_t pos = start.position; pos < size_;) {
    auto loc = read_header(f, pos, size_);
    if (!loc) return loc.status();
    if (loc->base_offset < *next_offset_ || !offset_index_.can_hold(loc->last_offset))
      return Status::corruption(at(path(), pos) + ": offsets go backwards");
    uint8_t ts[8];
    auto n = f.read_at(pos + v2::kMaxTimestampOffset, ts);
    if (!n) return n.status();
    const int64_t max_ts = load_offset(ts);
    if (max_ts > max_timestamp_) {
      std::lock_guard lock(index_mu_);
      max_timestamp_ = max_ts;
      offset_of_max_timestamp_ = loc->last_offset;
    }
    next_offset_ = loc->last_offset + 1;
    pos += loc->size;
  }
  bytes_since_index_entry_ = size_ - std::min<uint64_t>(size_, start.position);
  if (size_ > 0 && *next_offset_ == base_offset_)
    return Status::corruption(path() + ": no batch found after the last index entry");
  published_next_offset_.store(*next_offset_, std::memory_order_release);
  return Status::ok();
}

Result<uint64_t> Segment::truncate_to(int64_t offset, int64_t now_ms) {
  CK_RETURN_IF_ERROR(reclaim_indexes());
  auto file = log_->get();
  if (!file) return file.status();
  io::File& f = **file;
  auto loc = find_position(f, offset, size_);
  if (!loc) return loc.status();
  if (!*loc) return uint64_t{0};  // every batch here ends below offset
  const uint64_t position = (*loc)->position;
  const uint64_t cut = size_ - position;
  // Readers first stop at the new end, then the bytes go. Until the next
  // publish, an upper bound is found by a scan again.
  published_next_offset_.store(-1, std::memory_order_release);
  published_size_.store(std::min(published_size(), position), std::memory_order_release);
  CK_RETURN_IF_ERROR(f.truncate(position));
  size_ = position;
  reserved_to_ = position;  // the truncate freed what was reserved past it
  {
    std::lock_guard lock(index_mu_);
    offset_index_.truncate_to((*loc)->base_offset);
    time_index_.truncate_to((*loc)->base_offset);
    // The time index's last entry covers every batch up to the last offset
    // index entry; load_tail scans the batches after it.
    const TimestampOffset last = time_index_.last_entry();
    max_timestamp_ = last.timestamp;
    offset_of_max_timestamp_ = time_index_.entries() > 0 ? last.offset : base_offset_;
  }
  CK_RETURN_IF_ERROR(load_tail());
  if (size_ == 0) {
    bytes_since_index_entry_ = 0;
    first_append_ms_.reset();
  } else if (!first_append_ms_) {
    first_append_ms_ = now_ms;
  }
  return cut;
}

TimestampOffset Segment::max_timestamp_so_far() const {
  std::lock_guard lock(index_mu_);
  return TimestampOffset{max_timestamp_, offset_of_max_timestamp_};
}

namespace {

// Upper bound on a batch's decompressed records when looking inside it.
constexpr size_t kMaxDecompressedBatch = 256u << 20;

}  // namespace

Result<std::optional<TimestampOffset>> Segment::find_offset_for_timestamp(int64_t target, int64_t min_offset,
                                                                          uint64_t max_position) const {
  using Out = std::optional<TimestampOffset>;
  max_position = std::min(max_position, published_size());
  int64_t from_offset;
  {
    auto pin = pin_indexes();
    if (!pin) return pin.status();
    from_offset = std::max(pin->time->lookup(target).offset, min_offset);
  }
  auto file = log_->get();
  if (!file) return file.status();
  io::File& f = **file;
  auto first = find_position(f, from_offset, max_position);
  if (!first) return first.status();
  if (!*first) return Out();
  std::vector<uint8_t> buf;
  for (uint64_t pos = (*first)->position; pos < max_position;) {
    auto loc = read_header(f, pos, max_position);
    if (!loc) return loc.status();
    pos += loc->size;
    uint8_t ts[8];
    auto n = f.read_at(loc->position + v2::kMaxTimestampOffset, ts);
    if (!n) return n.status();
    if (loc->last_offset < min_offset || load_offset(ts) < target) continue;
    buf.resize(loc->size);
    n = f.read_at(loc->position, buf);
    if (!n) return n.status();
    if (*n != buf.size()) return Status::corruption(at(path(), loc->position) + ": short read of a batch");
    auto view = protocol::RecordBatchView::parse(buf);
    if (!view) return Status::corruption(at(path(), loc->position) + ": unreadable batch");
    auto records = protocol::decode_records(*view, kMaxDecompressedBatch);
    if (!records) return Status::corruption(at(path(), loc->position) + ": records cannot be decoded");
    auto reader = records->reader();
    protocol::RecordView r;
    while (reader.next(&r)) {
      if (r.offset >= min_offset && r.timestamp >= target) return Out(TimestampOffset{r.timestamp, r.offset});
    }
    // A batch whose maxTimestamp promised a record it does not hold (a
    // producer-set maxTimestamp can lie): keep looking.
  }
  return Out();
}

Result<int64_t> Segment::find_record_with_timestamp(int64_t offset, int64_t timestamp,
                                                    uint64_t max_position) const {
  max_position = std::min(max_position, published_size());
  auto file = log_->get();
  if (!file) return file.status();
  io::File& f = **file;
  auto loc = find_position(f, offset, max_position);
  if (!loc) return loc.status();
  if (!*loc) return offset;
  std::vector<uint8_t> buf((*loc)->size);
  auto n = f.read_at((*loc)->position, buf);
  if (!n) return n.status();
  auto view = protocol::RecordBatchView::parse(buf);
  if (!view) return (*loc)->last_offset;
  auto records = protocol::decode_records(*view, kMaxDecompressedBatch);
  if (!records) return (*loc)->last_offset;
  auto reader = records->reader();
  protocol::RecordView r;
  while (reader.next(&r))
    if (r.timestamp == timestamp) return r.offset;
  return (*loc)->last_offset;
}

Status Segment::sync_log() {
  auto file = log_->get();
  if (!file) return file.status();
  io::File& f = **file;
  return f.sync();
}

Status Segment::flush() {
  CK_RETURN_IF_ERROR(sync_log());
  if (released_) return Status::ok();  // released indexes are on disk already
  CK_RETURN_IF_ERROR(offset_index_.flush());
  return time_index_.flush();
}

Status Segment::index_max_timestamp() {
  if (max_timestamp_ == kNoTimestamp) return Status::ok();
  std::lock_guard lock(index_mu_);
  return time_index_.maybe_append(max_timestamp_, offset_of_max_timestamp_, true);
}

Status Segment::on_become_inactive() {
  if (released_) return Status::ok();
  CK_RETURN_IF_ERROR(index_max_timestamp());
  CK_RETURN_IF_ERROR(flush());
  CK_RETURN_IF_ERROR(trim_preallocation());
  return release_indexes();
}

Status Segment::close() {
  index_cache_->erase(index_key_);
  Status s = log_->close();
  Status a = offset_index_.close();
  Status b = time_index_.close();
  if (!s.is_ok()) return s;
  return a.is_ok() ? b : a;
}

}  // namespace ciuickafka::storage
