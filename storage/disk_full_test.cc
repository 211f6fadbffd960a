// A full disk, for real: the region's directory on a small tmpfs that its writes fill. The
// region fails its writes (never acknowledging one it could not log), leaves no partial file
// behind, and heals by itself once space is freed: no disable/enable, no restart. Needs root
// (mount); CI runs as root.
#include <sys/mount.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/env.h"
#include "gtest/gtest.h"
#include "storage/region.h"
#include "storage/server_log.h"
#include "tests/util/temp_dir.h"

namespace basalt {
namespace {

namespace fs = std::filesystem;

class DiskFullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    mnt_ = dir_.path() + "/mnt";
    fs::create_directories(mnt_);
    if (::mount("tmpfs", mnt_.c_str(), "tmpfs", 0, "size=4m") != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs (needs root): " << std::strerror(errno);
    }
    mounted_ = true;
  }
  void TearDown() override {
    region_.reset();
    other_.reset();
    server_log_.reset();
    if (mounted_) ::umount2(mnt_.c_str(), MNT_DETACH);
  }
  // The region (t1, all rows), on a log of its own or, with `shared`, on a server log it shares
  // with other_ (t2).
  void Open(uint64_t flush_size, bool shared = false) {
    RegionOptions o;
    o.memstore_flush_size = flush_size;
    o.background_compaction = false;
    o.log = [this](std::string_view line) {
      absl::MutexLock l(&log_mu_);
      log_.emplace_back(line);
    };
    family_.name = "cf";
    if (shared) {
      ServerLog::Options lo;
      lo.dir = mnt_ + "/wal";
      lo.regions = {{"t1,,1", mnt_ + "/region"}, {"t2,,1", mnt_ + "/other"}};
      lo.tables = {"t1", "t2"};
      lo.log = o.log;
      auto log = ServerLog::Open(lo);
      ASSERT_TRUE(log.ok()) << log.status();
      ASSERT_TRUE((*log)->split_error().ok()) << (*log)->split_error();
      server_log_ = std::move(*log);
      o.server_log = server_log_.get();
      auto other = Region::Open(o, RegionDescriptor{"t2,,1", {family_}, "", ""}, mnt_ + "/other");
      ASSERT_TRUE(other.ok()) << other.status();
      other_ = std::move(*other);
    }
    auto r = Region::Open(o, RegionDescriptor{"t1,,1", {family_}, "", ""}, mnt_ + "/region");
    ASSERT_TRUE(r.ok()) << r.status();
    region_ = std::move(*r);
  }
  static std::string Row(int i) { return absl::StrCat("row", 100000 + i); }
  // Writes 2 KiB rows until one fails (bounded); returns how many were acknowledged.
  int FillUntilRefused(absl::Status* refused) {
    const std::string value(2048, 'v');
    for (int i = 0; i < 4000; ++i) {
      absl::Status s = region_->Put(Row(i), "cf", "q", value);
      if (!s.ok()) {
        *refused = s;
        return i;
      }
    }
    return -1;
  }
  bool HasTempFiles() const {
    for (const auto& e : fs::recursive_directory_iterator(mnt_)) {
      if (e.path().extension() == ".tmp") return true;
    }
    return false;
  }
  // Polls (bounded) until a write goes through.
  bool WaitUntilWritable() {
    for (int i = 0; i < 200; ++i) {
      if (region_->Put("probe", "cf", "q", "x").ok()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  void ExpectRows(int n) {
    for (int i = 0; i < n; ++i) {
      auto cells = region_->Get(Row(i));
      ASSERT_TRUE(cells.ok()) << cells.status();
      ASSERT_EQ(cells->size(), 1u) << Row(i);
    }
  }

  testing::TempDir dir_;
  std::string mnt_;
  bool mounted_ = false;
  FamilyOptions family_;
  std::unique_ptr<ServerLog> server_log_;  // declared before the regions: they close first
  std::unique_ptr<Region> other_;
  std::unique_ptr<Region> region_;
  // Whether a line the regions logged (on their background threads) holds `needle`, waiting a
  // moment for it: a healed region takes writes before it logs that it healed.
  bool Logged(std::string_view needle) {
    for (int i = 0; i < 200; ++i) {
      {
        absl::MutexLock l(&log_mu_);
        for (const std::string& line : log_) {
          if (line.find(needle) != std::string::npos) return true;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  absl::Mutex log_mu_;
  std::vector<std::string> log_ ABSL_GUARDED_BY(log_mu_);
};

TEST_F(DiskFullTest, AFullLogFailsWritesThenHealsWhenSpaceIsFreed) {
  Open(/*flush_size=*/64 << 20);  // nothing flushes: the log fills the disk
  {
    std::ofstream filler(mnt_ + "/filler", std::ios::binary);
    filler << std::string(5 << 19, 'f');  // 2.5 MiB: what it frees takes the flush
  }
  absl::Status refused;
  const int acked = FillUntilRefused(&refused);
  ASSERT_GT(acked, 0) << refused;
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  // Failed: writes are refused with the reason until space returns.
  absl::Status again = region_->Put("later", "cf", "q", "x");
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition) << again;
  EXPECT_NE(again.message().find("No space left on device"), std::string::npos) << again;
  EXPECT_NE(region_->GetStats().failed.find("RESOURCE_EXHAUSTED"), std::string::npos);

  fs::remove(mnt_ + "/filler");
  ASSERT_TRUE(WaitUntilWritable()) << "the region did not heal: " << region_->GetStats().failed;
  EXPECT_TRUE(region_->GetStats().failed.empty());
  EXPECT_TRUE(Logged("region t1,,1 healed"));
  ExpectRows(acked);

  // Every acknowledged write survives a restart, and the log is clean (strict replay opens it).
  ASSERT_TRUE(region_->Close().ok());
  region_.reset();
  Open(64 << 20);
  ExpectRows(acked);
}

// Regions sharing the server log: the full log fails every region that writes to it; once
// space is freed the first region to try heals the log (the cut segment and a new one), each
// region flushes and writes again, and a restart splits the log without taking the cut for
// damage.
TEST_F(DiskFullTest, AFullServerLogFailsItsRegionsThenEachHealsWhenSpaceIsFreed) {
  Open(/*flush_size=*/64 << 20, /*shared=*/true);
  ASSERT_TRUE(other_->Put("other-1", "cf", "q", "before").ok());
  {
    std::ofstream filler(mnt_ + "/filler", std::ios::binary);
    filler << std::string(5 << 19, 'f');
  }
  absl::Status refused;
  const int acked = FillUntilRefused(&refused);
  ASSERT_GT(acked, 0) << refused;
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  // The other region's write meets the same dead log.
  EXPECT_FALSE(other_->Put("other-2", "cf", "q", "during").ok());

  fs::remove(mnt_ + "/filler");
  ASSERT_TRUE(WaitUntilWritable()) << "the region did not heal: " << region_->GetStats().failed;
  bool other_heals = false;
  for (int i = 0; i < 200 && !other_heals; ++i) {
    other_heals = other_->Put("other-3", "cf", "q", "after").ok();
    if (!other_heals) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(other_heals) << other_->GetStats().failed;
  EXPECT_GE(server_log_->GetStats().heals, 1u);
  ExpectRows(acked);

  // A crash now: the image's log (the cut segment, then the new one) splits cleanly in strict mode.
  // (A healed region takes writes before its healing flush ends: the image is copied once both
  // flushes are done, or it could hold a manifest naming a block file the copy had passed.)
  ASSERT_TRUE(Logged("region t1,,1 healed"));
  ASSERT_TRUE(Logged("region t2,,1 healed"));
  const std::string image = dir_.path() + "/image";
  fs::copy(mnt_, image, fs::copy_options::recursive);
  region_.reset();
  other_.reset();
  server_log_.reset();
  ::umount2(mnt_.c_str(), MNT_DETACH);
  mounted_ = false;
  fs::remove_all(mnt_);
  fs::rename(image, mnt_);
  Open(64 << 20, /*shared=*/true);
  ExpectRows(acked);
  EXPECT_EQ(other_->Get("other-1")->size(), 1u);
  EXPECT_EQ(other_->Get("other-3")->size(), 1u);
}

TEST_F(DiskFullTest, AFailedFlushLeavesNoPartialFileAndHeals) {
  Open(/*flush_size=*/256 << 10);  // flushes as it goes: one of them meets the full disk
  absl::Status refused;
  const int acked = FillUntilRefused(&refused);
  ASSERT_GT(acked, 0) << refused;
  // Whatever failed (a flush, the log), no half-written block file is left eating the space. (The
  // healing retries each write one while they run and remove it when they fail: sample until a
  // moment with none, rather than expect none at one moment.)
  bool none_left = false;
  for (int i = 0; i < 300 && !none_left; ++i) {
    none_left = !HasTempFiles();
    if (!none_left) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(none_left) << "a partial block file stayed for 3 s";
  // The operator adds space (here: grows the tmpfs; the region's own files are not touched).
  ASSERT_EQ(::mount("tmpfs", mnt_.c_str(), "tmpfs", MS_REMOUNT, "size=64m"), 0) << std::strerror(errno);
  ASSERT_TRUE(WaitUntilWritable()) << "the region did not heal";
  {
    SCOPED_TRACE(absl::StrCat("healed, ", acked, " rows acknowledged before ", refused.ToString()));
    ExpectRows(acked);
  }
  ASSERT_TRUE(region_->Close().ok());
  region_.reset();
  Open(256 << 10);
  SCOPED_TRACE(absl::StrCat("reopened, ", acked, " rows acknowledged before ", refused.ToString()));
  ExpectRows(acked);
}

// A snapshot's region copied (the export, CopyRegion) into a target that fills up part way: the
// disk's error, named; no temporary and no file cut short left under the target's name.
TEST_F(DiskFullTest, ACopyIntoAFullDiskFailsLeavingNoPartialFile) {
  RegionOptions o;
  o.background_compaction = false;
  family_.name = "cf";
  const std::string source = dir_.path() + "/source";  // on the real disk
  auto r = Region::Open(o, RegionDescriptor{"t1,,1", {family_}, "", ""}, source);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::string value(2048, 'v');
  for (int i = 0; i < 3000; ++i) {  // about 6 MiB: more than the 4 MiB tmpfs holds
    ASSERT_TRUE((*r)->Put(Row(i), "cf", "q", value).ok());
    if (i % 1000 == 999) {
      ASSERT_TRUE((*r)->Flush().ok());  // three files of about 2 MiB
    }
  }
  ASSERT_TRUE((*r)->Snapshot(dir_.path() + "/snap").ok());
  ASSERT_TRUE((*r)->Close().ok());
  absl::StatusOr<CopiedFiles> copied = CopyRegion(Env::Default(), dir_.path() + "/snap", Env::Default(),
                                                  mnt_ + "/backup", RegionCopyOptions{});
  ASSERT_FALSE(copied.ok()) << "6 MiB fit in a 4 MiB tmpfs";
  EXPECT_EQ(copied.status().code(), absl::StatusCode::kResourceExhausted) << copied.status();
  EXPECT_NE(copied.status().message().find(mnt_ + "/backup/"), std::string::npos) << copied.status();
  EXPECT_FALSE(HasTempFiles());
  // What is there under a final name is whole: each file the same size as its source.
  for (const auto& e : fs::directory_iterator(mnt_ + "/backup")) {
    EXPECT_EQ(fs::file_size(e.path()), fs::file_size(dir_.path() + "/snap/" + e.path().filename().string()))
        << e.path();
  }
}

}  // namespace
}  // namespace basalt
