#include "storage/internal/wal.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>

#include <unistd.h>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/util/random_bytes.h"
#include "common/coding.h"
#include "common/crc.h"
#include "common/env.h"
#include "common/format_stamp.h"
#include "storage/cell.h"

namespace basalt {
namespace {

std::string NewTestDir(const std::string& name) {
  static std::atomic<int> counter{0};
  std::string dir = absl::StrCat(::testing::TempDir(), "/wal_test_", name, "_", ::getpid(), "_", counter++);
  Env* env = Env::Default();
  if (env->FileExists(dir)) {
    auto names = env->ListDir(dir);
    if (names.ok()) {
      for (const auto& n : *names) env->DeleteFile(dir + "/" + n).IgnoreError();
    }
  }
  EXPECT_TRUE(env->CreateDirs(dir).ok());
  return dir;
}

WalRecord MakeRecord(const std::string& region, uint64_t seq, int edits, size_t value_size = 10) {
  WalRecord r;
  r.region = region;
  r.seq = seq;
  for (int i = 0; i < edits; ++i) {
    WalEdit e;
    e.family = absl::StrCat("f", i % 3);
    e.key = MakeFlatKey(absl::StrCat("row", seq), absl::StrCat("q", i), static_cast<int64_t>(seq), CellType::kPut);
    e.value = std::string(value_size, static_cast<char>('a' + (seq + i) % 26));
    r.edits.push_back(std::move(e));
  }
  return r;
}

std::vector<WalRecord> ReplayAll(const std::string& dir, ReplayStats* stats, absl::Status* status) {
  std::vector<WalRecord> out;
  *status = ReplayWal(Env::Default(), dir,
                      [&](const WalRecord& r) {
                        out.push_back(r);
                        return absl::OkStatus();
                      },
                      stats);
  return out;
}

std::unique_ptr<Wal> OpenWal(const std::string& dir, uint64_t roll_size = 64ull << 20, int64_t interval_ms = 100,
                             Env* env = nullptr) {
  Wal::Options o;
  o.env = env;
  o.dir = dir;
  o.roll_size = roll_size;
  o.async_sync_interval_ms = interval_ms;
  auto w = Wal::Open(o);
  EXPECT_TRUE(w.ok()) << w.status();
  return w.ok() ? std::move(w).value() : nullptr;
}

TEST(WalRecordTest, EncodeDecodeRoundTrip) {
  for (int edits : {0, 1, 7}) {
    WalRecord r = MakeRecord("region-1", 123456789012345ull, edits);
    auto d = DecodeWalPayload(EncodeWalPayload(r));
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(*d, r);
    std::string framed = EncodeWalRecord(r);
    size_t n = 0;
    auto f = DecodeFramedWalRecord(framed, &n);
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ(*f, r);
    EXPECT_EQ(n, framed.size());
  }
}

// A replicated record carries the clusters it came through (version 4), after its nonce; one
// without decodes as before, and damage in them is DataLoss.
TEST(WalRecordTest, ClusterIdsRoundTripAndAreChecked) {
  WalRecord r = MakeRecord("region-1", 42, 2);
  const std::string without = EncodeWalPayload(r);
  r.nonce = 9;
  r.cluster_ids = {"0f0f0f0f-1111-4222-8333-444444444444", "a0a0a0a0-5555-4666-8777-888888888888"};
  const std::string with = EncodeWalPayload(r);
  auto d = DecodeWalPayload(with);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(*d, r);
  r.nonce = 0;  // (ids without a nonce)
  d = DecodeWalPayload(EncodeWalPayload(r));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(*d, r);
  EXPECT_EQ(DecodeWalPayload(without)->cluster_ids.size(), 0u);
  for (size_t cut = 1; cut < 40; ++cut) {
    EXPECT_EQ(DecodeWalPayload(with.substr(0, with.size() - cut)).status().code(), absl::StatusCode::kDataLoss) << cut;
  }
  std::string none = without + "C";
  none.push_back('\x00');  // a count of 0
  EXPECT_EQ(DecodeWalPayload(none).status().code(), absl::StatusCode::kDataLoss);
  std::string many = without + "C";
  many.push_back('\x41');  // 65 ids
  for (int i = 0; i < 65; ++i) many += std::string("\x01x", 2);
  EXPECT_EQ(DecodeWalPayload(many).status().code(), absl::StatusCode::kDataLoss);
  std::string empty = without + "C";
  empty.push_back('\x01');
  empty.push_back('\x00');  // an empty id
  EXPECT_EQ(DecodeWalPayload(empty).status().code(), absl::StatusCode::kDataLoss);
}

// A record may carry the nonce of the operation that wrote it; one without decodes as before
// (a version 2 payload is exactly a version 3 one without a nonce).
TEST(WalRecordTest, NoncesRoundTripAndAreChecked) {
  WalRecord r = MakeRecord("region-1", 42, 2);
  const std::string without = EncodeWalPayload(r);
  r.nonce_group = 0x1234567890abcdefull;
  r.nonce = 77;
  const std::string with = EncodeWalPayload(r);
  auto d = DecodeWalPayload(with);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(*d, r);
  EXPECT_EQ(with.substr(0, without.size()), without);
  auto plain = DecodeWalPayload(without);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->nonce, 0u);
  // A cut nonce, a zero nonce and bytes after it are damage.
  EXPECT_EQ(DecodeWalPayload(with.substr(0, with.size() - 1)).status().code(), absl::StatusCode::kDataLoss);
  std::string zero = without + "N";
  zero.push_back('\x05');
  zero.push_back('\x00');
  EXPECT_EQ(DecodeWalPayload(zero).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeWalPayload(with + "x").status().code(), absl::StatusCode::kDataLoss);
}

TEST(WalRecordTest, SegmentNames) {
  EXPECT_EQ(WalSegmentPath("/d", 42), "/d/00000000000000000042.wal");
  uint64_t n = 0;
  EXPECT_TRUE(ParseWalSegmentName("00000000000000000042.wal", &n));
  EXPECT_EQ(n, 42u);
  EXPECT_FALSE(ParseWalSegmentName("0000000000000000042.wal", &n));
  EXPECT_FALSE(ParseWalSegmentName("00000000000000000042.wax", &n));
  EXPECT_FALSE(ParseWalSegmentName("0000000000000000004x.wal", &n));
  EXPECT_FALSE(ParseWalSegmentName("99999999999999999999.wal", &n));  // overflows u64
}

TEST(WalRecordTest, DecodeGarbageNeverCrashes) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    std::string s(rng() % 64, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    auto d = DecodeWalPayload(s);
    if (!d.ok()) {
      EXPECT_EQ(d.status().code(), absl::StatusCode::kDataLoss);
    }
    size_t n = 0;
    auto f = DecodeFramedWalRecord(s, &n);
    if (!f.ok()) {
      EXPECT_EQ(f.status().code(), absl::StatusCode::kDataLoss);
    }
  }
  // Every truncation and single-byte mutation of a valid payload.
  std::string good = EncodeWalPayload(MakeRecord("r", 99, 4));
  for (size_t len = 0; len < good.size(); ++len) {
    auto d = DecodeWalPayload(std::string_view(good).substr(0, len));
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), absl::StatusCode::kDataLoss);
  }
  auto trailing = DecodeWalPayload(good + "x");
  EXPECT_EQ(trailing.status().code(), absl::StatusCode::kDataLoss);
  for (size_t i = 0; i < good.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string m = good;
      m[i] = static_cast<char>(m[i] ^ (1 << bit));
      auto d = DecodeWalPayload(m);
      if (!d.ok()) {
        EXPECT_EQ(d.status().code(), absl::StatusCode::kDataLoss);
      }
    }
  }
  // A huge edit count in a tiny payload is rejected before allocating.
  std::string huge;
  PutLengthPrefixed(&huge, "r");
  PutVarint64(&huge, 1);
  PutVarint32(&huge, 0xFFFFFFFFu);
  EXPECT_EQ(DecodeWalPayload(huge).status().code(), absl::StatusCode::kDataLoss);
}

TEST(WalTest, RoundTripAcrossRolls) {
  std::string dir = NewTestDir("roundtrip");
  std::vector<WalRecord> written;
  {
    auto wal = OpenWal(dir, /*roll_size=*/4096);
    ASSERT_NE(wal, nullptr);
    EXPECT_EQ(wal->current_segment(), 1u);
    for (uint64_t i = 1; i <= 1000; ++i) {
      WalRecord r = MakeRecord(absl::StrCat("region-", i % 4), i, static_cast<int>(i % 5), i % 97);
      ASSERT_TRUE(wal->Append(r, i % 3 == 0 ? Durability::kAsyncWal : Durability::kSyncWal).ok());
      written.push_back(r);
      if (i == 500) {
        uint64_t before = wal->current_segment();
        auto n = wal->Roll();
        ASSERT_TRUE(n.ok()) << n.status();
        EXPECT_EQ(*n, before + 1);
        EXPECT_EQ(wal->current_segment(), *n);
      }
    }
    EXPECT_GT(wal->current_segment(), 10u);  // rolled by itself past roll_size
    auto st = wal->GetStats();
    EXPECT_EQ(st.records, 1000u);
  }
  ReplayStats stats;
  absl::Status s;
  auto got = ReplayAll(dir, &stats, &s);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(got, written);
  EXPECT_EQ(stats.records, 1000u);
  EXPECT_GT(stats.segments, 10u);
  EXPECT_EQ(stats.truncated_bytes, 0u);
  EXPECT_TRUE(stats.truncated_at.empty());
}

TEST(WalTest, ReopenStartsNewSegmentAndReplaysInOrder) {
  std::string dir = NewTestDir("reopen");
  std::vector<WalRecord> written;
  uint64_t first_segment = 0;
  {
    auto wal = OpenWal(dir);
    first_segment = wal->current_segment();
    for (uint64_t i = 1; i <= 10; ++i) {
      written.push_back(MakeRecord("a", i, 2));
      ASSERT_TRUE(wal->Append(written.back(), Durability::kSyncWal).ok());
    }
  }
  {
    auto wal = OpenWal(dir);
    EXPECT_EQ(wal->current_segment(), first_segment + 1);
    for (uint64_t i = 11; i <= 20; ++i) {
      written.push_back(MakeRecord("b", i, 1));
      ASSERT_TRUE(wal->Append(written.back(), Durability::kAsyncWal).ok());
    }
  }  // destructor syncs the async records
  ReplayStats stats;
  absl::Status s;
  auto got = ReplayAll(dir, &stats, &s);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(got, written);
  EXPECT_EQ(stats.segments, 2u);
}

TEST(WalTest, GroupCommit) {
  std::string dir = NewTestDir("group");
  constexpr int kThreads = 32;
  constexpr int kPerThread = 200;
  Wal::Stats st;
  {
    auto wal = OpenWal(dir);
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) {
          if (!wal->Append(MakeRecord(absl::StrCat("t", t), static_cast<uint64_t>(i), 1, 100),
                           Durability::kSyncWal)
                   .ok()) {
            ++failures;
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(failures.load(), 0);
    st = wal->GetStats();
  }
  constexpr uint64_t kTotal = kThreads * kPerThread;
  EXPECT_EQ(st.records, kTotal);
  EXPECT_EQ(st.synced_records, kTotal);
  EXPECT_LT(st.syncs, kTotal);
  double per_sync = static_cast<double>(st.synced_records) / static_cast<double>(st.syncs);
  std::printf("group commit: %llu records, %llu fdatasyncs, %.2f writes per fdatasync\n",
              static_cast<unsigned long long>(st.synced_records), static_cast<unsigned long long>(st.syncs),
              per_sync);
  ::testing::Test::RecordProperty("writes_per_fdatasync", std::to_string(per_sync));
  EXPECT_GT(per_sync, 1.0);

  ReplayStats stats;
  absl::Status s;
  auto got = ReplayAll(dir, &stats, &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(got.size(), kTotal);
  // Each thread's records appear in its own order.
  std::vector<int64_t> last(kThreads, -1);
  for (const WalRecord& r : got) {
    int t = std::stoi(r.region.substr(1));
    EXPECT_EQ(static_cast<int64_t>(r.seq), last[t] + 1);
    last[t] = static_cast<int64_t>(r.seq);
  }
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(last[t], kPerThread - 1);
}

TEST(WalTest, AsyncAppendsDurableAfterSync) {
  std::string dir = NewTestDir("async");
  auto wal = OpenWal(dir, 64ull << 20, /*interval_ms=*/3600 * 1000);  // syncer never fires
  for (uint64_t i = 1; i <= 100; ++i) ASSERT_TRUE(wal->Append(MakeRecord("r", i, 1), Durability::kAsyncWal).ok());
  auto st = wal->GetStats();
  EXPECT_EQ(st.records, 100u);
  EXPECT_EQ(st.synced_records, 0u);
  EXPECT_EQ(st.syncs, 0u);
  ASSERT_TRUE(wal->Sync().ok());
  st = wal->GetStats();
  EXPECT_EQ(st.synced_records, 100u);
  EXPECT_EQ(st.syncs, 1u);
  ASSERT_TRUE(wal->Sync().ok());  // nothing new: no fdatasync
  EXPECT_EQ(wal->GetStats().syncs, 1u);
  // The records are on disk while the WAL is still open.
  ReplayStats stats;
  absl::Status s;
  auto got = ReplayAll(dir, &stats, &s);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(got.size(), 100u);
  EXPECT_EQ(stats.truncated_bytes, 0u);
  // A SYNC append covers earlier async ones too.
  ASSERT_TRUE(wal->Append(MakeRecord("r", 101, 1), Durability::kAsyncWal).ok());
  ASSERT_TRUE(wal->Append(MakeRecord("r", 102, 1), Durability::kSyncWal).ok());
  EXPECT_EQ(wal->GetStats().synced_records, 102u);
}

TEST(WalTest, BackgroundSyncerSyncsAsyncAppends) {
  std::string dir = NewTestDir("bgsync");
  auto wal = OpenWal(dir, 64ull << 20, /*interval_ms=*/20);
  for (uint64_t i = 1; i <= 50; ++i) ASSERT_TRUE(wal->Append(MakeRecord("r", i, 1), Durability::kAsyncWal).ok());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (wal->GetStats().synced_records < 50 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(wal->GetStats().synced_records, 50u);
}

TEST(WalTest, SkipWalIsRejected) {
  std::string dir = NewTestDir("skip");
  auto wal = OpenWal(dir);
  EXPECT_EQ(wal->Append(MakeRecord("r", 1, 1), Durability::kSkipWal).code(), absl::StatusCode::kInvalidArgument);
}

// Writes five records into one segment, returns its path and the offset where each starts.
std::string WriteFiveRecords(const std::string& dir, std::vector<WalRecord>* recs, std::vector<uint64_t>* offsets) {
  auto wal = OpenWal(dir);
  std::string path = WalSegmentPath(dir, wal->current_segment());
  uint64_t off = EncodeWalSegmentHeader(wal->current_segment()).size();
  for (uint64_t i = 1; i <= 5; ++i) {
    WalRecord r = MakeRecord("region", i, 3, 20);
    offsets->push_back(off);
    off += EncodeWalRecord(r).size();
    EXPECT_TRUE(wal->Append(r, Durability::kSyncWal).ok());
    recs->push_back(r);
  }
  offsets->push_back(off);  // end
  return path;
}

TEST(WalReplayTest, TornTailIsCut) {
  std::string dir = NewTestDir("torn");
  std::vector<WalRecord> recs;
  std::vector<uint64_t> offsets;
  std::string path = WriteFiveRecords(dir, &recs, &offsets);
  Env* env = Env::Default();
  auto original = env->ReadFileToString(path);
  ASSERT_TRUE(original.ok());
  ASSERT_EQ(original->size(), offsets[5]);
  const std::vector<WalRecord> expected(recs.begin(), recs.begin() + 4);
  for (uint64_t cut = offsets[4] + 1; cut < offsets[5]; ++cut) {
    SCOPED_TRACE(cut);
    ASSERT_TRUE(env->WriteFileDurably(path, std::string_view(*original).substr(0, cut)).ok());
    ReplayStats stats;
    absl::Status s;
    auto got = ReplayAll(dir, &stats, &s);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(got, expected);
    EXPECT_EQ(stats.truncated_bytes, cut - offsets[4]);
    EXPECT_EQ(stats.truncated_at, absl::StrCat(path, "@", offsets[4]));
    EXPECT_EQ(*env->GetFileSize(path), offsets[4]);
    // A second replay is clean.
    ReplayStats again;
    got = ReplayAll(dir, &again, &s);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(got, expected);
    EXPECT_EQ(again.truncated_bytes, 0u);
  }
}

TEST(WalReplayTest, FlippedByteInLastRecordIsDamageNotATornWrite) {
  // A crash mid-write leaves a record cut short, never a whole one with a bad checksum: a flip
  // in the last record is damage to a synced record (DataLoss), unless it makes the length run
  // past the end of the file, which cannot be told from a torn write (cut).
  std::string dir = NewTestDir("fliplast");
  std::vector<WalRecord> recs;
  std::vector<uint64_t> offsets;
  std::string path = WriteFiveRecords(dir, &recs, &offsets);
  Env* env = Env::Default();
  std::string original = *env->ReadFileToString(path);
  const std::vector<WalRecord> expected(recs.begin(), recs.begin() + 4);
  int cut = 0, refused = 0;
  for (uint64_t i = offsets[4]; i < offsets[5]; ++i) {
    SCOPED_TRACE(i);
    std::string bad = original;
    bad[i] = static_cast<char>(bad[i] ^ 0x40);
    ASSERT_TRUE(env->WriteFileDurably(path, bad).ok());
    const bool runs_past_end = DecodeFixed32(bad.data() + offsets[4]) > offsets[5] - offsets[4] - kWalHeaderSize;
    ReplayStats stats;
    absl::Status s;
    auto got = ReplayAll(dir, &stats, &s);
    EXPECT_EQ(got, expected);
    if (runs_past_end) {
      ++cut;
      ASSERT_TRUE(s.ok()) << s;
      EXPECT_EQ(stats.truncated_bytes, offsets[5] - offsets[4]);
      EXPECT_EQ(*env->GetFileSize(path), offsets[4]);
    } else {
      ++refused;
      EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
      EXPECT_NE(s.message().find(absl::StrCat("at offset ", offsets[4])), absl::string_view::npos) << s;
      EXPECT_NE(s.message().find("after seq 4 and before the end of the log are lost"), absl::string_view::npos) << s;
      EXPECT_EQ(*env->GetFileSize(path), original.size());  // nothing cut
    }
  }
  EXPECT_GT(cut, 0);
  EXPECT_GT(refused, 100);
}

TEST(WalReplayTest, ATailOfZerosFromInsideTheLastRecordIsATornWrite) {
  // Power lost before the last pages reached the disk: the file's size is there, its bytes not.
  std::string dir = NewTestDir("zerotail");
  std::vector<WalRecord> recs;
  std::vector<uint64_t> offsets;
  std::string path = WriteFiveRecords(dir, &recs, &offsets);
  Env* env = Env::Default();
  std::string bad = *env->ReadFileToString(path);
  std::fill(bad.begin() + static_cast<long>(offsets[4]) + 20, bad.end(), '\0');
  ASSERT_TRUE(env->WriteFileDurably(path, bad).ok());
  ReplayStats stats;
  absl::Status s;
  auto got = ReplayAll(dir, &stats, &s);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(got, std::vector<WalRecord>(recs.begin(), recs.begin() + 4));
  EXPECT_EQ(stats.truncated_bytes, offsets[5] - offsets[4]);
}

TEST(WalReplayTest, FlippedByteInMiddleRecordIsDataLoss) {
  std::string dir = NewTestDir("flipmid");
  std::vector<WalRecord> recs;
  std::vector<uint64_t> offsets;
  std::string path = WriteFiveRecords(dir, &recs, &offsets);
  Env* env = Env::Default();
  std::string original = *env->ReadFileToString(path);
  for (uint64_t i = offsets[2]; i < offsets[3]; ++i) {
    SCOPED_TRACE(i);
    std::string bad = original;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    ASSERT_TRUE(env->WriteFileDurably(path, bad).ok());
    ReplayStats stats;
    absl::Status s;
    auto got = ReplayAll(dir, &stats, &s);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    EXPECT_NE(s.message().find(path), absl::string_view::npos) << s;
    EXPECT_NE(s.message().find(absl::StrCat("at offset ", offsets[2])), absl::string_view::npos) << s;
    EXPECT_NE(s.message().find("after seq 2 and before seq 4 are lost"), absl::string_view::npos) << s;
    EXPECT_EQ(got, std::vector<WalRecord>(recs.begin(), recs.begin() + 2));  // nothing past the damage
    EXPECT_EQ(*env->GetFileSize(path), original.size());                   // and nothing is cut
  }
}

TEST(WalReplayTest, CallbackErrorStopsReplay) {
  std::string dir = NewTestDir("cberr");
  std::vector<WalRecord> recs;
  std::vector<uint64_t> offsets;
  WriteFiveRecords(dir, &recs, &offsets);
  int calls = 0;
  absl::Status s = ReplayWal(Env::Default(), dir,
                             [&](const WalRecord&) {
                               return ++calls == 2 ? absl::InternalError("stop") : absl::OkStatus();
                             },
                             nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(calls, 2);
}

TEST(WalReplayTest, MissingAndEmptyDir) {
  ReplayStats stats;
  absl::Status s;
  auto got = ReplayAll(::testing::TempDir() + "/wal_test_does_not_exist", &stats, &s);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_TRUE(got.empty());
  std::string dir = NewTestDir("empty");
  got = ReplayAll(dir, &stats, &s);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(stats.segments, 0u);
}

TEST(WalTest, DeleteSegmentsBefore) {
  std::string dir = NewTestDir("delete");
  auto wal = OpenWal(dir);
  for (uint64_t i = 1; i <= 4; ++i) {
    ASSERT_TRUE(wal->Append(MakeRecord("r", i, 1), Durability::kSyncWal).ok());
    ASSERT_TRUE(wal->Roll().ok());
  }
  ASSERT_TRUE(wal->Append(MakeRecord("r", 5, 1), Durability::kSyncWal).ok());
  const uint64_t current = wal->current_segment();
  EXPECT_EQ(current, 5u);
  EXPECT_EQ(wal->DeleteSegmentsBefore(current + 1).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(wal->DeleteSegmentsBefore(3).ok());
  auto names = Env::Default()->ListDir(dir);
  ASSERT_TRUE(names.ok());
  std::vector<std::string> expected = {"00000000000000000003.wal", "00000000000000000004.wal",
                                       "00000000000000000005.wal", "SEGMENTS"};
  EXPECT_EQ(*names, expected);
  ASSERT_TRUE(wal->DeleteSegmentsBefore(current).ok());
  ReplayStats stats;
  absl::Status s;
  auto got = ReplayAll(dir, &stats, &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].seq, 5u);
}

// An Env whose writable files' Sync fails once `fail_sync` is set, waits while the gate is shut,
// and sleeps sync_delay_us before syncing.
class SyncEnv : public EnvWrapper {
 public:
  SyncEnv() : EnvWrapper(Env::Default()) {}
  std::atomic<bool> fail_sync{false};
  std::atomic<int64_t> sync_delay_us{0};

  void Shut() {
    absl::MutexLock l(&mu_);
    open_ = false;
  }
  void Open() {
    absl::MutexLock l(&mu_);
    open_ = true;
  }
  // Until n syncs wait at the shut gate.
  void AwaitWaiting(int n) {
    absl::MutexLock l(&mu_);
    auto enough = [this, n]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return waiting_ >= n; };
    mu_.Await(absl::Condition(&enough));
  }

  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    auto f = target()->NewWritableFile(path);
    if (!f.ok()) return f.status();
    return std::unique_ptr<WritableFile>(new File(std::move(f).value(), this));
  }

 private:
  class File : public WritableFileWrapper {
   public:
    File(std::unique_ptr<WritableFile> f, SyncEnv* env) : WritableFileWrapper(std::move(f)), env_(env) {}
    absl::Status Sync() override {
      if (env_->fail_sync) return absl::UnavailableError("injected fdatasync failure");
      {
        absl::MutexLock l(&env_->mu_);
        ++env_->waiting_;
        env_->mu_.Await(absl::Condition(&env_->open_));
        --env_->waiting_;
      }
      absl::SleepFor(absl::Microseconds(env_->sync_delay_us.load()));
      return WritableFileWrapper::Sync();
    }

   private:
    SyncEnv* env_;
  };

  absl::Mutex mu_;
  bool open_ ABSL_GUARDED_BY(mu_) = true;
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;
};

TEST(WalTest, SyncErrorIsStickyAndReachesEveryWaiter) {
  std::string dir = NewTestDir("fault");
  SyncEnv env;
  auto wal = OpenWal(dir, 64ull << 20, 3600 * 1000, &env);
  ASSERT_TRUE(wal->Append(MakeRecord("r", 1, 1), Durability::kSyncWal).ok());
  env.fail_sync = true;
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      absl::Status s = wal->Append(MakeRecord("r", 100 + t, 1), Durability::kSyncWal);
      if (s.code() == absl::StatusCode::kUnavailable) ++errors;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 8);
  env.fail_sync = false;  // even once the disk recovers, the WAL stays dead
  EXPECT_EQ(wal->Append(MakeRecord("r", 200, 1), Durability::kAsyncWal).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(wal->Sync().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(wal->Roll().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(wal->GetStats().synced_records, 1u);
}

TEST(WalTest, AGatheringLeaderWaitsForAGroupButNotForWritersWhoNeverCome) {
  std::string dir = NewTestDir("gather");
  SyncEnv env;
  auto wal = OpenWal(dir, 64ull << 20, 3600 * 1000, &env);  // no background syncer
  env.sync_delay_us = 3000;
  // A leader blocks in its fdatasync with one record; seven more writers queue behind it.
  env.Shut();
  std::vector<std::thread> writers;
  writers.emplace_back([&] { EXPECT_TRUE(wal->Append(MakeRecord("r", 1, 1), Durability::kSyncWal).ok()); });
  env.AwaitWaiting(1);
  for (int i = 0; i < 7; ++i) {
    writers.emplace_back([&, i] {
      EXPECT_TRUE(wal->Append(MakeRecord("r", 2 + i, 1), Durability::kSyncWal).ok());
    });
  }
  while (wal->GetStats().records < 8) absl::SleepFor(absl::Milliseconds(1));
  env.Open();  // the first group syncs; the seven queued make the next one
  for (auto& t : writers) t.join();
  Wal::Stats st = wal->GetStats();
  EXPECT_EQ(st.syncs, 2u);
  EXPECT_EQ(st.synced_records, 8u);

  // A lone writer after a group of seven: its leader gathers, waiting for five more records
  // that never come, for the 1 ms cap (the last sync took over 3 ms), then syncs alone.
  const absl::Time t0 = absl::Now();
  ASSERT_TRUE(wal->Append(MakeRecord("r", 9, 1), Durability::kSyncWal).ok());
  const absl::Duration took = absl::Now() - t0;
  EXPECT_GE(took, absl::Microseconds(3000 + 1000)) << "no gathering before the sync";
  EXPECT_LT(took, absl::Seconds(5));
  EXPECT_EQ(wal->GetStats().syncs, 3u);
  EXPECT_EQ(wal->GetStats().synced_records, 9u);

  wal.reset();
  ReplayStats stats;
  absl::Status s;
  auto got = ReplayAll(dir, &stats, &s);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(got.size(), 9u);
}

}  // namespace
}  // namespace basalt

namespace basalt {
namespace {

// Writes records 1..n into one segment and returns its path.
std::string WriteSegment(const std::string& dir, int n, size_t value_size = 10) {
  auto wal = OpenWal(dir);
  for (int i = 1; i <= n; ++i) EXPECT_TRUE(wal->Append(MakeRecord("r", i, 2, value_size), Durability::kSyncWal).ok());
  std::string path = WalSegmentPath(dir, wal->current_segment());
  wal.reset();
  return path;
}

TEST(WalReplayTest, TornTailBeforeAnEmptyNewerSegmentIsStillCut) {
  // A roll that failed after creating its file can leave an empty newer segment.
  std::string dir = NewTestDir("emptynewer");
  std::string path = WriteSegment(dir, 5);
  auto size = Env::Default()->GetFileSize(path);
  ASSERT_TRUE(size.ok());
  ASSERT_TRUE(Env::Default()->Truncate(path, *size - 7).ok());
  ASSERT_TRUE(Env::Default()->WriteFileDurably(WalSegmentPath(dir, 2), "").ok());
  ReplayStats stats;
  absl::Status st;
  auto got = ReplayAll(dir, &stats, &st);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(got.size(), 4u);
  EXPECT_GT(stats.truncated_bytes, 0u);
}

TEST(WalReplayTest, ASegmentWhoseCreationACrashCutShortIsNotDamage) {
  // Crash 1 while a roll created segment 2 (half its header written); the restart's log then
  // starts segment 3 after it. Segment 2 held no record: it is cut, nothing is refused.
  std::string dir = NewTestDir("tornheader");
  {
    auto wal = OpenWal(dir);
    ASSERT_TRUE(wal->Append(MakeRecord("r", 1, 1), Durability::kSyncWal).ok());
  }
  const std::string header = EncodeWalSegmentHeader(2);
  ASSERT_TRUE(Env::Default()->WriteFileDurably(WalSegmentPath(dir, 2), header.substr(0, header.size() - 3)).ok());
  {
    auto wal = OpenWal(dir);
    EXPECT_EQ(wal->current_segment(), 3u);
    ASSERT_TRUE(wal->Append(MakeRecord("r", 2, 1), Durability::kSyncWal).ok());
  }
  ReplayStats stats;
  absl::Status st;
  auto got = ReplayAll(dir, &stats, &st);
  ASSERT_TRUE(st.ok()) << st;
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].seq, 2u);
  EXPECT_EQ(stats.truncated_bytes, header.size() - 3);
}

TEST(WalReplayTest, AMissingSegmentIsDataLossUnlessSkipped) {
  std::string dir = NewTestDir("missing");
  {
    auto wal = OpenWal(dir);
    for (uint64_t i = 1; i <= 3; ++i) {
      ASSERT_TRUE(wal->Append(MakeRecord("r", i, 1), Durability::kSyncWal).ok());
      ASSERT_TRUE(wal->Roll().ok());
    }
  }
  ASSERT_TRUE(Env::Default()->DeleteFile(WalSegmentPath(dir, 2)).ok());
  ReplayStats stats;
  absl::Status st;
  auto got = ReplayAll(dir, &stats, &st);
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << st;
  EXPECT_NE(st.message().find(WalSegmentPath(dir, 2) + ": log segment missing"), std::string::npos) << st;
  EXPECT_NE(st.message().find("after seq 1 and before seq 3 are lost"), std::string::npos) << st;
  for (WalRecoveryMode mode : {WalRecoveryMode::kPointInTime, WalRecoveryMode::kSkipCorrupted}) {
    std::vector<uint64_t> seqs;
    ReplayStats s2;
    ReplayOptions o;
    o.mode = mode;
    absl::Status st2 = ReplayWal(Env::Default(), dir, o,
                                 [&](const WalRecord& r) {
                                   seqs.push_back(r.seq);
                                   return absl::OkStatus();
                                 },
                                 &s2);
    ASSERT_TRUE(st2.ok()) << st2;
    ASSERT_EQ(s2.damage.size(), 1u);
    EXPECT_EQ(s2.max_seq, 3u);
    if (mode == WalRecoveryMode::kPointInTime) {
      EXPECT_EQ(seqs, std::vector<uint64_t>({1}));
      EXPECT_EQ(s2.skipped_records, 1u);
    } else {
      EXPECT_EQ(seqs, std::vector<uint64_t>({1, 3}));
      EXPECT_EQ(s2.skipped_records, 0u);
    }
  }
  // Deleting the newest segment is found too: SEGMENTS names it.
  ASSERT_TRUE(Env::Default()->DeleteFile(WalSegmentPath(dir, 4)).ok());
  ASSERT_TRUE(Env::Default()->DeleteFile(WalSegmentPath(dir, 3)).ok());
  got = ReplayAll(dir, &stats, &st);
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << st;
}

TEST(WalReplayTest, FrameInsideATornValueIsNotMistakenForALaterRecord) {
  // The last record's value holds a complete, valid WAL frame; the record is then cut short
  // after that embedded frame. It is a torn tail, not damage in the middle.
  std::string dir = NewTestDir("embedded");
  std::string inner = EncodeWalRecord(MakeRecord("r", 77, 1));
  WalRecord outer = MakeRecord("r", 6, 1);
  outer.edits[0].value = std::string(100, 'x') + inner + std::string(100, 'y');
  std::string path;
  {
    auto wal = OpenWal(dir);
    for (int i = 1; i <= 5; ++i) ASSERT_TRUE(wal->Append(MakeRecord("r", i, 1), Durability::kSyncWal).ok());
    ASSERT_TRUE(wal->Append(outer, Durability::kSyncWal).ok());
    path = WalSegmentPath(dir, wal->current_segment());
  }
  auto size = Env::Default()->GetFileSize(path);
  ASSERT_TRUE(size.ok());
  ASSERT_TRUE(Env::Default()->Truncate(path, *size - 50).ok());  // cut inside the 'y' run
  ReplayStats stats;
  absl::Status st;
  auto got = ReplayAll(dir, &stats, &st);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(got.size(), 5u);
}

TEST(WalReplayTest, LargeTornTailReplaysInLinearTime) {
  // A torn 4 MiB record of random bytes: the search for a following record must stay bounded.
  std::string dir = NewTestDir("bigtail");
  WalRecord big = MakeRecord("r", 2, 1);
  big.edits[0].value = testing::RandomBytes(4 << 20);
  std::string path;
  {
    auto wal = OpenWal(dir);
    ASSERT_TRUE(wal->Append(MakeRecord("r", 1, 1), Durability::kSyncWal).ok());
    ASSERT_TRUE(wal->Append(big, Durability::kSyncWal).ok());
    path = WalSegmentPath(dir, wal->current_segment());
  }
  auto size = Env::Default()->GetFileSize(path);
  ASSERT_TRUE(size.ok());
  ASSERT_TRUE(Env::Default()->Truncate(path, *size - 1000).ok());
  ReplayStats stats;
  absl::Status st;
  auto got = ReplayAll(dir, &stats, &st);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(got.size(), 1u);
}

// Writes `bytes` as segment `number` and SEGMENTS naming it alone (a crafted log).
void WriteSegment(const std::string& dir, uint64_t number, const std::string& bytes) {
  ASSERT_TRUE(Env::Default()->CreateDirs(dir).ok());
  ASSERT_TRUE(Env::Default()->WriteFileDurably(WalSegmentPath(dir, number), bytes).ok());
}

TEST(WalFormatTest, SegmentsStartWithAStampedPreamble) {
  std::string dir = NewTestDir("stamp");
  {
    auto wal = OpenWal(dir);
    ASSERT_TRUE(wal->Append(MakeRecord("r", 1, 1), Durability::kSyncWal).ok());
  }
  auto bytes = Env::Default()->ReadFileToString(WalSegmentPath(dir, 1));
  ASSERT_TRUE(bytes.ok());
  ASSERT_EQ(bytes->substr(0, 8), "BSLTWALF");
  EXPECT_EQ(DecodeFixed32(bytes->data() + 8), kWalVersion);
  EXPECT_EQ(WalFramesStart(*bytes), kWalSegmentPreambleSize);
  auto index = Env::Default()->ReadFileToString(dir + "/" + kWalIndexName);
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(index->substr(0, 8), "BSLTSEGS");
}

TEST(WalFormatTest, VersionOneSegmentsAndIndexAreStillRead) {
  // A log written before the stamp: SEGMENTS with the bare magic, a segment that starts with
  // its header record.
  std::string dir = NewTestDir("v1");
  WalRecord header;
  header.seq = 1;
  std::string segment = EncodeWalRecord(header) + EncodeWalRecord(MakeRecord("r", 7, 2));
  WriteSegment(dir, 1, segment);
  std::string index = "BSLTWALS";
  PutFixed64(&index, 1);
  PutFixed64(&index, 1);
  PutFixed32(&index, MaskCrc(Crc32c(index)));
  ASSERT_TRUE(Env::Default()->WriteFileDurably(dir + "/" + kWalIndexName, index).ok());
  EXPECT_EQ(WalFramesStart(segment), 0u);
  ReplayStats stats;
  absl::Status st;
  auto got = ReplayAll(dir, &stats, &st);
  ASSERT_TRUE(st.ok()) << st;
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], MakeRecord("r", 7, 2));
  // A new Wal continues after it, in the new format.
  auto wal = OpenWal(dir);
  ASSERT_NE(wal, nullptr);
  EXPECT_EQ(wal->current_segment(), 2u);
}

TEST(WalFormatTest, ASegmentNeedingANewerReaderIsRefusedInEveryMode) {
  std::string dir = NewTestDir("newer");
  std::string segment;
  AppendFormatStamp(&segment, "BSLTWALF", kWalVersion + 2, kWalVersion + 1);
  PutFixed32(&segment, MaskCrc(Crc32c(segment)));
  WalRecord header;
  header.seq = 1;
  segment += EncodeWalRecord(header) + EncodeWalRecord(MakeRecord("r", 1, 1));
  WriteSegment(dir, 1, segment);
  for (WalRecoveryMode mode : {WalRecoveryMode::kStrict, WalRecoveryMode::kPointInTime, WalRecoveryMode::kSkipCorrupted}) {
    ReplayOptions o;
    o.mode = mode;
    int applied = 0;
    absl::Status st = ReplayWal(Env::Default(), dir, o, [&](const WalRecord&) {
      ++applied;
      return absl::OkStatus();
    }, nullptr);
    EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
    EXPECT_NE(st.message().find(absl::StrCat("needs a reader of version ", kWalVersion + 1)), std::string::npos) << st;
    EXPECT_EQ(applied, 0);
  }
  // A damaged stamp (its crc no longer matches) is damage, not a newer format.
  segment[12] ^= 0x40;
  WriteSegment(dir, 1, segment);
  ReplayStats stats;
  absl::Status st;
  ReplayAll(dir, &stats, &st);
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << st;
}

TEST(WalFormatTest, AnIndexNeedingANewerReaderIsRefused) {
  std::string dir = NewTestDir("newerindex");
  {
    auto wal = OpenWal(dir);
    ASSERT_TRUE(wal->Append(MakeRecord("r", 1, 1), Durability::kSyncWal).ok());
  }
  std::string index;
  AppendFormatStamp(&index, "BSLTSEGS", kWalVersion + 1, kWalVersion + 1);
  PutFixed64(&index, 1);
  PutFixed64(&index, 1);
  PutFixed32(&index, MaskCrc(Crc32c(index)));
  ASSERT_TRUE(Env::Default()->WriteFileDurably(dir + "/" + kWalIndexName, index).ok());
  ReplayStats stats;
  absl::Status st;
  ReplayAll(dir, &stats, &st);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
  Wal::Options o;
  o.dir = dir;
  EXPECT_EQ(Wal::Open(o).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace basalt
