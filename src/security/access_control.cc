#include "src/security/access_control.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/log.h"
#include "common/status.h"
#include "proto/permission_scope.h"
#include "src/schema/meta.h"

namespace basalt::server {
namespace {

constexpr char kLetters[] = "RWXCA";

bool ValidPrincipal(std::string_view p) {
  if (p.empty() || p == "@") return false;
  for (char c : p) {
    if (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\0') return false;
  }
  return true;
}

// basalt:acl's row for a scope.
std::string AclRow(const PermScope& s) {
  if (!s.table.empty()) return s.table;
  if (!s.ns.empty()) return absl::StrCat("@", s.ns);
  return kAclTableName;
}

// basalt:acl's column (qualifier) for a grant.
std::string AclQualifier(const std::string& principal, const PermScope& s) {
  if (s.family.empty()) return principal;
  if (s.qualifier.empty()) return absl::StrCat(principal, ",", s.family);
  return absl::StrCat(principal, ",", s.family, ",", s.qualifier);
}

// Whether `inner` is `outer` or lies below it.
bool Within(const PermScope& inner, const PermScope& outer) {
  if (outer.ns.empty() && outer.table.empty()) return true;  // global holds everything
  if (!outer.ns.empty()) {
    return inner.ns == outer.ns || (!inner.table.empty() && NamespaceOf(inner.table) == outer.ns);
  }
  if (inner.table != outer.table) return false;
  if (outer.family.empty()) return true;
  if (inner.family != outer.family) return false;
  return outer.qualifier.empty() || inner.qualifier == outer.qualifier;
}

}  // namespace

absl::StatusOr<uint8_t> ParsePerms(std::string_view letters) {
  uint8_t perms = 0;
  for (char c : letters) {
    const char* at = std::find(kLetters, kLetters + 5, c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c);
    if (at == kLetters + 5) {
      return absl::InvalidArgumentError(absl::StrCat("'", std::string(1, c), "' in permissions '", AV(letters),
                                                     "' is not one of R, W, X, C, A"));
    }
    perms |= static_cast<uint8_t>(1u << (at - kLetters));
  }
  if (perms == 0) return absl::InvalidArgumentError("no permissions given (R, W, X, C, A)");
  return perms;
}

std::string PermString(uint8_t perms) {
  std::string out;
  for (int i = 0; i < 5; ++i) {
    if (perms & (1u << i)) out.push_back(kLetters[i]);
  }
  return out;
}

std::string PermScope::ToString() const {
  if (!table.empty()) {
    if (family.empty()) return absl::StrCat("table ", table);
    if (qualifier.empty()) return absl::StrCat("table ", table, ", family ", family);
    return absl::StrCat("table ", table, ", column ", family, ":", qualifier);
  }
  if (!ns.empty()) return absl::StrCat("namespace ", ns);
  return "global";
}

PermScope ScopeFromProto(const rpc::PermissionScope& p) {
  PermScope s;
  rpc::SetScopeFromProto(p, &s);
  return s;
}

rpc::PermissionScope ScopeToProto(const PermScope& s) { return rpc::ScopeProtoOf(s); }

std::string NamespaceOf(std::string_view table) { return std::string(TableNamespace(table)); }

absl::StatusOr<std::unique_ptr<AccessController>> AccessController::Open(const Options& options, Region* acl) {
  std::unique_ptr<AccessController> ac(new AccessController(options, acl));
  if (acl == nullptr) return ac;
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<RegionScanner> sc, acl->Scan(ScanSpec{}));
  std::vector<Cell> cells;
  absl::MutexLock l(&ac->mu_);
  for (;;) {
    BASALT_ASSIGN_OR_RETURN(bool more, sc->NextRow(&cells));
    if (!more) break;
    for (const Cell& c : cells) {
      PermGrant g;
      if (c.row == kAclTableName) {
        // global
      } else if (!c.row.empty() && c.row[0] == '@') {
        g.scope.ns = c.row.substr(1);
      } else {
        g.scope.table = c.row;
      }
      const size_t c1 = c.qualifier.find(',');
      g.principal = c.qualifier.substr(0, c1);
      if (c1 != std::string::npos) {
        const size_t c2 = c.qualifier.find(',', c1 + 1);
        g.scope.family = c.qualifier.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1);
        if (c2 != std::string::npos) g.scope.qualifier = c.qualifier.substr(c2 + 1);
      }
      absl::StatusOr<uint8_t> perms = ParsePerms(c.value);
      if (!ValidPrincipal(g.principal) || !perms.ok() ||
          ((!g.scope.family.empty() || c1 != std::string::npos) && g.scope.table.empty())) {
        return absl::DataLossError(absl::StrCat(kAclTableName, " row '", c.row, "' column '", c.qualifier,
                                                "' value '", c.value, "' is not a grant"));
      }
      g.perms = *perms;
      ac->Apply(g);
    }
  }
  return ac;
}

void AccessController::Resolve(Identity* id) const {
  id->superuser = false;
  for (const std::string& s : options_.superusers) {
    if (s == id->user) id->superuser = true;
    if (s.size() > 1 && s[0] == '@' &&
        std::find(id->groups.begin(), id->groups.end(), std::string_view(s).substr(1)) != id->groups.end()) {
      id->superuser = true;
    }
  }
}

uint8_t AccessController::Held(const std::map<std::string, uint8_t>& m, const Identity& id) {
  if (m.empty()) return 0;
  uint8_t held = 0;
  if (auto it = m.find(id.user); it != m.end()) held |= it->second;
  // "@group", in a buffer each thread reuses: a check allocates nothing.
  thread_local std::string key;
  for (const std::string& g : id.groups) {
    key.assign("@");
    key.append(g);
    if (auto it = m.find(key); it != m.end()) held |= it->second;
  }
  return held;
}

uint8_t AccessController::HeldAt(const Identity& id, const PermScope& scope) const {
  uint8_t held = Held(global_, id);
  const std::string ns = !scope.table.empty() ? NamespaceOf(scope.table) : scope.ns;
  if (!ns.empty()) {
    if (auto it = namespaces_.find(ns); it != namespaces_.end()) held |= Held(it->second, id);
  }
  if (scope.table.empty()) return held;
  auto t = tables_.find(scope.table);
  if (t == tables_.end()) return held;
  held |= Held(t->second.table, id);
  if (scope.family.empty()) return held;
  if (auto f = t->second.family.find(scope.family); f != t->second.family.end()) held |= Held(f->second, id);
  if (scope.qualifier.empty()) return held;
  if (auto c = t->second.column.find({scope.family, scope.qualifier}); c != t->second.column.end()) {
    held |= Held(c->second, id);
  }
  return held;
}

void AccessController::Audit(std::string_view text) { log::Info(absl::StrCat("audit: ", AV(text))); }

void AccessController::AuditRefusal(std::string_view text) {
  constexpr int kLinesPerWindow = 20;
  constexpr int64_t kWindowMs = 10000;
  ABSL_CONST_INIT static absl::Mutex mu(absl::kConstInit);
  static int64_t window_start_ms = 0;
  static int logged = 0;
  static int64_t unlogged = 0;
  const int64_t now = absl::ToUnixMillis(absl::Now());
  std::string summary;
  bool write;
  {
    absl::MutexLock l(&mu);
    if (now - window_start_ms >= kWindowMs) {
      if (unlogged > 0) {
        summary = absl::StrCat(unlogged, " more refusal(s) since ", (now - window_start_ms) / 1000,
                               " s ago were not written (at most ", kLinesPerWindow, " per ", kWindowMs / 1000, " s)");
      }
      window_start_ms = now;
      logged = 0;
      unlogged = 0;
    }
    write = logged < kLinesPerWindow;
    if (write) {
      ++logged;
    } else {
      ++unlogged;
    }
  }
  if (!summary.empty()) Audit(summary);
  if (write) Audit(text);
}

absl::Status AccessController::Denied(const Identity& id, std::string_view call, uint8_t any_of,
                                      const PermScope& scope) const {
  std::string need;
  for (char c : PermString(any_of)) absl::StrAppend(&need, need.empty() ? "" : " or ", std::string(1, c));
  const std::string user = id.user.empty() ? "(unauthenticated)" : id.user;
  AuditRefusal(absl::StrCat("denied user=", user, " call=", AV(call), " needs=", PermString(any_of), " scope=",
                     scope.ToString()));
  return absl::PermissionDeniedError(absl::StrCat("user '", user, "' may not ", AV(call), ": it needs ", need,
                                                  " on ", scope.ToString(), " or above it"));
}

absl::Status AccessController::CheckScope(const Identity& id, std::string_view call, uint8_t any_of,
                                          const PermScope& scope) const {
  if (!options_.enabled || id.superuser) return absl::OkStatus();
  {
    absl::ReaderMutexLock l(&mu_);
    if (HeldAt(id, scope) & any_of) return absl::OkStatus();
  }
  return Denied(id, call, any_of, scope);
}

absl::Status AccessController::CheckGlobal(const Identity& id, std::string_view call, uint8_t any_of) const {
  return CheckScope(id, call, any_of, PermScope{});
}

absl::Status AccessController::CheckNamespace(const Identity& id, std::string_view call, std::string_view ns,
                                              uint8_t any_of) const {
  PermScope s;
  s.ns = std::string(ns);
  return CheckScope(id, call, any_of, s);
}

absl::Status AccessController::CheckTable(const Identity& id, std::string_view call, std::string_view table,
                                          uint8_t any_of, std::string_view family, std::string_view qualifier) const {
  PermScope s;
  s.table = std::string(table);
  s.family = std::string(family);
  if (!family.empty()) s.qualifier = std::string(qualifier);
  return CheckScope(id, call, any_of, s);
}

absl::Status AccessController::AuthorizeRead(const Identity& id, std::string_view call, std::string_view table,
                                             rpc::ReadOptions* read) const {
  if (!options_.enabled || id.superuser) return absl::OkStatus();
  // basalt:meta is every authenticated user's to read (clients locate regions in it), as
  // hbase:meta is in HBase.
  if (table == kMetaTableName && !id.user.empty()) return absl::OkStatus();
  PermScope whole;
  whole.table = std::string(table);
  // What the caller may read of the table below the table itself: families, columns.
  std::set<std::string> families;
  std::map<std::string, std::vector<std::string>> columns;
  {
    absl::ReaderMutexLock l(&mu_);
    if (HeldAt(id, whole) & kPermRead) return absl::OkStatus();
    auto t = tables_.find(table);
    if (t != tables_.end()) {
      for (const auto& [f, m] : t->second.family) {
        if (Held(m, id) & kPermRead) families.insert(f);
      }
      for (const auto& [fq, m] : t->second.column) {
        if ((Held(m, id) & kPermRead) && !families.count(fq.first)) columns[fq.first].push_back(fq.second);
      }
    }
  }
  if (families.empty() && columns.empty()) return Denied(id, call, kPermRead, whole);
  if (read->columns_size() == 0) {
    // Every family asked for: those the caller may read.
    for (const std::string& f : families) read->add_columns()->set_family(f);
    for (const auto& [f, qs] : columns) {
      rpc::ColumnSelection* sel = read->add_columns();
      sel->set_family(f);
      for (const std::string& q : qs) sel->add_qualifiers(q);
    }
    return absl::OkStatus();
  }
  google::protobuf::RepeatedPtrField<rpc::ColumnSelection> kept;
  std::string first_refused;
  for (rpc::ColumnSelection& sel : *read->mutable_columns()) {
    if (families.count(sel.family())) {
      *kept.Add() = std::move(sel);
      continue;
    }
    auto it = columns.find(sel.family());
    std::vector<std::string> allowed;
    if (it != columns.end()) {
      if (sel.qualifiers_size() == 0) {
        allowed = it->second;
      } else {
        for (const std::string& q : sel.qualifiers()) {
          if (std::find(it->second.begin(), it->second.end(), q) != it->second.end()) allowed.push_back(q);
        }
      }
    }
    if (allowed.empty()) {
      if (first_refused.empty()) first_refused = sel.family();
      continue;
    }
    rpc::ColumnSelection* out = kept.Add();
    out->set_family(sel.family());
    for (std::string& q : allowed) out->add_qualifiers(std::move(q));
  }
  if (kept.empty()) {
    PermScope s = whole;
    s.family = first_refused;
    return Denied(id, call, kPermRead, s);
  }
  read->mutable_columns()->Swap(&kept);
  return absl::OkStatus();
}

bool AccessController::HasAnyOn(const Identity& id, std::string_view table) const {
  if (!options_.enabled || id.superuser) return true;
  absl::ReaderMutexLock l(&mu_);
  PermScope whole;
  whole.table = std::string(table);
  if (HeldAt(id, whole) != 0) return true;
  auto t = tables_.find(table);
  if (t == tables_.end()) return false;
  for (const auto& [f, m] : t->second.family) {
    if (Held(m, id) != 0) return true;
  }
  for (const auto& [fq, m] : t->second.column) {
    if (Held(m, id) != 0) return true;
  }
  return false;
}

absl::Status AccessController::CheckAnyOn(const Identity& id, std::string_view call, std::string_view table) const {
  if (HasAnyOn(id, table)) return absl::OkStatus();
  PermScope s;
  s.table = std::string(table);
  return Denied(id, call, kPermRead | kPermWrite | kPermExec | kPermCreate | kPermAdmin, s);
}

bool AccessController::Holds(const Identity& id, uint8_t any_of, const PermScope& scope) const {
  if (!options_.enabled || id.superuser) return true;
  absl::ReaderMutexLock l(&mu_);
  return (HeldAt(id, scope) & any_of) != 0;
}

bool AccessController::HasAnywhere(const Identity& id, uint8_t any_of) const {
  if (!options_.enabled || id.superuser) return true;
  absl::ReaderMutexLock l(&mu_);
  if (Held(global_, id) & any_of) return true;
  for (const auto& [ns, m] : namespaces_) {
    if (Held(m, id) & any_of) return true;
  }
  for (const auto& [name, t] : tables_) {
    if (Held(t.table, id) & any_of) return true;
    for (const auto& [f, m] : t.family) {
      if (Held(m, id) & any_of) return true;
    }
    for (const auto& [fq, m] : t.column) {
      if (Held(m, id) & any_of) return true;
    }
  }
  return false;
}

void AccessController::Replace(const std::vector<PermGrant>& grants) {
  absl::MutexLock l(&mu_);
  global_.clear();
  namespaces_.clear();
  tables_.clear();
  for (const PermGrant& g : grants) Apply(g);
}

void AccessController::Apply(const PermGrant& g) {
  std::map<std::string, uint8_t>* m = nullptr;
  if (!g.scope.table.empty()) {
    TablePerms& t = tables_[g.scope.table];
    if (g.scope.family.empty()) {
      m = &t.table;
    } else if (g.scope.qualifier.empty()) {
      m = &t.family[g.scope.family];
    } else {
      m = &t.column[{g.scope.family, g.scope.qualifier}];
    }
  } else if (!g.scope.ns.empty()) {
    m = &namespaces_[g.scope.ns];
  } else {
    m = &global_;
  }
  if (g.perms == 0) {
    m->erase(g.principal);
  } else {
    (*m)[g.principal] = g.perms;
  }
}

absl::Status AccessController::Store(const PermGrant& g) {
  if (acl_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("this server keeps no ", kAclTableName, " (a cluster's region server: grant on the master)"));
  }
  RowMutation rm;
  rm.row = AclRow(g.scope);
  Mutation m;
  m.family = kAclFamily;
  m.qualifier = AclQualifier(g.principal, g.scope);
  if (g.perms == 0) {
    m.kind = Mutation::Kind::kDeleteColumn;
  } else {
    m.value = PermString(g.perms);
  }
  rm.mutations.push_back(std::move(m));
  absl::Status s = acl_->Mutate({rm}, Durability::kSyncWal);
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat("writing ", kAclTableName, ": ", s.message()));
  return absl::OkStatus();
}

namespace {
absl::Status ValidateScope(const PermScope& s) {
  if (!s.ns.empty() && !s.table.empty()) return absl::InvalidArgumentError("a scope is a namespace or a table, not both");
  if (s.table.empty() && !s.family.empty()) return absl::InvalidArgumentError("a family needs its table");
  if (s.family.empty() && !s.qualifier.empty()) return absl::InvalidArgumentError("a column qualifier needs its family");
  if (s.family.find(',') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("family '", s.family, "' has a ','"));
  }
  return absl::OkStatus();
}
}  // namespace

absl::Status AccessController::Grant(const Identity& by, const PermGrant& grant) {
  BASALT_RETURN_IF_ERROR(RefuseWhileDisabled("grant"));
  if (!ValidPrincipal(grant.principal)) {
    return absl::InvalidArgumentError(absl::StrCat("'", grant.principal,
                                                   "' is not a user or @group name (no ',' or spaces; not empty)"));
  }
  if (grant.perms == 0) return absl::InvalidArgumentError("no permissions given (R, W, X, C, A)");
  BASALT_RETURN_IF_ERROR(ValidateScope(grant.scope));
  // A table's name as its table calls name it: "default:t" would be kept under that name and
  // never apply to t, nor go when t is dropped. (Revoke takes any name, so such a grant kept
  // before this check can still be revoked.)
  if (!grant.scope.table.empty()) BASALT_RETURN_IF_ERROR(ValidateTableRef(grant.scope.table));
  BASALT_RETURN_IF_ERROR(CheckScope(by, "grant", kPermAdmin, grant.scope));
  return Commit(grant, absl::StrCat("user=", by.user.empty() ? "(unauthenticated)" : by.user, " granted ",
                                    PermString(grant.perms), " to ", grant.principal, " on ", grant.scope.ToString()));
}

absl::Status AccessController::RefuseWhileDisabled(std::string_view call) const {
  if (options_.enabled) return absl::OkStatus();
  // As HBase without its AccessController: with no one authenticated, whoever called first
  // could plant a global A for himself, honoured once auth is turned on.
  return absl::FailedPreconditionError(absl::StrCat(
      AV(call), " is refused while auth=false: with authentication off anyone could grant anything; turn on auth "
                "(tls_cert, tls_key, auth=true, superusers) and grant as a superuser"));
}

absl::Status AccessController::Commit(const PermGrant& g, std::string_view audit) {
  absl::MutexLock w(&write_mu_);
  BASALT_RETURN_IF_ERROR(Store(g));
  {
    absl::MutexLock l(&mu_);
    Apply(g);
  }
  Audit(audit);
  if (options_.on_change) options_.on_change();
  return absl::OkStatus();
}

absl::Status AccessController::Revoke(const Identity& by, const std::string& principal, const PermScope& scope) {
  BASALT_RETURN_IF_ERROR(RefuseWhileDisabled("revoke"));
  if (!ValidPrincipal(principal)) {
    return absl::InvalidArgumentError(absl::StrCat("'", principal, "' is not a user or @group name"));
  }
  BASALT_RETURN_IF_ERROR(ValidateScope(scope));
  BASALT_RETURN_IF_ERROR(CheckScope(by, "revoke", kPermAdmin, scope));
  return Commit(PermGrant{principal, scope, 0},
                absl::StrCat("user=", by.user.empty() ? "(unauthenticated)" : by.user, " revoked every permission of ",
                             principal, " on ", scope.ToString()));
}

absl::Status AccessController::RevokeWithin(const PermScope& scope, std::string_view why) {
  BASALT_RETURN_IF_ERROR(ValidateScope(scope));
  Identity server;
  server.superuser = true;
  BASALT_ASSIGN_OR_RETURN(std::vector<PermGrant> grants, List(server, scope, ""));
  for (const PermGrant& g : grants) {
    BASALT_RETURN_IF_ERROR(Commit(PermGrant{g.principal, g.scope, 0},
                                  absl::StrCat("revoked every permission of ", g.principal, " on ", g.scope.ToString(),
                                               ": ", AV(why))));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<PermGrant>> AccessController::List(const Identity& by, const PermScope& scope,
                                                              std::string_view principal) const {
  BASALT_RETURN_IF_ERROR(ValidateScope(scope));
  const bool own = !by.user.empty() && principal == by.user;
  if (!own) BASALT_RETURN_IF_ERROR(CheckScope(by, "user_permission", kPermAdmin, scope));
  std::vector<PermGrant> out;
  auto add = [&](const std::map<std::string, uint8_t>& m, const PermScope& s) {
    if (!Within(s, scope)) return;
    for (const auto& [p, perms] : m) {
      if (principal.empty() || p == principal) out.push_back(PermGrant{p, s, perms});
    }
  };
  absl::ReaderMutexLock l(&mu_);
  add(global_, PermScope{});
  for (const auto& [ns, m] : namespaces_) add(m, PermScope{ns, "", "", ""});
  for (const auto& [name, t] : tables_) {
    add(t.table, PermScope{"", name, "", ""});
    for (const auto& [f, m] : t.family) add(m, PermScope{"", name, f, ""});
    for (const auto& [fq, m] : t.column) add(m, PermScope{"", name, fq.first, fq.second});
  }
  return out;
}

}  // namespace basalt::server
