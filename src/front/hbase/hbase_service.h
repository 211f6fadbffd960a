// One of HBase's RPC services as the HBase port serves it: its name (what a client's
// ConnectionHeader names) and its method table, each method's name → its handler and where it
// runs. HBase divides its RPC into services (ClientMetaService, MasterService, AdminService,
// ClientService) and so does the port: each is a class of its own (registry_service.h,
// master_service.h, region_admin_service.h, client_service.h), and each process registers the
// ones it serves with its HBaseFront (hbase_services.h). How a call finds its handler:
// docs/DESIGN.md §15.
//
// Also here: what every service shares (a request's parsing, a failure's answer frame, the Basalt
// region an HBase region name names, this server's HBase name).
//
// Thread-safety: a Service's table is filled in its constructor and only read after; handlers run
// on any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "proto/hbase/hbase_client.pb.h"
#include "src/front/hbase/rpc_codec.h"
#include "src/security/access_control.h"
#include "src/security/auth.h"

namespace basalt::metrics {
class Registry;
}  // namespace basalt::metrics

namespace basalt::hbase {

// Where a method runs: on the port's loop thread that read the call (reads and quick answers, as
// the gRPC front end runs reads on its completion queues), or on the process's pool (writes, which
// wait for the log's sync, and admin calls), so that a slow call never holds up a loop.
enum class RunOn { kLoop, kPool };

// One call as a handler sees it.
struct Request {
  const Call& call;
  const ConnectionHeader& connection;
  // With authentication (auth=true): who calls, and the grants their calls are checked against.
  // Both null without.
  const server::Identity* caller = nullptr;
  const server::AccessController* access = nullptr;
  uint32_t id() const { return call.header.call_id(); }
  const std::string& method() const { return call.header.method_name(); }
};

class Service {
 public:
  // A call's answer frame (EncodeResponse for the call's id), or the error its exception says.
  using Handler = std::function<absl::StatusOr<std::string>(const Request&)>;
  struct Method {
    RunOn run_on;
    Handler handler;
  };

  virtual ~Service() = default;
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // The service's name, as a ConnectionHeader names it ("MasterService").
  const std::string& name() const { return name_; }
  // The method of that name; null when the service has none (the caller refuses the call by name).
  const Method* Find(std::string_view method) const;
  // What a call of this service is told when the process admits no calls (a deposed master):
  // `why` as it is, or the exception that makes the client look elsewhere.
  virtual absl::Status NotAdmitted(absl::Status why) const { return why; }
  // Whether r.caller may make the call, asked before it runs when calls are authenticated. By
  // default global A (administration), so that a call no rule names is refused: a service whose
  // calls any caller may make, or that checks each call's rights as it runs it, says so here.
  virtual absl::Status Authorize(const Request& r) const;
  // Stops what the service runs on its own; called once the port has stopped.
  virtual void Shutdown() {}
  // The service's own figures on /metrics, if it keeps any.
  virtual void RegisterMetrics(metrics::Registry*) const {}

 protected:
  explicit Service(std::string name) : name_(std::move(name)) {}

  // One row of a service's method table.
  template <typename S>
  struct Row {
    const char* method;
    RunOn run_on;
    absl::StatusOr<std::string> (S::*handler)(const Request&);
  };
  // Serves every row of `table` on `self` (the derived service, from its constructor).
  template <typename S, size_t N>
  void Serve(S* self, const Row<S> (&table)[N]) {
    for (const Row<S>& row : table) {
      methods_[row.method] = Method{row.run_on, [self, h = row.handler](const Request& r) { return (self->*h)(r); }};
    }
  }

 private:
  const std::string name_;
  absl::flat_hash_map<std::string, Method> methods_;
};

// Who an HBase connection's calls are from under auth=true (HBasePort::Options::authenticate):
// the user its TLS client certificate names (HBase 2.6 has no way to prove a user over TLS but
// the certificate; SASL is not served), through `authn` as on the gRPC port (groups from the users
// file, '@' names refused). The connection header's user (user_info.effective_user: the client's
// OS user, or HADOOP_USER_NAME) must be that user, and it may not act for another (real_user):
// else Unauthenticated saying which names disagree, and an audit line.
absl::StatusOr<server::Identity> AuthenticateConnection(const server::Authenticator& authn,
                                                        const ConnectionHeader& header,
                                                        std::string_view certificate_user, std::string_view peer);

// Parses a call's request as `M`; InvalidArgument naming the method when it does not parse.
template <typename M>
absl::Status Parse(const Call& call, M* m) {
  if (m->ParsePartialFromString(call.param) && m->IsInitialized()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("the request of ", call.header.method_name(), " does not parse"));
}

// A failed call's answer: the HBase exception `s` becomes (data_convert.h ExceptionOf).
std::string ExceptionFrame(uint32_t call_id, const absl::Status& s);

// The answer to a call of `service`, which this process does not serve: DoNotRetryIOException
// naming the service, the method and what the process is (`process`, e.g. "a region server at
// HOST:PORT"), so the client fails at once instead of retrying.
std::string ServiceNotServed(const Call& call, std::string_view service, std::string_view process);

// This process's name in HBase's answers (a ServerName: host, port, start code). The port is
// known once the HBase port is bound (HBaseFront::Start sets it).
class ThisServer {
 public:
  ThisServer(std::string host, int64_t start_code) : host_(std::move(host)), start_code_(start_code) {}
  void set_port(int port) { port_.store(port, std::memory_order_release); }
  int port() const { return port_.load(std::memory_order_acquire); }
  const std::string& host() const { return host_; }
  ServerName name() const;
  std::string address() const { return absl::StrCat(host_, ":", port()); }

 private:
  const std::string host_;
  const int64_t start_code_;
  std::atomic<int> port_{0};
};

// The Basalt region an HBase region name names (its encoded name), and its table.
struct NamedRegion {
  std::string table;   // Basalt's
  std::string region;  // Basalt's encoded name ("" for a table of one region made before ids)
  bool meta = false;   // hbase:meta
};
// InvalidArgument for a region named by its encoded name alone (but hbase:meta's), or a name that
// does not parse; NamespaceNotFound for a table of another namespace.
absl::StatusOr<NamedRegion> RegionOf(const RegionSpecifier& spec);

}  // namespace basalt::hbase
