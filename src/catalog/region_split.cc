// Catalog's splits (catalog.h): HBase's split transaction on one server, and the janitor
// that removes split parents once no daughter reads their files.
//
// A split (one parent, two daughters) and a merge (two adjacent parents, one region) are one
// transaction, whose steps are fault points a crash test kills the server at
// (common/fault_point.h), named "split:<step>" and "merge:<step>":
//   start             nothing done yet
//   parents-closed    the parents are closed and flushed; they still serve after a restart
//   children-written  the children's directories (references to the parents' files, and
//                     REGIONINFO) are durable in data_dir/tables/<table>/.splits/
//   meta-committed    one meta batch recorded the parents SPLIT or MERGED and the children: the
//                     commit. A restart opens the children, moving them into place
//   children-moved    the children are in their own directories
// Before the commit a restart serves the parents and removes .splits/; after it, the children.
#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/env.h"
#include "common/fault_point.h"
#include "common/status.h"
#include "common/string_binary.h"
#include "src/schema/meta.h"
#include "src/regions/split_policy.h"
#include "src/schema/table_errors.h"
#include "src/catalog/catalog.h"

namespace basalt::server {

namespace {

constexpr char kSplitsDirName[] = ".splits";

}  // namespace

absl::Status Catalog::RemoveRegionDir(Env* env, const std::string& dir) {
  if (!env->FileExists(dir)) return absl::OkStatus();
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> names, env->ListDir(dir));
  for (const std::string& n : names) {
    const std::string path = dir + "/" + n;
    if (env->DeleteDir(path).ok()) continue;  // an empty directory (a log's, say)
    BASALT_RETURN_IF_ERROR(env->DeleteFile(path));
  }
  return env->DeleteDir(dir);
}

void Catalog::Install(Entry* e, absl::StatusOr<std::shared_ptr<Table>> t) {
  std::erase_if(e->superseded, [](const std::weak_ptr<Table>& x) { return x.expired(); });
  if (e->table != nullptr && (!t.ok() || *t != e->table)) e->superseded.push_back(e->table);
  if (t.ok()) {
    e->table = *std::move(t);
  } else {
    e->table.reset();
    e->open_error = t.status();
  }
}

std::string Catalog::SplitsDir(std::string_view table) const {
  return absl::StrCat(TableDir(table), "/", kSplitsDirName);
}

absl::Status Catalog::FinishSplits(std::string_view table, const std::vector<RegionInfo>& regions,
                                        bool committed_now) {
  Env* env = options_.env;
  const std::string staging = SplitsDir(table);
  if (!env->FileExists(staging)) return absl::OkStatus();
  bool moved = false;
  for (const RegionInfo& r : regions) {
    const std::string from = absl::StrCat(staging, "/", r.EncodedName());
    if (r.id == 0 || env->FileExists(RegionDir(r)) || !env->FileExists(from)) continue;
    // Committed in meta before the crash: the daughter takes its place now.
    BASALT_RETURN_IF_ERROR(env->ReplaceFile(from, RegionDir(r)));
    if (!committed_now) Log(absl::StrCat("region ", r.Name(), ": moved into place from ", staging, " (a split committed before a crash)"));
    moved = true;
  }
  if (moved) BASALT_RETURN_IF_ERROR(env->SyncDir(TableDir(table)));
  // What is left is a split that never committed: references and REGIONINFO only, no data.
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> left, env->ListDir(staging));
  for (const std::string& n : left) {
    BASALT_RETURN_IF_ERROR(RemoveRegionDir(env, absl::StrCat(staging, "/", n)));
    Log(absl::StrCat("table '", AV(table), "': removed ", staging, "/", n, ", a daughter of a split a crash cut short ",
                     "before its commit (its parent serves)"));
  }
  BASALT_RETURN_IF_ERROR(env->DeleteDir(staging));
  return env->SyncDir(TableDir(table));
}

std::string Catalog::RouteRecord(std::string_view region, std::string_view row) const {
  const std::string table = TableOfRegionName(region);
  absl::ReaderMutexLock l(&mu_);
  auto it = entries_.find(table);
  if (it == entries_.end()) return "";
  const Entry& e = it->second;
  const bool retired = std::any_of(e.retired.begin(), e.retired.end(),
                                   [&](const RegionInfo& r) { return RegionName(e.spec, r) == region; });
  if (!retired) return "";
  for (const RegionInfo& r : e.regions) {
    if (r.Contains(row)) return RegionName(e.spec, r);
  }
  return "";
}

std::string Catalog::CommitServer() const {
  // (A master places the children once the commit is durable, then records where.)
  return placement_->WhereNewRegionsServe(ServerName());
}

absl::Status Catalog::Split(std::string_view name, std::string_view split_row) {
  absl::MutexLock al(&admin_mu_);
  const std::string table(name.substr(0, name.find(',')));
  const bool by_region = name.find(',') != std::string_view::npos;
  if (IsSystemTable(table)) {
    return absl::InvalidArgumentError(absl::StrCat(table, " does not split"));
  }
  TableSpec spec;
  std::vector<RegionInfo> targets;
  {
    absl::ReaderMutexLock l(&mu_);
    auto it = entries_.find(table);
    if (it == entries_.end() && !by_region) {
      // An encoded region name: find its table.
      for (const auto& [t, e] : entries_) {
        for (const RegionInfo& r : e.regions) {
          if (r.EncodedName() == name) it = entries_.find(t);
        }
      }
    }
    if (it == entries_.end()) return NotFound(table);
    const Entry& e = it->second;
    if (!e.open_error.ok()) return FailedOpen(e.spec.name, e.open_error);
    if (e.table == nullptr) return Disabled(e.spec.name);
    spec = e.spec;
    const bool region_named = by_region || e.spec.name != name;  // a region name or an encoded one
    for (const RegionInfo& r : e.regions) {
      if (region_named) {
        if (r.Name() == name || r.EncodedName() == name) targets.push_back(r);
      } else if (!split_row.empty()) {
        if (r.Contains(split_row)) targets.push_back(r);
      } else {
        targets.push_back(r);
      }
    }
  }
  if (targets.empty()) return absl::NotFoundError(absl::StrCat("table '", spec.name, "' has no region ", AV(name)));
  absl::Status first;
  size_t done = 0;
  for (const RegionInfo& r : targets) {
    absl::Status s = SplitRegionLocked(spec, r, split_row);
    if (s.ok()) {
      ++done;
    } else if (first.ok()) {
      first = s;
    }
  }
  // A whole table splits every region that can (HBase's too): one too small to split is no error.
  if (done == 0 || targets.size() == 1) return first;
  return absl::OkStatus();
}

absl::Status Catalog::SplitRegionLocked(const TableSpec& spec, const RegionInfo& parent,
                                             std::string_view split_row) {
  std::shared_ptr<Table> old;
  {
    absl::ReaderMutexLock l(&mu_);
    old = entries_.find(spec.name)->second.table;
  }
  if (old == nullptr) return Disabled(spec.name);
  BASALT_RETURN_IF_ERROR(CheckNamespaceRoom(spec.name, 0, 1));  // (two regions for one)
  BASALT_ASSIGN_OR_RETURN(RegionHandle * region, OpenRegionOf(*old, parent, "split"));
  std::string at(split_row);
  if (at.empty()) {
    BASALT_RETURN_IF_ERROR(region->Flush());
    BASALT_ASSIGN_OR_RETURN(at, region->SplitPoint());
  }
  if (at == parent.start_key || !parent.Contains(at)) {
    return absl::InvalidArgumentError(absl::StrCat("split row '", ToStringBinary(at), "' is ",
                                                   at == parent.start_key ? "the start of" : "outside", " region ",
                                                   parent.Name()));
  }
  const uint64_t id = NewRegionId();
  const RegionInfo a{spec.name, parent.start_key, at, id};
  const RegionInfo b{spec.name, at, parent.end_key, id};
  return ReplaceRegionsLocked(spec, {parent}, {a, b}, MetaSplit(parent, a, b, "OPEN", CommitServer()), "split");
}

absl::StatusOr<RegionHandle*> Catalog::OpenRegionOf(const Table& t, const RegionInfo& info, std::string_view what) {
  if (info.id == 0) {
    // Its files are the table directory's own: references to them and a janitor removing them
    // would both take the table directory for a region's.
    return absl::FailedPreconditionError(absl::StrCat("table '", info.table,
                                                      "' is one region from before regions (in its table directory); "
                                                      "it does not ", AV(what)));
  }
  auto hosted = std::find_if(t.regions().begin(), t.regions().end(), [&](const HostedRegion& h) { return h.info == info; });
  if (hosted == t.regions().end()) return absl::NotFoundError(absl::StrCat("region ", info.Name(), " is not open"));
  if (hosted->unassigned) {
    return absl::FailedPreconditionError(absl::StrCat("region ", info.Name(), " is closed (unassign); assign it first"));
  }
  if (!hosted->open_error.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("region ", info.Name(), " is FAILED_OPEN (assign it first): ",
                                                      hosted->open_error.message()));
  }
  if (const uint64_t refs = hosted->handle->GetStats().reference_files; refs > 0) {
    return absl::FailedPreconditionError(absl::StrCat("region ", info.Name(), " still reads ", refs,
                                                      " file(s) of the region(s) it was made from; it can ", AV(what),
                                                      " once a compaction has rewritten them (major_compact)"));
  }
  return hosted->handle.get();
}

absl::Status Catalog::ReplaceRegionsLocked(const TableSpec& spec, const std::vector<RegionInfo>& parents,
                                                const std::vector<RegionInfo>& children,
                                                const std::vector<RowMutation>& commit, std::string_view what) {
  const auto started = std::chrono::steady_clock::now();
  Env* env = options_.env;
  std::shared_ptr<Table> old;
  std::vector<RegionInfo> regions;
  {
    absl::ReaderMutexLock l(&mu_);
    if (stopping_) return absl::UnavailableError("server is shutting down");
    const Entry& e = entries_.find(spec.name)->second;
    old = e.table;
    regions = e.regions;
  }
  if (old == nullptr) return Disabled(spec.name);
  std::vector<RegionHandle*> closing;
  std::vector<std::weak_ptr<Region>> closing_held;
  for (const RegionInfo& p : parents) {
    BASALT_ASSIGN_OR_RETURN(RegionHandle * r, OpenRegionOf(*old, p, what));
    closing.push_back(r);
    for (const HostedRegion& h : old->regions()) {
      if (h.handle.get() == r) closing_held.push_back(h.region);
    }
  }
  const std::string staging = SplitsDir(spec.name);
  auto point = [&](std::string_view step) { FaultPoint(absl::StrCat(AV(what), ":", AV(step))); };

  point("start");
  // From here the parents refuse writes: calls that meet them retry on the table installed next.
  old->superseded_.store(true, std::memory_order_release);
  absl::Status s;
  for (RegionHandle* r : closing) {
    absl::Status closed = r->Close();
    if (s.ok()) s = closed;
  }
  point("parents-closed");
  // Each child refers to the files of every parent it overlaps, seen through their common rows.
  for (const RegionInfo& c : children) {
    if (!s.ok()) break;
    std::vector<RegionSource> sources;
    for (const RegionInfo& p : parents) {
      const std::string start = std::max(p.start_key, c.start_key);
      std::string end = p.end_key.empty() ? c.end_key : c.end_key.empty() ? p.end_key : std::min(p.end_key, c.end_key);
      if (!end.empty() && end <= start) continue;
      sources.push_back(RegionSource{RegionDir(p), start, std::move(end)});
    }
    const std::string dir = absl::StrCat(staging, "/", c.EncodedName());
    s = WriteReferenceRegion(env, sources, dir);
    if (s.ok()) s = env->WriteFileDurably(absl::StrCat(dir, "/", kRegionInfoFileName), EncodeRegionInfo(c));
  }
  if (s.ok()) s = env->SyncDir(TableDir(spec.name));
  point("children-written");
  if (s.ok()) s = WriteMeta(commit);
  if (!s.ok()) {
    // Not committed: the parents serve again (reopened: each replays what it had not flushed).
    for (const RegionInfo& c : children) RemoveRegionDir(env, absl::StrCat(staging, "/", c.EncodedName())).IgnoreError();
    absl::StatusOr<std::shared_ptr<Table>> back = OpenTable(spec, regions, old.get(), &parents);
    absl::MutexLock l(&mu_);
    Install(&entries_.find(spec.name)->second, std::move(back));
    return absl::Status(s.code(), absl::StrCat(AV(what), " of ", parents.size() == 1 ? "region " : "regions ",
                                               parents.front().Name(), parents.size() > 1 ? " and " : "",
                                               parents.size() > 1 ? parents.back().Name() : "",
                                               " failed (the table serves as before): ", s.message()));
  }
  point("meta-committed");
  // Committed: the children take the parents' place.
  std::vector<RegionInfo> after;
  for (const RegionInfo& r : regions) {
    if (std::find(parents.begin(), parents.end(), r) == parents.end()) after.push_back(r);
  }
  after.insert(after.end(), children.begin(), children.end());
  std::sort(after.begin(), after.end(), [](const RegionInfo& x, const RegionInfo& y) { return x.start_key < y.start_key; });
  absl::Status moved = FinishSplits(spec.name, after, /*committed_now=*/true);
  point("children-moved");
  absl::StatusOr<std::shared_ptr<Table>> t =
      moved.ok() ? OpenTable(spec, after, old.get()) : absl::StatusOr<std::shared_ptr<Table>>(moved);
  {
    absl::MutexLock l(&mu_);
    Entry& e = entries_.find(spec.name)->second;
    e.regions = after;
    e.retired.insert(e.retired.end(), parents.begin(), parents.end());
    e.retired_open.insert(e.retired_open.end(), closing_held.begin(), closing_held.end());
    Install(&e, t);
  }
  old.reset();  // this call's hold on the parents
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  std::string from, into;
  for (const RegionInfo& p : parents) absl::StrAppend(&from, from.empty() ? "" : " and ", p.Name());
  for (const RegionInfo& c : children) absl::StrAppend(&into, into.empty() ? "" : " and ", c.Name());
  Log(absl::StrCat(what == "split" ? "split region " : "merged regions ", from, " into ", into, " in ", ms.count(),
                   " ms"));
  if (!t.ok()) return t.status();
  if (CommitServer().empty()) {  // their commit could not say where they serve: now it can
    if (absl::Status r = RecordRegions(children, "OPEN", t->get()); !r.ok()) {
      Log(absl::StrCat("recording where the children of ", from, " serve failed: ", r.ToString()));
    }
  }
  return CleanSplitParentsLocked(spec.name);
}

absl::Status Catalog::Merge(std::string_view first, std::string_view second) {
  absl::MutexLock al(&admin_mu_);
  TableSpec spec;
  RegionInfo found[2];
  const std::string_view names[2] = {first, second};
  for (int k = 0; k < 2; ++k) {
    BASALT_ASSIGN_OR_RETURN(auto f, RegionNamedLocked(names[k]));
    found[k] = f.second;
    if (k > 0) continue;
    const Entry& e = f.first;
    if (!e.open_error.ok()) return FailedOpen(e.spec.name, e.open_error);
    if (e.table == nullptr) return Disabled(e.spec.name);
    spec = e.spec;
  }
  if (found[0].table != found[1].table) {
    return absl::InvalidArgumentError(absl::StrCat("regions ", found[0].Name(), " and ", found[1].Name(),
                                                   " are of different tables"));
  }
  if (found[1].start_key < found[0].start_key) std::swap(found[0], found[1]);
  const RegionInfo& lo = found[0];
  const RegionInfo& hi = found[1];
  if (lo == hi || lo.end_key != hi.start_key) {
    // HBase refuses regions that are not adjacent (unless forced; Basalt has no force).
    return absl::InvalidArgumentError(absl::StrCat("regions ", lo.Name(), " and ", hi.Name(), " are not adjacent"));
  }
  const RegionInfo merged{spec.name, lo.start_key, hi.end_key, NewRegionId()};
  return ReplaceRegionsLocked(spec, {lo, hi}, {merged}, MetaMerge(lo, hi, merged, "OPEN", CommitServer()),
                              "merge");
}

void Catalog::MaybeSplit(const std::string& region) {
  const std::string table = TableOfRegionName(region);
  absl::MutexLock al(&admin_mu_);
  TableSpec spec;
  RegionInfo info;
  std::shared_ptr<Table> t;
  size_t regions = 0;
  {
    absl::ReaderMutexLock l(&mu_);
    if (stopping_) return;
    auto it = entries_.find(table);
    if (it == entries_.end() || it->second.table == nullptr) return;
    spec = it->second.spec;
    t = it->second.table;
    regions = it->second.regions.size();
  }
  const HostedRegion* hosted = nullptr;
  for (const HostedRegion& h : t->regions()) {
    if (RegionName(spec, h.info) == region && h.open_error.ok()) hosted = &h;
  }
  if (hosted == nullptr || hosted->info.id == 0) return;  // gone meanwhile, or from before regions
  const RegionStats st = hosted->handle->GetStats();
  // A daughter still reading its parent's files is looked at again once its compaction ends.
  if (st.reference_files > 0) return;
  const uint64_t limit = SplitSize(spec, regions, options_.region_max_size, options_.region.memstore_flush_size);
  if (st.largest_store_bytes <= limit) return;
  info = hosted->info;
  absl::Status s = SplitRegionLocked(spec, info, "");
  if (!s.ok()) {
    Log(absl::StrCat("region ", info.Name(), " passed ", limit, " bytes but did not split: ", s.ToString()));
  }
}

absl::Status Catalog::CleanSplitParents(std::string_view table) {
  absl::MutexLock al(&admin_mu_);
  return CleanSplitParentsLocked(table);
}

absl::Status Catalog::CleanSplitParentsLocked(std::string_view table) {
  std::shared_ptr<Table> t;
  std::vector<RegionInfo> retired;
  {
    absl::MutexLock l(&mu_);
    auto it = entries_.find(table);
    if (it == entries_.end() || it->second.retired.empty()) return absl::OkStatus();
    t = it->second.table;
    retired = it->second.retired;
    // A scan begun before a split or merge reads the parent's own files (from the table it
    // began on) until it ends; so may one on a parent's parent, through the parent's
    // references. No parent goes while any is held: on a shared store a removed file is gone
    // for its readers too (HBase keeps such files in its archive for a while).
    std::vector<std::weak_ptr<Region>>& open = it->second.retired_open;
    std::erase_if(open, [](const std::weak_ptr<Region>& r) { return r.expired(); });
    if (!open.empty()) return absl::OkStatus();
  }
  // Only a table whose every region is open tells which files are still read: a region reading
  // a parent's files holds references until its compaction rewrites them, and a scan begun
  // before that compaction reads them until it ends.
  if (t == nullptr || t->has_failed_regions()) return absl::OkStatus();
  for (const HostedRegion& h : t->regions()) {
    const RegionStats st = h.handle->GetStats();
    if (st.reference_files > 0 || st.references_still_read > 0) return absl::OkStatus();
  }
  for (const RegionInfo& p : retired) {
    // The directory first: a crash before the row goes leaves a row whose directory is gone,
    // which the next clean removes; the other order would leave a directory meta does not name.
    if (options_.env->FileExists(RegionDir(p))) {
      if (absl::Status s = RemoveRegionDir(options_.env, RegionDir(p)); !s.ok()) {
        return absl::Status(s.code(), absl::StrCat("removing split parent ", p.Name(), ": ", s.message()));
      }
      Log(absl::StrCat("removed the files of split parent ", p.Name(), ": no region reads them any more"));
    }
    // The row stays while the server log holds records of the parent: a start-up split routes
    // them to its daughters by it. They go once the segments holding them are deleted.
    const std::string name = RegionName(t->spec(), p);
    log_->ForgetRegion(name).IgnoreError();  // flushed: its records keep no segment alive
    if (log_->HoldsRecordsOf(name)) continue;
    BASALT_RETURN_IF_ERROR(WriteMeta({MetaDelete(p)}));
    {
      absl::MutexLock l(&mu_);
      auto& list = entries_.find(table)->second.retired;
      list.erase(std::remove(list.begin(), list.end(), p), list.end());
    }
    Log(absl::StrCat("removed split parent ", p.Name(), " from ", kMetaTableName));
  }
  return absl::OkStatus();
}

}  // namespace basalt::server
