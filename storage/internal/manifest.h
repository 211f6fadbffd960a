// A region's manifest: which block files are live in each store, newest first, and the WAL
// sequence id up to which everything is in those files. Replaced whole and atomically
// (Env::WriteFileDurably), never edited in place.
//
//   format stamp (common/format_stamp.h): magic "BSLTMANF", version 2, min_reader_version 2 |
//   varint next_file_number | varint64 flushed_seq | varint families |
//   per family: length-prefixed name, varint files, varint64 file number per file |
//   [version 3: varint references | per reference: varint64 file number, lp region_dir,
//    varint64 source file number, lp start_row, lp end_row] |
//   [version 4: varint nonces | per nonce: varint64 group, varint64 nonce, varint64 ms] |
//   [version 5: varint answers | per answer: varint64 group, varint64 nonce, varint cells,
//    per cell: lp family, lp flat key, lp value] |
//   u32 masked CRC32C of everything before it
//
// Version 3 is written only by a region that holds references (a daughter of a split, or a
// merged region, until its compactions rewrite them), version 4 only by one that remembers
// nonces (the recent non-idempotent operations its flushed files hold: a retry of one of them
// must find it after the log records are gone), version 5 only by one that also keeps the
// answers of some (the cells an Increment or Append wrote: its retry's answer, docs/DESIGN.md §6); every
// other manifest stays version 2, so an
// older reader refuses exactly the manifests it could not read right.
//
// Version 1 (written before the stamp) is the same after an 8-byte magic "BSLTMAN1" alone; it
// is still read. Every version ends with the checksum of everything before it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace basalt {

inline constexpr uint32_t kManifestVersion = 5;

// A store file of this region that is another region's block file seen through a row range
// (HBase's Reference): what a split's daughters and a merge's region hold until compacted.
struct FileReference {
  std::string region_dir;  // the other region's directory, relative to this one's: "../<name>"
  uint64_t number = 0;     // its block file
  std::string start_row;   // the rows this region sees: [start_row, end_row), end empty: all
  std::string end_row;
  bool operator==(const FileReference&) const = default;
};

struct Manifest {
  uint64_t next_file_number = 1;
  uint64_t flushed_seq = 0;
  std::map<std::string, std::vector<uint64_t>> files;  // family -> file numbers, newest first
  std::map<uint64_t, FileReference> references;       // file number -> what it refers to
  // (nonce group, nonce) -> when it was applied (ms since the epoch): storage/region.h Nonce.
  std::map<std::pair<uint64_t, uint64_t>, int64_t> nonces;
  // A nonce's answer (each one in `nonces`): the cells its operation wrote.
  struct AnswerCell {
    std::string family;
    std::string key;  // flat key (storage/cell.h)
    std::string value;
    bool operator==(const AnswerCell&) const = default;
  };
  std::map<std::pair<uint64_t, uint64_t>, std::vector<AnswerCell>> answers;
};

std::string EncodeManifest(const Manifest& m);
// DataLoss for a damaged manifest, naming `file`.
absl::StatusOr<Manifest> DecodeManifest(std::string_view bytes, const std::string& file);

}  // namespace basalt
