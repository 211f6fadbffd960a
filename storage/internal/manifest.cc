#include "storage/internal/manifest.h"

#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/format_stamp.h"
#include "common/crc.h"
#include "common/status.h"
#include "storage/cell.h"

namespace basalt {

namespace {
constexpr std::string_view kMagic = "BSLTMANF";
constexpr std::string_view kMagicV1 = "BSLTMAN1";  // version 1: the magic alone, no stamp

// Whether `dir` is a sibling directory "../<name>" (no other form is accepted from a manifest).
bool IsSiblingDir(std::string_view dir) {
  if (!dir.starts_with("../")) return false;
  std::string_view name = dir.substr(3);
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos;
}
}  // namespace

std::string EncodeManifest(const Manifest& m) {
  std::string s;
  const uint32_t version = !m.answers.empty() ? 5 : !m.nonces.empty() ? 4 : !m.references.empty() ? 3 : 2;
  AppendFormatStamp(&s, kMagic, version, /*min_reader_version=*/version);
  PutVarint64(&s, m.next_file_number);
  PutVarint64(&s, m.flushed_seq);
  PutVarint32(&s, static_cast<uint32_t>(m.files.size()));
  for (const auto& [family, files] : m.files) {
    PutLengthPrefixed(&s, family);
    PutVarint32(&s, static_cast<uint32_t>(files.size()));
    for (uint64_t f : files) PutVarint64(&s, f);
  }
  if (version >= 3) {
    PutVarint32(&s, static_cast<uint32_t>(m.references.size()));
    for (const auto& [number, ref] : m.references) {
      PutVarint64(&s, number);
      PutLengthPrefixed(&s, ref.region_dir);
      PutVarint64(&s, ref.number);
      PutLengthPrefixed(&s, ref.start_row);
      PutLengthPrefixed(&s, ref.end_row);
    }
  }
  if (version >= 4) {
    PutVarint32(&s, static_cast<uint32_t>(m.nonces.size()));
    for (const auto& [id, ms] : m.nonces) {
      PutVarint64(&s, id.first);
      PutVarint64(&s, id.second);
      PutVarint64(&s, static_cast<uint64_t>(ms));
    }
  }
  if (version >= 5) {
    PutVarint32(&s, static_cast<uint32_t>(m.answers.size()));
    for (const auto& [id, cells] : m.answers) {
      PutVarint64(&s, id.first);
      PutVarint64(&s, id.second);
      PutVarint32(&s, static_cast<uint32_t>(cells.size()));
      for (const Manifest::AnswerCell& c : cells) {
        PutLengthPrefixed(&s, c.family);
        PutLengthPrefixed(&s, c.key);
        PutLengthPrefixed(&s, c.value);
      }
    }
  }
  PutFixed32(&s, MaskCrc(Crc32c(s)));
  return s;
}

absl::StatusOr<Manifest> DecodeManifest(std::string_view b, const std::string& file) {
  auto bad = [&](std::string_view why) {
    return absl::DataLossError(absl::StrCat("corrupt manifest ", file, ": ", AV(why)));
  };
  size_t header = 8;  // version 1
  uint32_t version = 1;
  if (HasFormatMagic(b, kMagic)) {
    header = kFormatStampSize;
  } else if (!HasFormatMagic(b, kMagicV1)) {
    return bad("bad magic");
  }
  if (b.size() < header + 4) return bad("too short");
  // Every version ends with the checksum of all before it, so damage (a flipped stamp byte too)
  // is told apart from a newer format.
  uint32_t stored = UnmaskCrc(DecodeFixed32(b.data() + b.size() - 4));
  if (stored != Crc32c(b.data(), b.size() - 4)) return bad("checksum mismatch");
  if (header == kFormatStampSize) {
    BASALT_ASSIGN_OR_RETURN(FormatStamp stamp, ReadFormatStamp(b, kMagic, kManifestVersion, absl::StrCat("manifest ", file)));
    version = stamp.version;
  }
  std::string_view in = b.substr(header, b.size() - header - 4);
  Manifest m;
  uint32_t nfam;
  if (!GetVarint64(&in, &m.next_file_number) || !GetVarint64(&in, &m.flushed_seq) || !GetVarint32(&in, &nfam)) {
    return bad("truncated header");
  }
  for (uint32_t i = 0; i < nfam; ++i) {
    std::string_view name;
    uint32_t n;
    if (!GetLengthPrefixed(&in, &name) || !GetVarint32(&in, &n) || n > in.size()) return bad("truncated family");
    auto& files = m.files[std::string(name)];
    for (uint32_t j = 0; j < n; ++j) {
      uint64_t f;
      if (!GetVarint64(&in, &f) || f >= m.next_file_number) return bad("bad file number");
      files.push_back(f);
    }
  }
  if (version >= 3) {
    std::set<uint64_t> named;
    for (const auto& [family, files] : m.files) named.insert(files.begin(), files.end());
    uint32_t nref;
    if (!GetVarint32(&in, &nref) || nref > in.size()) return bad("truncated references");
    for (uint32_t i = 0; i < nref; ++i) {
      uint64_t number;
      FileReference ref;
      std::string_view dir, start, end;
      if (!GetVarint64(&in, &number) || !GetLengthPrefixed(&in, &dir) || !GetVarint64(&in, &ref.number) ||
          !GetLengthPrefixed(&in, &start) || !GetLengthPrefixed(&in, &end)) {
        return bad("truncated reference");
      }
      ref.region_dir.assign(dir);
      ref.start_row.assign(start);
      ref.end_row.assign(end);
      if (!named.count(number) || !IsSiblingDir(ref.region_dir) || (!ref.end_row.empty() && ref.end_row <= ref.start_row) ||
          !m.references.emplace(number, std::move(ref)).second) {
        return bad(absl::StrCat("bad reference for file ", number));
      }
    }
  }
  if (version >= 4) {
    uint32_t n;
    if (!GetVarint32(&in, &n) || n > in.size()) return bad("truncated nonces");
    for (uint32_t i = 0; i < n; ++i) {
      uint64_t group, nonce, ms;
      if (!GetVarint64(&in, &group) || !GetVarint64(&in, &nonce) || !GetVarint64(&in, &ms) || nonce == 0) {
        return bad("bad nonce");
      }
      m.nonces[{group, nonce}] = static_cast<int64_t>(ms);
    }
  }
  if (version >= 5) {
    uint32_t n;
    if (!GetVarint32(&in, &n) || n > in.size()) return bad("truncated answers");
    for (uint32_t i = 0; i < n; ++i) {
      uint64_t group, nonce;
      uint32_t ncells;
      if (!GetVarint64(&in, &group) || !GetVarint64(&in, &nonce) || !GetVarint32(&in, &ncells) || ncells > in.size() ||
          !m.nonces.contains({group, nonce}) || m.answers.contains({group, nonce})) {
        return bad("bad nonce answer");
      }
      std::vector<Manifest::AnswerCell>& cells = m.answers[{group, nonce}];
      for (uint32_t j = 0; j < ncells; ++j) {
        std::string_view family, key, value;
        KeyView k;
        if (!GetLengthPrefixed(&in, &family) || !GetLengthPrefixed(&in, &key) || !GetLengthPrefixed(&in, &value) ||
            !ParseFlatKey(key, &k)) {
          return bad("bad nonce answer cell");
        }
        cells.push_back({std::string(family), std::string(key), std::string(value)});
      }
    }
  }
  if (!in.empty()) return bad("trailing bytes");
  return m;
}

}  // namespace basalt
