// MasterService's snapshot calls (master_service.h) over Basalt's snapshots (docs/DESIGN.md §16):
// Snapshot, IsSnapshotDone, GetCompletedSnapshots, DeleteSnapshot, and RestoreSnapshot, which
// HBase's client sends for both a restore and a clone (snapshot.table names the table it makes
// or restores; the client has already checked which it is).
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "proto/hbase/hbase_master.pb.h"
#include "src/front/hbase/data_convert.h"
#include "src/front/hbase/master_service.h"

namespace basalt::hbase {
namespace {

// How long a client without proc_id would poll IsSnapshotDone (ms); a Basalt snapshot is done
// when the call answers.
constexpr int64_t kExpectedTimeoutMs = 300000;

// Basalt's errors in the classes HBase's client knows for snapshots.
absl::Status SnapshotException(absl::Status s, std::string_view table = {}) {
  const bool of_snapshot = s.message().find("snapshot '") != std::string_view::npos;
  // (A clone or restore past its namespace's quota: ExceptionOf's QuotaExceededException.)
  if (s.message().find(kNamespaceQuotaWords) != std::string_view::npos) return s;
  switch (s.code()) {
    case absl::StatusCode::kAlreadyExists:
      return AsException(std::move(s), of_snapshot ? kSnapshotExists : kTableExists);
    case absl::StatusCode::kNotFound:
      if (!table.empty() && !of_snapshot) return TableNotFound(table);
      return AsException(std::move(s), kSnapshotDoesNotExist);
    case absl::StatusCode::kFailedPrecondition:
      return AsException(std::move(s), kSnapshotCreation);
    default:
      return s;
  }
}

void DescribeSnapshot(const std::string& name, const std::string& table, int64_t created_ms, const std::string& owner,
                      int64_t ttl_s, SnapshotDescription* out) {
  out->set_name(name);
  out->set_table(table);
  out->set_creation_time(created_ms);
  out->set_type(SnapshotDescription::FLUSH);
  out->set_version(2);  // HBase's SnapshotManifestV2 (the layout a client may ask about)
  if (!owner.empty()) out->set_owner(owner);
  out->set_ttl(ttl_s);
}

// One snapshot by name (its manifest alone, not a listing of every snapshot's files); HBase's
// SnapshotDoesNotExistException when there is none.
absl::StatusOr<server::SnapshotInfo> FindSnapshot(const server::AdminService& admin, const std::string& name) {
  absl::StatusOr<server::SnapshotInfo> s = admin.ReadSnapshot(name);
  // (A name no snapshot may have names none either.)
  if (s.status().code() == absl::StatusCode::kNotFound || s.status().code() == absl::StatusCode::kInvalidArgument) {
    return AsException(absl::NotFoundError(absl::StrCat("snapshot '", name, "' does not exist")), kSnapshotDoesNotExist);
  }
  return s;
}

}  // namespace

absl::StatusOr<std::string> MasterService::Snapshot(const Request& r) {
  SnapshotRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  const SnapshotDescription& s = req.snapshot();
  BASALT_ASSIGN_OR_RETURN(std::string table, BasaltTableOfText(s.table()));
  // Any type is taken as FLUSH: SKIPFLUSH's snapshot would hold less, never more, than Basalt's,
  // which always flushes every region into it.
  BASALT_ASSIGN_OR_RETURN(uint64_t id, procedures_.Run(req.nonce_group(), req.nonce(), r.method(), [&]() -> absl::Status {
    rpc::SnapshotRequest take;
    take.set_table(table);
    take.set_name(s.name());
    take.set_ttl_seconds(s.ttl() > 0 ? s.ttl() : 0);
    take.set_owner(OwnerOf(r));  // (whoever the port authenticated, whatever the request says)
    rpc::SnapshotResponse taken;
    return SnapshotException(options_.admin->Snapshot(take, &taken), table);
  }));
  SnapshotResponse resp;
  resp.set_expected_timeout(kExpectedTimeoutMs);
  resp.set_proc_id(static_cast<int64_t>(id));
  return EncodeResponse(r.id(), resp);
}

absl::StatusOr<std::string> MasterService::IsSnapshotDone(const Request& r) {
  IsSnapshotDoneRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_RETURN_IF_ERROR(AuthorizeSnapshotCall(r));
  // (None: HBase's answer for a snapshot it has no record of, taken and failed or never asked for.)
  BASALT_ASSIGN_OR_RETURN(server::SnapshotInfo s, FindSnapshot(*options_.admin, req.snapshot().name()));
  IsSnapshotDoneResponse resp;
  resp.set_done(true);
  DescribeSnapshot(s.name, s.table.name, s.created_ms, s.owner, s.ttl_s, resp.mutable_snapshot());
  return EncodeResponse(r.id(), resp);
}

// Under auth, the caller's own snapshots; all of them to a global admin (HBase's preListSnapshot).
absl::StatusOr<std::string> MasterService::GetCompletedSnapshots(const Request& r) {
  GetCompletedSnapshotsRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  rpc::ListSnapshotsResponse all;
  BASALT_RETURN_IF_ERROR(options_.admin->ListSnapshots(rpc::ListSnapshotsRequest(), &all));
  GetCompletedSnapshotsResponse resp;
  for (const rpc::SnapshotDescription& d : all.snapshots()) {
    if (!SeesSnapshot(r, d.owner()) || !ShownOnThePort(d.table())) continue;
    DescribeSnapshot(d.name(), d.table(), d.created_ms(), d.owner(), d.ttl_seconds(), resp.add_snapshots());
  }
  return EncodeResponse(r.id(), resp);
}

absl::StatusOr<std::string> MasterService::DeleteSnapshot(const Request& r) {
  DeleteSnapshotRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_RETURN_IF_ERROR(AuthorizeSnapshotCall(r));
  rpc::DeleteSnapshotRequest del;
  del.set_name(req.snapshot().name());
  rpc::AdminResponse ignored;
  BASALT_RETURN_IF_ERROR(SnapshotException(options_.admin->DeleteSnapshot(del, &ignored)));
  return EncodeResponse(r.id(), DeleteSnapshotResponse());
}

absl::StatusOr<std::string> MasterService::RestoreSnapshot(const Request& r) {
  RestoreSnapshotRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_RETURN_IF_ERROR(AuthorizeSnapshotCall(r));
  if (req.restoreacl()) {
    return AsException(absl::UnimplementedError("restoreACL: not served on the HBase port, whose snapshots keep "
                                                "no grants; Basalt's shell takes {RESTORE_ACL => true}"),
                       kRestoreSnapshot);
  }
  const std::string& name = req.snapshot().name();
  BASALT_ASSIGN_OR_RETURN(std::string table, BasaltTableOfText(req.snapshot().table()));
  BASALT_ASSIGN_OR_RETURN(server::SnapshotInfo found, FindSnapshot(*options_.admin, name));
  // Onto its own table: a restore (which clones a dropped table back). Onto another: a clone.
  const bool restore = table == found.table.name;
  BASALT_ASSIGN_OR_RETURN(uint64_t id, procedures_.Run(req.nonce_group(), req.nonce(), r.method(), [&]() -> absl::Status {
    rpc::AdminResponse ignored;
    if (restore) {
      rpc::RestoreSnapshotRequest back;
      back.set_snapshot(name);
      absl::Status s = options_.admin->RestoreSnapshot(back, &ignored);
      if (s.code() == absl::StatusCode::kFailedPrecondition && s.message().find(kNamespaceQuotaWords) == std::string_view::npos) {
        return AsException(std::move(s), kTableNotDisabled);
      }
      return SnapshotException(std::move(s), table);
    }
    rpc::CloneSnapshotRequest clone;
    clone.set_snapshot(name);
    clone.set_table(table);
    return SnapshotException(options_.admin->CloneSnapshot(clone, &ignored));
  }));
  RestoreSnapshotResponse resp;
  resp.set_proc_id(id);
  return EncodeResponse(r.id(), resp);
}

}  // namespace basalt::hbase
