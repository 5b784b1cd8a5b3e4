// storage/compact_writer.cc: the cleaned segment's three files.
#include "storage/compact_writer.h"

#include <limits>

#include "storage/file_names.h"

namespace ciuickafka::storage {

Result<std::unique_ptr<CleanedSegmentWriter>> CleanedSegmentWriter::create(io::FileSystem& fs,
                                                                           const std::string& dir, int64_t base,
                                                                           const SegmentConfig& config) {
  const auto name = [&](SegmentFileKind k) { return dir + "/" + segment_file_name(base, k, FileSuffix::kCleaned); };
  auto log = fs.open(name(SegmentFileKind::kLog), io::OpenMode::kCreateTruncate);
  if (!log) return log.status();
  auto oi = OffsetIndex::open(fs, name(SegmentFileKind::kIndex), base, config.max_index_bytes);
  if (!oi) return oi.status();
  auto ti = TimeIndex::open(fs, name(SegmentFileKind::kTimeIndex), base, config.max_index_bytes);
  if (!ti) return ti.status();
  oi->clear();  // a leftover from an earlier attempt
  ti->clear();
  return std::unique_ptr<CleanedSegmentWriter>(new CleanedSegmentWriter(
      fs, dir, base, config, std::move(log).value(), std::move(oi).value(), std::move(ti).value()));
}

Status CleanedSegmentWriter::append(std::span<const uint8_t> batch, int64_t last_offset, int64_t max_timestamp) {
  if (size_ + batch.size() > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
    return Status::invalid_argument(log_->path() + ": a cleaned segment may not pass 2^31 - 1 bytes");
  if (max_timestamp > max_timestamp_) {
    max_timestamp_ = max_timestamp;
    offset_of_max_timestamp_ = last_offset;
  }
  if (bytes_since_index_entry_ > config_.index_interval_bytes) {
    if (!offset_index_.full()) CK_RETURN_IF_ERROR(offset_index_.append(last_offset, static_cast<uint32_t>(size_)));
    if (max_timestamp_ != kNoTimestamp && !time_index_.full())
      CK_RETURN_IF_ERROR(time_index_.maybe_append(max_timestamp_, offset_of_max_timestamp_));
    bytes_since_index_entry_ = 0;
  }
  CK_RETURN_IF_ERROR(log_->write_at(size_, batch));
  size_ += batch.size();
  bytes_since_index_entry_ += batch.size();
  return Status::ok();
}

Status CleanedSegmentWriter::finish() {
  if (max_timestamp_ != kNoTimestamp)
    CK_RETURN_IF_ERROR(time_index_.maybe_append(max_timestamp_, offset_of_max_timestamp_, true));
  CK_RETURN_IF_ERROR(log_->sync());
  CK_RETURN_IF_ERROR(offset_index_.flush());
  CK_RETURN_IF_ERROR(time_index_.flush());
  CK_RETURN_IF_ERROR(log_->close());
  CK_RETURN_IF_ERROR(offset_index_.close());
  CK_RETURN_IF_ERROR(time_index_.close());
  return fs_.sync_dir(dir_);
}

}  // namespace ciuickafka::storage
