#include "storage/internal/block_file.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/status.h"
#include "storage/cell.h"
#include "storage/internal/block_cache.h"
#include "storage/internal/block_codec.h"
#include "storage/internal/bloom.h"

namespace basalt {

// ---------------------------------------------------------------- writer

BlockFileWriter::BlockFileWriter(std::unique_ptr<WritableFile> file, const FamilyOptions& family)
    : file_(std::move(file)), family_(family), data_(std::make_unique<BlockBuilder>(family.encoding)) {
  if (family_.bloom != BloomType::kNone) bloom_ = std::make_unique<BloomBuilder>();
}

BlockFileWriter::~BlockFileWriter() = default;

absl::StatusOr<std::unique_ptr<BlockFileWriter>> BlockFileWriter::Create(Env* env, const std::string& path,
                                                                         const FamilyOptions& family) {
  if (family.bytes_per_checksum < 512) {
    return absl::InvalidArgumentError(absl::StrCat("bytes_per_checksum ", family.bytes_per_checksum, " below 512"));
  }
  BASALT_ASSIGN_OR_RETURN(auto file, env->NewWritableFile(path));
  return std::unique_ptr<BlockFileWriter>(new BlockFileWriter(std::move(file), family));
}

absl::Status BlockFileWriter::WriteBlock(BlockType type, std::string_view payload, BlockHandle* handle) {
  Compression c = type == BlockType::kData ? family_.compression : Compression::kNone;
  BASALT_RETURN_IF_ERROR(BuildBlock(type, payload, c, family_.encoding, family_.checksum, family_.bytes_per_checksum,
                                    &scratch_, &block_buf_));
  handle->offset = file_->Size();
  handle->size = block_buf_.size();
  return file_->Append(block_buf_);
}

absl::Status BlockFileWriter::FlushDataBlock() {
  if (data_->empty()) return absl::OkStatus();
  std::string payload = data_->Finish();
  data_->Reset();
  BlockHandle h;
  BASALT_RETURN_IF_ERROR(WriteBlock(BlockType::kData, payload, &h));
  PutLengthPrefixed(&index_, last_key_);
  PutVarint64(&index_, h.offset);
  PutVarint64(&index_, h.size);
  ++index_entries_;
  return absl::OkStatus();
}

absl::Status BlockFileWriter::Add(std::string_view key, std::string_view value) {
  if (stats_.entries == 0) stats_.first_key.assign(key);
  if (bloom_ != nullptr) {
    KeyView k = ParseFlatKeyUnchecked(key);
    if (family_.bloom == BloomType::kRow) {
      bloom_->AddKey(k.row);
    } else {
      bloom_->AddKey(BloomKeyRowCol(k.row, k.qualifier));
    }
  }
  data_->Add(key, value);
  last_key_.assign(key);
  ++stats_.entries;
  if (data_->EstimatedSize() >= family_.block_size) return FlushDataBlock();
  return absl::OkStatus();
}

absl::StatusOr<FileStats> BlockFileWriter::Finish() {
  BASALT_RETURN_IF_ERROR(FlushDataBlock());
  Trailer t;
  t.checksum = family_.checksum;
  t.bytes_per_checksum = family_.bytes_per_checksum;
  t.encoding = family_.encoding;
  t.compression = family_.compression;
  t.entries = stats_.entries;
  t.bloom_type = bloom_ != nullptr && stats_.entries > 0 ? family_.bloom : BloomType::kNone;
  if (t.bloom_type != BloomType::kNone) {
    BASALT_RETURN_IF_ERROR(WriteBlock(BlockType::kBloom, bloom_->Finish(), &t.bloom));
  }
  std::string index;
  PutVarint32(&index, index_entries_);
  index.append(index_);
  BASALT_RETURN_IF_ERROR(WriteBlock(BlockType::kIndex, index, &t.index));
  stats_.last_key = last_key_;
  std::string info;
  PutVarint64(&info, stats_.max_seq);
  PutVarint64(&info, stats_.entries);
  PutLengthPrefixed(&info, stats_.first_key);
  PutLengthPrefixed(&info, stats_.last_key);
  BASALT_RETURN_IF_ERROR(WriteBlock(BlockType::kFileInfo, info, &t.file_info));
  BASALT_RETURN_IF_ERROR(file_->Append(EncodeTrailer(t)));
  BASALT_RETURN_IF_ERROR(file_->Sync());
  stats_.file_size = file_->Size();
  BASALT_RETURN_IF_ERROR(file_->Close());
  return stats_;
}

// ---------------------------------------------------------------- reader

BlockFileReader::~BlockFileReader() {
  if (cache_ != nullptr) cache_->EraseFile(file_id_);
  if (Env* env = obsolete_env_.load(); env != nullptr) {
    file_.reset();
    env->DeleteFile(path_).IgnoreError();  // a leftover is an orphan, removed at the next open
  }
}

absl::StatusOr<std::shared_ptr<BlockFileReader>> BlockFileReader::Open(Env* env, const std::string& path,
                                                                       const FamilyOptions& family,
                                                                       BlockCache* cache, const RowRange* range) {
  std::shared_ptr<BlockFileReader> r(new BlockFileReader);
  r->path_ = path;
  r->family_ = family;
  r->cache_ = cache;
  r->file_id_ = BlockCache::NewFileId();
  BASALT_ASSIGN_OR_RETURN(r->file_, env->NewRandomAccessFile(path));
  uint64_t size = r->file_->Size();
  if (size < kTrailerSizeV1) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is not a Basalt block file: ", size, " bytes"));
  }
  char tbuf[kTrailerSize];
  const size_t tail = static_cast<size_t>(std::min<uint64_t>(size, kTrailerSize));
  BASALT_ASSIGN_OR_RETURN(std::string_view tb, r->file_->Read(size - tail, tail, tbuf));
  BASALT_ASSIGN_OR_RETURN(r->trailer_, DecodeTrailer(tb, path));
  const Trailer& t = r->trailer_;
  // Meta blocks are always verified: a bad index would misdirect every read.
  r->ctx_ = BlockReadContext{r->file_.get(), t.checksum, t.bytes_per_checksum, t.encoding, true};
  uint64_t data_end = size - t.size;
  auto corrupt = [&](std::string_view what) {
    return absl::DataLossError(absl::StrCat("corrupt ", path, ": ", AV(what)));
  };
  auto check_handle = [&](const BlockHandle& h) {
    return h.offset <= data_end && h.size <= data_end - h.offset;
  };
  if (!check_handle(t.index) || !check_handle(t.file_info) || (t.bloom.size != 0 && !check_handle(t.bloom))) {
    return corrupt("trailer block handles point outside the file");
  }
  // File info.
  BASALT_ASSIGN_OR_RETURN(std::string info_raw, ReadRawBlock(r->ctx_, t.file_info, BlockType::kFileInfo));
  BASALT_ASSIGN_OR_RETURN(std::string info, RawBlockPayload(r->ctx_, t.file_info, info_raw));
  {
    std::string_view in(info);
    std::string_view first, last;
    uint64_t entries;
    KeyView kv;
    if (!GetVarint64(&in, &r->stats_.max_seq) || !GetVarint64(&in, &entries) || !GetLengthPrefixed(&in, &first) ||
        !GetLengthPrefixed(&in, &last) || entries != t.entries ||
        (entries > 0 && (!ParseFlatKey(first, &kv) || !ParseFlatKey(last, &kv)))) {
      return corrupt("undecodable file info");
    }
    r->stats_.entries = entries;
    r->stats_.first_key.assign(first);
    r->stats_.last_key.assign(last);
    r->stats_.file_size = size;
  }
  // Index.
  BASALT_ASSIGN_OR_RETURN(std::string idx_raw, ReadRawBlock(r->ctx_, t.index, BlockType::kIndex));
  BASALT_ASSIGN_OR_RETURN(std::string idx, RawBlockPayload(r->ctx_, t.index, idx_raw));
  {
    std::string_view in(idx);
    uint32_t n;
    if (!GetVarint32(&in, &n) || n > in.size()) return corrupt("undecodable index block");
    uint64_t next_offset = 0;
    for (uint32_t i = 0; i < n; ++i) {
      std::string_view key;
      BlockHandle h;
      KeyView kv;
      if (!GetLengthPrefixed(&in, &key) || !GetVarint64(&in, &h.offset) || !GetVarint64(&in, &h.size) ||
          !ParseFlatKey(key, &kv) || h.offset != next_offset || !check_handle(h) ||
          (i > 0 && CompareFlatKeys(r->index_keys_.back(), key) > 0)) {
        return corrupt(absl::StrCat("bad index entry ", i));
      }
      next_offset = h.offset + h.size;
      r->index_keys_.emplace_back(key);
      r->index_handles_.push_back(h);
    }
    if (!in.empty()) return corrupt("trailing bytes in index block");
    for (const std::string& k : r->index_keys_) r->index_views_.push_back(ParseFlatKeyUnchecked(k));
    r->index_heads_.Build(r->index_views_.size(), [&r](size_t i) { return r->index_views_[i].row; });
    if ((n == 0) != (t.entries == 0)) return corrupt("index and entry count disagree");
  }
  // Bloom.
  if (t.bloom_type != BloomType::kNone) {
    BASALT_ASSIGN_OR_RETURN(std::string bloom_raw, ReadRawBlock(r->ctx_, t.bloom, BlockType::kBloom));
    BASALT_ASSIGN_OR_RETURN(r->bloom_data_, RawBlockPayload(r->ctx_, t.bloom, bloom_raw));
    auto bloom = BloomReader::Parse(r->bloom_data_);
    if (!bloom.ok()) return corrupt(absl::StrCat("bloom: ", bloom.status().message()));
    r->bloom_ = std::make_unique<BloomReader>(std::move(*bloom));
  }
  r->ctx_.verify_checksums = family.verify_checksums;
  if (range != nullptr) {
    r->range_ = *range;
    r->ClipStatsToRange();
  }
  return r;
}

std::pair<size_t, size_t> BlockFileReader::BlocksInRange() const {
  size_t first = 0, last = num_blocks();
  if (range_) {
    if (!range_->start.empty()) first = FindBlock(FirstKeyOfRow(range_->start));
    if (!range_->end.empty()) last = std::min(last, FindBlock(FirstKeyOfRow(range_->end)) + 1);
  }
  return {first, std::max(first, last)};
}

std::string BlockFileReader::MidKey() const {
  const auto [first, last] = BlocksInRange();
  if (first == last) return "";
  return index_keys_[first + (last - first - 1) / 2];
}

void BlockFileReader::ClipStatsToRange() {
  const size_t n = num_blocks();
  if (n == 0) return;
  // The blocks that may hold rows of the range: a share of the entries and bytes.
  const auto [first, last] = BlocksInRange();
  const size_t blocks = last - first;
  stats_.entries = stats_.entries * blocks / n;
  stats_.file_size = stats_.file_size * blocks / n;
  if (blocks == 0) return;
  if (!range_->start.empty() && ParseFlatKeyUnchecked(stats_.first_key).row < range_->start) {
    stats_.first_key = FirstKeyOfRow(range_->start);
  }
  // The last key stays the file's: a bound the reads check against the range as well.
}

bool BlockFileReader::MayContainRow(std::string_view row) const {
  if (range_ && !range_->Contains(row)) return false;
  if (bloom_ == nullptr || trailer_.bloom_type != BloomType::kRow) return true;
  return bloom_->MayContain(row);
}

bool BlockFileReader::MayContainColumn(std::string_view row, std::string_view qualifier) const {
  if (range_ && !range_->Contains(row)) return false;
  if (bloom_ == nullptr) return true;
  if (trailer_.bloom_type == BloomType::kRow) return bloom_->MayContain(row);
  return bloom_->MayContain(BloomKeyRowCol(row, qualifier));
}

size_t BlockFileReader::FindBlock(std::string_view target) const {
  return index_heads_.LowerBound(ParseFlatKeyUnchecked(target), [this](size_t i) { return index_views_[i]; });
}

absl::StatusOr<std::shared_ptr<const DecodedBlock>> BlockFileReader::GetBlock(size_t i, bool fill_cache) const {
  const BlockHandle& h = index_handles_[i];
  CacheKey ck{file_id_, h.offset};
  bool use_cache = cache_ != nullptr;
  fill_cache = fill_cache && use_cache && family_.cache_blocks;
  if (use_cache) {
    std::shared_ptr<const void> v = cache_->Lookup(ck);
    if (v != nullptr) {
      if (!family_.cache_encoded) return std::static_pointer_cast<const DecodedBlock>(v);
      auto raw = std::static_pointer_cast<const std::string>(v);
      BASALT_ASSIGN_OR_RETURN(std::string payload, RawBlockPayload(ctx_, h, *raw));
      return DecodeBlock(trailer_.encoding, std::move(payload));
    }
  }
  BASALT_ASSIGN_OR_RETURN(std::string raw, ReadRawBlock(ctx_, h, BlockType::kData));
  BASALT_ASSIGN_OR_RETURN(std::string payload, RawBlockPayload(ctx_, h, raw));
  auto decoded = DecodeBlock(trailer_.encoding, std::move(payload));
  if (!decoded.ok()) {
    return absl::DataLossError(absl::StrCat("data block in ", path_, " at offset ", h.offset, ": ",
                                            decoded.status().message()));
  }
  if (fill_cache) {
    if (family_.cache_encoded) {
      auto shared = std::make_shared<const std::string>(std::move(raw));
      size_t charge = shared->size();
      cache_->Insert(ck, std::move(shared), charge);
    } else {
      cache_->Insert(ck, *decoded, (*decoded)->MemoryUsage());
    }
  }
  return decoded;
}

// Walks the decoded blocks directly (no inner iterator): this is the scan's innermost loop.
class BlockFileReader::Iter final : public InternalIterator {
 public:
  Iter(std::shared_ptr<const BlockFileReader> r, bool fill_cache) : r_(std::move(r)), fill_cache_(fill_cache) {}
  bool Valid() const override { return i_ < n_; }
  void SeekToFirst() override {
    Load(0);
    i_ = 0;
    Settle();
  }
  void Seek(std::string_view target) override {
    Load(r_->FindBlock(target));
    i_ = block_ != nullptr ? block_->LowerBound(target) : 0;
    Settle();
  }
  void SeekBefore(std::string_view target) override {
    // The block the target would be in; the key before it is in it or ends the block before.
    const size_t nb = r_->num_blocks();
    const size_t b = target.empty() ? nb : r_->FindBlock(target);
    if (b < nb) {
      Load(b);
      i_ = block_ != nullptr ? block_->LowerBound(target) - 1 : -1;
      if (i_ >= 0 || b == 0 || !status_.ok()) return SettleAt();
    }
    if (b == 0) return SettleAt();
    Load(b - 1);
    i_ = n_ - 1;
    SettleAt();
  }
  void Next() override {
    ++i_;
    if (i_ < n_) {
      key_ = block_->key(i_);
      value_ = block_->value(i_);
      return;
    }
    prev_block_ = block_;  // the one-step look-back of iterator.h
    Settle();
  }
  std::string_view key() const override { return key_; }
  std::string_view value() const override { return value_; }
  absl::Status status() const override { return status_; }
  bool unique_keys() const override { return true; }

 private:
  void Load(size_t i) {
    block_.reset();
    n_ = 0;
    index_ = i;
    if (i >= r_->num_blocks() || !status_.ok()) return;
    auto b = r_->GetBlock(i, fill_cache_);
    if (!b.ok()) {
      status_ = b.status();
      return;
    }
    block_ = std::move(*b);
    n_ = block_->num_cells();
  }
  // Loads the views of cell i_ of the current block; none (not Valid) when out of it.
  void SettleAt() {
    if (block_ == nullptr || i_ < 0 || i_ >= n_) {
      block_.reset();
      n_ = 0;
      i_ = 0;
      return;
    }
    key_ = block_->key(i_);
    value_ = block_->value(i_);
  }
  // Moves past exhausted blocks and loads the current cell's views.
  void Settle() {
    while (block_ != nullptr && i_ >= n_) {
      Load(index_ + 1);
      i_ = 0;
    }
    if (i_ < n_) {
      key_ = block_->key(i_);
      value_ = block_->value(i_);
    }
  }

  std::shared_ptr<const BlockFileReader> r_;
  bool fill_cache_;
  size_t index_ = 0;
  std::shared_ptr<const DecodedBlock> block_, prev_block_;
  int i_ = 0, n_ = 0;
  std::string_view key_, value_;
  absl::Status status_;
};

// A file seen through a row range: the cells of rows outside it do not exist.
class BlockFileReader::RangeIter final : public InternalIterator {
 public:
  RangeIter(std::shared_ptr<const BlockFileReader> r, bool fill_cache)
      : range_(*r->range()), first_(range_.start.empty() ? "" : FirstKeyOfRow(range_.start)),
        end_(range_.end.empty() ? "" : FirstKeyOfRow(range_.end)), it_(std::move(r), fill_cache) {}
  bool Valid() const override { return valid_; }
  void SeekToFirst() override {
    if (first_.empty()) {
      it_.SeekToFirst();
    } else {
      it_.Seek(first_);
    }
    Clip();
  }
  void Seek(std::string_view target) override {
    if (!first_.empty() && CompareFlatKeys(target, first_) < 0) {
      it_.Seek(first_);
    } else {
      it_.Seek(target);
    }
    Clip();
  }
  void SeekBefore(std::string_view target) override {
    // Keys of rows at or past the range's end do not exist; nor do those before its start.
    if (!end_.empty() && (target.empty() || CompareFlatKeys(target, end_) > 0)) target = end_;
    it_.SeekBefore(target);
    valid_ = it_.Valid() && (first_.empty() || CompareFlatKeys(it_.key(), first_) >= 0);
  }
  void Next() override {
    it_.Next();
    Clip();
  }
  std::string_view key() const override { return it_.key(); }
  std::string_view value() const override { return it_.value(); }
  absl::Status status() const override { return it_.status(); }
  bool unique_keys() const override { return true; }

 private:
  void Clip() {
    valid_ = it_.Valid() && (range_.end.empty() || ParseFlatKeyUnchecked(it_.key()).row < range_.end);
  }
  const RowRange range_;
  const std::string first_, end_;  // the first keys of the range's start and end rows ("": none)
  Iter it_;
  bool valid_ = false;
};

std::unique_ptr<InternalIterator> BlockFileReader::NewIterator(bool fill_cache) const {
  if (range_) return std::make_unique<RangeIter>(shared_from_this(), fill_cache);
  return std::make_unique<Iter>(shared_from_this(), fill_cache);
}

}  // namespace basalt
