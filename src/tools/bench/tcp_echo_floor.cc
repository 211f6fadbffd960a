#include "src/tools/bench/tcp_echo_floor.h"

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "src/tools/bench/server_bench_common.h"
#include "transport/tcp/frame_stream.h"
#include "transport/verbs/frame.h"
#include "transport/verbs/session.h"

namespace basalt::bench {
namespace {

using verbs::ConnectData;

// One connection of the echo port: skips the proof, then answers every frame with the record.
class EchoSession final : public server::StreamSession {
 public:
  explicit EchoSession(const std::string* reply) : record_(reply), reader_(1 << 20) {}

  absl::Span<char> Space() override {
    if (proof_ < ConnectData::kSize) return absl::MakeSpan(proof_bytes_ + proof_, ConnectData::kSize - proof_);
    const absl::Span<uint8_t> s = reader_.Space(64 << 10);
    return absl::MakeSpan(reinterpret_cast<char*>(s.data()), s.size());
  }
  void Commit(size_t n) override {
    if (proof_ < ConnectData::kSize) {
      proof_ += n;
      return;
    }
    reader_.Commit(n);
  }
  absl::Status Process(const std::shared_ptr<server::StreamConnection>& c) override {
    for (;;) {
      absl::StatusOr<std::optional<absl::Span<const uint8_t>>> next = reader_.Next();
      if (!next.ok()) return next.status();
      if (!next->has_value()) return absl::OkStatus();
      absl::StatusOr<verbs::FrameHeader> h = verbs::ParseHeader(**next);
      if (!h.ok()) return h.status();
      reply_.assign(*record_);
      EncodeFixed64(reply_.data() + 8, h->request_id);  // the header's request id (frame.h)
      c->Queue(reply_);
    }
  }

 private:
  const std::string* const record_;
  char proof_bytes_[ConnectData::kSize];
  size_t proof_ = 0;
  tcp::FrameStreamReader reader_;
  std::string reply_;  // reused: no allocation per call
};

std::string ErrorFrame(const absl::Status& s) {
  std::vector<uint8_t> out(4096);
  const size_t n = verbs::EncodeGetReply(0, s, nullptr, absl::MakeSpan(out));
  return std::string(reinterpret_cast<const char*>(out.data()), n);
}

}  // namespace

absl::StatusOr<std::unique_ptr<TcpEchoFloor>> TcpEchoFloor::Start(int loop_threads, int connections) {
  std::unique_ptr<TcpEchoFloor> floor(new TcpEchoFloor());
  rpc::GetResponse record;
  record.mutable_row()->set_row("user1234567890123456789");
  for (int f = 0; f < kYcsbFields; ++f) {
    rpc::Cell* cell = record.mutable_row()->add_cells();
    cell->set_family(kFamily);
    cell->set_qualifier(absl::StrCat("field", f));
    cell->set_timestamp(1);
    cell->set_value(std::string(kYcsbFieldBytes, 'v'));
  }
  std::vector<uint8_t> out(64 << 10);
  const size_t n = verbs::EncodeGetReply(0, absl::OkStatus(), &record, absl::MakeSpan(out));
  floor->reply_.assign(reinterpret_cast<const char*>(out.data()), n);

  server::StreamPort::Options po;
  po.listen = "127.0.0.1:0";
  po.loop_threads = loop_threads;
  po.name = "TCP echo floor";
  const std::string* reply = &floor->reply_;
  server::StreamPort::Protocol protocol;
  protocol.new_session = [reply] { return std::make_unique<EchoSession>(reply); };
  protocol.connection_error = ErrorFrame;
  absl::StatusOr<std::unique_ptr<server::StreamPort>> port = server::StreamPort::Start(po, std::move(protocol));
  if (!port.ok()) return port.status();
  floor->port_ = *std::move(port);

  // A session as the server would give one; the echo port checks none of it.
  verbs::VerbsSession session;
  session.address = "127.0.0.1";
  session.port = floor->port_->port();
  session.token.assign(ConnectData::kTokenBytes, 't');
  session.key.assign(ConnectData::kKeyBytes, 'k');
  session.expires = absl::InfiniteFuture();
  session.message_bytes = 1 << 20;
  tcp::TcpClientOptions co;
  co.connections = connections;
  absl::StatusOr<std::unique_ptr<tcp::TcpClient>> client = tcp::TcpClient::Open(
      [session]() -> absl::StatusOr<verbs::VerbsSession> { return session; }, "127.0.0.1", co);
  if (!client.ok()) return client.status();
  floor->client_ = *std::move(client);
  return floor;
}

TcpEchoFloor::~TcpEchoFloor() {
  client_.reset();
  if (port_ != nullptr) port_->Shutdown();
}

absl::Status TcpEchoFloor::Call(const std::string& row, absl::Duration timeout) const {
  rpc::GetRequest req;
  req.set_table("usertable");
  req.set_row(row);
  req.mutable_read()->add_columns()->set_family(kFamily);
  rpc::GetResponse resp;
  bool failed = false, oversized = false;
  absl::Status s = client_->Call(
      [&](uint64_t id, absl::Span<uint8_t> out) { return verbs::EncodeGetRequest(id, req, out); },
      [&](uint64_t id, absl::Span<const uint8_t> reply) { return verbs::DecodeGetReply(reply, id, &resp); },
      absl::Now() + timeout, &failed, &oversized);
  if (s.ok() && resp.row().cells_size() != kYcsbFields) return absl::InternalError("echo floor: not the record");
  return s;
}

}  // namespace basalt::bench
