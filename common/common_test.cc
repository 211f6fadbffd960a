#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "common/coding.h"
#include "common/crc.h"
#include "common/env.h"
#include "common/format_stamp.h"
#include "common/status.h"
#include "common/uuid.h"

namespace basalt {
namespace {

// Java's UUID.toString form, both ways; anything else is not one.
TEST(Uuid, TextBothWaysAsJavaWritesIt) {
  const Uuid u{0xbaa877d977fa4e68ULL, 0xb925968afa50efb0ULL};
  EXPECT_EQ(UuidText(u), "baa877d9-77fa-4e68-b925-968afa50efb0");
  EXPECT_EQ(ParseUuid("baa877d9-77fa-4e68-b925-968afa50efb0"), std::optional<Uuid>(u));
  EXPECT_EQ(UuidText(Uuid{0, 1}), "00000000-0000-0000-0000-000000000001");
  for (const char* bad : {"", "baa877d9-77fa-4e68-b925-968afa50efb", "BAA877D9-77FA-4E68-B925-968AFA50EFB0",
                          "baa877d9x77fa-4e68-b925-968afa50efb0", "gaa877d9-77fa-4e68-b925-968afa50efb0"}) {
    EXPECT_FALSE(ParseUuid(bad).has_value()) << bad;
  }
}

TEST(Crc, StandardCheckValues) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32("123456789", 9), 0xCBF43926u);
  EXPECT_EQ(Crc32cTableLoop("123456789", 9), 0xE3069283u);
}

TEST(Crc, ExtendMatchesWhole) {
  std::string s(100000, 'x');
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(i * 7 + 3);
  uint32_t whole = Crc32c(s);
  uint32_t part = Crc32cExtend(Crc32c(s.data(), 12345), s.data() + 12345, s.size() - 12345);
  EXPECT_EQ(whole, part);
  EXPECT_EQ(whole, Crc32cTableLoop(s.data(), s.size()));
  EXPECT_EQ(UnmaskCrc(MaskCrc(whole)), whole);
  EXPECT_NE(MaskCrc(whole), whole);
}

TEST(Coding, VarintRoundTripAndTruncation) {
  const uint64_t values[] = {0, 1, 127, 128, 300, 1ull << 32, UINT64_MAX};
  for (uint64_t v : values) {
    std::string s;
    PutVarint64(&s, v);
    EXPECT_EQ(static_cast<int>(s.size()), VarintLength(v));
    std::string_view in(s);
    uint64_t got;
    ASSERT_TRUE(GetVarint64(&in, &got));
    EXPECT_EQ(got, v);
    EXPECT_TRUE(in.empty());
    if (s.size() > 1) {
      std::string_view cut(s.data(), s.size() - 1);
      EXPECT_FALSE(GetVarint64(&cut, &got));
    }
  }
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{5}, INT64_MIN, INT64_MAX}) EXPECT_EQ(UnZigZag(ZigZag(v)), v);
  std::string overflow(11, '\xff');
  std::string_view in(overflow);
  uint64_t got;
  EXPECT_FALSE(GetVarint64(&in, &got));
}

TEST(FormatStamp, ReadersRefuseWhatNeedsANewerReaderAndCallTheRestDamage) {
  std::string b;
  AppendFormatStamp(&b, "BSLTTEST", 3, 2);
  ASSERT_EQ(b.size(), kFormatStampSize);
  b += "payload";
  absl::StatusOr<FormatStamp> s = ReadFormatStamp(b, "BSLTTEST", 2, "test file f");
  ASSERT_TRUE(s.ok()) << s.status();  // version 3, readable from 2: a version-2 reader reads it
  EXPECT_EQ(s->version, 3u);
  EXPECT_EQ(s->min_reader_version, 2u);
  s = ReadFormatStamp(b, "BSLTTEST", 1, "test file f");
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.status().message(),
            "test file f has format version 3 and needs a reader of version 2; this build reads up to version 1 (it "
            "was written by a newer Basalt)");
  EXPECT_EQ(ReadFormatStamp(b, "BSLTELSE", 9, "f").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(ReadFormatStamp(b.substr(0, 15), "BSLTTEST", 9, "f").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(HasFormatMagic(b, "BSLTTEST"));
  EXPECT_FALSE(HasFormatMagic("BSLT", "BSLTTEST"));
}

TEST(Env, WriteReadReplace) {
  Env* env = Env::Default();
  std::string dir = ::testing::TempDir() + "/basalt_env_test";
  ASSERT_TRUE(env->CreateDirs(dir).ok());
  std::string path = dir + "/f";
  ASSERT_TRUE(env->WriteFileDurably(path, "hello").ok());
  auto got = env->ReadFileToString(path);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, "hello");
  auto f = env->NewRandomAccessFile(path);
  ASSERT_TRUE(f.ok());
  char buf[16];
  EXPECT_EQ((*f)->Read(3, 5, buf).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(env->NewRandomAccessFile(dir + "/missing").status().code(), absl::StatusCode::kNotFound);
}

// A file system that runs out of space after `room` bytes of appends.
class FullDiskEnv : public EnvWrapper {
 public:
  FullDiskEnv(Env* target, size_t room) : EnvWrapper(target), room_(room) {}
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& p) override {
    BASALT_ASSIGN_OR_RETURN(auto f, target()->NewWritableFile(p));
    return std::unique_ptr<WritableFile>(std::make_unique<File>(std::move(f), &room_));
  }

 private:
  class File : public WritableFileWrapper {
   public:
    File(std::unique_ptr<WritableFile> f, size_t* room) : WritableFileWrapper(std::move(f)), room_(room) {}
    absl::Status Append(std::string_view data) override {
      if (data.size() > *room_) return absl::ResourceExhaustedError("No space left on device");
      *room_ -= data.size();
      return WritableFileWrapper::Append(data);
    }

   private:
    size_t* room_;
  };
  size_t room_;
};

TEST(Env, AFailedDurableWriteLeavesNoTempFileAndTheOldFileIntact) {
  std::string dir = ::testing::TempDir() + "/basalt_env_full_test";
  ASSERT_TRUE(Env::Default()->CreateDirs(dir).ok());
  const std::string path = dir + "/MANIFEST";
  ASSERT_TRUE(Env::Default()->WriteFileDurably(path, "old").ok());
  FullDiskEnv full(Env::Default(), 4);
  absl::Status s = full.WriteFileDurably(path, "a longer new manifest");
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_FALSE(Env::Default()->FileExists(path + ".tmp"));
  auto got = Env::Default()->ReadFileToString(path);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, "old");
}

}  // namespace
}  // namespace basalt
