// The client's region locations (HBase's MetaCache): which region holds a row of a table, read
// from basalt:meta once and kept until a region refuses a call (basalt.proto "Regions"), so a
// call costs no lookup while the regions stay where they are. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace basalt::client_internal {

struct RegionLocation {
  std::string encoded_name;
  std::string start_key;
  std::string end_key;  // empty: to the end of the key space
  std::string server;   // host:port meta says serves it
};

class RegionCache {
 public:
  // Reads a table's serving regions from meta (not split or merged parents), in any order,
  // within the deadline.
  using Loader =
      std::function<absl::StatusOr<std::vector<RegionLocation>>(const std::string& table, absl::Time deadline)>;
  explicit RegionCache(Loader loader) : loader_(std::move(loader)) {}

  // Sets *region to the encoded name of the region holding `row`, from the cache or, on a miss,
  // by reading the table's regions from meta (one read per table at a time: threads that miss
  // meanwhile wait for it, within their deadline, and use what it found; DeadlineExceeded if it
  // outlasts theirs). Empty when meta lists no region for the row (an unknown table, a system
  // table): the call then names no region and the server routes it. The loader's error
  // otherwise. `server` and `end_key` (optional, set only when a region is found) get the server
  // meta says serves it (empty: none now, the region is in transition) and where its rows end.
  absl::Status Locate(const std::string& table, std::string_view row, absl::Time deadline, std::string* region,
                      std::string* server = nullptr, std::string* end_key = nullptr);
  // Locate for a reversed scan: the region holding the rows just below `row` (empty: the
  // table's last region), its server and its start key.
  absl::Status LocateBefore(const std::string& table, std::string_view row, absl::Time deadline, std::string* region,
                            std::string* server, std::string* start_key);
  // Drops the region `encoded_name` (it refused a call; encoded names are unique across tables):
  // the next call of a row it held reads meta again. A refusal is rare, so this looks through
  // every cached region.
  void Forget(std::string_view encoded_name);

  uint64_t lookups() const { return lookups_.load(std::memory_order_relaxed); }
  uint64_t forgotten() const { return forgotten_.load(std::memory_order_relaxed); }

 private:
  using Regions = std::map<std::string, RegionLocation, std::less<>>;  // by start key
  // The cached region holding `row`, or nullptr.
  const RegionLocation* Find(const std::string& table, std::string_view row) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  const RegionLocation* FindBefore(const std::string& table, std::string_view row) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Calls `take` with the region holding `row` (before: the rows just below it), from the
  // cache or, on a miss, after reading the table's regions from meta; not at all when meta has
  // none. `take` runs under mu_.
  absl::Status LocateWith(const std::string& table, std::string_view row, bool before, absl::Time deadline,
                          absl::FunctionRef<void(const RegionLocation&)> take);

  const Loader loader_;
  mutable absl::Mutex mu_;
  std::map<std::string, Regions, std::less<>> tables_ ABSL_GUARDED_BY(mu_);
  std::set<std::string, std::less<>> loading_ ABSL_GUARDED_BY(mu_);  // tables being read from meta
  std::atomic<uint64_t> lookups_{0};
  std::atomic<uint64_t> forgotten_{0};
};

// True for a system table (basalt:meta), which a call names no region of.
bool IsSystemTable(std::string_view table);

}  // namespace basalt::client_internal
