// HBase's ClientService: Get, Mutate (Put, Delete, Increment, Append, each maybe conditional),
// Multi (per-action results; atomic row mutations and conditional ones) and Scan, on the regions
// this process serves: Basalt's tables (through DataService) and hbase:meta (a MetaTable), each
// only where the process serves it:
//   - a standalone server: both;
//   - a cluster's master: hbase:meta only (a table's region is NotServingRegionException saying it
//     is a region server's);
//   - a region server: its tables' regions (DataService refuses one not open here, so a client
//     that hit a split, a move or a dead server looks it up again); hbase:meta is the master's.
// Every data call passes the table's and namespace's quotas, as the gRPC front end's calls do, and
// with auth=true the caller's own and the grants (Request::caller; src/security/authorize.h).
//
// Threads: Get and Scan run on the loop that read them; Mutate and Multi on the pool, so that
// concurrent writers share a log sync.
#pragma once

#include <string>

#include "src/front/hbase/data_convert.h"
#include "src/front/hbase/hbase_service.h"
#include "src/front/hbase/meta_table.h"
#include "src/front/hbase/scanners.h"
#include "src/security/authorize.h"
#include "src/security/quotas.h"
#include "src/services/service.h"

namespace basalt::hbase {

class ClientService final : public Service {
 public:
  struct Options {
    // The tables' regions, when this process serves them; null: a region server's (a master).
    server::DataService* data = nullptr;
    // hbase:meta, when this process serves it; null: the active master's (a region server).
    const MetaTable* meta = nullptr;
    server::Quotas* quotas = nullptr;  // null: none
    Scanners::Options scanners;
  };
  // Everything `options` points to must outlive the service.
  explicit ClientService(const Options& options);

  // The region `spec` names, when this process serves it; NotServingRegionException saying where
  // it is served when it does not.
  absl::StatusOr<NamedRegion> Served(const RegionSpecifier& spec) const;
  // A process that admits no calls (a deposed master): the client looks the region up again.
  absl::Status NotAdmitted(absl::Status why) const override;
  // Any authenticated caller: each call's rights are checked as it runs, on what it reads and
  // writes (src/security/authorize.h, as the gRPC front end's); hbase:meta is anyone's to read.
  absl::Status Authorize(const Request&) const override { return absl::OkStatus(); }
  void Shutdown() override;

 private:
  // Who calls (Request::caller and ::access): each data call's rights are checked through it.
  struct Caller {
    const server::Identity* id = nullptr;  // null: calls are not authenticated
    const server::AccessController* access = nullptr;
    std::string_view user() const { return id != nullptr ? std::string_view(id->user) : std::string_view(); }
    // src/security/authorize.h's check of `req` (which may narrow a read), when authenticated.
    template <typename Req>
    absl::Status Check(Req* req) const {
      return id == nullptr ? absl::OkStatus() : server::Authorize(*access, *id, req);
    }
  };
  static Caller CallerOf(const Request& r) { return Caller{r.caller, r.access}; }

  // The quotas a data call passed; a read's reply bytes are settled after, and a call the grants
  // refuse is refunded (as the gRPC front end checks before it admits: a user with no rights
  // cannot spend a table's quota).
  struct Admission {
    server::Quotas::Ticket ticket;
    server::QuotaCall call;  // what was admitted (views into the caller and the region)
    bool admitted = false;
    bool read = false;
  };
  // Refunds `a` when `s` is a refusal by the grants (PermissionDenied).
  void RefundIfDenied(const absl::Status& s, Admission* a);
  absl::Status Admit(const Caller& caller, const std::string& table, bool write, int64_t count, int64_t bytes,
                     Admission* a);
  // Runs `call`, then settles its admission with the reply's size.
  absl::StatusOr<std::string> Settled(const std::function<absl::StatusOr<std::string>(Admission*)>& call);

  absl::StatusOr<std::string> Get(const Request& r);
  absl::StatusOr<std::string> Mutate(const Request& r);
  absl::StatusOr<std::string> Multi(const Request& r);
  absl::StatusOr<std::string> Scan(const Request& r);

  absl::StatusOr<Result> DoGet(const Caller& caller, const NamedRegion& region, const hbase::Get& get);
  absl::Status DoMutate(const Caller& caller, const NamedRegion& region, const MutationProto& m,
                        const Condition* condition, uint64_t nonce_group, CellCursor* cells, MutateResponse* resp);
  void DoRegionAction(const Caller& caller, const RegionAction& action, uint64_t nonce_group, int64_t cell_bytes,
                      CellCursor* cells, RegionActionResult* out);
  // Puts and Deletes of one region's action go to the region in one batch (one log sync).
  void BatchActions(const Caller& caller, const NamedRegion& region, const RegionAction& action, uint64_t nonce_group,
                    CellCursor* cells, RegionActionResult* out);
  absl::Status AtomicActions(const Caller& caller, const NamedRegion& region, const RegionAction& action,
                             CellCursor* cells, RegionActionResult* out);

  const Options options_;
  Scanners scanners_;
};

}  // namespace basalt::hbase
