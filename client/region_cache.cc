#include "client/region_cache.h"

#include <iterator>

#include "absl/strings/str_cat.h"

namespace basalt::client_internal {

bool IsSystemTable(std::string_view table) { return table.starts_with("basalt:"); }

const RegionLocation* RegionCache::Find(const std::string& table, std::string_view row) const {
  auto t = tables_.find(table);
  if (t == tables_.end()) return nullptr;
  auto it = t->second.upper_bound(row);  // the first region starting after the row
  if (it == t->second.begin()) return nullptr;
  const RegionLocation& loc = std::prev(it)->second;
  if (!loc.end_key.empty() && row >= loc.end_key) return nullptr;  // a gap: a region forgotten
  return &loc;
}

absl::Status RegionCache::Locate(const std::string& table, std::string_view row, absl::Time deadline,
                                 std::string* region, std::string* server, std::string* end_key) {
  region->clear();
  return LocateWith(table, row, /*before=*/false, deadline, [&](const RegionLocation& loc) {
    *region = loc.encoded_name;
    if (server != nullptr) *server = loc.server;
    if (end_key != nullptr) *end_key = loc.end_key;
  });
}

absl::Status RegionCache::LocateBefore(const std::string& table, std::string_view row, absl::Time deadline,
                                       std::string* region, std::string* server, std::string* start_key) {
  region->clear();
  return LocateWith(table, row, /*before=*/true, deadline, [&](const RegionLocation& loc) {
    *region = loc.encoded_name;
    *server = loc.server;
    *start_key = loc.start_key;
  });
}

const RegionLocation* RegionCache::FindBefore(const std::string& table, std::string_view row) const {
  auto t = tables_.find(table);
  if (t == tables_.end()) return nullptr;
  auto it = row.empty() ? t->second.end() : t->second.lower_bound(row);  // the first region starting at or after
  if (it == t->second.begin()) return nullptr;
  const RegionLocation& loc = std::prev(it)->second;
  const bool reaches = row.empty() ? loc.end_key.empty() : (loc.end_key.empty() || loc.end_key >= row);
  return reaches ? &loc : nullptr;  // else a gap: a region forgotten
}

absl::Status RegionCache::LocateWith(const std::string& table, std::string_view row, bool before,
                                     absl::Time deadline, absl::FunctionRef<void(const RegionLocation&)> take) {
  if (IsSystemTable(table)) return absl::OkStatus();
  // Takes the cached region, if there is one.
  auto found = [&] {
    mu_.AssertReaderHeld();
    const RegionLocation* loc = before ? FindBefore(table, row) : Find(table, row);
    if (loc != nullptr) take(*loc);
    return loc != nullptr;
  };
  {
    absl::ReaderMutexLock l(&mu_);
    if (found()) return absl::OkStatus();
  }
  mu_.Lock();
  // One read of a table's rows at a time: a thread that misses while another reads waits for
  // that read (within its own deadline) and looks again.
  struct Wait {
    const RegionCache* cache;
    const std::string* table;
  } wait{this, &table};
  for (;;) {
    if (found()) {
      mu_.Unlock();
      return absl::OkStatus();
    }
    if (!loading_.contains(table)) break;
    const bool done = mu_.AwaitWithDeadline(
        absl::Condition(
            +[](Wait* w) ABSL_NO_THREAD_SAFETY_ANALYSIS { return !w->cache->loading_.contains(*w->table); }, &wait),
        deadline);
    if (!done) {
      mu_.Unlock();
      return absl::DeadlineExceededError(
          absl::StrCat("the deadline passed while another call read the regions of ", table, " from basalt:meta"));
    }
  }
  loading_.insert(table);
  mu_.Unlock();

  lookups_.fetch_add(1, std::memory_order_relaxed);
  absl::StatusOr<std::vector<RegionLocation>> loaded = loader_(table, deadline);
  Regions regions;
  if (loaded.ok()) {
    for (RegionLocation& loc : *loaded) {
      std::string start = loc.start_key;
      regions.insert_or_assign(std::move(start), std::move(loc));
    }
  }
  absl::MutexLock l(&mu_);
  loading_.erase(table);
  if (!loaded.ok()) return loaded.status();
  // Meta's regions replace what was cached of the table: one consistent picture of it.
  if (regions.empty()) {
    tables_.erase(table);
    return absl::OkStatus();
  }
  tables_[table] = std::move(regions);
  found();
  return absl::OkStatus();
}

void RegionCache::Forget(std::string_view encoded_name) {
  absl::MutexLock l(&mu_);
  for (auto& [table, regions] : tables_) {
    for (auto it = regions.begin(); it != regions.end(); ++it) {
      if (it->second.encoded_name == encoded_name) {
        regions.erase(it);
        forgotten_.fetch_add(1, std::memory_order_relaxed);
        return;
      }
    }
  }
}

}  // namespace basalt::client_internal
