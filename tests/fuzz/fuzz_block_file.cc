// libFuzzer target: whole block files (storage/internal/block_file.h, layout in block_format.h).
// The input is written to a temporary file and opened with BlockFileReader::Open, without a
// cache, with a cache of decoded blocks and with a cache of encoded blocks (checksums not
// verified, so damaged data blocks reach the decoders); everything is iterated, sought, read
// block by block and asked of the bloom filter.
//
// Built twice. fuzz_block_file takes the bytes as they are. fuzz_block_file_fixup
// (BASALT_FUZZ_FIXUP_CHECKSUMS) first recomputes the trailer CRC and every inline block checksum
// it can find by walking block headers from offset 0, so mutations of a real file (seed corpus:
// fuzz_make_seeds) get past the checksums into the index, bloom, file info and data blocks.
//
// Checks beyond "no crash": Open fails only with InvalidArgument or DataLoss; iteration ends
// with OK or DataLoss; the three reader configurations that verify the same bytes see the same
// cells; reading a block twice through the cache gives the same cells.
//
// And the snapshot export's verified copy (CopyBlockFile, storage/region.h), which reads a
// backup's files as they come: it fails only with InvalidArgument, DataLoss or
// FailedPrecondition, leaving no file at the target name nor a temporary one; when it succeeds,
// the copy is the input byte for byte.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/coding.h"
#include "common/crc.h"
#include "common/env.h"
#include "storage/cell.h"
#include "storage/internal/block_cache.h"
#include "storage/internal/block_codec.h"
#include "storage/internal/block_file.h"
#include "storage/internal/block_format.h"
#include "storage/region.h"
#include "tests/fuzz/fuzz_common.h"

namespace basalt::fuzz {
namespace {

#ifdef BASALT_FUZZ_FIXUP_CHECKSUMS
// Recomputes checksums in place: every block found by walking headers from offset 0 whose
// sizes add up (a damaged header ends the walk), then the trailer CRC.
void FixupChecksums(std::string* file) {
  if (file->size() < kTrailerSize) return;
  const size_t data_end = file->size() - kTrailerSize;
  char* base = file->data();
  size_t pos = 0;
  while (pos + kBlockHeaderSize <= data_end) {
    char* p = base + pos;
    const BlockHeader h = BlockHeader::DecodeFrom(p);
    const uint64_t on_disk = uint64_t{h.on_disk_size_no_header} + kBlockHeaderSize;
    const uint8_t ck = h.checksum_type;
    const uint32_t bpc = h.bytes_per_checksum;
    const uint32_t data_size = h.on_disk_data_size_with_header;
    if (on_disk > data_end - pos || data_size < kBlockHeaderSize || data_size > on_disk || bpc == 0) break;
    if (ck == static_cast<uint8_t>(ChecksumType::kCrc32) || ck == static_cast<uint8_t>(ChecksumType::kCrc32c)) {
      const auto t = static_cast<ChecksumType>(ck);
      if (ChecksumBytes(t, bpc, data_size) != on_disk - data_size) break;
      for (size_t off = 0, chunk = 0; off < data_size; off += bpc, ++chunk) {
        const size_t n = std::min<size_t>(bpc, data_size - off);
        const uint32_t sum = t == ChecksumType::kCrc32 ? Crc32(p + off, n) : Crc32c(p + off, n);
        EncodeFixed32(p + data_size + 4 * chunk, sum);
      }
    }
    pos += on_disk;
  }
  char* trailer = base + data_end;
  EncodeFixed32(trailer + kTrailerSize - 4, MaskCrc(Crc32c(trailer, kTrailerSize - 4)));
}
#endif

struct Cells {
  std::vector<std::pair<std::string, std::string>> cells;
  absl::Status status;
};

// Reads every cell in order, checking the status contract.
Cells ReadAll(const BlockFileReader& r, bool fill_cache) {
  Cells out;
  auto it = r.NewIterator(fill_cache);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    out.cells.emplace_back(std::string(it->key()), std::string(it->value()));
  }
  out.status = it->status();
  FUZZ_CHECK(out.status.ok() || out.status.code() == absl::StatusCode::kDataLoss,
             "block file iterator ended with %s: %s", CodeName(out.status),
             std::string(out.status.message()).c_str());
  return out;
}

bool SameCells(const Cells& a, const Cells& b) { return a.cells == b.cells && a.status.code() == b.status.code(); }

// Seeks, bloom checks and per-block reads on an opened reader.
void Probe(const BlockFileReader& r, const Cells& all, bool fill_cache) {
  const FileStats& st = r.stats();
  std::vector<std::string> targets;
  if (!st.first_key.empty()) targets.push_back(st.first_key);
  if (!st.last_key.empty()) targets.push_back(st.last_key);
  if (!all.cells.empty()) {
    targets.push_back(all.cells.front().first);
    targets.push_back(all.cells[all.cells.size() / 2].first);
    targets.push_back(all.cells.back().first);
  }
  auto it = r.NewIterator(fill_cache);
  for (const std::string& t : targets) {
    KeyView kv;
    if (!ParseFlatKey(t, &kv)) continue;  // Seek and FindBlock need well-formed keys
    (void)r.MayContainRow(kv.row);
    (void)r.MayContainColumn(kv.row, kv.qualifier);
    const size_t b = r.FindBlock(t);
    FUZZ_CHECK(b <= r.num_blocks(), "FindBlock %zu beyond %zu blocks", b, r.num_blocks());
    for (const std::string& seek : {t, FirstKeyOfRow(kv.row)}) {
      it->Seek(seek);
      if (it->Valid()) (void)it->key();
      FUZZ_CHECK(it->status().ok() || it->status().code() == absl::StatusCode::kDataLoss,
                 "Seek ended with %s", CodeName(it->status()));
    }
  }
  (void)r.MayContainRow("");
  (void)r.MayContainRow("row-absent");
  for (size_t i = 0; i < r.num_blocks(); ++i) {
    auto b1 = r.GetBlock(i, fill_cache);
    auto b2 = r.GetBlock(i, fill_cache);  // from the cache when there is one
    FUZZ_CHECK(b1.ok() == b2.ok(), "block %zu read twice: %s then %s", i, CodeName(b1.status()),
               CodeName(b2.status()));
    if (!b1.ok()) {
      FUZZ_CHECK(b1.status().code() == absl::StatusCode::kDataLoss, "GetBlock(%zu) returned %s", i,
                 CodeName(b1.status()));
      continue;
    }
    const DecodedBlock& x = **b1;
    const DecodedBlock& y = **b2;
    FUZZ_CHECK(x.num_cells() == y.num_cells(), "block %zu: %d then %d cells", i, x.num_cells(), y.num_cells());
    for (int k = 0; k < x.num_cells(); ++k) {
      FUZZ_CHECK(x.key(k) == y.key(k) && x.value(k) == y.value(k), "block %zu cell %d differs on re-read", i, k);
    }
  }
}

void Run(const std::string& path) {
  struct Config {
    bool cache;
    bool cache_encoded;
    bool verify;
  };
  constexpr Config kConfigs[] = {{false, false, true}, {true, false, true}, {true, true, false}};
  Cells reference;
  bool have_reference = false;
  for (const Config& c : kConfigs) {
    FamilyOptions family;
    family.name = "f";
    family.cache_blocks = true;
    family.cache_encoded = c.cache_encoded;
    family.verify_checksums = c.verify;
    std::unique_ptr<BlockCache> cache;
    if (c.cache) cache = std::make_unique<BlockCache>(size_t{4} << 20, /*num_shard_bits=*/1);
    auto r = BlockFileReader::Open(Env::Default(), path, family, cache.get());
    if (!r.ok()) {
      const absl::StatusCode code = r.status().code();
      // InvalidArgument: not a block file; DataLoss: damage; FailedPrecondition: an intact
      // trailer asking for a newer reader (the fixup makes its CRC right).
      FUZZ_CHECK(code == absl::StatusCode::kInvalidArgument || code == absl::StatusCode::kDataLoss ||
                     code == absl::StatusCode::kFailedPrecondition,
                 "BlockFileReader::Open returned %s: %s", CodeName(r.status()),
                 std::string(r.status().message()).c_str());
      return;  // Open checks only meta blocks, always verified: every configuration fails alike
    }
    const BlockFileReader& reader = **r;
    Cells first = ReadAll(reader, /*fill_cache=*/true);
    Cells second = ReadAll(reader, /*fill_cache=*/true);  // from the cache when there is one
    FUZZ_CHECK(SameCells(first, second), "second scan differs from the first (cache=%d encoded=%d verify=%d)",
               c.cache, c.cache_encoded, c.verify);
    if (c.verify) {
      if (have_reference) {
        FUZZ_CHECK(SameCells(first, reference), "cached reader sees other cells than the uncached one");
      } else {
        reference = std::move(first);
        have_reference = true;
        first = second;
      }
    }
    Probe(reader, have_reference ? reference : first, /*fill_cache=*/c.cache);
  }
}

void Copy(const std::string& path, const std::string& bytes) {
  const std::string to = path + ".copy";
  Env* env = Env::Default();
  absl::Status s = CopyBlockFile(env, path, env, to, nullptr, /*read_bytes=*/64 << 10);
  if (!s.ok()) {
    const absl::StatusCode code = s.code();
    FUZZ_CHECK(code == absl::StatusCode::kInvalidArgument || code == absl::StatusCode::kDataLoss ||
                   code == absl::StatusCode::kFailedPrecondition,
               "CopyBlockFile returned %s: %s", CodeName(s), std::string(s.message()).c_str());
    FUZZ_CHECK(!env->FileExists(to) && !env->FileExists(to + ".tmp"), "a failed copy left a file behind");
    return;
  }
  absl::StatusOr<std::string> copied = env->ReadFileToString(to);
  FUZZ_CHECK(copied.ok() && *copied == bytes, "the copy differs from its source (%zu bytes)", bytes.size());
  env->DeleteFile(to).IgnoreError();
}

}  // namespace
}  // namespace basalt::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace basalt::fuzz;
  static const std::string path = ScratchDir::Get() + "/fuzz.blk";
  std::string file(reinterpret_cast<const char*>(data), size);
#ifdef BASALT_FUZZ_FIXUP_CHECKSUMS
  FixupChecksums(&file);
#endif
  WriteWholeFile(path, file);
  Run(path);
  Copy(path, file);
  return 0;
}
