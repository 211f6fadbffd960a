#include "src/front/hbase/hbase_front.h"

#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/front/hbase/client_meta.h"

namespace basalt::hbase {

struct HBaseFront::Impl {
  Options options;
  ThisServer self;
  std::vector<std::shared_ptr<void>> kept;  // what the services share: they go first
  std::map<std::string, std::unique_ptr<Service>, std::less<>> services;  // by name; fixed once started
  std::unique_ptr<HBasePort> port;

  explicit Impl(const Options& o) : options(o), self(o.advertised_host, o.start_code) {}

  // Finds the call's handler: its connection's service, then the method in that service's table.
  void Handle(Call call, std::unique_ptr<Responder> r) {
    const std::string& name = r->connection_header().service_name();
    auto it = services.find(name);
    if (it == services.end()) {
      r->Send(ServiceNotServed(call, name, absl::StrCat(options.process, " at ", self.address())));
      return;
    }
    Service* service = it->second.get();
    if (options.admit) {
      if (absl::Status s = options.admit(); !s.ok()) {
        r->Send(ExceptionFrame(call.header.call_id(), service->NotAdmitted(std::move(s))));
        return;
      }
    }
    const Service::Method* method = service->Find(call.header.method_name());
    if (method == nullptr) {
      r->Send(AnswerNotServed(call, name));
      return;
    }
    if (options.port.authenticate && r->caller() == nullptr) {  // never: the port authenticates first
      r->Send(ExceptionFrame(call.header.call_id(), absl::InternalError("a call without an authenticated caller")));
      return;
    }
    const server::AccessController* access = r->caller() != nullptr ? options.access : nullptr;
    if (r->caller() != nullptr) {
      // Authenticated calls are authorised: never a way around the grants. (A port that
      // authenticates without an AccessController is a mistake in the process's set-up.)
      absl::Status allowed = access == nullptr ? absl::InternalError("the HBase port authenticates but has no grants")
                                               : service->Authorize(Request{call, r->connection_header(), r->caller(), access});
      if (!allowed.ok()) {
        r->Send(ExceptionFrame(call.header.call_id(), allowed));
        return;
      }
    }
    if (method->run_on == RunOn::kLoop || !options.schedule) {
      Answer(*method, call, r.get(), access);
      return;
    }
    auto shared = std::make_shared<std::pair<Call, std::unique_ptr<Responder>>>(std::move(call), std::move(r));
    options.schedule([method, shared, access] { Answer(*method, shared->first, shared->second.get(), access); });
  }

  static void Answer(const Service::Method& method, const Call& call, Responder* r,
                     const server::AccessController* access) {
    absl::StatusOr<std::string> answer = method.handler(Request{call, r->connection_header(), r->caller(), access});
    r->Send(answer.ok() ? *std::move(answer) : ExceptionFrame(call.header.call_id(), answer.status()));
  }
};

HBaseFront::HBaseFront(const Options& options) : impl_(std::make_unique<Impl>(options)) {}

HBaseFront::~HBaseFront() { Shutdown(); }

const ThisServer* HBaseFront::self() const { return &impl_->self; }

void HBaseFront::Serve(std::unique_ptr<Service> service) {
  const std::string name = service->name();
  impl_->services[name] = std::move(service);
}

void HBaseFront::Keep(std::shared_ptr<void> part) { impl_->kept.push_back(std::move(part)); }

absl::Status HBaseFront::Start() {
  Impl* impl = impl_.get();
  if (const server::Authenticator* authn = impl->options.authn; authn != nullptr) {
    impl->options.port.authenticate = [authn](const ConnectionHeader& header, std::string_view user,
                                              std::string_view peer) {
      return AuthenticateConnection(*authn, header, user, peer);
    };
  }
  absl::StatusOr<std::unique_ptr<HBasePort>> port = HBasePort::Start(
      impl->options.port, [impl](Call call, std::unique_ptr<Responder> r) { impl->Handle(std::move(call), std::move(r)); });
  if (!port.ok()) return port.status();
  impl->port = *std::move(port);
  impl->self.set_port(impl->port->port());
  return absl::OkStatus();
}

int HBaseFront::port() const { return impl_->port->port(); }
const PortCounters& HBaseFront::counters() const { return impl_->port->counters(); }
void HBaseFront::RegisterMetrics(metrics::Registry* registry) const {
  impl_->port->RegisterMetrics(registry);
  for (const auto& [name, service] : impl_->services) service->RegisterMetrics(registry);
}

void HBaseFront::Shutdown() {
  if (impl_->port != nullptr) impl_->port->Shutdown();
  for (auto& [name, service] : impl_->services) service->Shutdown();
}

}  // namespace basalt::hbase
