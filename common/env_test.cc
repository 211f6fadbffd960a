// The Env contract (common/env.h), run over the local disk (PosixEnv) and over Ceph RADOS
// (RadosEnv, on the tests' private cluster: tests/services/) alike, so the engine can rely on the
// same behaviour from both. Then what only RADOS has: two clients sharing a namespace, intents
// a crash left behind, and fencing.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/env.h"
#include "common/fault_point.h"
#include "common/rados_env.h"
#include "common/status.h"
#include "common/test_services.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace basalt {
namespace {

using ::testing::HasSubstr;

// A fresh, empty place for one test: a directory on local disk, or a namespace of its own in
// the test pool with small chunks (64 KiB) so that files span several objects.
struct Place {
  std::function<void()> cleanup;
  Env* env = nullptr;
  std::string base;  // every path of the test starts here
  std::unique_ptr<Env> owned;
};

RadosEnvOptions TestRadosOptions(const std::string& root) {
  RadosEnvOptions o;
  o.ceph_conf = TestCephConf();
  o.pool = "basalt";
  o.root = root;
  o.chunk_bytes = 64 << 10;
  o.write_bytes = 16 << 10;
  o.op_timeout = absl::Seconds(20);
  return o;
}

std::string UniqueName(std::string_view what) {
  static std::atomic<int> n{0};
  return absl::StrCat(AV(what), "-", ::getpid(), "-", n.fetch_add(1), "-",
                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
}

std::unique_ptr<Place> MakePlace(const std::string& kind) {
  auto p = std::make_unique<Place>();
  if (kind == "posix") {
    const char* tmp = std::getenv("TMPDIR");
    p->base = absl::StrCat(tmp ? tmp : "/tmp", "/", UniqueName("basalt-env"));
    std::filesystem::create_directories(p->base);
    p->env = Env::Default();
    const std::string base = p->base;
    p->cleanup = [base] { std::filesystem::remove_all(base); };
    return p;
  }
  if (TestCephConf().empty()) {
    ADD_FAILURE() << kTestServicesHelp;
    return nullptr;
  }
  absl::StatusOr<std::unique_ptr<RadosEnv>> env = RadosEnv::Connect(TestRadosOptions(UniqueName("env")));
  if (!env.ok()) {
    ADD_FAILURE() << env.status();
    return nullptr;
  }
  p->env = env->get();
  p->base = "/data";
  p->owned = *std::move(env);
  Env* e = p->env;
  p->cleanup = [e] { e->RemoveTree("/").IgnoreError(); };
  EXPECT_TRUE(p->env->CreateDirs(p->base).ok());
  return p;
}

class EnvContract : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    place_ = MakePlace(GetParam());
    ASSERT_NE(place_, nullptr);
    env_ = place_->env;
  }
  void TearDown() override {
    if (place_ && place_->cleanup) place_->cleanup();
  }
  std::string P(std::string_view rel) const { return absl::StrCat(place_->base, "/", AV(rel)); }

  void Write(const std::string& path, std::string_view data, size_t piece = 1000) {
    auto f = env_->NewWritableFile(path);
    ASSERT_TRUE(f.ok()) << f.status();
    for (size_t at = 0; at < data.size(); at += piece) ASSERT_TRUE((*f)->Append(data.substr(at, piece)).ok());
    ASSERT_TRUE((*f)->Sync().ok());
    ASSERT_TRUE((*f)->Close().ok());
    EXPECT_EQ((*f)->Size(), data.size());
  }
  std::string Read(const std::string& path) {
    auto s = env_->ReadFileToString(path);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *s : "<error>";
  }
  std::vector<std::string> List(const std::string& path) {
    auto l = env_->ListDir(path);
    EXPECT_TRUE(l.ok()) << l.status();
    return l.ok() ? *l : std::vector<std::string>{"<error>"};
  }

  std::unique_ptr<Place> place_;
  Env* env_ = nullptr;
};

std::string Pattern(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

TEST_P(EnvContract, WrittenBytesReadBackAtAnyOffsetAndSequentially) {
  // 300,001 bytes: several 64 KiB objects on RADOS, written in pieces that straddle them.
  const std::string data = Pattern(300001, 1);
  Write(P("f"), data, 7777);
  ASSERT_EQ(env_->GetFileSize(P("f")).value(), data.size());
  auto f = env_->NewRandomAccessFile(P("f"));
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ((*f)->Size(), data.size());
  std::string scratch(data.size(), '\0');
  for (auto [off, n] : std::vector<std::pair<size_t, size_t>>{
           {0, 10}, {65530, 20}, {65536, 65536}, {100, 200000}, {0, data.size()}, {data.size() - 1, 1}, {data.size(), 0}}) {
    auto got = (*f)->Read(off, n, scratch.data());
    ASSERT_TRUE(got.ok()) << off << "+" << n << ": " << got.status();
    EXPECT_EQ(*got, std::string_view(data).substr(off, n)) << off << "+" << n;
  }
  auto past = (*f)->Read(data.size() - 5, 10, scratch.data());
  EXPECT_EQ(past.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(std::string(past.status().message()), HasSubstr(P("f")));

  auto seq = env_->NewSequentialFile(P("f"));
  ASSERT_TRUE(seq.ok()) << seq.status();
  std::string all;
  while (true) {
    auto got = (*seq)->Read(40000, scratch.data());
    ASSERT_TRUE(got.ok()) << got.status();
    if (got->empty()) break;
    all.append(*got);
  }
  EXPECT_EQ(all, data);
}

TEST_P(EnvContract, SizesAtObjectBoundariesAndEmptyFiles) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{65535}, size_t{65536}, size_t{65537}, size_t{131072}}) {
    const std::string data = Pattern(n, static_cast<uint32_t>(n));
    Write(P("f"), data, 16384);
    EXPECT_EQ(env_->GetFileSize(P("f")).value(), n);
    EXPECT_EQ(Read(P("f")), data) << n;
  }
}

TEST_P(EnvContract, ANewFileReplacesTheOldOneOfThatName) {
  Write(P("f"), Pattern(200000, 2));
  Write(P("f"), "short");
  EXPECT_EQ(Read(P("f")), "short");
  EXPECT_EQ(env_->GetFileSize(P("f")).value(), 5u);
}

TEST_P(EnvContract, DirectoriesListTheirNamesSorted) {
  ASSERT_TRUE(env_->CreateDirs(P("a/b/c")).ok());
  ASSERT_TRUE(env_->CreateDirs(P("a/b/c")).ok());  // again: nothing to do
  for (const char* n : {"z", "B", "a1", "a0", "0"}) Write(P(absl::StrCat("a/", n)), n);
  EXPECT_EQ(List(P("a")), (std::vector<std::string>{"0", "B", "a0", "a1", "b", "z"}));
  EXPECT_EQ(List(P("a/b")), std::vector<std::string>{"c"});
  EXPECT_TRUE(List(P("a/b/c")).empty());
  EXPECT_TRUE(env_->FileExists(P("a/b")));
  EXPECT_TRUE(env_->FileExists(P("a/z")));
  EXPECT_FALSE(env_->FileExists(P("a/y")));
  EXPECT_FALSE(env_->FileExists(P("nowhere/y")));
  EXPECT_EQ(env_->ListDir(P("nowhere")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(env_->NewRandomAccessFile(P("a/y")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(env_->NewWritableFile(P("nowhere/y")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(env_->CreateDirs(P("a/z/sub")).ok());  // a file is in the way
}

TEST_P(EnvContract, PathsWithDotDotNameTheSiblingDirectory) {
  // Region references name their source as "../<region>/<file>".
  ASSERT_TRUE(env_->CreateDirs(P("t/r1")).ok());
  ASSERT_TRUE(env_->CreateDirs(P("t/r2")).ok());
  Write(P("t/r1/blk"), "block");
  EXPECT_EQ(Read(P("t/r2/../r1/blk")), "block");
  EXPECT_TRUE(env_->FileExists(P("t/r2/./../r1/blk")));
}

TEST_P(EnvContract, ReplaceFileWithinADirectoryReplacesTheTarget) {
  Write(P("MANIFEST"), "old manifest");
  Write(P("MANIFEST.tmp"), "new manifest");
  ASSERT_TRUE(env_->ReplaceFile(P("MANIFEST.tmp"), P("MANIFEST")).ok());
  EXPECT_EQ(Read(P("MANIFEST")), "new manifest");
  EXPECT_FALSE(env_->FileExists(P("MANIFEST.tmp")));
  EXPECT_EQ(List(place_->base), std::vector<std::string>{"MANIFEST"});
  EXPECT_EQ(env_->ReplaceFile(P("gone"), P("x")).code(), absl::StatusCode::kNotFound);
}

TEST_P(EnvContract, ReplaceFileMovesFilesAndWholeDirectoriesAcrossDirectories) {
  // As a split's staged daughters move into place and damaged files move to lost+found.
  ASSERT_TRUE(env_->CreateDirs(P("t/.splits/d1/cf")).ok());
  const std::string big = Pattern(150000, 3);
  Write(P("t/.splits/d1/cf/blk"), big);
  Write(P("t/.splits/d1/REGIONINFO"), "info");
  ASSERT_TRUE(env_->ReplaceFile(P("t/.splits/d1"), P("t/d1")).ok());
  EXPECT_EQ(Read(P("t/d1/cf/blk")), big);
  EXPECT_EQ(Read(P("t/d1/REGIONINFO")), "info");
  EXPECT_TRUE(List(P("t/.splits")).empty());
  EXPECT_EQ(List(P("t")), (std::vector<std::string>{".splits", "d1"}));

  ASSERT_TRUE(env_->CreateDirs(P("lost+found")).ok());
  ASSERT_TRUE(env_->ReplaceFile(P("t/d1/REGIONINFO"), P("lost+found/REGIONINFO.1")).ok());
  EXPECT_EQ(Read(P("lost+found/REGIONINFO.1")), "info");
  EXPECT_FALSE(env_->FileExists(P("t/d1/REGIONINFO")));
  // Over a file in another directory: it is replaced.
  Write(P("t/d1/x"), "x");
  ASSERT_TRUE(env_->ReplaceFile(P("t/d1/x"), P("lost+found/REGIONINFO.1")).ok());
  EXPECT_EQ(Read(P("lost+found/REGIONINFO.1")), "x");
  // A directory never replaces a non-empty one, nor moves into itself.
  ASSERT_TRUE(env_->CreateDirs(P("t/d2")).ok());
  Write(P("t/d2/f"), "f");
  EXPECT_FALSE(env_->ReplaceFile(P("t/d1"), P("t/d2")).ok());
  EXPECT_EQ(Read(P("t/d2/f")), "f");
  EXPECT_FALSE(env_->ReplaceFile(P("t/d1"), P("t/d1/cf/inside")).ok());
  EXPECT_EQ(Read(P("t/d1/cf/blk")), big);
}

TEST_P(EnvContract, TruncateCutsAFileDurably) {
  const std::string data = Pattern(200000, 4);
  for (size_t to : {size_t{199999}, size_t{131072}, size_t{70000}, size_t{65536}, size_t{10}, size_t{0}}) {
    Write(P("log"), data, 4096);
    ASSERT_TRUE(env_->Truncate(P("log"), to).ok()) << to;
    EXPECT_EQ(env_->GetFileSize(P("log")).value(), to);
    EXPECT_EQ(Read(P("log")), data.substr(0, to)) << to;
  }
  Write(P("log"), "abc");
  EXPECT_TRUE(env_->Truncate(P("log"), 3).ok());
  EXPECT_EQ(Read(P("log")), "abc");
}

TEST_P(EnvContract, DeletesRemoveFilesDirectoriesAndTrees) {
  ASSERT_TRUE(env_->CreateDirs(P("t/r/cf")).ok());
  Write(P("t/r/cf/a"), Pattern(100000, 5));
  Write(P("t/r/b"), "b");
  EXPECT_EQ(env_->DeleteDir(P("t/r")).code(), absl::StatusCode::kFailedPrecondition);  // not empty
  ASSERT_TRUE(env_->DeleteFile(P("t/r/b")).ok());
  EXPECT_FALSE(env_->FileExists(P("t/r/b")));
  EXPECT_EQ(env_->DeleteFile(P("t/r/b")).code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(env_->RemoveTree(P("t")).ok());
  EXPECT_FALSE(env_->FileExists(P("t")));
  EXPECT_TRUE(env_->RemoveTree(P("t")).ok());  // nothing there: fine
  ASSERT_TRUE(env_->CreateDirs(P("e")).ok());
  ASSERT_TRUE(env_->DeleteDir(P("e")).ok());
  EXPECT_FALSE(env_->FileExists(P("e")));
  EXPECT_TRUE(List(place_->base).empty());
}

TEST_P(EnvContract, WriteFileDurablyReplacesWholeContents) {
  ASSERT_TRUE(env_->WriteFileDurably(P("CATALOG"), "one").ok());
  ASSERT_TRUE(env_->WriteFileDurably(P("CATALOG"), "two, longer").ok());
  EXPECT_EQ(Read(P("CATALOG")), "two, longer");
  EXPECT_EQ(List(place_->base), std::vector<std::string>{"CATALOG"});
}

// A hard link (docs/DESIGN.md §16): a second name for the same bytes, which stay until the last
// name goes, whatever the names go through (a delete, an overwrite, a rename, a whole tree).
TEST_P(EnvContract, ALinkedFileKeepsItsBytesUntilItsLastNameGoes) {
  ASSERT_TRUE(env_->CreateDirs(P("t/r")).ok());
  ASSERT_TRUE(env_->CreateDirs(P("snap/r")).ok());
  const std::string data = Pattern(150000, 7);
  Write(P("t/r/1.blk"), data);
  EXPECT_EQ(env_->LinkCount(P("t/r/1.blk")).value_or(0), 1u);
  ASSERT_TRUE(env_->LinkFile(P("t/r/1.blk"), P("snap/r/1.blk")).ok());
  EXPECT_EQ(env_->LinkCount(P("t/r/1.blk")).value_or(0), 2u);
  EXPECT_EQ(env_->LinkCount(P("snap/r/1.blk")).value_or(0), 2u);
  EXPECT_TRUE(Read(P("snap/r/1.blk")) == data);
  // Refused: a taken name, a missing source, a directory.
  EXPECT_EQ(env_->LinkFile(P("t/r/1.blk"), P("snap/r/1.blk")).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(env_->LinkFile(P("t/r/none"), P("snap/r/none")).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(env_->LinkFile(P("t/r"), P("snap/dir")).code(), absl::StatusCode::kFailedPrecondition);
  // The table's name goes (a compaction, a drop): the snapshot's keeps the bytes.
  ASSERT_TRUE(env_->RemoveTree(P("t")).ok());
  EXPECT_TRUE(Read(P("snap/r/1.blk")) == data);
  EXPECT_EQ(env_->LinkCount(P("snap/r/1.blk")).value_or(0), 1u);
  // Linked again (a clone), the clone's name renamed, then overwritten: the others keep theirs.
  ASSERT_TRUE(env_->CreateDirs(P("clone/r")).ok());
  ASSERT_TRUE(env_->LinkFile(P("snap/r/1.blk"), P("clone/r/tmp")).ok());
  ASSERT_TRUE(env_->ReplaceFile(P("clone/r/tmp"), P("clone/r/1.blk")).ok());
  ASSERT_TRUE(env_->DeleteFile(P("snap/r/1.blk")).ok());
  EXPECT_TRUE(Read(P("clone/r/1.blk")) == data);
  EXPECT_EQ(env_->LinkCount(P("clone/r/1.blk")).value_or(0), 1u);
  ASSERT_TRUE(env_->LinkFile(P("clone/r/1.blk"), P("clone/r/2.blk")).ok());
  Write(P("clone/r/2.blk"), "a new file of that name");
  EXPECT_TRUE(Read(P("clone/r/1.blk")) == data);
  EXPECT_EQ(Read(P("clone/r/2.blk")), "a new file of that name");
  ASSERT_TRUE(env_->DeleteFile(P("clone/r/1.blk")).ok());
  EXPECT_FALSE(env_->FileExists(P("clone/r/1.blk")));
}

INSTANTIATE_TEST_SUITE_P(Envs, EnvContract, ::testing::Values("posix", "rados"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// What only RADOS has.
class RadosEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(TestCephConf().empty()) << kTestServicesHelp;
    // Named by the test alone: a death test's child runs the test again in a new process, and
    // must find the same namespace. Whatever an interrupted run left there goes first.
    root_ = absl::StrCat("rados-", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    if (auto e = Connect(); e) {
      ASSERT_TRUE(e->RemoveTree("/").ok());
    }
  }
  void TearDown() override {
    if (auto e = Connect(); e) e->RemoveTree("/").IgnoreError();
  }
  std::unique_ptr<RadosEnv> Connect() {
    auto e = RadosEnv::Connect(TestRadosOptions(root_));
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? *std::move(e) : nullptr;
  }
  size_t FileObjects(RadosEnv* e) {
    auto objects = e->ListObjects();
    EXPECT_TRUE(objects.ok()) << objects.status();
    size_t n = 0;
    for (const std::string& o : objects.value_or(std::vector<std::string>{})) n += o.starts_with("f:");
    return n;
  }
  std::string root_;
};

TEST_F(RadosEnvTest, TwoClientsShareOneNamespace) {
  auto a = Connect();
  auto b = Connect();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->CreateDirs("/t/r").ok());
  ASSERT_TRUE(b->CreateDirs("/t/r/cf").ok());  // the same /t/r
  ASSERT_TRUE(a->WriteFileDurably("/t/r/cf/f", "from a").ok());
  EXPECT_EQ(b->ReadFileToString("/t/r/cf/f").value_or(""), "from a");
  // Both make the same new directories at once: one directory results, with both files.
  std::thread ta([&] {
    for (int i = 0; i < 20; ++i) EXPECT_TRUE(a->CreateDirs(absl::StrCat("/x/", i)).ok());
  });
  std::thread tb([&] {
    for (int i = 0; i < 20; ++i) EXPECT_TRUE(b->CreateDirs(absl::StrCat("/x/", i)).ok());
  });
  ta.join();
  tb.join();
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(a->WriteFileDurably(absl::StrCat("/x/", i, "/a"), "a").ok());
    ASSERT_TRUE(b->WriteFileDurably(absl::StrCat("/x/", i, "/b"), "b").ok());
    EXPECT_EQ(b->ListDir(absl::StrCat("/x/", i)).value(), (std::vector<std::string>{"a", "b"}));
  }
  EXPECT_EQ(a->ListDir("/x").value().size(), 20u);
}

// A file's object size is the file's own, not the reader's setting: a master reading a dead
// server's log with a different rados_object_size read only the first object of it (docs/DESIGN.md §6:
// chaos test lost every write past it).
TEST_F(RadosEnvTest, ClientsWithDifferentObjectSizesReadEachOthersFilesWhole) {
  RadosEnvOptions small = TestRadosOptions(root_);
  small.chunk_bytes = 4 << 10;
  small.write_bytes = 1 << 10;
  RadosEnvOptions large = TestRadosOptions(root_);
  large.chunk_bytes = 1 << 20;
  auto a = RadosEnv::Connect(small);
  auto b = RadosEnv::Connect(large);
  ASSERT_TRUE(a.ok() && b.ok());
  std::string data;
  for (int i = 0; data.size() < 50000; ++i) absl::StrAppend(&data, i, ",");
  for (auto [writer, reader] : {std::pair{a->get(), b->get()}, std::pair{b->get(), a->get()}}) {
    ASSERT_TRUE(writer->CreateDirs("/w").ok());
    auto f = writer->NewWritableFile("/w/log");
    ASSERT_TRUE(f.ok()) << f.status();
    ASSERT_TRUE((*f)->Append(data).ok());
    ASSERT_TRUE((*f)->Sync().ok());
    EXPECT_EQ(reader->GetFileSize("/w/log").value_or(0), data.size());
    const std::string read = reader->ReadFileToString("/w/log").value_or("");
    EXPECT_TRUE(read == data) << "read " << read.size() << " of " << data.size() << " bytes";
    ASSERT_TRUE(reader->Truncate("/w/log", 9000).ok());
    const std::string cut = writer->ReadFileToString("/w/log").value_or("");
    EXPECT_TRUE(cut == data.substr(0, 9000)) << "read " << cut.size() << " bytes after a cut to 9000";
  }
}

TEST_F(RadosEnvTest, AMoveACrashCutInHalfIsFinishedByTheNextClient) {
  {
    auto a = Connect();
    ASSERT_TRUE(a);
    ASSERT_TRUE(a->CreateDirs("/t/.splits/d1/cf").ok());
    ASSERT_TRUE(a->CreateDirs("/t/other").ok());
    ASSERT_TRUE(a->WriteFileDurably("/t/.splits/d1/cf/blk", "daughter's data").ok());
  }
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ArmFaultPoint("rados_env.move_across.between");
        auto a = RadosEnv::Connect(TestRadosOptions(root_));
        if (a.ok()) (*a)->ReplaceFile("/t/.splits/d1", "/t/d1").IgnoreError();
        std::exit(0);  // not reached: the fault point kills the process
      },
      ::testing::KilledBySignal(SIGKILL), "");
  auto b = Connect();  // finishes the move the child left half done
  ASSERT_TRUE(b);
  EXPECT_EQ(b->ReadFileToString("/t/d1/cf/blk").value_or(""), "daughter's data");
  EXPECT_TRUE(b->ListDir("/t/.splits").value().empty());
  EXPECT_EQ(b->ListDir("/t").value(), (std::vector<std::string>{".splits", "d1", "other"}));
}

TEST_F(RadosEnvTest, ADeleteACrashCutInHalfLeavesNoObjectsBehind) {
  {
    auto a = Connect();
    ASSERT_TRUE(a);
    ASSERT_TRUE(a->CreateDirs("/t").ok());
    auto f = a->NewWritableFile("/t/blk");
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Append(Pattern(200000, 6)).ok());  // 4 objects
    ASSERT_TRUE((*f)->Close().ok());
    EXPECT_EQ(FileObjects(a.get()), 4u);
  }
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ArmFaultPoint("rados_env.unlink.between");
        auto a = RadosEnv::Connect(TestRadosOptions(root_));
        if (a.ok()) (*a)->DeleteFile("/t/blk").IgnoreError();
        std::exit(0);
      },
      ::testing::KilledBySignal(SIGKILL), "");
  auto b = Connect();
  ASSERT_TRUE(b);
  EXPECT_FALSE(b->FileExists("/t/blk"));
  EXPECT_EQ(FileObjects(b.get()), 0u);
}

// Every name of a file gone: no object of it is left (its chunks, its names' object).
TEST_F(RadosEnvTest, ALinkedFilesObjectsGoWithItsLastName) {
  auto a = Connect();
  ASSERT_TRUE(a);
  ASSERT_TRUE(a->CreateDirs("/t").ok());
  ASSERT_TRUE(a->CreateDirs("/s").ok());
  ASSERT_TRUE(a->WriteFileDurably("/t/blk", Pattern(200000, 8)).ok());
  ASSERT_TRUE(a->LinkFile("/t/blk", "/s/blk").ok());
  ASSERT_TRUE(a->LinkFile("/s/blk", "/s/blk2").ok());
  EXPECT_EQ(a->LinkCount("/t/blk").value_or(0), 3u);
  const size_t chunks = FileObjects(a.get());
  EXPECT_EQ(chunks, 4u);
  ASSERT_TRUE(a->DeleteFile("/t/blk").ok());
  ASSERT_TRUE(a->RemoveTree("/s/blk").ok());
  EXPECT_EQ(FileObjects(a.get()), chunks);
  EXPECT_EQ(a->LinkCount("/s/blk2").value_or(0), 1u);
  ASSERT_TRUE(a->RemoveTree("/s").ok());
  EXPECT_EQ(FileObjects(a.get()), 0u);
  auto objects = a->ListObjects();
  ASSERT_TRUE(objects.ok());
  for (const std::string& o : *objects) EXPECT_FALSE(o.starts_with("l:")) << o;
}

// A link a crash cut short between its pending name and its entry: the next client finishes it
// as undone, and the file keeps the one name it had; a delete of that name then frees it all.
TEST_F(RadosEnvTest, ALinkACrashCutInHalfLeavesTheFileAsItWas) {
  {
    auto a = Connect();
    ASSERT_TRUE(a);
    ASSERT_TRUE(a->CreateDirs("/t").ok());
    ASSERT_TRUE(a->CreateDirs("/s").ok());
    ASSERT_TRUE(a->WriteFileDurably("/t/blk", Pattern(200000, 9)).ok());
  }
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ArmFaultPoint("rados_env.link.between");
        auto a = RadosEnv::Connect(TestRadosOptions(root_));
        if (a.ok()) (*a)->LinkFile("/t/blk", "/s/blk").IgnoreError();
        std::exit(0);
      },
      ::testing::KilledBySignal(SIGKILL), "");
  auto b = Connect();  // finishes the link the child left half done
  ASSERT_TRUE(b);
  EXPECT_FALSE(b->FileExists("/s/blk"));
  EXPECT_EQ(b->LinkCount("/t/blk").value_or(0), 1u);
  EXPECT_EQ(b->ReadFileToString("/t/blk").value_or("").size(), 200000u);
  ASSERT_TRUE(b->DeleteFile("/t/blk").ok());
  EXPECT_EQ(FileObjects(b.get()), 0u);
}

// Links and deletes of one file from two clients at once: the file's bytes stay while a name
// of it is left, and go with the last.
TEST_F(RadosEnvTest, LinksAndDeletesFromTwoClientsLoseNothingAndLeakNothing) {
  auto a = Connect();
  auto b = Connect();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->CreateDirs("/t").ok());
  const std::string data = Pattern(5000, 10);
  for (int round = 0; round < 10; ++round) {
    const std::string src = absl::StrCat("/t/f", round), dst = absl::StrCat("/t/g", round);
    ASSERT_TRUE(a->WriteFileDurably(src, data).ok());
    absl::Status linked, deleted;
    std::thread ta([&] { linked = a->LinkFile(src, dst); });
    std::thread tb([&] { deleted = b->DeleteFile(src); });
    ta.join();
    tb.join();
    ASSERT_TRUE(deleted.ok()) << deleted;
    if (linked.ok()) {  // the link came first: the new name holds the bytes
      EXPECT_TRUE(b->ReadFileToString(dst).value_or("") == data) << "round " << round;
      ASSERT_TRUE(b->DeleteFile(dst).ok());
    } else {  // the delete came first: the link found the file gone
      EXPECT_EQ(linked.code(), absl::StatusCode::kNotFound) << linked;
      EXPECT_FALSE(b->FileExists(dst));
    }
  }
  EXPECT_EQ(FileObjects(a.get()), 0u);
}

TEST_F(RadosEnvTest, AFencedClientCanNeverSyncAgain) {
  auto a = Connect();  // the server that will be fenced
  auto b = Connect();  // the master that fences it
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->CreateDirs("/wal").ok());
  auto log = a->NewWritableFile("/wal/seg-1");
  ASSERT_TRUE(log.ok());
  ASSERT_TRUE((*log)->Append("acknowledged").ok());
  ASSERT_TRUE((*log)->Sync().ok());

  ASSERT_TRUE(b->Fence(a->ClientAddress()).ok());

  ASSERT_TRUE((*log)->Append(" never").ok());  // buffered: nothing sent yet
  absl::Status s = (*log)->Sync();
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("fenced"));
  EXPECT_EQ((*log)->Sync().code(), absl::StatusCode::kAborted);  // and stays so
  // A new file fails too: the fenced client cannot change anything.
  EXPECT_FALSE(a->WriteFileDurably("/wal/seg-2", "never").ok());
  // What it acknowledged before is all there is.
  EXPECT_EQ(b->ReadFileToString("/wal/seg-1").value_or(""), "acknowledged");
  EXPECT_FALSE(b->FileExists("/wal/seg-2"));
}

}  // namespace
}  // namespace basalt
