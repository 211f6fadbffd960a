// Quotas (docs/DESIGN.md §12), as HBase's RPC throttles: a rate of requests or bytes
// per second, minute, hour or day, set on a user, a namespace or a table, or on a user for one
// table or one namespace, and refused past it with RESOURCE_EXHAUSTED saying how long to wait
// (HBase's RpcThrottlingException: "number of requests exceeded - wait 0.20sec").
//
// A call of user U on table T (namespace N) passes through up to three limiters, all of which
// must have room: U's own (the most specific of U on T, U on N, U alone), T's (every user of T
// together) and N's. Each limiter has a token bucket per throttle type it was given: requests
// (any), request bytes, reads, read bytes, writes, write bytes. A bucket holds one unit's worth
// and refills continuously (HBase's AverageIntervalRateLimiter). Requests and write bytes are
// known before a call and taken then; read bytes are known only after, so a read needs the
// bucket out of debt and its reply's bytes are taken afterwards (HBase estimates, then settles).
// A call bigger than a whole bucket passes when the bucket is full (and leaves it in debt):
// otherwise it would be refused for good.
//
// As HBase's, quotas are enforced by each server on the calls it serves (HBase's MACHINE
// scope): a table quota of 100req/sec on a cluster of 3 region servers lets up to 300 through.
// The system tables (basalt:meta, basalt:acl, basalt:quota) have none.
//
// The settings are kept in the system table basalt:quota, whose rows are HBase's hbase:quota's:
//   row        "u.USER", "t.TABLE" or "n.NAMESPACE"
//   column     q:s for the subject itself; q:s.TABLE or q:s.NAMESPACE: for a user's on one
//   value      "TYPE=LIMIT/SECONDS" for each throttle type set, ';' between
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "proto/basalt.pb.h"
#include "storage/region.h"

namespace basalt::server {

enum class ThrottleType : uint8_t { kRequestNumber, kRequestSize, kReadNumber, kReadSize, kWriteNumber, kWriteSize };
inline constexpr int kThrottleTypes = 6;
// "REQUEST_NUMBER", ... as HBase names them.
std::string_view ThrottleTypeName(ThrottleType t);
absl::StatusOr<ThrottleType> ParseThrottleTypeName(std::string_view name);

// Whom a quota limits: a user, a namespace or a table, or a user on one table or namespace.
struct QuotaSubject {
  std::string user;
  std::string ns;
  std::string table;
  // "USER => alice, TABLE => t1", as HBase's list_quotas prints the owner.
  std::string ToString() const;
  bool operator<(const QuotaSubject& o) const;
  bool operator==(const QuotaSubject& o) const { return user == o.user && ns == o.ns && table == o.table; }
};

struct QuotaSetting {
  QuotaSubject subject;
  ThrottleType type = ThrottleType::kRequestNumber;
  int64_t limit = 0;         // requests or bytes per unit
  int64_t unit_seconds = 1;  // 1, 60, 3600 or 86400
  // "10req/sec", "10M/sec", "512/min", as HBase's shell writes LIMIT.
  std::string LimitString() const;
};

// HBase's LIMIT and THROTTLE_TYPE: "10req/sec" counts requests, "10M/sec" bytes (B, K, M, G, T,
// P); throttle "" (all calls), "READ" or "WRITE". Fills type, limit and unit_seconds, or says
// what is wrong (capacity units, "CU", are not supported).
absl::Status ParseThrottle(std::string_view limit, std::string_view throttle, QuotaSetting* out);

// What a call asks of the quotas. `bytes` is its request's size, taken from the write-size
// bucket on a write (a read's bytes are settled after it, Quotas::Settle).
struct QuotaCall {
  std::string_view user;  // empty when calls are not authenticated: no user quotas apply
  std::string_view table;
  bool write = false;
  int64_t count = 1;  // requests it stands for (a batch of N mutations: N writes)
  int64_t bytes = 0;
};

struct QuotaState;   // the limiters of one set of settings (quotas.cc)
class QuotaLimiter;  // one subject's buckets (quotas.cc)

class Quotas {
 public:
  // Loads the settings kept in `store` (basalt:quota's region; null on a cluster's region
  // server, which follows the master's: Replace). DataLoss for a cell that does not decode.
  // `on_change` runs after each change is stored (a cluster's master tells its region servers).
  static absl::StatusOr<std::unique_ptr<Quotas>> Open(Region* store, std::function<void()> on_change = {});

  // What Admit hands back: the limiters that let the call through, for Settle or Refund. It
  // keeps them alive (across a Replace) for as long as it lives, on any thread.
  struct Ticket {
    std::shared_ptr<const QuotaState> state;
    std::array<QuotaLimiter*, 3> limiters{};
    int n = 0;
  };

  // No quota applies anywhere (the fast path: one relaxed load).
  bool empty() const { return empty_.load(std::memory_order_relaxed); }
  // Takes the call's requests (and write bytes) from every limiter that applies, or returns
  // ResourceExhausted naming the limit and how long to wait, taking nothing.
  absl::Status Admit(const QuotaCall& call, Ticket* ticket);
  // Gives back what Admit took for `call` (a verbs Get whose row did not fit its reply: the
  // client asks again, over verbs or gRPC, and that call is counted).
  void Refund(const Ticket& ticket, const QuotaCall& call);
  // Takes a read's reply bytes from the read-size and request-size buckets of `ticket`'s limiters.
  void Settle(const Ticket& ticket, int64_t read_bytes);

  // Sets (limit > 0) or removes (limit 0: HBase's LIMIT => NONE; every type of the subject when
  // `all_types`) one setting, stored (synced) before it applies. InvalidArgument for a subject
  // that is none of the five kinds; FailedPrecondition without a store.
  absl::Status Set(const QuotaSetting& setting, bool all_types = false);
  // Removes every setting on namespace `ns`, and on a user in it (a dropped namespace's, as
  // HBase's DeleteNamespaceProcedure removes its quota).
  absl::Status RemoveNamespace(std::string_view ns);
  // Removes every setting on table `table`, and on a user on it (a dropped table's).
  absl::Status RemoveTable(std::string_view table);
  // Every setting, by subject then type.
  std::vector<QuotaSetting> List() const;
  // Puts `settings` in place of all (a region server following the master's).
  void Replace(const std::vector<QuotaSetting>& settings);

 private:
  Quotas(Region* store, std::function<void()> on_change);
  absl::Status SetLocked(const QuotaSetting& setting, bool all_types) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes every setting whose subject `whose` picks.
  absl::Status RemoveWhere(const std::function<bool(const QuotaSubject&)>& whose);
  void Install(std::map<QuotaSubject, std::map<ThrottleType, QuotaSetting>> settings)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // The limiters of the settings in force, without a lock on the calling thread's second call.
  const QuotaState* Current();

  Region* const store_;
  const std::function<void()> on_change_;
  const uint64_t id_;                  // tells this Quotas from any other in the process
  std::atomic<uint64_t> version_{0};   // bumped by every Install
  mutable absl::Mutex mu_;
  std::map<QuotaSubject, std::map<ThrottleType, QuotaSetting>> settings_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const QuotaState> state_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> empty_{true};
};

// The Admin service's SetQuota and ListQuotas on `quotas` (the caller is authorised already).
absl::Status SetQuota(Quotas* quotas, const rpc::SetQuotaRequest& req);
void ListQuotas(const Quotas& quotas, rpc::ListQuotasResponse* resp);
// The settings in a ListQuotasResponse (a region server loading the master's).
absl::StatusOr<std::vector<QuotaSetting>> QuotasFromProto(const rpc::ListQuotasResponse& resp);

}  // namespace basalt::server
