// Table: routing by row, scans across regions, batches by region; and the refusing regions.
#include "src/regions/table.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "src/schema/table_errors.h"

namespace basalt::server {

namespace {

// A region that refuses every call with one error: a region that could not open, in a table
// whose other regions serve (FAILED_OPEN), or, on a cluster's region server, the rows of a region
// served elsewhere (the null object keeps routing the same for every row).
class RefusingRegion final : public Region {
 public:
  RefusingRegion(RegionDescriptor desc, absl::Status error, std::string failed)
      : desc_(std::move(desc)), error_(std::move(error)), failed_(std::move(failed)) {}
  absl::Status Mutate(const std::vector<RowMutation>&, Durability, Nonce, const std::vector<std::string>&) override {
    return error_;
  }
  absl::Status Put(std::string_view, std::string_view, std::string_view, std::string_view, int64_t,
                   Durability) override {
    return error_;
  }
  absl::Status MutateRowWith(std::string_view, const ReadSpec&, const RowUpdateFn&, Durability, Nonce) override {
    return error_;
  }
  absl::StatusOr<std::vector<Cell>> Get(std::string_view, const ReadSpec&) override { return error_; }
  absl::Status Get(std::string_view, const ReadSpec&, RowResult*) override { return error_; }
  absl::StatusOr<std::unique_ptr<RegionScanner>> Scan(const ScanSpec&) override { return error_; }
  absl::Status Flush() override { return error_; }
  absl::Status CompactMinor() override { return error_; }
  absl::Status MajorCompact() override { return error_; }
  absl::StatusOr<std::string> SplitPoint() const override { return error_; }
  absl::StatusOr<SnapshotFiles> Snapshot(const std::string&) override { return error_; }
  absl::Status Close() override { return absl::OkStatus(); }
  RegionStats GetStats() const override {
    RegionStats st;
    st.failed = failed_;
    return st;
  }
  const RegionDescriptor& descriptor() const override { return desc_; }
  int64_t Now() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

 private:
  const RegionDescriptor desc_;
  const absl::Status error_;
  const std::string failed_;
};

}  // namespace

std::shared_ptr<Region> NewRefusingRegion(RegionDescriptor desc, absl::Status error, std::string failed) {
  return std::make_shared<RefusingRegion>(std::move(desc), std::move(error), std::move(failed));
}

std::shared_ptr<Region> FailedRegion(const std::string& table, RegionDescriptor desc, const absl::Status& why) {
  absl::Status error = absl::FailedPreconditionError(absl::StrCat("region ", desc.name, " of table ", table,
                                                                  " is FAILED_OPEN (", why.message(),
                                                                  "); repair it, then assign '", table, "'"));
  return std::make_shared<RefusingRegion>(std::move(desc), std::move(error),
                                          absl::StrCat("FAILED_OPEN: ", why.ToString()));
}

// `s` with the region named, for a table of several regions (one region: as it is).
absl::Status InRegion(const RegionInfo& info, size_t regions, const absl::Status& s) {
  if (s.ok() || regions == 1) return s;
  return absl::Status(s.code(), absl::StrCat("region ", info.Name(), ": ", s.message()));
}

Table::Table(TableSpec spec, std::vector<HostedRegion> regions, bool system)
    : spec_(std::move(spec)), regions_(std::move(regions)), system_(system) {
  for (HostedRegion& h : regions_) {
    h.encoded_name = h.info.EncodedName();
    if (h.handle == nullptr) h.handle = std::make_shared<LocalRegionHandle>(h.region);
  }
}

Table::~Table() = default;

bool Table::HasFamily(std::string_view family) const {
  for (const FamilyOptions& f : spec_.families) {
    if (f.name == family) return true;
  }
  return false;
}

bool Table::has_failed_regions() const {
  for (const HostedRegion& h : regions_) {
    if (!h.open_error.ok()) return true;
  }
  return false;
}

const HostedRegion& Table::HostedFor(std::string_view row) const {
  // The last region starting at or before the row (the first starts at "").
  auto it = std::upper_bound(regions_.begin(), regions_.end(), row,
                             [](std::string_view r, const HostedRegion& h) { return r < h.info.start_key; });
  return it == regions_.begin() ? regions_.front() : *(it - 1);
}

namespace {
// A scan over several regions in row order: each region's scanner is opened once the one
// before it ends, and the row limit counts across them.
class TableScanner final : public RegionScanner {
 public:
  TableScanner(ScanSpec spec, std::vector<Region*> regions) : spec_(std::move(spec)), regions_(std::move(regions)) {}
  void SetDeadline(absl::Time deadline) override {
    deadline_ = deadline;
    if (current_ != nullptr) current_->SetDeadline(deadline);
  }
  absl::StatusOr<bool> Next(RowResult* row) override {
    for (;;) {
      if (spec_.limit != 0 && rows_ >= spec_.limit) return false;
      if (current_ == nullptr) {
        if (next_ == regions_.size()) return false;
        ScanSpec spec = spec_;
        if (spec.limit != 0) spec.limit -= rows_;
        absl::StatusOr<std::unique_ptr<RegionScanner>> sc = regions_[next_++]->Scan(spec);
        if (!sc.ok()) return sc.status();
        current_ = *std::move(sc);
        current_->SetDeadline(deadline_);
      }
      absl::StatusOr<bool> more = current_->Next(row);
      if (!more.ok()) return more.status();
      if (*more) {
        if (!row->empty()) ++rows_;  // (empty: the deadline passed, no row yet)
        return true;
      }
      current_.reset();
    }
  }

 private:
  const ScanSpec spec_;
  const std::vector<Region*> regions_;
  size_t next_ = 0;
  uint64_t rows_ = 0;
  absl::Time deadline_ = absl::InfiniteFuture();
  std::unique_ptr<RegionScanner> current_;
};
}  // namespace

absl::StatusOr<std::unique_ptr<RegionScanner>> Table::Scan(const ScanSpec& spec) const {
  if (regions_.size() == 1) return regions_[0].region->Scan(spec);
  std::vector<Region*> in_range;
  for (const HostedRegion& h : regions_) {
    // Forward [start, stop); reversed [stop, start] (start inclusive, stop exclusive).
    const std::string& low = spec.reversed ? spec.stop_row : spec.start_row;
    const std::string& high = spec.reversed ? spec.start_row : spec.stop_row;
    const bool ends_after_low = h.info.end_key.empty() || h.info.end_key > low;
    const bool starts_below_high = high.empty() || h.info.start_key < high || (spec.reversed && h.info.start_key == high);
    if (ends_after_low && starts_below_high) in_range.push_back(h.region.get());
  }
  if (spec.reversed) std::reverse(in_range.begin(), in_range.end());
  return std::unique_ptr<RegionScanner>(new TableScanner(spec, std::move(in_range)));
}

std::vector<std::pair<const HostedRegion*, std::vector<size_t>>> Table::GroupByRegion(
    const std::vector<RowMutation>& rows) const {
  std::vector<std::pair<const HostedRegion*, std::vector<size_t>>> groups;
  for (size_t i = 0; i < rows.size(); ++i) {
    const HostedRegion* h = &HostedFor(rows[i].row);
    auto it = std::find_if(groups.begin(), groups.end(), [h](const auto& g) { return g.first == h; });
    if (it == groups.end()) {
      groups.emplace_back(h, std::vector<size_t>{i});
    } else {
      it->second.push_back(i);
    }
  }
  return groups;
}

absl::Status Table::Mutate(const std::vector<RowMutation>& batch, Durability durability) const {
  if (regions_.size() == 1) return regions_[0].region->Mutate(batch, durability);
  for (const auto& [h, index] : GroupByRegion(batch)) {
    std::vector<RowMutation> part;
    part.reserve(index.size());
    for (size_t i : index) part.push_back(batch[i]);
    absl::Status s = h->region->Mutate(part, durability);
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat("region ", h->region->descriptor().name, ": ", s.message()));
  }
  return absl::OkStatus();
}

absl::Status Table::ForEachRegion(const std::function<absl::Status(RegionHandle*)>& op) const {
  for (const HostedRegion& h : regions_) {
    if (h.placeholder) continue;
    if (absl::Status s = op(h.handle.get()); !s.ok()) return InRegion(h.info, regions_.size(), s);
  }
  return absl::OkStatus();
}

absl::Status Table::Flush() const {
  absl::Status s = ForEachRegion([](RegionHandle* r) { return r->Flush(); });
  return !s.ok() && closed() ? ClosedError() : s;
}

absl::Status Table::MajorCompact() const {
  absl::Status s = ForEachRegion([](RegionHandle* r) { return r->MajorCompact(); });
  return !s.ok() && closed() ? ClosedError() : s;
}

absl::Status Table::Stop(bool close_regions) {
  state_.store(State::kStopping, std::memory_order_release);
  if (!close_regions) return absl::OkStatus();
  absl::Status s = CloseRegions();
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat("closing ", system_ ? "" : "table ", name(), ": ", s.message()));
}

absl::Status Table::CloseRegions() {
  absl::Status first;
  for (const HostedRegion& h : regions_) {
    if (h.placeholder) continue;
    absl::Status s = h.handle->Close();
    if (first.ok()) first = InRegion(h.info, regions_.size(), s);
  }
  return first;
}

RegionStats Table::Stats() const {
  RegionStats sum;
  for (const HostedRegion& h : regions_) {
    if (h.placeholder) continue;
    RegionStats st = h.handle->GetStats();
    enum How { kSum, kMax, kProcess };
#define BASALT_ADD_UP(name, how)                                                            \
  if constexpr (how == kSum) {                                                             \
    sum.name += st.name;                                                                   \
  } else {                                                                                 \
    sum.name = std::max(sum.name, st.name); /* the highest; a process-wide one is alike */ \
  }
    BASALT_REGION_COUNTERS(BASALT_ADD_UP)
#undef BASALT_ADD_UP
    if (sum.failed.empty() && !st.failed.empty()) {
      sum.failed = regions_.size() == 1 ? st.failed : absl::StrCat("region ", h.info.Name(), ": ", st.failed);
    }
    for (const auto& [f, n] : st.files_per_family) sum.files_per_family[f] += n;
  }
  return sum;
}

absl::Status Table::ClosedError() const {
  if (state_.load(std::memory_order_acquire) == State::kStopping) {
    return absl::UnavailableError("server is shutting down");
  }
  return Disabled(spec_.name);
}

uint64_t Table::AddCloseHook(std::function<void()> hook) {
  absl::MutexLock l(&hooks_mu_);
  if (closed()) return 0;  // RunCloseHooks ran (or runs next) after the state changed
  const uint64_t id = next_hook_++;
  hooks_.emplace(id, std::move(hook));
  return id;
}

void Table::RemoveCloseHook(uint64_t id) {
  absl::MutexLock l(&hooks_mu_);
  hooks_.erase(id);
}

void Table::RunCloseHooks() {
  absl::MutexLock l(&hooks_mu_);
  for (auto& [id, hook] : hooks_) hook();
  hooks_.clear();
}

}  // namespace basalt::server
