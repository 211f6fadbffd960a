// libFuzzer target: the write-ahead log's record formats and replay (storage/internal/wal.h).
//
// Input: | flags u8 | bytes |
//   bytes go to DecodeWalPayload and DecodeFramedWalRecord, then become segment 1 of an empty
//   WAL directory for ReplayWal. flags bit 0: before that, recompute the CRC of every frame
//   whose length fits (walking frame by frame), so mutations reach the payload decoder and the
//   "bad record followed by a good one" logic instead of dying on the checksum.
//   flags bit 1: split the bytes into two segments at the offset given by flags bits 2..7 times
//   the input length / 64 (exercising replay across segments).
//
// Checks beyond "no crash": decoders return OK or DataLoss and a decoded record survives an
// encode/decode round trip; ReplayWal returns OK or DataLoss; after DataLoss no segment was
// truncated and no record applied from the bad segment onwards; after OK every segment is
// exactly its good records, and a second replay sees the same records and cuts nothing.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/coding.h"
#include "common/crc.h"
#include "common/env.h"
#include "storage/internal/wal.h"
#include "tests/fuzz/fuzz_common.h"

namespace basalt::fuzz {
namespace {

void FixupFrames(std::string* s) {
  size_t pos = 0;
  while (s->size() - pos >= kWalHeaderSize) {
    char* p = s->data() + pos;
    const uint32_t len = DecodeFixed32(p);
    if (len > s->size() - pos - kWalHeaderSize) break;
    const uint32_t crc = Crc32cExtend(Crc32c(p, 4), p + kWalHeaderSize, len);
    EncodeFixed32(p + 4, MaskCrc(crc));
    pos += kWalHeaderSize + len;
  }
}

void CheckDecoders(std::string_view in) {
  auto rec = DecodeWalPayload(in);
  if (rec.ok()) {
    auto again = DecodeWalPayload(EncodeWalPayload(*rec));
    FUZZ_CHECK(again.ok() && *again == *rec, "WAL payload does not survive a round trip");
  } else {
    FUZZ_CHECK(rec.status().code() == absl::StatusCode::kDataLoss, "DecodeWalPayload returned %s",
               CodeName(rec.status()));
  }
  size_t framed = 0;
  auto fr = DecodeFramedWalRecord(in, &framed);
  if (fr.ok()) {
    FUZZ_CHECK(framed >= kWalHeaderSize && framed <= in.size(), "framed size %zu of %zu bytes", framed, in.size());
    auto payload = DecodeWalPayload(in.substr(kWalHeaderSize, framed - kWalHeaderSize));
    FUZZ_CHECK(payload.ok() && *payload == *fr, "framed record's payload decodes differently");
    size_t framed2 = 0;
    std::string enc = EncodeWalRecord(*fr);
    auto again = DecodeFramedWalRecord(enc, &framed2);
    FUZZ_CHECK(again.ok() && *again == *fr && framed2 == enc.size(), "framed record does not survive a round trip");
  } else {
    FUZZ_CHECK(fr.status().code() == absl::StatusCode::kDataLoss, "DecodeFramedWalRecord returned %s",
               CodeName(fr.status()));
  }
}

void CheckReplay(const std::vector<std::string>& segments) {
  const std::string dir = ScratchDir::Get() + "/wal";
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir);
  for (size_t i = 0; i < segments.size(); ++i) WriteWholeFile(WalSegmentPath(dir, i + 1), segments[i]);

  std::vector<WalRecord> seen;
  ReplayStats stats;
  absl::Status s = ReplayWal(
      Env::Default(), dir,
      [&](const WalRecord& r) {
        seen.push_back(r);
        return absl::OkStatus();
      },
      &stats);
  FUZZ_CHECK(s.ok() || s.code() == absl::StatusCode::kDataLoss, "ReplayWal returned %s: %s", CodeName(s),
             std::string(s.message()).c_str());
  FUZZ_CHECK(stats.records == seen.size(), "stats count %llu records, fn saw %zu",
             static_cast<unsigned long long>(stats.records), seen.size());

  // Every segment left on disk must be a prefix of what was written; cut bytes add up.
  uint64_t cut = 0;
  for (size_t i = 0; i < segments.size(); ++i) {
    auto got = Env::Default()->ReadFileToString(WalSegmentPath(dir, i + 1));
    FUZZ_CHECK(got.ok(), "segment %zu vanished", i + 1);
    FUZZ_CHECK(got->size() <= segments[i].size() && segments[i].compare(0, got->size(), *got) == 0,
               "segment %zu is not a prefix of what was written", i + 1);
    cut += segments[i].size() - got->size();
  }
  FUZZ_CHECK(cut == stats.truncated_bytes, "truncated %llu bytes, stats say %llu",
             static_cast<unsigned long long>(cut), static_cast<unsigned long long>(stats.truncated_bytes));
  if (!s.ok()) return;

  // A clean log now: replaying again applies the same records and cuts nothing.
  std::vector<WalRecord> seen2;
  ReplayStats stats2;
  absl::Status s2 = ReplayWal(
      Env::Default(), dir,
      [&](const WalRecord& r) {
        seen2.push_back(r);
        return absl::OkStatus();
      },
      &stats2);
  FUZZ_CHECK(s2.ok(), "second replay returned %s: %s", CodeName(s2), std::string(s2.message()).c_str());
  FUZZ_CHECK(stats2.truncated_bytes == 0, "second replay cut %llu bytes",
             static_cast<unsigned long long>(stats2.truncated_bytes));
  FUZZ_CHECK(seen2 == seen, "second replay saw %zu records, first %zu", seen2.size(), seen.size());
}

}  // namespace
}  // namespace basalt::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace basalt::fuzz;
  if (size < 1) return 0;
  const uint8_t flags = data[0];
  std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<std::string> segments;
  if (flags & 2) {
    const size_t at = bytes.size() * (flags >> 2) / 64;
    segments = {bytes.substr(0, at), bytes.substr(at)};
  } else {
    segments = {bytes};
  }
  if (flags & 1) {
    for (std::string& seg : segments) FixupFrames(&seg);
  }
  CheckDecoders(segments[0]);
  CheckReplay(segments);
  return 0;
}
