// The HBase front end of a Basalt process: HBase 2.x clients (the Java client, its shell, its
// tools) speak HBase's RPC to it on a port of its own (hbase_listen), and it hands each call to
// the service its connection named, which answers from Basalt's services as the gRPC front end
// does (grpc_server.h). Its place and its protocol: docs/DESIGN.md §15.
//
// The front end is the connection loop and the dispatch; the services are classes of their own,
// as HBase divides them (hbase_service.h): the registry (ClientMetaService), MasterService,
// AdminService and ClientService (with hbase:meta). Each process registers the services it serves
// (hbase_services.h); a call of a service it does not serve, or of a method its service does not
// have, gets one refusal naming both.
//
// Threads: a method runs where its service's table says (RunOn): on the port's loop thread that
// read the call (reads), or on `schedule` (the gRPC front end's pool), so concurrent writers share
// a log sync and a write waiting for its fdatasync never holds up the loop.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "src/front/hbase/hbase_port.h"
#include "src/front/hbase/hbase_service.h"

namespace basalt::hbase {

class HBaseFront {
 public:
  struct Options {
    HBasePort::Options port;
    // The host name clients dial this process by (in hbase:meta and the registry's answers).
    std::string advertised_host = "127.0.0.1";
    int64_t start_code = 0;  // this run of the process (ServerName's start code)
    // What this process is, in the refusal of a service it does not serve ("a region server").
    std::string process = "a Basalt server";
    // Where pool methods run; empty: inline on the loop thread.
    std::function<void(std::function<void()>)> schedule;
    // Each call is admitted by this first (a master that is no longer the active one refuses:
    // Service::NotAdmitted says how); empty: every call.
    std::function<absl::Status()> admit;
    // auth=true: each connection's user is its client certificate's, through `authn`
    // (AuthenticateConnection, hbase_service.h: Start sets port.authenticate), and each call is
    // checked against `access`, by its service's Authorize before it runs and by the service as
    // it runs it. Both null: no authentication. They must outlive the front.
    const server::Authenticator* authn = nullptr;
    const server::AccessController* access = nullptr;
  };

  explicit HBaseFront(const Options& options);
  ~HBaseFront();  // Shutdown()s
  HBaseFront(const HBaseFront&) = delete;
  HBaseFront& operator=(const HBaseFront&) = delete;

  // This process's HBase name, for the services (its port is set by Start).
  const ThisServer* self() const;
  // Serves `service` under its name. Before Start.
  void Serve(std::unique_ptr<Service> service);
  // Keeps `part` (what services share: a MetaTable, a ServerDirectory) for the front end's life.
  void Keep(std::shared_ptr<void> part);

  // Binds and serves. Unavailable when the address cannot be bound.
  absl::Status Start();
  int port() const;
  const PortCounters& counters() const;
  // The port's counters on /metrics (HBasePort::RegisterMetrics) and its services' own; after Start.
  void RegisterMetrics(metrics::Registry* registry) const;
  // Stops serving: connections close, the services stop (open scanners are dropped). Idempotent.
  void Shutdown();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace basalt::hbase
