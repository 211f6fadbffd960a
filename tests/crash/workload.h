// The crash test's workload, shared by the writer (crash_writer.cc) and the checker
// (crash_test.cc): the region's families and options, the row universe, values, and the text
// protocol the writer uses to report what it does.
//
// Rows "t<k>r<NN>" belong to writer thread k alone; every mutation a thread makes gets a
// timestamp above all its earlier ones (run id in the high bits), so a row's state is a pure
// function of the thread's sequence of operations. Rows "s<NN>" are shared by every thread and
// only receive puts with globally unique timestamps, so their state is "the put with the highest
// timestamp that was applied", whatever the order.
//
// Protocol (one line per write(2), so a line is never interleaved; a last line without '\n' was
// cut by the kill and means nothing):
//   O                                  region opened (recovery done)
//   B <thread> <n> <rows> {<row> <muts> {<kind> <family> <qualifier> <ts> <pad>}*}*
//                                      operation n of thread about to be passed to Mutate
//                                      kind: P put, D delete (exact version), C delete column,
//                                      F delete family (qualifier "-"); pad: put value padding
//   A <thread> <n>                     Mutate returned OK for that operation
//   E <text>                           unexpected error; the writer exits with status 3
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "storage/options.h"
#include "storage/region.h"

namespace basalt::crash {

inline constexpr int kThreads = 4;
inline constexpr int kRowsPerThread = 16;
inline constexpr int kSharedRows = 6;
inline constexpr int kQualifiers = 4;
inline constexpr const char* kRegionName = "crash,,1";

inline RegionDescriptor Descriptor() {
  RegionDescriptor d;
  d.name = kRegionName;
  FamilyOptions a;
  a.name = "a";
  a.block_size = 1024;
  a.encoding = DataBlockEncoding::kFastDiff;
  a.compression = Compression::kSnappy;
  a.bloom = BloomType::kRowCol;
  a.checksum = ChecksumType::kCrc32c;
  FamilyOptions b;
  b.name = "b";
  b.block_size = 2048;
  b.encoding = DataBlockEncoding::kRowIndex;
  b.compression = Compression::kZlib;
  b.bloom = BloomType::kRow;
  b.checksum = ChecksumType::kCrc32;
  b.bytes_per_checksum = 512;
  b.cache_encoded = true;
  d.families = {a, b};
  return d;
}

inline std::string ThreadRow(int thread, int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "t%dr%02d", thread, i);
  return buf;
}
inline std::string SharedRow(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "s%02d", i);
  return buf;
}
inline std::vector<std::string> AllRows() {
  std::vector<std::string> rows;
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kRowsPerThread; ++i) rows.push_back(ThreadRow(t, i));
  }
  for (int i = 0; i < kSharedRows; ++i) rows.push_back(SharedRow(i));
  return rows;
}

// A put's value: unique because its timestamp is.
inline std::string ValueOf(int64_t ts, int pad) {
  std::string v = "v" + std::to_string(ts) + "/";
  v.append(static_cast<size_t>(pad), static_cast<char>('a' + ts % 26));
  return v;
}

// Timestamps: run id, then a per-thread counter, then the thread (unique across threads).
inline int64_t MakeTs(int run, uint64_t counter, int thread) {
  return (static_cast<int64_t>(run) << 36) | static_cast<int64_t>(counter << 4) | thread;
}

}  // namespace basalt::crash
