#include "src/front/tcp_front.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/log.h"
#include "common/status.h"
#include "common/tls.h"
#include "src/base/flags.h"
#include "src/front/verbs_front.h"
#include "transport/tcp/frame_stream.h"
#include "transport/verbs/frame.h"
#include "transport/verbs/session.h"

namespace basalt::server {

// What the connections share: the handlers, the sessions and the counters.
struct TcpServer::Impl {
  TcpServerOptions options;
  verbs::VerbsHandlers handlers;
  verbs::SessionTable sessions{"tcp", "tcp_max_sessions_per_user"};
  std::atomic<uint64_t> requests{0}, hellos_refused{0}, malformed{0};

  // A connection of `owner`'s (a user; "" has no cap), unless it holds max_connections_per_owner.
  bool TakeConnection(const std::string& owner) {
    if (owner.empty() || options.max_connections_per_owner <= 0) return true;
    absl::MutexLock l(&mu);
    int& n = owner_connections[owner];
    if (n >= options.max_connections_per_owner) return false;
    ++n;
    return true;
  }
  void ReturnConnection(const std::string& owner) {
    if (owner.empty() || options.max_connections_per_owner <= 0) return;
    absl::MutexLock l(&mu);
    if (auto o = owner_connections.find(owner); o != owner_connections.end() && --o->second <= 0) {
      owner_connections.erase(o);
    }
  }

  absl::Mutex mu;
  absl::flat_hash_map<std::string, int> owner_connections ABSL_GUARDED_BY(mu);  // open, per owner
};

namespace {

using verbs::ConnectData;
using verbs::FrameOp;

// An error reply's buffer: its message is cut to fit.
constexpr size_t kErrorReplyBytes = verbs::kMinReplyBuffer + 1024;

// The error reply that ends a connection: request id 0, which no call has.
std::string ConnectionErrorFrame(const absl::Status& why) {
  std::string out(kErrorReplyBytes, '\0');
  const size_t n = verbs::EncodeGetReply(0, why, nullptr,
                                         absl::MakeSpan(reinterpret_cast<uint8_t*>(out.data()), out.size()));
  out.resize(n);
  return out;
}

// A reply of a call that is not served (malformed, busy): an error for its id and op.
std::string ErrorReply(FrameOp op, uint64_t id, const absl::Status& why) {
  std::string out(kErrorReplyBytes, '\0');
  const absl::Span<uint8_t> span(reinterpret_cast<uint8_t*>(out.data()), out.size());
  out.resize(op == FrameOp::kMutate ? verbs::EncodeMutateReply(id, why, span)
                                    : verbs::EncodeGetReply(id, why, nullptr, span));
  return out;
}

// One connection: its ConnectData, then frames.
class TcpSession final : public StreamSession {
 public:
  explicit TcpSession(std::shared_ptr<TcpServer::Impl> server)
      : server_(std::move(server)),
        hello_by_(absl::Now() + server_->options.hello_timeout),
        reader_(server_->options.max_request_bytes) {}
  ~TcpSession() override {
    if (holds_connection_) server_->ReturnConnection(owner_);
  }

  bool Expired(absl::Time now) const override {
    if (hello_got_ >= ConnectData::kSize || now < hello_by_) return false;
    server_->hellos_refused.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  absl::Span<char> Space() override {
    if (hello_got_ < ConnectData::kSize) {
      return absl::MakeSpan(hello_ + hello_got_, ConnectData::kSize - hello_got_);
    }
    const absl::Span<uint8_t> s = reader_.Space(kReadBytes);
    return absl::MakeSpan(reinterpret_cast<char*>(s.data()), s.size());
  }

  void Commit(size_t n) override {
    if (hello_got_ < ConnectData::kSize) {
      hello_got_ += n;
      if (hello_got_ == ConnectData::kSize) Admit();
      return;
    }
    reader_.Commit(n);
  }

  absl::Status Process(const std::shared_ptr<StreamConnection>& c) override {
    if (!hello_status_.ok()) return hello_status_;
    if (hello_got_ < ConnectData::kSize) return absl::OkStatus();
    for (;;) {
      absl::StatusOr<std::optional<absl::Span<const uint8_t>>> next = reader_.Next();
      if (!next.ok()) return next.status();
      if (!next->has_value()) return absl::OkStatus();
      BASALT_RETURN_IF_ERROR(Serve(c, **next));
      if (c->read_paused()) return absl::OkStatus();  // the rest waits until the client takes its answers
    }
  }

 private:
  static constexpr size_t kReadBytes = 64 << 10;
  // The smallest reply bound a client may name: an error reply (its message cut to fit) is
  // written into a buffer of kErrorReplyBytes, which must reach any client whole.
  static constexpr size_t kMinClientReply = 4096;
  static_assert(kErrorReplyBytes <= kMinClientReply);
  static constexpr size_t kReplyBuffer = 256 << 10;  // a loop's Get replies: grown for a larger row

  void Admit() {
    absl::StatusOr<ConnectData> cd = ConnectData::Decode(hello_, sizeof(hello_));
    if (!cd.ok()) {
      hello_status_ =
          absl::PermissionDeniedError(absl::StrCat("tcp path: not a session's connect: ", cd.status().message()));
    } else if (absl::StatusOr<verbs::SessionTable::Admitted> a = server_->sessions.Admit(*cd); !a.ok()) {
      hello_status_ = absl::PermissionDeniedError(absl::StrCat("tcp path: connect refused: ", a.status().message()));
    } else if (cd->max_reply < kMinClientReply) {
      hello_status_ = absl::PermissionDeniedError(
          absl::StrCat("tcp path: connect refused: a client must take replies of ", kMinClientReply, " bytes"));
    } else if (!server_->TakeConnection(a->owner)) {
      hello_status_ = absl::ResourceExhaustedError(absl::StrCat(
          "tcp path: connect refused: user '", a->owner, "' has ", server_->options.max_connections_per_owner,
          " connections open (tcp_max_connections_per_user)"));
    } else {
      owner_ = std::move(a->owner);
      holds_connection_ = true;
      principal_ = std::move(a->principal);
      max_reply_ = std::min<uint64_t>(cd->max_reply, server_->options.max_reply_bytes);
      return;
    }
    server_->hellos_refused.fetch_add(1, std::memory_order_relaxed);
  }

  // One request frame. An error: the connection cannot go on.
  absl::Status Serve(const std::shared_ptr<StreamConnection>& c, absl::Span<const uint8_t> frame) {
    server_->requests.fetch_add(1, std::memory_order_relaxed);
    absl::Status decoded = verbs::DecodeRequest(frame, &request_);
    if (decoded.ok() && (request_.rendezvous.has_value() || request_.reply_buffer.has_value())) {
      decoded = absl::InvalidArgumentError("verbs frame: rendezvous and reply buffers are RDMA's, not the TCP path's");
    }
    if (!decoded.ok()) {
      server_->malformed.fetch_add(1, std::memory_order_relaxed);
      absl::StatusOr<verbs::FrameHeader> header = verbs::ParseHeader(frame);
      if (!header.ok()) return decoded;  // not even its id: the stream is not to be trusted
      c->counters().calls.fetch_add(1, std::memory_order_relaxed);
      c->Queue(ErrorReply(header->op, header->request_id, decoded));
      return absl::OkStatus();
    }
    const uint64_t id = request_.header.request_id;
    if (const absl::Status admitted = c->AdmitCall(); !admitted.ok()) {
      c->Queue(ErrorReply(request_.header.op, id, admitted));
      return absl::OkStatus();
    }
    if (request_.header.op == FrameOp::kGet) {
      ServeGet(c, id);
    } else {
      ServeMutate(c, id);
    }
    return absl::OkStatus();
  }

  // Inline, on the loop: the row is read and its reply encoded into the loop's buffer.
  void ServeGet(const std::shared_ptr<StreamConnection>& c, uint64_t id) {
    thread_local std::vector<uint8_t> out;
    if (out.size() < kReplyBuffer) out.resize(kReplyBuffer);
    // Never more than the client takes: a reply past its bound is a too-large reply.
    auto span = [this] { return absl::MakeSpan(out.data(), std::min<size_t>(out.size(), max_reply_)); };
    uint64_t needed = 0;
    size_t n = server_->handlers.get(principal_.get(), id, request_.get, span(), &needed);
    if (needed > out.size() && needed <= max_reply_) {
      // Once per loop for a row this large: the buffer stays grown, up to a bound.
      out.resize(needed);
      n = server_->handlers.get(principal_.get(), id, request_.get, span(), &needed);
    }
    c->Answer(std::string_view(reinterpret_cast<const char*>(out.data()), n));
    if (out.size() > kMaxKeptReply) {
      out.resize(kReplyBuffer);
      out.shrink_to_fit();
    }
  }
  static constexpr size_t kMaxKeptReply = 4 << 20;

  // On the handler pool: the request is the task's. The connection it holds keeps this session
  // (and so the server's handlers and the caller) alive until it is done.
  void ServeMutate(const std::shared_ptr<StreamConnection>& c, uint64_t id) {
    auto task = [c, self = this, id, req = std::move(request_.mutate)] {
      const absl::Status s = self->server_->handlers.mutate(self->principal_.get(), req);
      uint8_t out[kErrorReplyBytes];
      const size_t n = verbs::EncodeMutateReply(id, s, absl::MakeSpan(out));
      c->Answer(std::string_view(reinterpret_cast<const char*>(out), n));
    };
    request_.mutate.Clear();
    if (server_->handlers.schedule) {
      server_->handlers.schedule(std::move(task));
    } else {
      task();
    }
  }

  const std::shared_ptr<TcpServer::Impl> server_;
  std::string owner_;              // whose connection it is, once proved
  bool holds_connection_ = false;  // counted against owner_'s cap
  const absl::Time hello_by_;  // the proof must be whole by then
  char hello_[ConnectData::kSize] = {};
  size_t hello_got_ = 0;
  absl::Status hello_status_;
  std::shared_ptr<const void> principal_;
  uint64_t max_reply_ = 0;
  tcp::FrameStreamReader reader_;
  verbs::DecodedRequest request_;  // reused: its vectors keep their capacity
};

}  // namespace

absl::StatusOr<std::unique_ptr<TcpServer>> TcpServer::Start(const TcpServerOptions& options,
                                                            verbs::VerbsHandlers handlers) {
  auto impl = std::make_shared<Impl>();
  impl->options = options;
  impl->handlers = std::move(handlers);
  StreamPort::Protocol protocol;
  protocol.new_session = [impl]() -> std::unique_ptr<StreamSession> { return std::make_unique<TcpSession>(impl); };
  protocol.connection_error = ConnectionErrorFrame;
  StreamPort::Options po = options.port;
  po.name = "TCP path";
  absl::StatusOr<std::unique_ptr<StreamPort>> port = StreamPort::Start(po, std::move(protocol));
  if (!port.ok()) return port.status();
  std::unique_ptr<TcpServer> server(new TcpServer());
  server->impl_ = std::move(impl);
  server->port_ = *std::move(port);
  std::string host;
  int unused = 0;
  if (SplitHostPort(options.port.listen, &host, &unused).ok()) server->host_ = host;
  return server;
}

TcpServer::~TcpServer() { Shutdown(); }

absl::StatusOr<verbs::VerbsSession> TcpServer::NewSession(std::shared_ptr<const void> principal,
                                                           const std::string& owner) {
  verbs::VerbsSession s;
  s.address = host_;
  s.port = port();
  s.message_bytes = impl_->options.max_request_bytes;
  BASALT_RETURN_IF_ERROR(impl_->sessions.Issue(std::move(principal), owner, impl_->options.session_ttl,
                                               impl_->options.max_sessions_per_owner, &s));
  return s;
}

int TcpServer::port() const { return port_->port(); }

TcpServerStats TcpServer::stats() const {
  TcpServerStats s;
  s.connections_open = port_->counters().connections_open.load(std::memory_order_relaxed);
  s.requests = impl_->requests.load(std::memory_order_relaxed);
  s.hellos_refused = impl_->hellos_refused.load(std::memory_order_relaxed);
  s.malformed_frames = impl_->malformed.load(std::memory_order_relaxed);
  s.sessions = impl_->sessions.issued();
  s.reads_paused = port_->counters().reads_paused.load(std::memory_order_relaxed);
  s.queued_reply_bytes = port_->counters().queued_bytes.load(std::memory_order_relaxed);
  s.calls_refused_memory = port_->counters().calls_refused_memory.load(std::memory_order_relaxed);
  return s;
}

void TcpServer::RegisterMetrics(metrics::Registry* r) const {
  port_->RegisterMetrics(r, "basalt_tcp");
  Impl* impl = impl_.get();
  auto read = [](const std::atomic<uint64_t>& v) {
    return [&v] { return static_cast<double>(v.load(std::memory_order_relaxed)); };
  };
  for (absl::Status s :
       {r->AddCounterFunction("basalt_tcp_hellos_refused_total",
                              "TCP path connections refused at their session's proof (token, MAC, nonce).", {},
                              read(impl->hellos_refused)),
        r->AddCounterFunction("basalt_tcp_malformed_frames_total", "TCP path frames refused as malformed.", {},
                              read(impl->malformed))}) {
    (void)s;  // registered once per server; a second registry entry of the same name is the caller's error
  }
}

void TcpServer::Shutdown() {
  if (port_ != nullptr) port_->Shutdown();
}

absl::StatusOr<std::unique_ptr<TcpServer>> StartTcp(const ServerConfig& config, DataService* data,
                                                    std::function<void(std::function<void()>)> schedule,
                                                    VerbsControl* control, metrics::Registry* metrics,
                                                    const AccessController* access, Quotas* quotas) {
  if (!config.tcp) {
    control->state = "off: tcp=false";
    return nullptr;
  }
  TcpServerOptions o;
  if (!config.tls_cert.empty()) {
    // The gRPC port's certificate, and its CA for client certificates.
    absl::StatusOr<std::shared_ptr<TlsContext>> tls = TlsContext::Server(config.tls_cert, config.tls_key, config.tls_ca);
    if (!tls.ok()) return absl::InvalidArgumentError(absl::StrCat("the TCP path's TLS: ", tls.status().message()));
    o.port.tls = *std::move(tls);
  }
  if (config.tcp_listen.empty()) {
    std::string host;
    int unused = 0;
    BASALT_RETURN_IF_ERROR(SplitHostPort(config.listen, &host, &unused));  // validated by the config parser
    o.port.listen = absl::StrCat(host.find(':') != std::string::npos ? absl::StrCat("[", host, "]") : host, ":0");
  } else {
    o.port.listen = config.tcp_listen;
  }
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  o.port.loop_threads = config.tcp_loop_threads > 0 ? config.tcp_loop_threads : cores;
  o.port.max_connections = config.tcp_max_connections;
  o.port.max_calls_in_flight = config.max_concurrent_calls;
  o.port.calls_in_flight_setting = "max_concurrent_calls";
  o.port.max_reply_bytes_in_flight = static_cast<int64_t>(config.max_reply_bytes_in_flight);
  o.port.reserved_fds = config.reserved_fds;
  o.port.stalled_write_timeout = absl::Milliseconds(config.stalled_reply_timeout_ms);  // as gRPC's
  o.port.log = [](std::string_view line) { log::Warning(absl::StrCat("tcp path: ", AV(line))); };
  o.max_request_bytes = static_cast<uint32_t>(config.max_request_bytes);
  o.session_ttl = absl::Seconds(config.rdma_session_ttl_s);
  o.max_sessions_per_owner = config.tcp_max_sessions_per_user;
  o.max_connections_per_owner = config.tcp_max_connections_per_user;
  verbs::VerbsHandlers h = VerbsHandlersFor(data, access, metrics, quotas, "tcp");
  h.schedule = std::move(schedule);
  absl::StatusOr<std::unique_ptr<TcpServer>> server = TcpServer::Start(o, std::move(h));
  if (!server.ok()) {
    return absl::Status(server.status().code(),
                        absl::StrCat("the TCP path (", o.port.listen, "): ", server.status().message()));
  }
  TcpServer* t = server->get();
  if (metrics != nullptr) t->RegisterMetrics(metrics);
  control->state = absl::StrCat("on ", t->host(), ":", t->port(), o.port.tls != nullptr ? " (TLS)" : "");
  control->open_session = [t](std::shared_ptr<const Identity> caller) -> absl::StatusOr<rpc::VerbsSessionResponse> {
    const std::string owner = caller != nullptr ? caller->user : "";  // "" (auth off): no per-user caps
    absl::StatusOr<verbs::VerbsSession> s = t->NewSession(std::move(caller), owner);
    if (!s.ok()) return s.status();
    return verbs::SessionToProto(*s);
  };
  control->fill_status = [t](rpc::StatusResponse* resp) {
    const TcpServerStats s = t->stats();
    resp->set_tcp_connections(s.connections_open);
    resp->set_tcp_requests(s.requests);
    resp->set_tcp_hellos_refused(s.hellos_refused);
    resp->set_tcp_malformed_frames(s.malformed_frames);
    resp->set_tcp_sessions(s.sessions);
  };
  return server;
}

}  // namespace basalt::server
