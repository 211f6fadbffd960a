#include "src/front/hbase/hbase_port.h"

#include "absl/strings/str_cat.h"

namespace basalt::hbase {

inline constexpr char kCallQueueTooBig[] = "org.apache.hadoop.hbase.CallQueueTooBigException";
inline constexpr char kIOException[] = "java.io.IOException";
inline constexpr char kDoNotRetryIOException[] = "org.apache.hadoop.hbase.DoNotRetryIOException";

namespace {

// HBase's side of one connection: its RPC framing read, each whole call handed to the handler.
class HBaseSession final : public server::StreamSession {
 public:
  HBaseSession(uint32_t max_request_bytes, std::shared_ptr<const HBasePort::Handler> handler,
               std::shared_ptr<const HBasePort::Options::Authenticate> authenticate)
      : reader_(max_request_bytes), handler_(std::move(handler)), authenticate_(std::move(authenticate)) {}

  const ConnectionHeader& header() const { return header_; }
  const server::Identity* caller() const { return caller_.has_value() ? &*caller_ : nullptr; }

  // The loop thread's buffer: the reader copies what it is fed.
  absl::Span<char> Space() override { return absl::MakeSpan(buffer_, sizeof(buffer_)); }
  void Commit(size_t n) override { reader_.Feed(std::string_view(buffer_, n)); }

  absl::Status Process(const std::shared_ptr<server::StreamConnection>& c) override {
    for (;;) {
      absl::StatusOr<std::optional<Call>> next = reader_.Next();
      if (!next.ok()) return next.status();
      if (!next->has_value()) return absl::OkStatus();
      if (!header_read_) {
        header_ = *reader_.header();
        header_read_ = true;
        if (*authenticate_) {
          absl::StatusOr<server::Identity> id = (*authenticate_)(header_, c->certificate_user(), c->peer());
          if (!id.ok()) return id.status();  // the port answers it as the connection's end
          caller_ = *std::move(id);
        }
      }
      Dispatch(c, std::move(**next));
      if (c->read_paused()) return absl::OkStatus();  // the rest waits until the client takes its answers
    }
  }

 private:
  void Dispatch(const std::shared_ptr<server::StreamConnection>& c, Call call) {
    const uint32_t id = call.header.call_id();
    if (!call.malformed.ok()) {
      c->counters().calls.fetch_add(1, std::memory_order_relaxed);
      c->Queue(EncodeException(id, kDoNotRetryIOException, std::string(call.malformed.message()),
                               /*do_not_retry=*/true));
      return;
    }
    if (const absl::Status admitted = c->AdmitCall(); !admitted.ok()) {
      c->Queue(EncodeException(id, kCallQueueTooBig, std::string(admitted.message()), /*do_not_retry=*/false,
                               /*server_overloaded=*/true));
      return;
    }
    (*handler_)(std::move(call), std::make_unique<Responder>(c, id));
  }

  static thread_local char buffer_[64 << 10];
  ConnectionReader reader_;
  // Copied from the reader before the first call is dispatched; constant after.
  ConnectionHeader header_;
  bool header_read_ = false;
  const std::shared_ptr<const HBasePort::Handler> handler_;
  const std::shared_ptr<const HBasePort::Options::Authenticate> authenticate_;
  std::optional<server::Identity> caller_;  // set with header_, constant after
};

thread_local char HBaseSession::buffer_[64 << 10];

}  // namespace

Responder::Responder(std::shared_ptr<server::StreamConnection> connection, uint32_t call_id)
    : connection_(std::move(connection)), call_id_(call_id) {}

Responder::~Responder() {
  if (!sent_) Send(EncodeException(call_id_, kIOException, "the server dropped this call without an answer"));
}

const ConnectionHeader& Responder::connection_header() const {
  return static_cast<const HBaseSession*>(connection_->session())->header();
}
const server::Identity* Responder::caller() const {
  return static_cast<const HBaseSession*>(connection_->session())->caller();
}
const std::string& Responder::peer() const { return connection_->peer(); }

void Responder::Send(std::string frame) {
  if (sent_) return;
  sent_ = true;
  connection_->Answer(frame);
}

struct HBasePort::Impl {
  std::unique_ptr<server::StreamPort> port;
};

HBasePort::HBasePort(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<HBasePort>> HBasePort::Start(const Options& options, Handler handler) {
  server::StreamPort::Options o = options;
  o.name = "HBase port";
  server::StreamPort::Protocol protocol;
  auto shared = std::make_shared<const Handler>(std::move(handler));
  auto authenticate = std::make_shared<const Options::Authenticate>(options.authenticate);
  protocol.new_session = [max = options.max_request_bytes, shared, authenticate]() -> std::unique_ptr<server::StreamSession> {
    return std::make_unique<HBaseSession>(max, shared, authenticate);
  };
  protocol.connection_error = [](const absl::Status& why) { return ConnectionError(why); };
  absl::StatusOr<std::unique_ptr<server::StreamPort>> port = server::StreamPort::Start(o, std::move(protocol));
  if (!port.ok()) return port.status();
  auto impl = std::make_unique<Impl>();
  impl->port = *std::move(port);
  return std::unique_ptr<HBasePort>(new HBasePort(std::move(impl)));
}

HBasePort::~HBasePort() { Shutdown(); }

int HBasePort::port() const { return impl_->port->port(); }
const PortCounters& HBasePort::counters() const { return impl_->port->counters(); }

void HBasePort::RegisterMetrics(metrics::Registry* registry) const {
  impl_->port->RegisterMetrics(registry, "basalt_hbase");
}

void HBasePort::Shutdown() {
  if (impl_ != nullptr) impl_->port->Shutdown();
}

}  // namespace basalt::hbase
