// HBase's ClientService: Get, Mutate (Put, Delete, Increment, Append, each maybe conditional),
// Multi (per-action results; atomic row mutations and conditional ones) and Scan, on the regions
// this process serves: Basalt's tables (through DataService) and hbase:meta (a MetaTable), each
// only where the process serves it:
//   - a standalone server: both;
//   - a cluster's master: hbase:meta only (a table's region is NotServingRegionException saying it
//     is a region server's);
//   - a region server: its tables' regions (DataService refuses one not open here, so a client
//     that hit a split, a move or a dead server looks it up again); hbase:meta is the master's.
// Every data call passes the table's and namespace's quotas, as the gRPC front end's calls do (the
// port does not authenticate, so no user's).
//
// Threads: Get and Scan run on the loop that read them; Mutate and Multi on the pool, so that
// concurrent writers share a log sync.
#pragma once

#include <string>

#include "src/front/hbase/data_convert.h"
#include "src/front/hbase/hbase_service.h"
#include "src/front/hbase/meta_table.h"
#include "src/front/hbase/scanners.h"
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
  void Shutdown() override;

 private:
  // The quotas a data call passed; a read's reply bytes are settled after.
  struct Admission {
    server::Quotas::Ticket ticket;
    bool read = false;
  };
  absl::Status Admit(const std::string& table, bool write, int64_t count, int64_t bytes, Admission* a);
  // Runs `call`, then settles its admission with the reply's size.
  absl::StatusOr<std::string> Settled(const std::function<absl::StatusOr<std::string>(Admission*)>& call);

  absl::StatusOr<std::string> Get(const Request& r);
  absl::StatusOr<std::string> Mutate(const Request& r);
  absl::StatusOr<std::string> Multi(const Request& r);
  absl::StatusOr<std::string> Scan(const Request& r);

  absl::StatusOr<Result> DoGet(const NamedRegion& region, const hbase::Get& get);
  absl::Status DoMutate(const NamedRegion& region, const MutationProto& m, const Condition* condition,
                        uint64_t nonce_group, CellCursor* cells, MutateResponse* resp);
  void DoRegionAction(const RegionAction& action, uint64_t nonce_group, int64_t cell_bytes, CellCursor* cells,
                      RegionActionResult* out);
  // Puts and Deletes of one region's action go to the region in one batch (one log sync).
  void BatchActions(const NamedRegion& region, const RegionAction& action, uint64_t nonce_group, CellCursor* cells,
                    RegionActionResult* out);
  absl::Status AtomicActions(const NamedRegion& region, const RegionAction& action, CellCursor* cells,
                             RegionActionResult* out);

  const Options options_;
  Scanners scanners_;
};

}  // namespace basalt::hbase
