#include "tests/history/history.h"

#include <algorithm>
#include <climits>
#include <unordered_set>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace basalt::history {
namespace {

// One call's or one completion's place in the search's list (Lowe's "entries").
struct Entry {
  int op = -1;         // index into the key's calls
  bool call = true;
  int64_t time = 0;
  Entry* match = nullptr;  // a call's completion, a completion's call
  Entry* prev = nullptr;
  Entry* next = nullptr;
};

// Takes a call (and its completion) out of the list.
void Lift(Entry* call) {
  call->prev->next = call->next;
  if (call->next != nullptr) call->next->prev = call->prev;
  Entry* ret = call->match;
  ret->prev->next = ret->next;
  if (ret->next != nullptr) ret->next->prev = ret->prev;
}

// Puts them back where they were (the reverse of Lift).
void Unlift(Entry* call) {
  Entry* ret = call->match;
  ret->prev->next = ret;
  if (ret->next != nullptr) ret->next->prev = ret;
  call->prev->next = call;
  if (call->next != nullptr) call->next->prev = call;
}

int64_t AsNumber(const std::string& s) {
  int64_t n = 0;
  return absl::SimpleAtoi(s, &n) ? n : 0;
}

// The object's step: whether `op` may take effect in `state`, and the state after it.
bool Step(const Op& op, std::string* state) {
  switch (op.kind) {
    case OpKind::kGet: return op.unknown || op.output == *state;
    case OpKind::kPut: *state = op.input; return true;
    case OpKind::kCas: {
      const bool held = *state == op.expected;
      if (op.unknown) {
        if (held) *state = op.input;
        return true;
      }
      if (held != (op.output == "1")) return false;
      if (held) *state = op.input;
      return true;
    }
    case OpKind::kIncrement: {
      const std::string next = absl::StrCat(AsNumber(*state) + AsNumber(op.input));
      if (!op.unknown && op.output != next) return false;
      *state = next;
      return true;
    }
  }
  return false;
}

// Linearized calls, as a bit set that hashes with the state.
class Bits {
 public:
  explicit Bits(size_t n) : words_((n + 63) / 64, 0) {}
  void Set(int i) { words_[i / 64] |= uint64_t{1} << (i % 64); }
  void Reset(int i) { words_[i / 64] &= ~(uint64_t{1} << (i % 64)); }
  std::string Key(const std::string& state) const {
    std::string k(reinterpret_cast<const char*>(words_.data()), words_.size() * sizeof(uint64_t));
    k += state;
    return k;
  }

 private:
  std::vector<uint64_t> words_;
};

enum class Outcome { kLinearizable, kNot, kUndecided };

Outcome CheckKey(const std::vector<const Op*>& ops, const std::string& initial, int64_t max_steps) {
  const int n = static_cast<int>(ops.size());
  std::vector<Entry> entries(2 * n);
  for (int i = 0; i < n; ++i) {
    Entry& c = entries[2 * i];
    Entry& r = entries[2 * i + 1];
    c = Entry{i, true, ops[i]->invoked_ns};
    r = Entry{i, false, ops[i]->unknown ? INT64_MAX : ops[i]->completed_ns};
    c.match = &r;
    r.match = &c;
  }
  std::vector<Entry*> order;
  for (Entry& e : entries) order.push_back(&e);
  // By time; at a tie a call goes first (the two calls are then concurrent: never a false alarm).
  std::sort(order.begin(), order.end(), [](const Entry* a, const Entry* b) {
    if (a->time != b->time) return a->time < b->time;
    return a->call && !b->call;
  });
  Entry head;
  Entry* last = &head;
  for (Entry* e : order) {
    last->next = e;
    e->prev = last;
    last = e;
  }
  std::string state = initial;
  Bits linearized(n);
  std::unordered_set<std::string> seen;
  std::vector<std::pair<Entry*, std::string>> stack;
  Entry* entry = head.next;
  for (int64_t steps = 0; head.next != nullptr; ++steps) {
    if (steps > max_steps) return Outcome::kUndecided;
    if (entry->call) {
      std::string next = state;
      if (Step(*ops[entry->op], &next)) {
        linearized.Set(entry->op);
        if (seen.insert(linearized.Key(next)).second) {
          stack.emplace_back(entry, std::move(state));
          state = std::move(next);
          Lift(entry);
          entry = head.next;
          continue;
        }
        linearized.Reset(entry->op);
      }
      entry = entry->next;
    } else {
      // A completion before every call still pending was linearized: undo the last choice.
      if (stack.empty()) return Outcome::kNot;
      auto [call, before] = std::move(stack.back());
      stack.pop_back();
      state = std::move(before);
      linearized.Reset(call->op);
      Unlift(call);
      entry = call->next;
    }
  }
  return Outcome::kLinearizable;
}

const char* KindName(OpKind k) {
  switch (k) {
    case OpKind::kGet: return "get";
    case OpKind::kPut: return "put";
    case OpKind::kCas: return "cas";
    case OpKind::kIncrement: return "incr";
  }
  return "?";
}

}  // namespace

std::string Describe(const Op& op) {
  std::string args = op.key;
  if (op.kind == OpKind::kCas) absl::StrAppend(&args, ", '", op.expected, "' -> '", op.input, "'");
  if (op.kind == OpKind::kPut || op.kind == OpKind::kIncrement) absl::StrAppend(&args, ", ", op.input);
  const std::string result = op.unknown ? "unknown" : (op.kind == OpKind::kPut ? "ok" : "'" + op.output + "'");
  return absl::StrCat("c", op.client, " ", KindName(op.kind), "(", args, ") ", result, " [",
                      absl::StrFormat("%.3f", op.invoked_ns / 1e9), ", ",
                      op.unknown ? std::string("?") : absl::StrFormat("%.3f", op.completed_ns / 1e9), "]");
}

Verdict Check(const std::vector<Op>& ops, const std::vector<std::string>& counters, int64_t max_steps) {
  std::map<std::string, std::vector<const Op*>> by_key;
  Verdict v;
  for (const Op& op : ops) {
    ++v.ops;
    if (op.unknown) ++v.unknown;
    // An unknown read changes nothing and constrains nothing.
    if (op.unknown && op.kind == OpKind::kGet) continue;
    by_key[op.key].push_back(&op);
  }
  for (auto& [key, key_ops] : by_key) {
    std::sort(key_ops.begin(), key_ops.end(), [](const Op* a, const Op* b) { return a->invoked_ns < b->invoked_ns; });
    const bool counter = std::find(counters.begin(), counters.end(), key) != counters.end();
    const Outcome out = CheckKey(key_ops, counter ? "0" : "", max_steps);
    if (out == Outcome::kUndecided) {
      v.undecided.push_back(key);
      continue;
    }
    if (out == Outcome::kLinearizable) continue;
    v.linearizable = false;
    KeyVerdict kv;
    kv.key = key;
    kv.linearizable = false;
    kv.ops = key_ops.size();
    for (const Op* op : key_ops) {
      if (op->unknown) ++kv.unknown;
    }
    // The shortest prefix that is not linearizable: the history as it stood when the k-th call
    // was invoked, the calls still pending then unknown (a call's result may reflect calls
    // invoked after it; such a prefix of a linearizable history is linearizable).
    // (A lambda may not capture a structured binding before C++20's clang 16.)
    const std::vector<const Op*>& calls = key_ops;
    auto prefix_of = [&calls](size_t k, std::vector<Op>* store) {
      const int64_t cut = calls[k - 1]->invoked_ns;
      store->clear();
      store->reserve(k);
      for (size_t i = 0; i < k; ++i) {
        Op op = *calls[i];
        if (!op.unknown && op.completed_ns > cut) op.unknown = true;
        if (op.unknown && op.kind == OpKind::kGet) continue;
        store->push_back(std::move(op));
      }
      std::vector<const Op*> out;
      for (const Op& op : *store) out.push_back(&op);
      return out;
    };
    std::vector<Op> store;
    size_t lo = 1, hi = key_ops.size();
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (CheckKey(prefix_of(mid, &store), counter ? "0" : "", max_steps) == Outcome::kNot) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    const Op* culprit = key_ops[lo - 1];
    std::vector<const Op*> window;
    for (size_t i = 0; i < lo; ++i) {
      const Op* op = key_ops[i];
      if (op->unknown || op->completed_ns >= culprit->invoked_ns - 1'000'000'000) window.push_back(op);
    }
    if (window.size() > 40) window.erase(window.begin(), window.end() - 40);
    for (const Op* op : window) kv.ops_text.push_back(Describe(*op));
    v.anomalies.push_back(std::move(kv));
  }
  return v;
}

}  // namespace basalt::history
