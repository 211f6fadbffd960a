// The snapshot commands (HBase shell's "snapshots" group): snapshot, list_snapshots,
// list_table_snapshots, delete_snapshot, delete_all_snapshot, delete_table_snapshots,
// clone_snapshot, restore_snapshot. docs/DESIGN.md §16 says what a snapshot is.
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "src/tools/shell/command_args.h"

namespace basalt::shell::internal {
namespace {

// {RESTORE_ACL => bool} in argument `i` (HBase's): whether the grants the snapshot kept are given
// on the table too. False when absent.
absl::StatusOr<bool> RestoreAclOption(const Ctx& c, size_t i) {
  if (i >= c.cmd.args.size()) return false;
  const Value& h = c.cmd.args[i];
  if (!h.is_hash()) return ArgError(c, h, "options such as {RESTORE_ACL => true}");
  BASALT_RETURN_IF_ERROR(CheckKeys(c, h, {"RESTORE_ACL"}));
  const Value* v = h.Find("RESTORE_ACL");
  return v == nullptr ? false : Bool(c, *v, "RESTORE_ACL");
}

}  // namespace

// snapshot 't1', 's1' [, {TTL => seconds, SKIP_FLUSH => bool}]
absl::StatusOr<Reply> CmdSnapshot(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string table, TableArg(c));
  BASALT_ASSIGN_OR_RETURN(std::string name, Bytes(c, c.cmd.args[1], "a snapshot name", false));
  int64_t ttl_seconds = 0;
  if (c.cmd.args.size() > 2) {
    const Value& h = c.cmd.args[2];
    if (!h.is_hash()) return ArgError(c, h, "options such as {TTL => 86400}");
    BASALT_RETURN_IF_ERROR(CheckKeys(c, h, {"TTL", "SKIP_FLUSH"}));
    if (const Value* ttl = h.Find("TTL")) {
      // HBase's shell takes -1 (and 0) for "kept until deleted", as its snapshot TTL default.
      BASALT_ASSIGN_OR_RETURN(ttl_seconds, IntInRange(c, *ttl, "a TTL in seconds", -1, int64_t{1} << 40));
      if (ttl_seconds < 0) ttl_seconds = 0;
    }
    // SKIP_FLUSH is accepted and changes nothing: each region's memstore is always flushed into
    // the snapshot, so it holds every write acknowledged before it.
    if (const Value* skip = h.Find("SKIP_FLUSH")) BASALT_RETURN_IF_ERROR(Bool(c, *skip, "SKIP_FLUSH").status());
  }
  // The server's words, not "Unknown table" or "Table already exists": the name may be the snapshot's.
  BASALT_RETURN_IF_ERROR(Wrap(c, "", c.conn->GetAdmin()->Snapshot(table, name, ttl_seconds).status()));
  return Done(c, table);
}

namespace {

// The snapshots the command's regexes match: 'table regex' [, 'snapshot regex'] for the
// *_table_snapshots commands, ['snapshot regex'] for the others.
absl::StatusOr<std::vector<SnapshotDescription>> Matching(Ctx& c) {
  const bool by_table = absl::StrContains(c.cmd.name, "table_snapshots");
  BASALT_ASSIGN_OR_RETURN(NamePattern tables, by_table ? NamePattern::Arg(c, 0) : NamePattern());
  BASALT_ASSIGN_OR_RETURN(NamePattern names, NamePattern::Arg(c, by_table ? 1 : 0));
  auto all = c.conn->GetAdmin()->ListSnapshots();
  BASALT_RETURN_IF_ERROR(Wrap(c, "", all.status()));
  std::vector<SnapshotDescription> out;
  for (SnapshotDescription& d : *all) {
    BASALT_ASSIGN_OR_RETURN(bool table_matches, tables.Matches(c, d.table));
    BASALT_ASSIGN_OR_RETURN(bool name_matches, names.Matches(c, d.name));
    if (table_matches && name_matches) out.push_back(std::move(d));
  }
  return out;
}

}  // namespace

// list_snapshots ['snapshot regex']  |  list_table_snapshots 'table regex' [, 'snapshot regex']
absl::StatusOr<Reply> CmdListSnapshots(Ctx& c) {
  Reply r = Done(c, "");
  r.kind = Reply::Kind::kSnapshots;
  BASALT_ASSIGN_OR_RETURN(r.snapshots, Matching(c));
  return r;
}

// delete_all_snapshot 'regex'  |  delete_table_snapshots 'table regex' [, 'snapshot regex']:
// HBase's, which lists what matches, asks, then deletes each and says how each went.
absl::StatusOr<Reply> CmdDeleteSnapshots(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::vector<SnapshotDescription> matched, Matching(c));
  Reply r = Done(c, "");
  r.kind = Reply::Kind::kText;
  if (matched.empty()) {
    r.text = "No snapshots matched.\n";
    return r;
  }
  if (c.confirm == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(AV(c.cmd.name), " asks before it deletes ", matched.size(),
                                                      " snapshot(s), and this shell has no one to ask"));
  }
  Reply listing = r;
  listing.kind = Reply::Kind::kSnapshots;
  listing.snapshots = matched;
  if (c.out != nullptr) *c.out << FormatHuman(listing);
  if (!(*c.confirm)(absl::StrCat("Delete the above ", matched.size(), " snapshots (y/n)?"))) {
    r.text = "No snapshot deleted.\n";
    return r;
  }
  absl::Status first_failure;
  size_t deleted = 0;
  for (const SnapshotDescription& d : matched) {
    absl::Status s = c.conn->GetAdmin()->DeleteSnapshot(d.name);
    if (s.ok()) {
      ++deleted;
      absl::StrAppend(&r.text, "Successfully deleted snapshot: ", d.name, "\n");
    } else {
      absl::StrAppend(&r.text, "Failed to delete snapshot: ", d.name, ", due to: ", s.message(), "\n");
      if (first_failure.ok()) first_failure = s;
    }
  }
  absl::StrAppend(&r.text, deleted, " snapshots successfully deleted.\n");
  if (!first_failure.ok()) {
    return absl::Status(first_failure.code(), absl::StrCat(matched.size() - deleted, " of ", matched.size(),
                                                           " snapshots could not be deleted:\n", r.text));
  }
  return r;
}

absl::StatusOr<Reply> CmdDeleteSnapshot(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string name, Bytes(c, c.cmd.args[0], "a snapshot name", false));
  BASALT_RETURN_IF_ERROR(Wrap(c, "", c.conn->GetAdmin()->DeleteSnapshot(name)));
  return Done(c, "");
}

// clone_snapshot 's1', 'new_table' [, {RESTORE_ACL => true}]
absl::StatusOr<Reply> CmdCloneSnapshot(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string name, Bytes(c, c.cmd.args[0], "a snapshot name", false));
  BASALT_ASSIGN_OR_RETURN(std::string table, Bytes(c, c.cmd.args[1], "a table name", false));
  BASALT_ASSIGN_OR_RETURN(bool restore_acl, RestoreAclOption(c, 2));
  BASALT_RETURN_IF_ERROR(Wrap(c, "", c.conn->GetAdmin()->CloneSnapshot(name, table, restore_acl)));
  return Done(c, table);
}

// restore_snapshot 's1' [, {RESTORE_ACL => true}]
absl::StatusOr<Reply> CmdRestoreSnapshot(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string name, Bytes(c, c.cmd.args[0], "a snapshot name", false));
  BASALT_ASSIGN_OR_RETURN(bool restore_acl, RestoreAclOption(c, 1));
  BASALT_RETURN_IF_ERROR(Wrap(c, "", c.conn->GetAdmin()->RestoreSnapshot(name, restore_acl)));
  return Done(c, "");
}

}  // namespace basalt::shell::internal
