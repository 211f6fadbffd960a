// A history of concurrent clients' calls and a check that it is linearizable (docs/DESIGN.md §6), per key,
// for the two objects the cluster's workload uses: a register (Get, Put, CheckAndMutate on a
// cell) and a counter (Increment, and Get of its value).
//
// Each call is recorded with its invocation and completion times and its result. A call whose
// outcome the client could not know (its deadline passed, its server went away) is "unknown": it
// may have taken effect at any time after its invocation, or never, so it is checked as if it
// completed at the end of time. A call that failed with an error that says nothing was applied
// is left out (and counted: such errors must not reach clients at all, but that is the
// workload's figure, not linearizability's).
//
// The check is Wing and Gong's search with Lowe's memoization, as Jepsen's Knossos and Porcupine
// do it: take the calls in invocation order, try to linearize one whose invocation precedes every
// pending completion, undo on a dead end, and never revisit a (set of linearized calls, state)
// pair. Per key, so each search is small. Our own code, from the papers' descriptions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace basalt::history {

enum class OpKind {
  kGet,        // register or counter: output = the value read ("" absent; a counter's in decimal)
  kPut,        // register: input = the value written
  kCas,        // register: input = value written if the cell holds `expected`; output "1" or "0"
  kIncrement,  // counter: input = the amount (decimal); output = the new value (decimal)
};

struct Op {
  int client = 0;
  std::string key;
  OpKind kind = OpKind::kGet;
  std::string input;
  std::string expected;  // kCas
  std::string output;    // once ok
  int64_t invoked_ns = 0;
  int64_t completed_ns = 0;  // ignored when unknown
  bool unknown = false;      // the client cannot know whether it took effect
};

// What the check found for one key.
struct KeyVerdict {
  std::string key;
  bool linearizable = true;
  size_t ops = 0;
  size_t unknown = 0;
  // When not linearizable: the calls around the first one the history cannot take (the shortest
  // prefix, in invocation order, that is not linearizable ends with it), as text, for the report:
  // those that overlap it or end less than a second before it, at most 40, in invocation order.
  std::vector<std::string> ops_text;
};

struct Verdict {
  bool linearizable = true;
  size_t ops = 0;
  size_t unknown = 0;
  std::vector<KeyVerdict> anomalies;  // the keys whose history is not linearizable
  // Keys whose search was cut short at the step limit (counted neither way).
  std::vector<std::string> undecided;
};

// Checks `ops` (any order; keys are checked apart). A key whose search passes `max_steps` is
// reported undecided rather than searched for ever. `counters`: the keys that hold counters
// (their state starts at 0, and a Get reads its decimal value).
Verdict Check(const std::vector<Op>& ops, const std::vector<std::string>& counters, int64_t max_steps = 50'000'000);

// One call as text ("c3 put(k1, v7) ok [12.003, 12.010]"), for reports.
std::string Describe(const Op& op);

}  // namespace basalt::history
