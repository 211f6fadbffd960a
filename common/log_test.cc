#include "common/log.h"

#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "tests/util/temp_dir.h"

namespace basalt::log {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Log, LinesBelowTheLevelAreDroppedAndTheLastOnesAreKept) {
  testing::TempDir dir;
  Options o;
  o.program = "t";
  o.level = Level::kWarning;
  o.dir = dir.path() + "/logs";
  o.keep_lines = 3;
  ASSERT_TRUE(Configure(o).ok());
  Info("not kept");
  for (int i = 0; i < 5; ++i) Warning("w" + std::to_string(i));
  Error("e");
  std::vector<Line> recent = Recent(10);
  ASSERT_EQ(recent.size(), 3u);
  EXPECT_EQ(recent[0].text, "w3");
  EXPECT_EQ(recent[2].text, "e");
  EXPECT_EQ(recent[2].level, Level::kError);
  EXPECT_EQ(Recent(1).size(), 1u);
  const std::string text = ReadAll(o.dir + "/t.log");
  EXPECT_EQ(text.find("not kept"), std::string::npos);
  EXPECT_NE(text.find(" WARNING t: w0\n"), std::string::npos) << text;
  EXPECT_NE(text.find(" ERROR t: e\n"), std::string::npos) << text;
  ASSERT_TRUE(Configure(Options{}).ok());
}

TEST(Log, AFilePastItsSizeRollsKeepingMaxFiles) {
  testing::TempDir dir;
  Options o;
  o.program = "r";
  o.dir = dir.path();
  o.max_file_bytes = 200;
  o.max_files = 2;
  ASSERT_TRUE(Configure(o).ok());
  for (int i = 0; i < 40; ++i) Info("line " + std::to_string(i) + " of the rolling test");
  ASSERT_TRUE(Configure(Options{}).ok());
  const std::string now = ReadAll(dir.path() + "/r.log");
  EXPECT_NE(now.find("line 39 of"), std::string::npos);
  EXPECT_LE(now.size(), 200u);
  EXPECT_FALSE(ReadAll(dir.path() + "/r.log.1").empty());
  EXPECT_FALSE(ReadAll(dir.path() + "/r.log.2").empty());
  EXPECT_TRUE(ReadAll(dir.path() + "/r.log.3").empty()) << "more old files kept than max_files";
}

TEST(Log, LevelsParseAndABadOneIsRefused) {
  Level l = Level::kInfo;
  EXPECT_TRUE(ParseLevel("WARN", &l).ok());
  EXPECT_EQ(l, Level::kWarning);
  EXPECT_TRUE(ParseLevel("debug", &l).ok());
  EXPECT_EQ(l, Level::kDebug);
  absl::Status bad = ParseLevel("loud", &l);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("loud"), std::string::npos);
}

TEST(Log, AnUnwritableDirectoryIsAnErrorAndLinesGoToStderr) {
  Options o;
  o.dir = "/proc/no-such-dir/logs";
  EXPECT_EQ(Configure(o).code(), absl::StatusCode::kUnavailable);
  Info("still written");
  EXPECT_EQ(Recent(1).at(0).text, "still written");
  ASSERT_TRUE(Configure(Options{}).ok());
}

}  // namespace
}  // namespace basalt::log
