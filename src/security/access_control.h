// Who may do what (docs/DESIGN.md §12), as HBase's AccessController: permissions R
// (read), W (write), X (exec, unused for now), C (create, alter, drop) and A (admin), granted to
// users and @groups on the global scope, a namespace, a table, a family of it or one column, and
// kept in the system table basalt:acl (meta.h), whose rows are HBase's hbase:acl's:
//   row        "basalt:acl" for the global scope, "@NAMESPACE" for a namespace, else the table
//   column     l:PRINCIPAL, l:PRINCIPAL,FAMILY or l:PRINCIPAL,FAMILY,QUALIFIER
//   value      the permission letters, "RW"
// A grant replaces what the principal had at exactly that scope (HBase's shell grant); a revoke
// removes it. Every change is written to basalt:acl (synced) before the in-memory copy the
// checks read changes, so grants and revokes take effect at once and survive a restart.
//
// A permission held at a scope holds below it: R on a table lets its every family be read. A
// table's namespace is the part of its name before ':' ("basalt" for the system tables,
// "default" for a name without one; src/schema/catalog_file.h TableNamespace). Reads of a table the user may read only part of are narrowed to the
// families and columns they may read (HBase filters the cells); a read that would see nothing
// is refused.
//
// Thread-safety: every method may be called from any thread.
#pragma once

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

enum Perm : uint8_t { kPermRead = 1, kPermWrite = 2, kPermExec = 4, kPermCreate = 8, kPermAdmin = 16 };
// "RWXCA" letters in any order, at least one; InvalidArgument naming the bad letter.
absl::StatusOr<uint8_t> ParsePerms(std::string_view letters);
std::string PermString(uint8_t perms);  // "RWXCA" order; "" for none

// Who is calling, as the authenticator found them (src/security/auth.h).
struct Identity {
  std::string user;                 // empty: nobody (authentication is off)
  std::vector<std::string> groups;  // without the '@'
  bool superuser = false;           // set by AccessController::Resolve
};

// Where a grant applies. All empty: global. `ns` alone: a namespace. `table` (ns empty), with
// `family`, with `qualifier` too: a table, a family, a column.
struct PermScope {
  std::string ns;
  std::string table;
  std::string family;
  std::string qualifier;
  // "global", "namespace default", "table t1", "table t1, family f", "table t1, column f:q"
  std::string ToString() const;
};

struct PermGrant {
  std::string principal;  // a user, or @group
  PermScope scope;
  uint8_t perms = 0;
};

PermScope ScopeFromProto(const rpc::PermissionScope& p);
rpc::PermissionScope ScopeToProto(const PermScope& s);

// The namespace of a table (TableNamespace, catalog_file.h): "ns" of "ns:t", "basalt" of the
// system tables, else "default".
std::string NamespaceOf(std::string_view table);

class AccessController {
 public:
  struct Options {
    bool enabled = false;                 // off: every check passes (and grants are still kept)
    std::vector<std::string> superusers;  // users, and @groups
    // Runs after each grant or revoke is stored (a cluster's master tells its region servers).
    std::function<void()> on_change;
  };

  // Loads the grants kept in `acl` (basalt:acl's region; it must outlive the controller).
  // DataLoss for a row that does not decode, naming it.
  static absl::StatusOr<std::unique_ptr<AccessController>> Open(const Options& options, Region* acl);

  bool enabled() const { return options_.enabled; }
  // Marks a superuser (by name or by one of the groups).
  void Resolve(Identity* id) const;

  // OK when `id` holds one of `any_of` at the scope or above it; else PermissionDenied naming
  // the user, the call and the scope, and an audit line. Always OK when disabled.
  absl::Status CheckGlobal(const Identity& id, std::string_view call, uint8_t any_of) const;
  absl::Status CheckNamespace(const Identity& id, std::string_view call, std::string_view ns, uint8_t any_of) const;
  absl::Status CheckTable(const Identity& id, std::string_view call, std::string_view table, uint8_t any_of,
                          std::string_view family = {}, std::string_view qualifier = {}) const;
  // A read of `table`: OK as it is when the user may read the whole table; narrowed to the
  // families and columns they may read when only some; PermissionDenied when none of what it
  // asks for.
  absl::Status AuthorizeRead(const Identity& id, std::string_view call, std::string_view table,
                             rpc::ReadOptions* read) const;
  // Whether `id` holds anything on `table`, at any scope (which tables `list` shows them).
  bool HasAnyOn(const Identity& id, std::string_view table) const;
  // OK when HasAnyOn, else PermissionDenied (describing a table, listing its regions).
  absl::Status CheckAnyOn(const Identity& id, std::string_view call, std::string_view table) const;
  // Whether `id` holds one of `any_of` at the scope or above it, without an audit line.
  bool Holds(const Identity& id, uint8_t any_of, const PermScope& scope) const;
  // Whether `id` holds one of `any_of` anywhere (a verbs session needs R or W on something).
  bool HasAnywhere(const Identity& id, uint8_t any_of) const;

  // Grant and revoke, by `by` (who needs A on the scope or above it). InvalidArgument for an
  // empty principal or one with ',' or spaces, no permissions, or a malformed scope.
  absl::Status Grant(const Identity& by, const PermGrant& grant);
  absl::Status Revoke(const Identity& by, const std::string& principal, const PermScope& scope);
  // Revokes every grant at or below `scope`, as the server itself and whether or not auth is on
  // (grants are kept while it is off): the grants on something that is gone (a dropped
  // namespace's, as HBase's postDeleteNamespace), so that one made again under its name does not
  // hand them back. `why` goes in each audit line.
  absl::Status RevokeWithin(const PermScope& scope, std::string_view why);
  // The grants at or below `scope` (global: all), optionally of one principal only: to holders
  // of A on the scope, or to a user asking only for their own.
  absl::StatusOr<std::vector<PermGrant>> List(const Identity& by, const PermScope& scope,
                                              std::string_view principal) const;

  // Puts `grants` in place of every grant held in memory (a cluster's region server, which keeps
  // no basalt:acl, loads the master's; cluster_member.h FollowGrants).
  void Replace(const std::vector<PermGrant>& grants);

  // A line in the log, "audit: ..." (permission changes and denials).
  static void Audit(std::string_view text);
  // An audit line for a refused caller (unauthenticated, or denied): at most 20 per 10 s, then
  // one line saying how many more were refused, so a client hammering the port cannot flood the
  // log (docs/DESIGN.md §12). Grants and revokes are always written (Audit).
  static void AuditRefusal(std::string_view text);

 private:
  AccessController(const Options& options, Region* acl) : options_(options), acl_(acl) {}

  // What each principal holds where.
  struct TablePerms {
    std::map<std::string, uint8_t> table;                                     // principal -> perms
    std::map<std::string, std::map<std::string, uint8_t>> family;             // family -> ...
    std::map<std::pair<std::string, std::string>, std::map<std::string, uint8_t>> column;
  };
  // What `id` holds in `m`, as the user and as "@group" for each of its groups.
  static uint8_t Held(const std::map<std::string, uint8_t>& m, const Identity& id);
  // What `id` holds at the scope and above it.
  uint8_t HeldAt(const Identity& id, const PermScope& scope) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  absl::Status Denied(const Identity& id, std::string_view call, uint8_t any_of, const PermScope& scope) const;
  // FailedPrecondition for a grant or revoke (`call`) while access control is off.
  absl::Status RefuseWhileDisabled(std::string_view call) const;
  absl::Status CheckScope(const Identity& id, std::string_view call, uint8_t any_of, const PermScope& scope) const;
  // Applies one grant (perms 0: a revoke) to the in-memory copy.
  void Apply(const PermGrant& g) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes one grant (perms 0: its removal) to basalt:acl, synced.
  absl::Status Store(const PermGrant& g);
  // A checked change: stored, then applied, then the audit line and on_change.
  absl::Status Commit(const PermGrant& g, std::string_view audit);

  const Options options_;
  Region* const acl_;
  absl::Mutex write_mu_;  // one change at a time: the table, then memory
  mutable absl::Mutex mu_;
  std::map<std::string, uint8_t> global_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::map<std::string, uint8_t>> namespaces_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, TablePerms, std::less<>> tables_ ABSL_GUARDED_BY(mu_);
};

}  // namespace basalt::server
