// The HBase front end of basalt-server: HBase 2.x clients (the Java client, its shell, its
// tools) speak HBase's RPC to it on a port of its own (hbase_listen), and it answers from
// Basalt's services, as the gRPC front end does (grpc_server.h). Its place and its protocol:
// docs/DESIGN.md §15.
//
// Services, by the ConnectionHeader's service name (a standalone server's; a cluster divides them
// between the master and the region servers: Options::role):
//   ClientMetaService   the RPC registry: cluster id, active master (this server), meta's
//                       location (this server), bootstrap nodes (client_meta.h)
//   MasterService       IsMasterRunning, table admin (create with splits, describe, list,
//                       enable, disable, delete, truncate, table state), namespaces (default,
//                       hbase), the procedure poll; others refused with DoNotRetryIOException
//   ClientService       Get, Mutate, Multi, Scan on Basalt's tables, and on hbase:meta, which
//                       is made on each read from basalt:meta's regions (never a second copy)
//
// Threads: reads (Get, Scan, hbase:meta) run on the port's loop thread that read the call, as
// the gRPC front end's do; writes and admin calls run on `schedule` (the gRPC front end's
// pool), so concurrent writers share a log sync and a write waiting for its fdatasync never
// holds up the loop.
//
// Regions: an HBase region is a Basalt region (the same table, start key and id, so the same
// names); a call naming a region that split or moved gets NotServingRegionException and the
// client looks it up in hbase:meta again.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "src/cluster/cluster_member.h"
#include "src/front/hbase/hbase_port.h"
#include "src/security/quotas.h"
#include "src/services/service.h"

namespace basalt::hbase {

class HBaseFront {
 public:
  struct Options {
    HBasePort::Options port;
    // The host name clients dial this server by (in hbase:meta and the registry's answers).
    std::string advertised_host = "127.0.0.1";
    int64_t start_code = 0;     // this run of the server (ServerName's start code)
    std::string cluster_id;     // what GetClusterId answers
    int info_port = 0;          // the HTTP port, 0: none
    // Where writes and admin calls run; empty: inline on the loop thread.
    std::function<void(std::function<void()>)> schedule;
    // A scanner its client has not called for this long is closed (HBase's scanner lease).
    int64_t scanner_lease_ms = 60000;
    int max_scanners = 10000;
    // The quotas data calls pass (the table's and namespace's: the port does not authenticate);
    // null: none.
    server::Quotas* quotas = nullptr;
    // Its part in a cluster (docs/DESIGN.md §15):
    //   kStandalone    everything: the registry, MasterService, hbase:meta and the regions
    //   kMaster        the active basalt-master's: the registry, MasterService and hbase:meta,
    //                  whose regions name the region servers' HBase ports; a call naming a
    //                  table's region gets NotServingRegionException
    //   kRegionServer  a region server's: ClientService and AdminService for the regions open
    //                  here; hbase:meta and MasterService are the master's, and the registry
    //                  names the master (active_master)
    enum class Role { kStandalone, kMaster, kRegionServer };
    Role role = Role::kStandalone;
    // A master's: the live region servers' registrations (HOST:PORT of gRPC, start code, and
    // HOST:PORT of their HBase port, if any), read again when older than a second or when a
    // region names a server it does not list.
    std::function<absl::StatusOr<std::vector<server::ServerRegistration>>()> region_servers;
    // Each call is admitted by this first (a master that is no longer the active one refuses);
    // empty: every call.
    std::function<absl::Status()> admit;
    // A region server's: the active master's registration with its HBase port
    // (server::ReadHBaseMaster), which the registry (ClientMetaService) here names as the master
    // and hbase:meta's server, as HBase 2.6's region servers answer a client whose
    // hbase.client.bootstrap.servers names them. Empty: the registry is refused here.
    std::function<absl::StatusOr<server::ServerRegistration>()> active_master;
  };

  // The services must outlive the front end.
  HBaseFront(const Options& options, server::DataService* data, server::AdminService* admin);
  ~HBaseFront();
  HBaseFront(const HBaseFront&) = delete;
  HBaseFront& operator=(const HBaseFront&) = delete;

  // Binds and serves. Unavailable when the address cannot be bound.
  absl::Status Start();
  int port() const;
  const PortCounters& counters() const;
  // The port's counters on /metrics (HBasePort::RegisterMetrics); after Start.
  void RegisterMetrics(metrics::Registry* registry) const;
  // Stops serving: connections close, open scanners are dropped.
  void Shutdown();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace basalt::hbase
