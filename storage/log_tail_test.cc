// Reading a live log (storage/log_tail.h) and the holds that keep its segments for a reader
// (Wal::Hold), on real files.
#include "storage/log_tail.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "storage/internal/wal.h"
#include "tests/util/temp_dir.h"

namespace basalt {
namespace {

namespace fs = std::filesystem;

WalRecord Rec(const std::string& region, uint64_t seq, size_t value_size = 5) {
  WalRecord r;
  r.region = region;
  r.seq = seq;
  r.edits.push_back(WalEdit{"f", std::string(16, 'k'), std::string(value_size, 'v')});  // (a flat key: >= 14 bytes)
  return r;
}

std::unique_ptr<Wal> Open(const std::string& dir, uint64_t max_held = 0, std::vector<std::string>* dropped = nullptr) {
  Wal::Options o;
  o.dir = dir;
  o.async_sync_interval_ms = 0;
  o.max_held_segments = max_held;
  if (dropped != nullptr) o.on_hold_dropped = [dropped](const std::string& name) { dropped->push_back(name); };
  absl::StatusOr<std::unique_ptr<Wal>> w = Wal::Open(o);
  EXPECT_TRUE(w.ok()) << w.status();
  return w.ok() ? *std::move(w) : nullptr;
}

// Everything from `from` to the log's durable end: the records' (region, seq), and where it ended.
std::vector<std::pair<std::string, uint64_t>> Tail(Wal* w, const std::string& dir, WalPosition from,
                                                   WalPosition* reached, absl::Status* status,
                                                   uint64_t max_bytes = UINT64_MAX,
                                                   std::vector<WalPosition>* afters = nullptr) {
  std::vector<std::pair<std::string, uint64_t>> out;
  *status = ReadLogFrom(
      Env::Default(), dir, from, w->DurableEnd(), max_bytes,
      [&](const WalRecord& r, const WalPosition& after) {
        out.emplace_back(r.region, r.seq);
        if (afters != nullptr) afters->push_back(after);
        return absl::OkStatus();
      },
      reached);
  return out;
}

using Seqs = std::vector<std::pair<std::string, uint64_t>>;

TEST(LogTail, ReadsTheDurableRecordsInOrderAcrossSegmentsAndResumesWhereItStopped) {
  testing::TempDir dir;
  std::unique_ptr<Wal> w = Open(dir.path());
  ASSERT_TRUE(w->Append(Rec("a", 1), Durability::kSyncWal).ok());
  ASSERT_TRUE(w->Append(Rec("b", 1), Durability::kSyncWal).ok());
  ASSERT_TRUE(w->Roll().ok());
  ASSERT_TRUE(w->Append(Rec("a", 2), Durability::kSyncWal).ok());
  // Queued, not synced: not read.
  ASSERT_TRUE(w->Append(Rec("a", 3), Durability::kAsyncWal).ok());
  WalPosition reached;
  absl::Status s;
  std::vector<WalPosition> afters;
  EXPECT_EQ(Tail(w.get(), dir.path(), {}, &reached, &s, UINT64_MAX, &afters),
            (Seqs{{"a", 1}, {"b", 1}, {"a", 2}}));
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(reached, w->DurableEnd());
  ASSERT_EQ(afters.size(), 3u);
  EXPECT_EQ(afters[1].segment, 1u);
  EXPECT_EQ(afters[2].segment, 2u);
  // Once synced, from where it stopped: only the new one.
  ASSERT_TRUE(w->Sync().ok());
  EXPECT_EQ(Tail(w.get(), dir.path(), reached, &reached, &s), (Seqs{{"a", 3}}));
  ASSERT_TRUE(s.ok()) << s;
  // From any record's "after": the rest, once.
  EXPECT_EQ(Tail(w.get(), dir.path(), afters[0], &reached, &s), (Seqs{{"b", 1}, {"a", 2}, {"a", 3}}));
  EXPECT_EQ(Tail(w.get(), dir.path(), afters[1], &reached, &s), (Seqs{{"a", 2}, {"a", 3}}));
}

TEST(LogTail, AByteBudgetStopsAfterARecordAndTheNextReadGoesOn) {
  testing::TempDir dir;
  std::unique_ptr<Wal> w = Open(dir.path());
  for (uint64_t i = 1; i <= 50; ++i) ASSERT_TRUE(w->Append(Rec("r", i, 100), Durability::kSyncWal).ok());
  ASSERT_TRUE(w->Roll().ok());
  // Larger than the reader's 1 MiB chunk: read whole.
  ASSERT_TRUE(w->Append(Rec("r", 51, 3 << 20), Durability::kSyncWal).ok());
  ASSERT_TRUE(w->Append(Rec("r", 52), Durability::kSyncWal).ok());
  WalPosition at;
  std::vector<uint64_t> seen;
  for (int reads = 0; reads < 100 && at < w->DurableEnd(); ++reads) {
    WalPosition reached;
    absl::Status s = ReadLogFrom(
        Env::Default(), dir.path(), at, w->DurableEnd(), 1000,
        [&](const WalRecord& r, const WalPosition&) {
          seen.push_back(r.seq);
          return absl::OkStatus();
        },
        &reached);
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_TRUE(at < reached) << "no progress at segment " << at.segment << " offset " << at.offset;
    at = reached;
  }
  ASSERT_EQ(seen.size(), 52u);
  for (uint64_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], i + 1);
}

TEST(LogTail, AHoldKeepsSegmentsUntilReleasedAndAGoneSegmentIsNotFound) {
  testing::TempDir dir;
  std::unique_ptr<Wal> w = Open(dir.path());
  w->Hold("peer", 1);
  ASSERT_TRUE(w->Append(Rec("a", 1), Durability::kSyncWal).ok());
  ASSERT_TRUE(w->Roll().ok());
  ASSERT_TRUE(w->Append(Rec("a", 2), Durability::kSyncWal).ok());
  ASSERT_TRUE(w->Roll().ok());
  ASSERT_TRUE(w->MarkFlushed("a", 2).ok());
  EXPECT_TRUE(fs::exists(WalSegmentPath(dir.path(), 1)));  // the hold keeps what the regions no longer need
  WalPosition reached;
  absl::Status s;
  EXPECT_EQ(Tail(w.get(), dir.path(), {}, &reached, &s), (Seqs{{"a", 1}, {"a", 2}}));
  w->Hold("peer", 2);  // moved on: segment 1 goes
  EXPECT_FALSE(fs::exists(WalSegmentPath(dir.path(), 1)));
  EXPECT_TRUE(fs::exists(WalSegmentPath(dir.path(), 2)));
  // A reader placed in segment 1 lost it; one from the beginning starts at the oldest there is.
  Tail(w.get(), dir.path(), WalPosition{1, 0}, &reached, &s);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_EQ(Tail(w.get(), dir.path(), {}, &reached, &s), (Seqs{{"a", 2}}));
  w->Release("peer");
  EXPECT_FALSE(fs::exists(WalSegmentPath(dir.path(), 2)));
}

TEST(LogTail, AHoldPastItsBoundIsDroppedAndSaysSo) {
  testing::TempDir dir;
  std::vector<std::string> dropped;
  std::unique_ptr<Wal> w = Open(dir.path(), /*max_held=*/2, &dropped);
  w->Hold("slow", 1);
  w->Hold("fast", 4);
  for (uint64_t i = 1; i <= 3; ++i) {
    ASSERT_TRUE(w->Append(Rec("a", i), Durability::kSyncWal).ok());
    ASSERT_TRUE(w->Roll().ok());
    ASSERT_TRUE(w->MarkFlushed("a", i).ok());
  }
  // Segment 4 is current: "slow" kept 1..3, three past what the regions need; "fast" none.
  EXPECT_EQ(dropped, (std::vector<std::string>{"slow"}));
  EXPECT_FALSE(fs::exists(WalSegmentPath(dir.path(), 1)));
  EXPECT_TRUE(fs::exists(WalSegmentPath(dir.path(), 4)));
}

TEST(LogTail, ADamagedRecordIsDataLossNamingItsPlace) {
  testing::TempDir dir;
  std::unique_ptr<Wal> w = Open(dir.path());
  ASSERT_TRUE(w->Append(Rec("a", 1), Durability::kSyncWal).ok());
  ASSERT_TRUE(w->Append(Rec("a", 2), Durability::kSyncWal).ok());
  const std::string path = WalSegmentPath(dir.path(), 1);
  const uint64_t size = fs::file_size(path);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size - 3));
    f.put('X');
  }
  WalPosition reached;
  absl::Status s;
  EXPECT_EQ(Tail(w.get(), dir.path(), {}, &reached, &s), (Seqs{{"a", 1}}));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find(path), std::string::npos) << s;
}

// The newest bytes from memory (Wal::Options::recent_bytes): with the segment files gone
// (removed while the log writes them), a reader that keeps up still reads every durable record,
// up to a roll and on into the next segment (whose start is read from its file), and never one
// not synced yet. One that fell behind what memory keeps reads the file.
TEST(LogTail, AReaderThatKeepsUpReadsTheNewestRecordsFromMemory) {
  testing::TempDir dir;
  Wal::Options o;
  o.dir = dir.path();
  o.async_sync_interval_ms = 0;
  o.recent_bytes = 2 << 20;
  absl::StatusOr<std::unique_ptr<Wal>> opened = Wal::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status();
  Wal* w = opened->get();
  const RecentLogBytes recent = [w](uint64_t segment, uint64_t offset) { return w->ReadRecent(segment, offset); };
  auto tail = [&](WalPosition from, WalPosition* reached, absl::Status* status, const RecentLogBytes& from_memory) {
    Seqs out;
    *status = ReadLogFrom(
        Env::Default(), dir.path(), from, w->DurableEnd(), UINT64_MAX,
        [&](const WalRecord& r, const WalPosition&) {
          out.emplace_back(r.region, r.seq);
          return absl::OkStatus();
        },
        reached, from_memory);
    return out;
  };
  w->Hold("reader", 1);  // (kept only while a reader holds the log, as a shipper does)
  ASSERT_TRUE(w->Append(Rec("a", 1), Durability::kSyncWal).ok());
  WalPosition reached;
  absl::Status s;
  EXPECT_EQ(tail({}, &reached, &s, recent), (Seqs{{"a", 1}}));  // (a segment's start: from its file)
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(w->Append(Rec("a", 2), Durability::kSyncWal).ok());
  // Over a megabyte queued is written (not synced) at once: in memory, and not durable.
  ASSERT_TRUE(w->Append(Rec("a", 3, 1100 << 10), Durability::kAsyncWal).ok());
  for (const auto& e : fs::directory_iterator(dir.path())) {
    if (e.path().extension() == ".wal") fs::remove(e.path());
  }
  WalPosition after_file;
  EXPECT_EQ(tail(reached, &after_file, &s, nullptr), Seqs{});
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  std::optional<std::string> in_memory = w->ReadRecent(reached.segment, reached.offset);
  ASSERT_TRUE(in_memory.has_value());
  EXPECT_EQ(in_memory->size(), w->DurableEnd().offset - reached.offset);  // a2, not a3
  EXPECT_EQ(tail(reached, &reached, &s, recent), (Seqs{{"a", 2}}));
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(w->Roll().ok());  // (a3 synced with it)
  ASSERT_TRUE(w->Append(Rec("b", 1), Durability::kSyncWal).ok());
  EXPECT_EQ(tail(reached, &reached, &s, recent), (Seqs{{"a", 3}, {"b", 1}}));
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(reached, w->DurableEnd());

  // 20 records of 200 KiB: the first ones' bytes are no longer in memory, and the file is read.
  const WalPosition behind = reached;
  for (uint64_t seq = 2; seq < 22; ++seq) ASSERT_TRUE(w->Append(Rec("b", seq, 200 << 10), Durability::kSyncWal).ok());
  EXPECT_FALSE(w->ReadRecent(behind.segment, behind.offset).has_value());
  Seqs all = tail(behind, &reached, &s, recent);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(all.size(), 20u);
  EXPECT_EQ(reached, w->DurableEnd());

  // A group larger than what memory keeps is not kept, nor anything before it; what follows is.
  const WalPosition before_big = reached;
  ASSERT_TRUE(w->Append(Rec("c", 1, 3 << 20), Durability::kSyncWal).ok());
  const WalPosition after_big = w->DurableEnd();
  ASSERT_TRUE(w->Append(Rec("c", 2), Durability::kSyncWal).ok());
  EXPECT_FALSE(w->ReadRecent(before_big.segment, before_big.offset).has_value());
  in_memory = w->ReadRecent(after_big.segment, after_big.offset);
  ASSERT_TRUE(in_memory.has_value());
  EXPECT_EQ(in_memory->size(), w->DurableEnd().offset - after_big.offset);
  EXPECT_EQ(tail(before_big, &reached, &s, recent), (Seqs{{"c", 1}, {"c", 2}}));
  ASSERT_TRUE(s.ok()) << s;

  // With no reader holding the log, nothing more is kept.
  w->Release("reader");
  const WalPosition unheld = w->DurableEnd();
  ASSERT_TRUE(w->Append(Rec("c", 3), Durability::kSyncWal).ok());
  EXPECT_FALSE(w->ReadRecent(unheld.segment, unheld.offset).has_value());
}

}  // namespace
}  // namespace basalt
