// The history checker on small histories whose verdict is known (docs/DESIGN.md §6: it must
// fail a history that is not linearizable). Times are in seconds here.
#include "tests/history/history.h"

#include "gtest/gtest.h"

namespace basalt::history {
namespace {

Op Call(int client, OpKind kind, std::string key, std::string input, std::string output, double from, double to) {
  Op op;
  op.client = client;
  op.kind = kind;
  op.key = std::move(key);
  op.input = std::move(input);
  op.output = std::move(output);
  op.invoked_ns = static_cast<int64_t>(from * 1e9);
  op.completed_ns = static_cast<int64_t>(to * 1e9);
  op.unknown = to < 0;
  return op;
}
Op Put(int c, std::string v, double from, double to) { return Call(c, OpKind::kPut, "k", std::move(v), "", from, to); }
Op Get(int c, std::string v, double from, double to) { return Call(c, OpKind::kGet, "k", "", std::move(v), from, to); }
Op Incr(int c, std::string out, double from, double to) {
  return Call(c, OpKind::kIncrement, "n", "1", std::move(out), from, to);
}
Op Cas(int c, std::string expected, std::string v, bool done, double from, double to) {
  Op op = Call(c, OpKind::kCas, "k", std::move(v), done ? "1" : "0", from, to);
  op.expected = std::move(expected);
  return op;
}
bool Linearizable(const std::vector<Op>& ops) {
  Verdict v = Check(ops, {"n"});
  EXPECT_TRUE(v.undecided.empty());
  for (const KeyVerdict& k : v.anomalies) {
    for (const std::string& line : k.ops_text) std::printf("  %s\n", line.c_str());
  }
  return v.linearizable;
}

TEST(Linearizability, ASequentialRegisterIsLinearizableAndAStaleReadIsNot) {
  EXPECT_TRUE(Linearizable({Put(1, "a", 0, 1), Get(2, "a", 2, 3), Put(1, "b", 4, 5), Get(2, "b", 6, 7)}));
  EXPECT_TRUE(Linearizable({Get(2, "", 0, 1), Put(1, "a", 2, 3)}));  // absent before any write
  EXPECT_FALSE(Linearizable({Put(1, "a", 0, 1), Put(1, "b", 2, 3), Get(2, "a", 4, 5)}));
  EXPECT_FALSE(Linearizable({Get(2, "x", 0, 1)}));  // a value never written
}

TEST(Linearizability, AConcurrentWriteMayBeSeenOrNotButNeverUnseenAgain) {
  EXPECT_TRUE(Linearizable({Put(1, "b", 0, 10), Get(2, "", 1, 2), Get(3, "b", 3, 4)}));
  EXPECT_TRUE(Linearizable({Put(1, "b", 0, 10), Get(2, "b", 1, 2), Get(3, "b", 3, 4)}));
  EXPECT_FALSE(Linearizable({Put(1, "b", 0, 10), Get(2, "", 1, 2), Get(3, "b", 3, 4), Get(2, "", 5, 6)}));
}

TEST(Linearizability, AnUnknownCallMayHaveTakenEffectAtAnyTimeOrNever) {
  EXPECT_TRUE(Linearizable({Put(1, "b", 0, -1), Get(2, "", 1, 2), Get(3, "b", 3, 4)}));
  EXPECT_TRUE(Linearizable({Put(1, "b", 0, -1), Get(2, "", 100, 101)}));  // never
  EXPECT_FALSE(Linearizable({Put(1, "b", 0, -1), Get(2, "", 1, 2), Get(3, "b", 3, 4), Get(2, "", 5, 6)}));
  // An unknown read constrains nothing.
  EXPECT_TRUE(Linearizable({Put(1, "a", 0, 1), Get(2, "zzz", 2, -1)}));
}

// A Put applied twice (a retry after its first attempt was applied but not answered), around
// another client's write: a reader sees the first value, the second, then the first again.
TEST(Linearizability, AWriteAppliedTwiceAroundAnotherIsNotLinearizable) {
  EXPECT_FALSE(Linearizable(
      {Put(1, "v1", 0, 10), Get(3, "v1", 1, 1.5), Put(2, "v2", 2, 3), Get(3, "v2", 4, 5), Get(3, "v1", 6, 7)}));
}

TEST(Linearizability, CountersNeitherLoseNorRepeatAnIncrement) {
  EXPECT_TRUE(Linearizable({Incr(1, "1", 0, 1), Incr(2, "2", 2, 3), Call(3, OpKind::kGet, "n", "", "2", 4, 5)}));
  EXPECT_TRUE(Linearizable({Incr(1, "2", 0, 10), Incr(2, "1", 1, 2)}));  // concurrent: either order
  EXPECT_FALSE(Linearizable({Incr(1, "1", 0, 1), Incr(2, "1", 2, 3)}));  // a lost update
  EXPECT_TRUE(Linearizable({Incr(1, "", 0, -1), Incr(2, "2", 2, 3)}));   // the unknown one applied
  EXPECT_TRUE(Linearizable({Incr(1, "", 0, -1), Incr(2, "1", 2, 3)}));   // ... or not (yet)
  EXPECT_FALSE(Linearizable({Incr(1, "1", 0, 1), Call(2, OpKind::kGet, "n", "0", "0", 2, 3)}));
}

TEST(Linearizability, TwoCheckAndMutatesOfOneExpectedValueCannotBothSucceed) {
  EXPECT_FALSE(Linearizable({Put(1, "a", 0, 1), Cas(2, "a", "b", true, 2, 5), Cas(3, "a", "c", true, 2, 5)}));
  EXPECT_TRUE(Linearizable({Put(1, "a", 0, 1), Cas(2, "a", "b", true, 2, 5), Cas(3, "a", "c", false, 2, 5)}));
  EXPECT_FALSE(Linearizable({Put(1, "a", 0, 1), Cas(2, "a", "b", false, 2, 3)}));  // it held: must succeed
}

// Keys are checked apart; a long history of many concurrent clients is decided quickly.
TEST(Linearizability, ManyClientsOnManyKeysAreCheckedPerKey) {
  std::vector<Op> ops;
  for (int i = 0; i < 2000; ++i) {
    const double t = i * 0.01;
    Op w = Put(i % 8, "v" + std::to_string(i), t, t + 0.035);  // four writers overlap at a time
    w.key = "k" + std::to_string(i % 5);
    ops.push_back(w);
  }
  Verdict v = Check(ops, {});
  EXPECT_TRUE(v.linearizable);
  EXPECT_TRUE(v.undecided.empty());
  EXPECT_EQ(v.ops, 2000u);
}

}  // namespace
}  // namespace basalt::history
