// A region directory copied to another Env, every block verified as it is read
// (storage/region.h CopyRegion, CopyBlockFile): what a snapshot's export is made of.
#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/env.h"
#include "common/fault_point.h"
#include "common/status.h"
#include "storage/internal/block_format.h"
#include "storage/internal/region_impl.h"
#include "storage/internal/store.h"
#include "storage/region.h"

namespace basalt {

using internal::kManifestName;

namespace {

// Reads a file front to back in large pieces, handing out views of whole ranges.
class PieceReader {
 public:
  PieceReader(const RandomAccessFile* file, uint64_t end, size_t piece) : file_(file), end_(end), piece_(piece) {}
  // The bytes [offset, offset + n), n ≤ end - offset.
  absl::StatusOr<std::string_view> Get(uint64_t offset, size_t n) {
    if (offset < start_ || offset + n > start_ + held_) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(std::max(n, piece_), end_ - offset));
      buf_.resize(want);
      BASALT_ASSIGN_OR_RETURN(std::string_view got, file_->Read(offset, want, buf_.data()));
      if (got.size() != want) {
        return absl::DataLossError(absl::StrCat(file_->name(), ": read ", got.size(), " bytes at offset ", offset,
                                                " where ", want, " were expected"));
      }
      if (got.data() != buf_.data()) std::copy(got.begin(), got.end(), buf_.begin());
      start_ = offset;
      held_ = want;
    }
    return std::string_view(buf_).substr(offset - start_, n);
  }

 private:
  const RandomAccessFile* file_;
  const uint64_t end_;
  const size_t piece_;
  std::string buf_;
  uint64_t start_ = 0;
  size_t held_ = 0;
};

// What the block at `offset` must be, by the trailer's handles; data before the first of them.
BlockType TypeAt(const Trailer& t, uint64_t offset, const BlockHandle** handle) {
  *handle = nullptr;
  if (offset == t.index.offset && t.index.size > 0) return *handle = &t.index, BlockType::kIndex;
  if (offset == t.bloom.offset && t.bloom.size > 0) return *handle = &t.bloom, BlockType::kBloom;
  if (offset == t.file_info.offset && t.file_info.size > 0) return *handle = &t.file_info, BlockType::kFileInfo;
  return BlockType::kData;
}

// The file's last bytes: its trailer (kTrailerSize, or fewer in a shorter file).
absl::StatusOr<std::string> ReadTail(const RandomAccessFile& f) {
  std::string buf(std::min<uint64_t>(f.Size(), kTrailerSize), '\0');
  BASALT_ASSIGN_OR_RETURN(std::string_view got, f.Read(f.Size() - buf.size(), buf.size(), buf.data()));
  if (got.data() != buf.data()) buf.assign(got);
  return buf;
}

// The verified blocks of `src` (whose last bytes are `tail`) and its trailer, appended to `out`.
absl::Status CopyBlocks(const RandomAccessFile& src, std::string_view tail, WritableFile* out,
                        const std::function<absl::Status(uint64_t)>& on_bytes, size_t read_bytes) {
  const std::string& name = src.name();
  const uint64_t size = src.Size();
  BASALT_ASSIGN_OR_RETURN(Trailer t, DecodeTrailer(tail, name));
  const uint64_t body_end = size - t.size;
  const BlockReadContext ctx{&src, t.checksum, t.bytes_per_checksum, t.encoding, /*verify_checksums=*/true};
  PieceReader reader(&src, body_end, read_bytes);
  int metas = 0;
  for (uint64_t offset = 0; offset < body_end;) {
    if (body_end - offset < kBlockHeaderSize) {
      return absl::DataLossError(absl::StrCat(name, ": ", body_end - offset, " bytes at offset ", offset,
                                              " before the trailer are not a block"));
    }
    BASALT_ASSIGN_OR_RETURN(std::string_view head, reader.Get(offset, kBlockHeaderSize));
    const uint64_t block = kBlockHeaderSize + uint64_t{BlockHeader::DecodeFrom(head.data()).on_disk_size_no_header};
    const BlockHandle* meta = nullptr;
    const BlockType type = TypeAt(t, offset, &meta);
    if (block > body_end - offset || (meta != nullptr && meta->size != block)) {
      return absl::DataLossError(absl::StrCat("corrupt ", BlockTypeName(type), " block in ", name, " at offset ", offset,
                                              ": its header says ", block, " bytes, which do not fit the file"));
    }
    BASALT_ASSIGN_OR_RETURN(std::string_view raw, reader.Get(offset, block));
    BASALT_RETURN_IF_ERROR(VerifyRawBlock(ctx, BlockHandle{offset, block}, type, raw));
    BASALT_RETURN_IF_ERROR(out->Append(raw));
    if (on_bytes) BASALT_RETURN_IF_ERROR(on_bytes(block));
    metas += meta != nullptr;
    offset += block;
  }
  const int want_metas = (t.index.size > 0) + (t.bloom.size > 0) + (t.file_info.size > 0);
  if (metas != want_metas) {
    return absl::DataLossError(absl::StrCat(name, ": ", metas, " of the trailer's ", want_metas,
                                            " index, bloom and file-info blocks start where a block starts"));
  }
  BASALT_RETURN_IF_ERROR(out->Append(tail.substr(tail.size() - t.size)));
  if (on_bytes) BASALT_RETURN_IF_ERROR(on_bytes(t.size));
  return absl::OkStatus();
}

// CopyBlockFile, from a source already open (its last bytes read: `tail`).
absl::Status CopyOpenBlockFile(const RandomAccessFile& src, std::string_view tail, Env* to_env, const std::string& to,
                               const std::function<absl::Status(uint64_t)>& on_bytes, size_t read_bytes) {
  const std::string tmp = Store::TempFilePath(to);
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> out, to_env->NewWritableFile(tmp));
  absl::Status s = CopyBlocks(src, tail, out.get(), on_bytes, std::max<size_t>(read_bytes, 64 << 10));
  if (s.ok()) s = out->Sync();
  if (absl::Status c = out->Close(); s.ok()) s = c;
  if (s.ok()) s = to_env->ReplaceFile(tmp, to);
  if (!s.ok()) {
    to_env->DeleteFile(tmp).IgnoreError();
    return absl::Status(s.code(), absl::StrCat("copying ", src.name(), " to ", to, ": ", s.message()));
  }
  FaultPoint("copy:file-written");  // (tests: the export killed with one file whole)
  return absl::OkStatus();
}

}  // namespace

bool HoldsBlockFile(Env* env, const std::string& path, uint64_t size, std::string_view tail) {
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> f = env->NewRandomAccessFile(path);
  if (!f.ok() || (*f)->Size() != size) return false;
  absl::StatusOr<std::string> there = ReadTail(**f);
  return there.ok() && *there == tail;
}

absl::Status CopyBlockFile(Env* from_env, const std::string& from, Env* to_env, const std::string& to,
                           const std::function<absl::Status(uint64_t)>& on_bytes, size_t read_bytes) {
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> src, from_env->NewRandomAccessFile(from));
  BASALT_ASSIGN_OR_RETURN(std::string tail, ReadTail(*src));
  return CopyOpenBlockFile(*src, tail, to_env, to, on_bytes, read_bytes);
}

absl::StatusOr<CopiedFiles> CopyRegion(Env* from_env, const std::string& from, Env* to_env, const std::string& to,
                                       const RegionCopyOptions& options) {
  BASALT_ASSIGN_OR_RETURN(internal::ClosedRegionManifest read, internal::ReadClosedRegionManifest(from_env, from));
  BASALT_RETURN_IF_ERROR(to_env->CreateDirs(to));
  CopiedFiles out;
  for (const auto& [family, numbers] : read.manifest.files) {
    for (uint64_t number : numbers) {
      const std::string base = Store::FileName(number);
      const std::string src_path = absl::StrCat(from, "/", base), dst = absl::StrCat(to, "/", base);
      absl::StatusOr<std::unique_ptr<RandomAccessFile>> src = from_env->NewRandomAccessFile(src_path);
      absl::StatusOr<std::string> tail = src.ok() ? ReadTail(**src) : src.status();
      if (!tail.ok()) {
        return absl::DataLossError(absl::StrCat("region directory ", from, ": a file its ", kManifestName,
                                                " lists cannot be read: ", tail.status().message()));
      }
      const uint64_t size = (*src)->Size();
      ++out.files;
      out.bytes += size;
      // Whole already (files are only ever named when whole), or the same file held elsewhere.
      bool held = HoldsBlockFile(to_env, dst, size, *tail);
      if (!held && options.find_copy) {
        if (const std::string copy = options.find_copy(base, size, *tail); !copy.empty()) {
          if (to_env->FileExists(dst)) BASALT_RETURN_IF_ERROR(to_env->DeleteFile(dst));
          held = to_env->LinkFile(copy, dst).ok();  // (gone since it was found: copied instead)
        }
      }
      if (held) {
        ++out.linked_files;
        out.linked_bytes += size;
        continue;
      }
      BASALT_RETURN_IF_ERROR(CopyOpenBlockFile(**src, *tail, to_env, dst, options.on_bytes, options.read_bytes));
      ++out.copied_files;
      out.copied_bytes += size;
    }
  }
  BASALT_RETURN_IF_ERROR(to_env->WriteFileDurably(absl::StrCat(to, "/", kManifestName), read.bytes));
  BASALT_RETURN_IF_ERROR(to_env->SyncDir(to));
  return out;
}

}  // namespace basalt
