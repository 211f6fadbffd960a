// A region's manifest: which block files are live in each store, newest first, and the WAL
// sequence id up to which everything is in those files. Replaced whole and atomically
// (Env::WriteFileDurably), never edited in place.
//
//   format stamp (common/format_stamp.h): magic "BSLTMANF", version 2, min_reader_version 2 |
//   varint next_file_number | varint64 flushed_seq | varint families |
//   per family: length-prefixed name, varint files, varint64 file number per file |
//   u32 masked CRC32C of everything before it
//
// Version 1 (written before the stamp) is the same after an 8-byte magic "BSLTMAN1" alone; it
// is still read. Every version ends with the checksum of everything before it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace basalt {

inline constexpr uint32_t kManifestVersion = 2;

struct Manifest {
  uint64_t next_file_number = 1;
  uint64_t flushed_seq = 0;
  std::map<std::string, std::vector<uint64_t>> files;  // family -> file numbers, newest first
};

std::string EncodeManifest(const Manifest& m);
// DataLoss for a damaged manifest, naming `file`.
absl::StatusOr<Manifest> DecodeManifest(std::string_view bytes, const std::string& file);

}  // namespace basalt
