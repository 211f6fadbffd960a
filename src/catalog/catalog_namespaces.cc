// Catalog's namespaces (catalog.h): made, changed and dropped under admin_mu_, each change
// written to CATALOG (durably) before namespaces_ says so, as a table's.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "src/catalog/catalog.h"

namespace basalt::server {

absl::Status Catalog::CreateNamespace(const NamespaceSpec& spec) {
  BASALT_RETURN_IF_ERROR(ValidateNamespaceSpec(spec));
  BASALT_RETURN_IF_ERROR(ValidateNamespaceQuotas(spec));
  absl::MutexLock al(&admin_mu_);
  std::vector<NamespaceSpec> next;
  {
    absl::ReaderMutexLock l(&mu_);
    if (namespaces_.count(spec.name) != 0) {
      return absl::AlreadyExistsError(absl::StrCat("namespace '", spec.name, "' already exists"));
    }
    for (const auto& [name, ns] : namespaces_) next.push_back(ns);
  }
  next.push_back(spec);
  std::sort(next.begin(), next.end(), [](const NamespaceSpec& a, const NamespaceSpec& b) { return a.name < b.name; });
  BASALT_RETURN_IF_ERROR(SaveLocked(CatalogLocked(), &next));
  {
    absl::MutexLock l(&mu_);
    namespaces_[spec.name] = spec;
  }
  Log(absl::StrCat("namespace '", spec.name, "' created"));
  return absl::OkStatus();
}

absl::Status Catalog::ModifyNamespace(const NamespaceSpec& spec) {
  if (spec.name == kDefaultNamespace) {
    return absl::UnimplementedError("namespace default keeps no settings yet");
  }
  BASALT_RETURN_IF_ERROR(ValidateNamespaceSpec(spec));
  BASALT_RETURN_IF_ERROR(ValidateNamespaceQuotas(spec));
  absl::MutexLock al(&admin_mu_);
  std::vector<NamespaceSpec> next;
  {
    absl::ReaderMutexLock l(&mu_);
    if (namespaces_.count(spec.name) == 0) {
      return absl::NotFoundError(absl::StrCat("namespace '", spec.name, "' does not exist"));
    }
    // A quota below what it holds is refused (HBase keeps such a namespace and refuses nothing
    // it holds; here a truncate, which drops its table and makes it again, would then lose it).
    uint64_t tables = 0, regions = 0;
    for (const auto& [name, e] : entries_) {
      if (TableNamespace(name) != spec.name) continue;
      ++tables;
      regions += e.regions.size();
    }
    for (const auto& [key, held] : {std::pair<const char*, uint64_t>{kNamespaceMaxTables, tables},
                                    std::pair<const char*, uint64_t>{kNamespaceMaxRegions, regions}}) {
      const uint64_t limit = NamespaceLimit(spec, key);
      if (limit != 0 && limit < held) {
        return absl::FailedPreconditionError(absl::StrCat("namespace '", spec.name, "' holds ", held, ": ", key, " ",
                                                          limit, " would be below it"));
      }
    }
    for (const auto& [name, ns] : namespaces_) next.push_back(name == spec.name ? spec : ns);
  }
  BASALT_RETURN_IF_ERROR(SaveLocked(CatalogLocked(), &next));
  absl::MutexLock l(&mu_);
  namespaces_[spec.name] = spec;
  return absl::OkStatus();
}

absl::Status Catalog::DropNamespace(std::string_view name) {
  if (name == kDefaultNamespace || name == kBasaltNamespace || name == kHBaseNamespace) {
    return absl::InvalidArgumentError(absl::StrCat("namespace '", AV(name), "' is reserved and cannot be dropped"));
  }
  absl::MutexLock al(&admin_mu_);
  std::vector<NamespaceSpec> next;
  std::vector<std::string> held;
  {
    absl::ReaderMutexLock l(&mu_);
    if (namespaces_.count(name) == 0) return absl::NotFoundError(absl::StrCat("namespace '", AV(name), "' does not exist"));
    for (const auto& [n, ns] : namespaces_) {
      if (n != name) next.push_back(ns);
    }
    for (const auto& [table, e] : entries_) {
      if (TableNamespace(table) == name) held.push_back(table);
    }
  }
  if (!held.empty()) {
    std::string names;
    for (size_t i = 0; i < held.size() && i < 10; ++i) absl::StrAppend(&names, i == 0 ? "" : ", ", held[i]);
    return absl::FailedPreconditionError(absl::StrCat("namespace '", AV(name), "' holds ", held.size(),
                                                      " table(s) (", names, held.size() > 10 ? ", ..." : "",
                                                      "): only an empty namespace can be dropped"));
  }
  BASALT_RETURN_IF_ERROR(SaveLocked(CatalogLocked(), &next));
  {
    absl::MutexLock l(&mu_);
    namespaces_.erase(namespaces_.find(name));
  }
  Log(absl::StrCat("namespace '", AV(name), "' dropped"));
  return absl::OkStatus();
}

absl::Status Catalog::CheckNamespaceRoom(std::string_view table, size_t new_tables, size_t new_regions) const {
  const std::string_view ns = TableNamespace(table);
  absl::ReaderMutexLock l(&mu_);
  auto it = namespaces_.find(ns);
  if (it == namespaces_.end()) return absl::OkStatus();  // (default: no quotas)
  const uint64_t max_tables = NamespaceLimit(it->second, kNamespaceMaxTables);
  const uint64_t max_regions = NamespaceLimit(it->second, kNamespaceMaxRegions);
  if (max_tables == 0 && max_regions == 0) return absl::OkStatus();
  uint64_t tables = 0, regions = 0;
  for (const auto& [name, e] : entries_) {
    if (TableNamespace(name) != ns) continue;
    ++tables;
    regions += e.regions.size();
  }
  if (max_tables != 0 && new_tables != 0 && tables + new_tables > max_tables) {
    return absl::FailedPreconditionError(absl::StrCat("table '", AV(table), "' would exceed the quota of namespace '",
                                                      AV(ns), "': at most ", max_tables, " table(s) (",
                                                      kNamespaceMaxTables, "), and it holds ", tables));
  }
  if (max_regions != 0 && regions + new_regions > max_regions) {
    return absl::FailedPreconditionError(absl::StrCat(new_tables != 0 ? "table '" : "a split of table '", AV(table),
                                                      "' would exceed the quota of namespace '", AV(ns), "': at most ",
                                                      max_regions, " region(s) (", kNamespaceMaxRegions,
                                                      "), and it holds ", regions, " (", new_regions, " more asked)"));
  }
  return absl::OkStatus();
}

absl::Status Catalog::KeepNamespaces(std::vector<NamespaceSpec> namespaces, const std::vector<TableSpec>& tables) {
  absl::MutexLock l(&mu_);
  for (NamespaceSpec& ns : namespaces) namespaces_.emplace(ns.name, std::move(ns));
  for (const TableSpec& t : tables) {  // (never otherwise: a namespace is dropped only when empty)
    const std::string_view ns = TableNamespace(t.name);
    if (ns != kDefaultNamespace && namespaces_.count(ns) == 0) {
      return absl::DataLossError(absl::StrCat("catalogue ", options_.data_dir, "/", kCatalogFileName, " lists table '",
                                              t.name, "' but not its namespace"));
    }
  }
  return absl::OkStatus();
}

std::vector<NamespaceSpec> Catalog::Namespaces() const {
  std::vector<NamespaceSpec> out;
  {
    absl::ReaderMutexLock l(&mu_);
    for (const auto& [name, ns] : namespaces_) out.push_back(ns);
  }
  const NamespaceSpec fallback{kDefaultNamespace, {}};
  out.insert(std::lower_bound(out.begin(), out.end(), fallback,
                              [](const NamespaceSpec& a, const NamespaceSpec& b) { return a.name < b.name; }),
             fallback);
  return out;
}

absl::StatusOr<NamespaceSpec> Catalog::DescribeNamespace(std::string_view name) const {
  if (name == kDefaultNamespace) return NamespaceSpec{kDefaultNamespace, {}};
  absl::ReaderMutexLock l(&mu_);
  auto it = namespaces_.find(name);
  if (it == namespaces_.end()) return absl::NotFoundError(absl::StrCat("namespace '", AV(name), "' does not exist"));
  return it->second;
}

}  // namespace basalt::server
