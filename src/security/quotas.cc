#include "src/security/quotas.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status.h"
#include "src/security/access_control.h"
#include "src/schema/meta.h"

namespace basalt::server {

constexpr std::array<std::string_view, kThrottleTypes> kTypeNames = {
    "REQUEST_NUMBER", "REQUEST_SIZE", "READ_NUMBER", "READ_SIZE", "WRITE_NUMBER", "WRITE_SIZE"};
// HBase's RpcThrottlingException messages, by type.
constexpr std::array<std::string_view, kThrottleTypes> kExceeded = {
    "number of requests exceeded",       "request size limit exceeded", "number of read requests exceeded",
    "read size limit exceeded",          "number of write requests exceeded", "write size limit exceeded"};

std::string_view ThrottleTypeName(ThrottleType t) { return kTypeNames[static_cast<int>(t)]; }

absl::StatusOr<ThrottleType> ParseThrottleTypeName(std::string_view name) {
  for (int i = 0; i < kThrottleTypes; ++i) {
    if (kTypeNames[i] == name) return static_cast<ThrottleType>(i);
  }
  return absl::InvalidArgumentError(absl::StrCat("'", AV(name), "' is not a throttle type"));
}

std::string QuotaSubject::ToString() const {
  std::vector<std::string> parts;
  if (!user.empty()) parts.push_back(absl::StrCat("USER => ", user));
  if (!ns.empty()) parts.push_back(absl::StrCat("NAMESPACE => ", ns));
  if (!table.empty()) parts.push_back(absl::StrCat("TABLE => ", table));
  return absl::StrJoin(parts, ", ");
}

bool QuotaSubject::operator<(const QuotaSubject& o) const {
  return std::tie(user, ns, table) < std::tie(o.user, o.ns, o.table);
}

namespace {

constexpr std::array<std::pair<std::string_view, int64_t>, 4> kUnits = {
    {{"sec", 1}, {"min", 60}, {"hour", 3600}, {"day", 86400}}};
constexpr std::string_view kSizeSuffixes = "BKMGTP";

bool IsUnit(int64_t seconds) {
  return std::any_of(kUnits.begin(), kUnits.end(), [seconds](const auto& u) { return u.second == seconds; });
}

bool IsSize(ThrottleType t) {
  return t == ThrottleType::kRequestSize || t == ThrottleType::kReadSize || t == ThrottleType::kWriteSize;
}

// HBase's own way of writing a wait: "1hrs, 2mins, 0.20sec" (RpcThrottlingException).
std::string FormatWait(int64_t ms) {
  std::string out;
  if (ms >= 3600000) absl::StrAppend(&out, ms / 3600000, "hrs, ");
  if (ms % 3600000 >= 60000) absl::StrAppend(&out, (ms % 3600000) / 60000, "mins, ");
  char secs[32];
  std::snprintf(secs, sizeof(secs), "%.2fsec", static_cast<double>(ms % 60000) / 1000.0);
  return absl::StrCat(out, secs);
}

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// basalt:quota's row and column for a subject (HBase's QuotaTableUtil layout).
std::pair<std::string, std::string> StoreKey(const QuotaSubject& s) {
  if (!s.user.empty()) {
    if (!s.table.empty()) return {absl::StrCat("u.", s.user), absl::StrCat("s.", s.table)};
    if (!s.ns.empty()) return {absl::StrCat("u.", s.user), absl::StrCat("s.", s.ns, ":")};
    return {absl::StrCat("u.", s.user), "s"};
  }
  if (!s.table.empty()) return {absl::StrCat("t.", s.table), "s"};
  return {absl::StrCat("n.", s.ns), "s"};
}

absl::Status ValidateSubject(const QuotaSubject& s) {
  if (s.user.empty() && s.ns.empty() && s.table.empty()) {
    return absl::InvalidArgumentError("a quota needs a USER, NAMESPACE or TABLE");
  }
  if (!s.ns.empty() && !s.table.empty()) {
    return absl::InvalidArgumentError("a quota is on a NAMESPACE or a TABLE, not both");
  }
  for (const std::string* name : {&s.user, &s.ns, &s.table}) {
    for (char c : *name) {
      if (c == ';' || c == ',' || c == ' ' || c == '\n' || c == '\0') {
        return absl::InvalidArgumentError(absl::StrCat("'", *name, "' has a character a quota's owner may not have"));
      }
    }
  }
  if (!s.ns.empty() && s.ns.find(':') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("namespace '", s.ns, "' has a ':'"));
  }
  if (NamespaceOf(s.table) == "basalt" || s.ns == "basalt") {
    return absl::InvalidArgumentError("the system tables (namespace basalt) take no quotas");
  }
  return absl::OkStatus();
}

}  // namespace

std::string QuotaSetting::LimitString() const {
  std::string unit = "sec";
  for (const auto& [name, secs] : kUnits) {
    if (secs == unit_seconds) unit = std::string(name);
  }
  if (!IsSize(type)) return absl::StrCat(limit, "req/", unit);
  int64_t n = limit;
  size_t suffix = 0;
  while (suffix + 1 < kSizeSuffixes.size() && n >= 1024 && n % 1024 == 0) {
    n /= 1024;
    ++suffix;
  }
  return absl::StrCat(n, suffix == 0 ? "B" : std::string(1, kSizeSuffixes[suffix]), "/", unit);
}

absl::Status ParseThrottle(std::string_view limit, std::string_view throttle, QuotaSetting* out) {
  const auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("LIMIT '", AV(limit), "': ", AV(why),
                                                   " (as HBase's: '10req/sec', '10M/sec', '100K/min')"));
  };
  const size_t slash = limit.find('/');
  if (slash == std::string_view::npos) return bad("no '/' before the time unit");
  const std::string_view amount = limit.substr(0, slash);
  const std::string_view unit = limit.substr(slash + 1);
  out->unit_seconds = 0;
  for (const auto& [name, secs] : kUnits) {
    if (absl::EqualsIgnoreCase(AV(unit), AV(name))) out->unit_seconds = secs;
  }
  if (out->unit_seconds == 0) return bad("the time unit is one of sec, min, hour, day");
  size_t digits = 0;
  while (digits < amount.size() && absl::ascii_isdigit(static_cast<unsigned char>(amount[digits]))) ++digits;
  int64_t n = 0;
  if (digits == 0 || !absl::SimpleAtoi(AV(amount.substr(0, digits)), &n) || n <= 0 || n > (int64_t{1} << 53)) {
    return bad("the amount is a whole number above 0 and below 2^53");
  }
  const std::string_view suffix = amount.substr(digits);
  bool size = true;
  if (absl::EqualsIgnoreCase(AV(suffix), "req")) {
    size = false;
  } else if (absl::EqualsIgnoreCase(AV(suffix), "CU")) {
    return bad("capacity units (CU) are not supported: give requests (req) or bytes");
  } else if (suffix.size() == 1) {
    const size_t at = kSizeSuffixes.find(absl::ascii_toupper(static_cast<unsigned char>(suffix[0])));
    if (at == std::string_view::npos) return bad("the size unit is one of B, K, M, G, T, P");
    for (size_t i = 0; i < at; ++i) {
      if (n > (int64_t{1} << 53) / 1024) return bad("too large");
      n *= 1024;
    }
  } else {
    return bad("after the amount comes 'req' or a size unit (B, K, M, G, T, P)");
  }
  out->limit = n;
  if (throttle.empty()) {
    out->type = size ? ThrottleType::kRequestSize : ThrottleType::kRequestNumber;
  } else if (absl::EqualsIgnoreCase(AV(throttle), "READ")) {
    out->type = size ? ThrottleType::kReadSize : ThrottleType::kReadNumber;
  } else if (absl::EqualsIgnoreCase(AV(throttle), "WRITE")) {
    out->type = size ? ThrottleType::kWriteSize : ThrottleType::kWriteNumber;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("THROTTLE_TYPE '", AV(throttle), "' is READ or WRITE (or left out: every call)"));
  }
  return absl::OkStatus();
}

// One subject's buckets, one per throttle type it was given.
class QuotaLimiter {
 public:
  explicit QuotaLimiter(const std::map<ThrottleType, QuotaSetting>& settings) {
    const int64_t now = NowNanos();
    for (const auto& [type, s] : settings) {
      Bucket& b = buckets_[static_cast<int>(type)];
      b.on = true;
      b.limit = static_cast<double>(s.limit);
      b.unit_ns = static_cast<double>(s.unit_seconds) * 1e9;
      b.available = b.limit;  // starts full
      b.last_ns = now;
      b.setting = s;
    }
  }

  // Takes what `call` asks for when all of it fits (one lock: this runs on every call); else
  // takes nothing and says how long to wait, and which setting refused it.
  bool TryTake(const QuotaCall& call, int64_t now, int64_t* wait_ms, const QuotaSetting** refused) {
    const ThrottleType count_type = call.write ? ThrottleType::kWriteNumber : ThrottleType::kReadNumber;
    // A read's bytes come after it (Settle): it needs the buckets out of debt only.
    const ThrottleType size_type = call.write ? ThrottleType::kWriteSize : ThrottleType::kReadSize;
    const int64_t size_asked = call.write ? call.bytes : 1;
    const int64_t size_taken = call.write ? call.bytes : 0;
    const std::array<Ask, 4> asks = {{{ThrottleType::kRequestNumber, call.count, call.count},
                                      {count_type, call.count, call.count},
                                      {ThrottleType::kRequestSize, size_asked, size_taken},
                                      {size_type, size_asked, size_taken}}};
    absl::MutexLock l(&mu_);
    for (const Ask& a : asks) {
      Bucket& b = buckets_[static_cast<int>(a.type)];
      if (!b.on) continue;
      b.Refill(now);
      const double want = static_cast<double>(a.asked);
      if (b.available >= want) continue;
      if (want > b.limit && b.available >= b.limit) continue;  // bigger than a whole bucket: when full
      const double short_by = std::min(want, b.limit) - b.available;
      *wait_ms = std::max<int64_t>(1, static_cast<int64_t>(short_by * b.unit_ns / b.limit / 1e6 + 0.999));
      *refused = &b.setting;
      return false;
    }
    for (const Ask& a : asks) Add(a.type, -a.taken);
    return true;
  }

  // Gives back what TryTake took (a later limiter refused the call).
  void GiveBack(const QuotaCall& call) {
    absl::MutexLock l(&mu_);
    const int64_t size = call.write ? call.bytes : 0;
    Add(ThrottleType::kRequestNumber, call.count);
    Add(call.write ? ThrottleType::kWriteNumber : ThrottleType::kReadNumber, call.count);
    Add(ThrottleType::kRequestSize, size);
    Add(ThrottleType::kWriteSize, size);
  }

  void TakeRead(int64_t bytes) {
    absl::MutexLock l(&mu_);
    Add(ThrottleType::kRequestSize, -bytes);
    Add(ThrottleType::kReadSize, -bytes);
  }

 private:
  struct Ask {
    ThrottleType type;
    int64_t asked;  // what must be available
    int64_t taken;  // what is taken when it is
  };
  struct Bucket {
    bool on = false;
    double limit = 0;
    double unit_ns = 1;
    double available = 0;
    int64_t last_ns = 0;
    QuotaSetting setting;
    // `now` may be older than the last refill (read before the lock): time never runs back.
    void Refill(int64_t now) {
      if (now <= last_ns) return;
      available = std::min(limit, available + static_cast<double>(now - last_ns) * limit / unit_ns);
      last_ns = now;
    }
  };
  // Adds `amount` (negative: takes) to the bucket of `type`, if there is one. The refill is the
  // next TryTake's. The debt stops at one whole bucket: a scan's bytes, settled as they go and
  // never refused mid-stream, hold its subject back two units of time at most.
  void Add(ThrottleType type, int64_t amount) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Bucket& b = buckets_[static_cast<int>(type)];
    if (b.on) b.available = std::clamp(b.available + static_cast<double>(amount), -b.limit, b.limit);
  }

  absl::Mutex mu_;
  std::array<Bucket, kThrottleTypes> buckets_ ABSL_GUARDED_BY(mu_);
};

// The limiters of one set of settings, found by subject.
struct QuotaState {
  struct User {
    std::unique_ptr<QuotaLimiter> all;
    std::map<std::string, std::unique_ptr<QuotaLimiter>, std::less<>> tables, namespaces;
  };
  std::map<std::string, User, std::less<>> users;
  std::map<std::string, std::unique_ptr<QuotaLimiter>, std::less<>> tables, namespaces;
};

namespace {
// Each thread's copy of the limiters it last used, and of which Quotas and version: a call takes
// them with one atomic load, no lock (BENCHMARKS.md §17). The copy keeps them alive until the
// thread's next call sees a newer version, so a Ticket used on its own thread needs nothing more.
struct StateCache {
  uint64_t quotas = 0;   // Quotas::id_
  uint64_t version = 0;
  std::shared_ptr<const QuotaState> state;
};
thread_local StateCache state_cache;
std::atomic<uint64_t> next_quotas_id{1};

}  // namespace

Quotas::Quotas(Region* store, std::function<void()> on_change)
    : store_(store), on_change_(std::move(on_change)), id_(next_quotas_id.fetch_add(1)) {}

absl::StatusOr<std::unique_ptr<Quotas>> Quotas::Open(Region* store, std::function<void()> on_change) {
  std::unique_ptr<Quotas> q(new Quotas(store, std::move(on_change)));
  std::map<QuotaSubject, std::map<ThrottleType, QuotaSetting>> settings;
  if (store != nullptr) {
    BASALT_ASSIGN_OR_RETURN(std::unique_ptr<RegionScanner> sc, store->Scan(ScanSpec{}));
    std::vector<Cell> cells;
    for (;;) {
      BASALT_ASSIGN_OR_RETURN(bool more, sc->NextRow(&cells));
      if (!more) break;
      for (const Cell& c : cells) {
        const auto bad = [&](absl::string_view why) {
          return absl::DataLossError(absl::StrCat(kQuotaTableName, " row '", c.row, "' column '", c.qualifier,
                                                  "' value '", c.value, "' is not a quota: ", why));
        };
        QuotaSubject s;
        const std::string_view rest = std::string_view(c.row).substr(std::min<size_t>(2, c.row.size()));
        if (c.row.rfind("u.", 0) == 0) {
          s.user = std::string(rest);
          if (c.qualifier.rfind("s.", 0) == 0) {
            std::string target = c.qualifier.substr(2);
            if (!target.empty() && target.back() == ':') {
              target.pop_back();
              s.ns = std::move(target);
            } else {
              s.table = std::move(target);
            }
          } else if (c.qualifier != "s") {
            return bad("an unknown column");
          }
        } else if (c.row.rfind("t.", 0) == 0 && c.qualifier == "s") {
          s.table = std::string(rest);
        } else if (c.row.rfind("n.", 0) == 0 && c.qualifier == "s") {
          s.ns = std::string(rest);
        } else {
          return bad("an unknown row or column");
        }
        if (absl::Status v = ValidateSubject(s); !v.ok()) return bad(v.message());
        for (absl::string_view part : absl::StrSplit(c.value, ';', absl::SkipEmpty())) {
          QuotaSetting set;
          set.subject = s;
          const std::vector<absl::string_view> kv = absl::StrSplit(part, absl::MaxSplits('=', 1));
          if (kv.size() != 2) return bad("a part without '='");
          absl::StatusOr<ThrottleType> type = ParseThrottleTypeName(std::string_view(kv[0].data(), kv[0].size()));
          if (!type.ok()) return bad(type.status().message());
          set.type = *type;
          const std::vector<absl::string_view> ls = absl::StrSplit(kv[1], absl::MaxSplits('/', 1));
          if (ls.size() != 2 || !absl::SimpleAtoi(ls[0], &set.limit) || !absl::SimpleAtoi(ls[1], &set.unit_seconds) ||
              set.limit <= 0 || !IsUnit(set.unit_seconds)) {
            return bad("a limit that is not LIMIT/SECONDS (SECONDS 1, 60, 3600 or 86400)");
          }
          settings[s][set.type] = set;
        }
      }
    }
  }
  absl::MutexLock l(&q->mu_);
  q->Install(std::move(settings));
  return q;
}

void Quotas::Install(std::map<QuotaSubject, std::map<ThrottleType, QuotaSetting>> settings) {
  auto state = std::make_shared<QuotaState>();
  for (const auto& [s, types] : settings) {
    if (types.empty()) continue;
    auto limiter = std::make_unique<QuotaLimiter>(types);
    if (!s.user.empty()) {
      QuotaState::User& u = state->users[s.user];
      if (!s.table.empty()) {
        u.tables[s.table] = std::move(limiter);
      } else if (!s.ns.empty()) {
        u.namespaces[s.ns] = std::move(limiter);
      } else {
        u.all = std::move(limiter);
      }
    } else if (!s.table.empty()) {
      state->tables[s.table] = std::move(limiter);
    } else {
      state->namespaces[s.ns] = std::move(limiter);
    }
  }
  const bool none = state->users.empty() && state->tables.empty() && state->namespaces.empty();
  settings_ = std::move(settings);
  state_ = std::move(state);
  version_.fetch_add(1, std::memory_order_release);
  empty_.store(none, std::memory_order_relaxed);
}


const QuotaState* Quotas::Current() {
  const uint64_t v = version_.load(std::memory_order_acquire);
  StateCache& c = state_cache;
  if (c.quotas != id_ || c.version != v) {
    absl::ReaderMutexLock l(&mu_);
    c.quotas = id_;
    c.version = version_.load(std::memory_order_relaxed);
    c.state = state_;
  }
  return c.state.get();
}

absl::Status Quotas::Admit(const QuotaCall& call, Ticket* ticket) {
  if (empty()) return absl::OkStatus();
  if (IsSystemTable(call.table)) return absl::OkStatus();  // the system tables have none
  const QuotaState& st = *Current();
  ticket->n = 0;
  const auto add = [&](QuotaLimiter* l) {
    if (l != nullptr) ticket->limiters[ticket->n++] = l;
  };
  const std::string_view ns = TableNamespace(call.table);
  if (!call.user.empty() && !st.users.empty()) {
    if (auto u = st.users.find(call.user); u != st.users.end()) {
      const QuotaState::User& user = u->second;
      auto t = user.tables.find(call.table);
      auto n = user.namespaces.find(ns);
      add(t != user.tables.end() ? t->second.get() : n != user.namespaces.end() ? n->second.get() : user.all.get());
    }
  }
  if (!st.tables.empty()) {
    if (auto t = st.tables.find(call.table); t != st.tables.end()) add(t->second.get());
  }
  if (!st.namespaces.empty()) {
    if (auto n = st.namespaces.find(ns); n != st.namespaces.end()) add(n->second.get());
  }
  if (ticket->n == 0) return absl::OkStatus();
  ticket->state = state_cache.state;  // the limiters outlive any Replace until the ticket goes
  const int64_t now = NowNanos();
  for (int i = 0; i < ticket->n; ++i) {
    int64_t wait_ms = 0;
    const QuotaSetting* refused = nullptr;
    if (!ticket->limiters[i]->TryTake(call, now, &wait_ms, &refused)) {
      for (int j = 0; j < i; ++j) ticket->limiters[j]->GiveBack(call);
      ticket->n = 0;
      return absl::ResourceExhaustedError(
          absl::StrCat(AV(kExceeded[static_cast<int>(refused->type)]), " - wait ", FormatWait(wait_ms), " (quota ",
                       refused->subject.ToString(), ", THROTTLE_TYPE => ", AV(ThrottleTypeName(refused->type)),
                       ", LIMIT => ", refused->LimitString(), ")"));
    }
  }
  return absl::OkStatus();
}

void Quotas::Refund(const Ticket& ticket, const QuotaCall& call) {
  for (int i = 0; i < ticket.n; ++i) ticket.limiters[i]->GiveBack(call);
}

void Quotas::Settle(const Ticket& ticket, int64_t read_bytes) {
  for (int i = 0; i < ticket.n; ++i) ticket.limiters[i]->TakeRead(read_bytes);
}

absl::Status Quotas::Set(const QuotaSetting& setting, bool all_types) {
  BASALT_RETURN_IF_ERROR(ValidateSubject(setting.subject));
  // As a grant's table (AccessController::Grant): a limit on "default:t" would never apply to
  // t. Removing one takes any name, so a limit kept before this check can still go.
  if (setting.limit > 0 && !setting.subject.table.empty()) {
    BASALT_RETURN_IF_ERROR(ValidateTableRef(setting.subject.table));
  }
  if (setting.limit < 0 || (setting.limit > 0 && !IsUnit(setting.unit_seconds))) {
    return absl::InvalidArgumentError("a quota's limit is above 0 per a unit of time");
  }
  if (store_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("this server keeps no ", kQuotaTableName, " (a cluster's region server: set quotas on the master)"));
  }
  {
    absl::MutexLock l(&mu_);
    BASALT_RETURN_IF_ERROR(SetLocked(setting, all_types));
  }
  if (on_change_) on_change_();
  return absl::OkStatus();
}

absl::Status Quotas::RemoveWhere(const std::function<bool(const QuotaSubject&)>& whose) {
  std::vector<QuotaSubject> subjects;
  {
    absl::MutexLock l(&mu_);
    for (const auto& [subject, types] : settings_) {
      if (whose(subject)) subjects.push_back(subject);
    }
  }
  for (const QuotaSubject& subject : subjects) {
    QuotaSetting none;
    none.subject = subject;
    BASALT_RETURN_IF_ERROR(Set(none, /*all_types=*/true));
  }
  return absl::OkStatus();
}

absl::Status Quotas::RemoveNamespace(std::string_view ns) {
  return RemoveWhere([ns](const QuotaSubject& s) { return s.ns == ns; });
}

absl::Status Quotas::RemoveTable(std::string_view table) {
  return RemoveWhere([table](const QuotaSubject& s) { return s.table == table; });
}

absl::Status Quotas::SetLocked(const QuotaSetting& setting, bool all_types) {
  std::map<QuotaSubject, std::map<ThrottleType, QuotaSetting>> next = settings_;
  std::map<ThrottleType, QuotaSetting>& types = next[setting.subject];
  if (setting.limit == 0) {
    if (all_types) {
      types.clear();
    } else {
      types.erase(setting.type);
    }
  } else {
    types[setting.type] = setting;
  }
  std::vector<std::string> parts;
  for (const auto& [type, s] : types) {
    parts.push_back(absl::StrCat(AV(ThrottleTypeName(type)), "=", s.limit, "/", s.unit_seconds));
  }
  const auto [row, column] = StoreKey(setting.subject);
  RowMutation rm;
  rm.row = row;
  Mutation m;
  m.family = kQuotaFamily;
  m.qualifier = column;
  if (parts.empty()) {
    m.kind = Mutation::Kind::kDeleteColumn;
    next.erase(setting.subject);
  } else {
    m.value = absl::StrJoin(parts, ";");
  }
  rm.mutations.push_back(std::move(m));
  absl::Status s = store_->Mutate({rm}, Durability::kSyncWal);
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat("writing ", kQuotaTableName, ": ", s.message()));
  Install(std::move(next));
  return absl::OkStatus();
}

std::vector<QuotaSetting> Quotas::List() const {
  absl::ReaderMutexLock l(&mu_);
  std::vector<QuotaSetting> out;
  for (const auto& [subject, types] : settings_) {
    for (const auto& [type, s] : types) out.push_back(s);
  }
  return out;
}

void Quotas::Replace(const std::vector<QuotaSetting>& settings) {
  std::map<QuotaSubject, std::map<ThrottleType, QuotaSetting>> next;
  for (const QuotaSetting& s : settings) next[s.subject][s.type] = s;
  absl::MutexLock l(&mu_);
  Install(std::move(next));
}

absl::Status SetQuota(Quotas* quotas, const rpc::SetQuotaRequest& req) {
  QuotaSetting s;
  s.subject = QuotaSubject{req.user(), req.namespace_(), req.table()};
  if (absl::EqualsIgnoreCase(req.limit(), "NONE")) {
    s.limit = 0;
    if (req.throttle().empty()) return quotas->Set(s, /*all_types=*/true);
    // That kind's count and size.
    BASALT_RETURN_IF_ERROR(ParseThrottle("1req/sec", req.throttle(), &s));
    s.limit = 0;
    BASALT_RETURN_IF_ERROR(quotas->Set(s));
    BASALT_RETURN_IF_ERROR(ParseThrottle("1B/sec", req.throttle(), &s));
    s.limit = 0;
    return quotas->Set(s);
  }
  BASALT_RETURN_IF_ERROR(ParseThrottle(req.limit(), req.throttle(), &s));
  return quotas->Set(s);
}

void ListQuotas(const Quotas& quotas, rpc::ListQuotasResponse* resp) {
  for (const QuotaSetting& s : quotas.List()) {
    rpc::QuotaSetting* p = resp->add_settings();
    p->set_user(s.subject.user);
    p->set_namespace_(s.subject.ns);
    p->set_table(s.subject.table);
    p->set_throttle_type(std::string(ThrottleTypeName(s.type)));
    p->set_limit(s.limit);
    p->set_unit_seconds(s.unit_seconds);
    p->set_limit_text(s.LimitString());
  }
}

absl::StatusOr<std::vector<QuotaSetting>> QuotasFromProto(const rpc::ListQuotasResponse& resp) {
  std::vector<QuotaSetting> out;
  for (const rpc::QuotaSetting& p : resp.settings()) {
    QuotaSetting s;
    s.subject = QuotaSubject{p.user(), p.namespace_(), p.table()};
    BASALT_ASSIGN_OR_RETURN(s.type, ParseThrottleTypeName(p.throttle_type()));
    s.limit = p.limit();
    s.unit_seconds = p.unit_seconds();
    if (s.limit <= 0 || !IsUnit(s.unit_seconds)) {
      return absl::InvalidArgumentError(absl::StrCat("quota ", s.subject.ToString(), ": limit ", s.limit, " per ",
                                                     s.unit_seconds, " s"));
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace basalt::server
